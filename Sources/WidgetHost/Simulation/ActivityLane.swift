import LuaSandbox

/// One Live Activity's life in a simulation, for the report's lane: its
/// phases over time, every change with who made it and its encoded size
/// against A1's limit, every push (arrival, delivery, delay), updater
/// failures with their tracebacks.
public struct ActivityLane: Sendable {
    public var id: String
    public var type: String
    public var started: Double
    /// When it ended (by the app, a script or the 8-hour limit), if it did.
    public var ended: Double?
    /// When it was dismissed, if it was by the end of the run.
    public var dismissed: Double?
    /// Stretches of one phase, in order, up to the end of the run.
    public var states: [(from: Double, to: Double, state: ActivityPhase)]
    /// Its start, updates and end, with their sources and sizes.
    public var updates: [ActivityChange]
    public var pushes: [PushRecord]
    /// Updater runs for it, in order (failed ones carry their diagnostic).
    public var runs: [UpdaterRun]
    public var failures: [CallFailure] {
        runs.compactMap { run in run.diagnostic.map { CallFailure(at: run.at, role: .activityUpdater, diagnostic: $0) } }
    }
    /// The content it showed last.
    public var lastState: LuaTable

    /// The lane of `record` from the changes this host saw, up to `end`.
    init(record: ActivityRecord, changes: [ActivityChange], runs: [UpdaterRun], end: Double) {
        id = record.id
        type = record.type
        started = record.startedAt
        ended = record.endedAt
        dismissed = record.dismissAt.flatMap { $0 <= end ? $0 : nil }
        let updates = changes.filter { $0.activity == record.id }
        self.updates = updates
        pushes = record.pushes
        self.runs = runs.filter { $0.activity == record.id }
        lastState = record.content.state
        // The stale date in force at t is the one the latest change before t
        // set (none: a change without one); before any change this host saw, the last one known.
        func staleDate(at t: Double) -> Double? {
            guard let change = updates.last(where: { $0.at <= t }) else { return record.content.staleDate }
            return change.staleDate
        }
        var marks = [record.startedAt] + updates.map(\.at) + updates.compactMap(\.staleDate)
        marks += [record.endedAt, record.dismissAt].compactMap { $0 }
        marks = Array(Set(marks.filter { $0 >= record.startedAt && $0 < end })).sorted()
        var states: [(from: Double, to: Double, state: ActivityPhase)] = []
        for (i, t) in marks.enumerated() {
            let phase = ActivityRecord.phase(at: t, staleDate: staleDate(at: t), endedAt: record.endedAt, dismissAt: record.dismissAt)
            let to = i + 1 < marks.count ? marks[i + 1] : end
            if let last = states.last, last.state == phase {
                states[states.count - 1].to = to
            } else {
                states.append((t, to, phase))
            }
        }
        self.states = states
    }
}
