import LuaSandbox

/// Why a widget's timeline was reloaded.
public enum ReloadReason: String, Sendable, CaseIterable, Codable {
    /// The widget was added (exempt, rule B2).
    case widgetAdded
    /// Its timeline's policy made it eligible (counted).
    case policy
    /// `reload.timelines` / `reload.all` from a script or the app (counted).
    case request
    /// The app came to the foreground (exempt).
    case appForeground
    /// An intent performed from the widget (exempt, rule I2).
    case intent
    /// The locale changed (exempt).
    case localeChange
    /// The time zone changed (exempt).
    case timeZoneChange
    /// A significant time change: midnight, clock set (exempt).
    case significantTimeChange
    /// A new version of the bundle was swapped in (exempt, as an app's
    /// update reloads its widgets; `WidgetService.update`, `lunette dev`).
    case newVersion

    /// Rule B2: reloads for these reasons do not count against the budget.
    public var isExempt: Bool { self != .policy && self != .request }
}

/// One reload of one widget, as the report shows it.
public struct ReloadRecord: Sendable, Codable {
    public var at: Double
    public var reason: ReloadReason
    /// True when it counted against the refresh budget.
    public var counted: Bool
    /// When it would have happened but for the budget (rule B3).
    public var deferredFrom: Double?
    /// Requests it answered at once (rule B4: they coalesce).
    public var coalescedRequests: Int
    public var status: CallStatus
    /// Wall time of the provider call, in seconds.
    public var elapsed: Double
}
