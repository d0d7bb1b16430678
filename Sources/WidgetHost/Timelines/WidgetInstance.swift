import LuaSandbox

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
