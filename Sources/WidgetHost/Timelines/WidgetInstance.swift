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
    /// Its number in its engine: given in the order widgets are added,
    /// from 1, never given again (and kept across restarts, `EngineState`).
    public let id: Int
    public internal(set) var configuration: WidgetConfiguration
    public let addedAt: Double
    public internal(set) var removedAt: Double?
    /// The last good timeline.
    public internal(set) var timeline: Timeline?
    /// When `timeline` was loaded.
    public internal(set) var timelineAt: Double?
    public internal(set) var placeholder: TimelineEntry?
    public internal(set) var lastReloadAt: Double?
    /// The first reload request not yet answered (later ones coalesce).
    public internal(set) var pendingRequestAt: Double?
    var pendingRequests = 0

    /// Its reloads, oldest first, within the engine's history retention.
    public internal(set) var reloads: [ReloadRecord] = []
    /// Reloads recorded since it was added, trimmed ones included (a cursor
    /// for whoever publishes them).
    public internal(set) var reloadsRecorded = 0
    /// What it showed from when: (time, source), in time order.
    public internal(set) var displays: [(at: Double, source: DisplaySource)] = []
    public internal(set) var failures: [CallFailure] = []
    /// Failures recorded since it was added, trimmed ones included.
    public internal(set) var failuresRecorded = 0
    public internal(set) var notes: [CallNote] = []
    /// Budget use after each counted reload: (time, reloads counted in the window).
    public internal(set) var budgetUsage: [(at: Double, used: Int)] = []
    /// Lines the calls printed or logged (the last ones kept).
    public internal(set) var logs: [(at: Double, level: LuaLogLevel, text: String)] = []

    /// The entry it showed (or shows) at `t` (rule T4): from what it
    /// displayed then — its placeholder, or the timeline it had then — so
    /// a past time gets the entry of that time. Nil before it was added,
    /// after it was removed, and before the history kept (the engine's
    /// `historyRetention`).
    public func shown(at t: Double) -> TimelineEntry? {
        guard let display = displays.last(where: { $0.at <= t }) else { return nil }
        switch display.source {
        case .removed: return nil
        case .placeholder(let entry): return entry
        case .timeline(let timeline):
            if let i = timeline.entryIndex(at: t) { return timeline.entries[i] }
            return placeholder
        }
    }

    /// Records a reload (and counts it).
    mutating func append(_ reload: ReloadRecord) {
        reloads.append(reload)
        reloadsRecorded += 1
    }

    /// Records a failure (and counts it).
    mutating func append(_ failure: CallFailure) {
        failures.append(failure)
        failuresRecorded += 1
    }

    /// Forgets history older than `horizon`, keeping what was displayed
    /// then; a widget removed before it keeps nothing.
    mutating func trim(before horizon: Double) {
        if let removedAt, removedAt < horizon {
            reloads = []; displays = []; failures = []; notes = []; budgetUsage = []; logs = []
            timeline = nil
            placeholder = nil
            return
        }
        reloads.removeFirst(reloads.prefix { $0.at < horizon }.count)
        failures.removeFirst(failures.prefix { $0.at < horizon }.count)
        notes.removeFirst(notes.prefix { $0.at < horizon }.count)
        budgetUsage.removeFirst(budgetUsage.prefix { $0.at < horizon }.count)
        logs.removeFirst(logs.prefix { $0.at < horizon }.count)
        // The display in effect at the horizon stays: it answers shown(at:) from then on.
        let before = displays.prefix { $0.at < horizon }.count
        if before > 1 { displays.removeFirst(before - 1) }
    }
}
