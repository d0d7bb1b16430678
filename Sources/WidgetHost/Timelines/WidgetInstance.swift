import LuaSandbox

/// Why a widget's timeline was reloaded.
public enum ReloadReason: String, Sendable, CaseIterable {
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

    /// Rule B2: reloads for these reasons do not count against the budget.
    public var isExempt: Bool { self != .policy && self != .request }
}

/// One reload of one widget, as the report shows it.
public struct ReloadRecord: Sendable {
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

/// A provider call that failed (rule T10: the last good timeline stays).
public struct CallFailure: Sendable {
    public var at: Double
    public var role: CallRole
    /// What went wrong.
    public var diagnostic: Diagnostic
    public var status: CallStatus { diagnostic.kind }
    public var message: String { diagnostic.message }
    public var traceback: String? { diagnostic.traceback }
}

/// Something the host noticed about a call that did not stop it.
public struct CallNote: Sendable {
    public var at: Double
    public var message: String
}

/// What a widget showed from a moment on: its placeholder, or a timeline.
public enum DisplaySource: Sendable {
    case placeholder(TimelineEntry?)
    case timeline(Timeline)
    /// The widget was removed.
    case removed
}

/// A widget on the (emulated) screen, with its history.
public struct WidgetInstance: Sendable {
    /// 1-based, in the order instances were added.
    public let id: Int
    public let configuration: WidgetConfiguration
    public let addedAt: Double
    public internal(set) var removedAt: Double?
    /// The last good timeline.
    public internal(set) var timeline: Timeline?
    public internal(set) var placeholder: TimelineEntry?
    public internal(set) var lastReloadAt: Double?
    /// The first reload request not yet answered (later ones coalesce).
    public internal(set) var pendingRequestAt: Double?
    var pendingRequests = 0

    public internal(set) var reloads: [ReloadRecord] = []
    /// What it showed from when: (time, source), in time order.
    public internal(set) var displays: [(at: Double, source: DisplaySource)] = []
    public internal(set) var failures: [CallFailure] = []
    public internal(set) var notes: [CallNote] = []
    /// Budget use after each counted reload: (time, reloads counted in the window).
    public internal(set) var budgetUsage: [(at: Double, used: Int)] = []
    /// Lines the calls printed or logged (the last ones kept).
    public internal(set) var logs: [(at: Double, level: LuaLogLevel, text: String)] = []

    /// The entry it shows at `t` (rule T4), or its placeholder.
    public func shown(at t: Double) -> TimelineEntry? {
        if let timeline, let i = timeline.entryIndex(at: t) { return timeline.entries[i] }
        return placeholder
    }
}
