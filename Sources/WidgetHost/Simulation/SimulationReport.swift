import LuaSandbox

/// What a simulation saw, per widget instance: what was shown from when to
/// when, every reload (time, reason, counted or exempt, deferred from),
/// budget use, failures. Rendered as text (`text`), JSON (`json`) or a
/// page with charts (`SimulationPage`).
public struct SimulationReport: Sendable {
    public var bundle: String
    public var start: Double
    public var end: Double
    public var policy: HostPolicy
    public var instances: [WidgetInstance]
    /// Each live instance's next reload after the end.
    public var pending: [Int: NextReload]
    public var notes: [CallNote]
    /// Every intent performed (widget taps, the app, controls), in order.
    public var performances: [PerformanceRecord] = []
    /// Control Center's controls, with their values over time.
    public var controls: [ControlRecord] = []
    /// The Live Activities, one lane each, in the order they started.
    public var activities: [ActivityLane] = []
    /// The scenario's events that happened (within the run), in order.
    public var events: [EventMark] = []
    /// Real time the simulation took, in seconds.
    public var wallSeconds: Double
    /// Time zone the text report shows local times in.
    public var calendar: HostCalendar = .fromEnvironment()

    /// Provider calls made: one placeholder per widget and one timeline per reload.
    public var providerCalls: Int { instances.reduce(0) { $0 + 1 + $1.reloads.count } }

    /// A stretch of time in which a widget showed one entry.
    public struct Shown: Sendable {
        public var from: Double
        public var to: Double
        public var isPlaceholder: Bool
        /// The entry (nil: nothing to show, a placeholder that failed).
        public var entry: TimelineEntry?
        /// 1-based index of the entry in its timeline, and which reload gave the timeline.
        public var entryIndex: Int?
        public var timelineNumber: Int?
    }

    /// What `instance` showed, from its adding to its removal or the end (rule T4).
    public func shown(_ instance: WidgetInstance) -> [Shown] {
        var out: [Shown] = []
        let displays = instance.displays
        var timelineNumber = 0
        for (k, display) in displays.enumerated() {
            let from = display.at
            let to = min(k + 1 < displays.count ? displays[k + 1].at : end, end)
            guard to > from else {
                if case .timeline = display.source { timelineNumber += 1 }
                continue
            }
            switch display.source {
            case .removed: return out
            case .placeholder(let entry):
                out.append(Shown(from: from, to: to, isPlaceholder: true, entry: entry))
            case .timeline(let timeline):
                timelineNumber += 1
                guard var index = timeline.entryIndex(at: from) else {
                    out.append(Shown(from: from, to: to, isPlaceholder: true, entry: instance.placeholder))
                    continue
                }
                var t = from
                while t < to {
                    let next = index + 1 < timeline.entries.count ? min(timeline.entries[index + 1].date, to) : to
                    if next > t {
                        out.append(Shown(from: t, to: next, isPlaceholder: false, entry: timeline.entries[index],
                                         entryIndex: index + 1, timelineNumber: timelineNumber))
                    }
                    t = max(t, next)
                    index += 1
                    if index >= timeline.entries.count { break }
                }
            }
        }
        return out
    }

    /// Reloads of `instance`: in all, counted, deferred by the budget, failed.
    public func reloadCounts(_ instance: WidgetInstance) -> (total: Int, counted: Int, deferred: Int, failed: Int) {
        let reloads = instance.reloads
        return (reloads.count, reloads.filter(\.counted).count, reloads.filter { $0.deferredFrom != nil }.count,
                reloads.filter { $0.status != .ok }.count)
    }

    /// Seconds `instance` spent showing its placeholder.
    public func placeholderSeconds(_ instance: WidgetInstance) -> Double {
        shown(instance).filter(\.isPlaceholder).reduce(0) { $0 + $1.to - $1.from }
    }

    /// Times of the counted reloads that share `instance`'s budget: its
    /// own, or those of its kind, or all, by the policy's scope.
    public func budgetTimes(_ instance: WidgetInstance) -> [Double] {
        let sharing: [WidgetInstance]
        switch policy.budgetScope {
        case .instance: sharing = [instance]
        case .kind: sharing = instances.filter { $0.configuration.kind == instance.configuration.kind }
        case .app: sharing = instances
        }
        return sharing.flatMap { $0.reloads.filter(\.counted).map(\.at) }.sorted()
    }

    /// Counted reloads in the budget window that ends at the end of the run.
    public func budgetUsed(_ instance: WidgetInstance) -> Int {
        budgetTimes(instance).filter { $0 > end - policy.budgetWindow }.count
    }
}

// MARK: - JSON

/// Identical failures (same role, status, message and location) as one:
/// how many, the first and last time, and one traceback (the first's).
public struct FailureGroup: Sendable {
    public var first: CallFailure
    public var count: Int
    public var lastAt: Double

    /// `failures` grouped, in the order of each group's first failure.
    public static func grouping(_ failures: [CallFailure]) -> [FailureGroup] {
        var groups: [FailureGroup] = []
        var index: [String: Int] = [:]
        for failure in failures {
            let d = failure.diagnostic
            let key = [failure.role.rawValue, d.kind.rawValue, d.message, d.location ?? ""].joined(separator: "\u{1}")
            if let i = index[key] {
                groups[i].count += 1
                groups[i].lastAt = failure.at
            } else {
                index[key] = groups.count
                groups.append(FailureGroup(first: failure, count: 1, lastAt: failure.at))
            }
        }
        return groups
    }
}

/// A scenario event, as the report marks it on the time axis.
public struct EventMark: Sendable {
    public var at: Double
    /// Its type, as in the scenario file (`storeSet`, `tap`, …).
    public var type: String
    /// What happened, in a few words: `storeSet group.x tasks`, `tap TaskCount: CompleteTask`.
    public var label: String
    /// The widget kind it is about, nil when it is about every widget or none.
    public var kind: String?
}
