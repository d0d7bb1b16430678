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
    }

    public var at: Double
    public var kind: Kind

    public init(at: Double, kind: Kind) {
        self.at = at
        self.kind = kind
    }

    static let typeNames = "appForeground, storeSet, reloadTimelines, reloadAll, widgetAdded, widgetRemoved, localeChange, significantTimeChange, timeZoneChange, tap, perform, controlAdded, controlTap, reloadControls"
}
