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
    }

    public var at: Double
    public var kind: Kind

    public init(at: Double, kind: Kind) {
        self.at = at
        self.kind = kind
    }

    static let typeNames = "appForeground, storeSet, reloadTimelines, reloadAll, widgetAdded, widgetRemoved, localeChange, significantTimeChange, timeZoneChange"
}
