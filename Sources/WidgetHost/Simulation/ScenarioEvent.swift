import LuaSandbox

/// Something that happens during a simulation.
public struct ScenarioEvent: Sendable {
    public enum Kind: Sendable {
        /// The app comes to the foreground: widgets (of `kind`, or all) reload, exempt.
        case appForeground(kind: String?)
        /// The app writes a value (nil removes the key).
        case storeSet(group: String, key: String, value: StoreValue?)
        /// The app asks for a reload of one kind (counted, coalesced).
        case reloadTimelines(kind: String)
        /// The app asks for a reload of every widget.
        case reloadAll
        /// The user adds a widget.
        case widgetAdded(WidgetConfiguration)
        /// The user removes the widgets of a kind (in a family).
        case widgetRemoved(kind: String, family: WidgetFamily?)
        case localeChange
        case significantTimeChange
        case timeZoneChange(String)
        /// A button or toggle of a widget on screen runs `intent` (its
        /// widget is the first of `kind`, in `family` and with `config` when
        /// given): perform, then the widget's exempt reload (I2).
        case tap(kind: String, family: WidgetFamily?, config: [String: LuaValue]?, intent: String, params: [String: LuaValue])
        /// The app or Shortcuts runs `intent`: no widget reload unless the script asks.
        case perform(intent: String, params: [String: LuaValue])
        /// The user adds a control to Control Center: its value is read (C2).
        case controlAdded(String)
        /// The user taps a control (C3).
        case controlTap(String)
        /// The app asks for the values of the controls of `kind` (all when nil) again.
        case reloadControls(String?)
        /// The app, in the foreground, starts a Live Activity.
        case startActivity(type: String, attributes: LuaTable, state: LuaTable, staleDate: Double?, relevance: Double)
        /// A push update for an activity arrives (A6).
        case push(activity: ActivityReference, payload: LuaValue, priority: Int)
        /// The app signals an event to an activity's updater.
        case activityEvent(activity: ActivityReference, name: String, payload: LuaValue)
        /// The app ends an activity, with a last state and a dismissal (A5).
        case endActivity(activity: ActivityReference, state: LuaTable?, dismissal: ActivityManager.Dismissal)
        /// The user switches Live Activities on or off (A7).
        case activitiesEnabled(Bool)
    }

    /// Which activity an event is for: the n-th (0-based) the scenario
    /// started, or an id.
    public enum ActivityReference: Sendable, Equatable, CustomStringConvertible {
        case index(Int)
        case id(String)

        public var description: String {
            switch self {
            case .index(let n): return "activity #\(n)"
            case .id(let id): return "activity '\(id)'"
            }
        }
    }

    public var at: Double
    public var kind: Kind

    public init(at: Double, kind: Kind) {
        self.at = at
        self.kind = kind
    }

    /// The event types of a scenario file ("type"), as docs/scenarios.md lists them.
    static let types = ["storeSet", "reloadTimelines", "reloadAll", "appForeground", "widgetAdded", "widgetRemoved", "localeChange",
                        "significantTimeChange", "timeZoneChange", "tap", "perform", "controlAdded", "controlTap", "reloadControls",
                        "startActivity", "push", "activityEvent", "endActivity", "activitiesEnabled"]
    static let typeNames = types.joined(separator: ", ")
    /// Every field some event type reads: the keys an event whose type is
    /// unknown may have without being called unknown itself.
    static let fieldNames: Set<String> = ["at", "type", "kind", "family", "config", "group", "key", "value", "timezone", "intent",
                                          "params", "activityType", "attributes", "state", "options", "activity", "payload",
                                          "priority", "name", "dismissal"]
}
