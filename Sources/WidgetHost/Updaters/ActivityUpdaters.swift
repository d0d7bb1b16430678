import LuaSandbox

/// One run of an activity's updater: what it was for, and how it ended.
public struct UpdaterRun: Sendable, Codable {
    /// When its event happened (a throttled push: when it was delivered).
    public var at: Double
    public var activity: String
    /// "push", "event", "tick" or "stale".
    public var kind: String
    /// What went wrong (nil on success); the activity kept its last good content.
    public var diagnostic: Diagnostic?
}

/// Runs a bundle's Live Activity updaters: once per event — a push when
/// the budget delivers it, an event the app signals, a tick every `tick`
/// seconds while the activity runs, its stale date — with
/// `updater(activity, event)`, where `activity` has `update` and `finish`,
/// under L2 and the call deadline. What an updater changes goes through
/// the manager's checks; a failed updater changes nothing and is recorded.
///
/// Which events are still to run is kept with the activities in the store:
/// an updater's call marks its event handled in the same commit as its
/// changes, so each event's updater runs once — again only if a crash lost
/// the call — in whichever process runs `runDue` first. Events run in
/// order of time, after the manager call that produced them, never inside
/// it. Ticks missed while no host ran are not replayed: the updater gets
/// one tick, the latest due.
public final class ActivityUpdaters {
    public let manager: ActivityManager
    let pool: SandboxPool
    /// Every updater run this host made, in order.
    public private(set) var runs: [UpdaterRun] = []
    /// Updater runs whose commit met another writer's change and ran again.
    public private(set) var conflicts = 0

    /// Updaters of `runtime`'s bundle, over `manager` (which must be the one
    /// in `runtime.services.activities`, so updaters can change activities).
    public init(runtime: WidgetRuntime, manager: ActivityManager) {
        precondition(runtime.services.activities === manager, "ActivityUpdaters: the manager must be the runtime's services.activities")
        self.manager = manager
        pool = runtime.pool
    }

    /// A push for activity `id` (A6): its updater runs when it is delivered
    /// (at once, unless the budget throttles it).
    @discardableResult
    public func push(_ id: String, payload: LuaValue, priority: Int = 10) throws(ActivityError) -> PushRecord {
        let push = try manager.push(id, payload: payload, priority: priority)
        pool.metrics.push(priority: priority, throttled: push.isWaiting)
        try runDue()
        return push
    }

    /// An event the app (or a script) signals to activity `id`: what is due
    /// runs first, then the updater with `{ kind = "event", name, payload }`.
    public func signal(_ id: String, name: String, payload: LuaValue = .nil) throws(ActivityError) {
        try runDue()
        let now = manager.clock.now()
        guard let record = try manager.get(id) else { throw ActivityError(refusal: nil, message: "no activity '\(id)' in bundle \(manager.bundleID)") }
        let phase = record.phase(at: now)
        guard phase == .active || phase == .stale else {
            throw ActivityError(refusal: nil, message: "cannot signal activity '\(id)': it is \(phase.rawValue) (A8)")
        }
        var event: LuaFields = ["name": .string(LuaString(name))]
        if payload != .nil { event["payload"] = payload }
        try run(Due(at: now, mark: ActivityEventMark(activity: id, kind: .signal), event: event), record: record)
    }

    /// Runs every event due by now, in order of time: delivered pushes,
    /// ticks, stale dates. An event whose updater kept meeting other
    /// writers' changes stays due, for the next call.
    public func runDue() throws(ActivityError) {
        var seen = 0
        while let (next, record) = try nextEvent() {
            // Each run marks its event handled, so this ends; the bound
            // guards against a store that will not keep the mark.
            seen += 1
            guard seen <= 10_000 else { break }
            guard try run(next, record: record) else { break }
        }
    }

    /// Times an updater whose commit met other writers' changes runs again.
    static let conflictAttempts = 8

    /// When the next event of any activity is due after now (a tick, a
    /// stale date, a throttled push's delivery, the 8-hour limit), for a
    /// host that sleeps until then (the simulator). Nil when nothing waits.
    public func nextDue() throws(ActivityError) -> Double? { try manager.nextDue() }

    // MARK: Events

    private struct Due {
        var at: Double
        var mark: ActivityEventMark
        var event: LuaFields
        var kind: String {
            switch mark.kind {
            case .push: return "push"
            case .tick: return "tick"
            case .stale: return "stale"
            case .signal: return "event"
            }
        }
    }

    private func declaration(_ record: ActivityRecord) -> ActivityDeclaration? {
        manager.declarations.first { $0.type == record.type }
    }

    /// The earliest event due by now that no updater has run for.
    private func nextEvent() throws(ActivityError) -> (Due, ActivityRecord)? {
        let now = manager.clock.now()
        var best: (due: Due, record: ActivityRecord)?
        for record in try manager.all() {
            func consider(_ due: Due) {
                if best == nil || due.at < best!.due.at { best = (due, record) }
            }
            let phase = record.phase(at: now)
            // In order of delivery (ties: of arrival). A push is delivered
            // only before its activity ended; if no host ran its updater
            // until after the end, it runs then (and may find it ended).
            for (n, push) in record.pushes.enumerated() where !push.handled {
                guard let delivered = push.deliveredAt else { continue }
                consider(Due(at: delivered, mark: ActivityEventMark(activity: record.id, kind: .push(n)),
                             event: ["payload": push.payload, "priority": .integer(Int64(push.priority))]))
            }
            guard phase == .active || phase == .stale else { continue }
            if let tick = declaration(record)?.tick {
                let from = record.lastTick ?? record.startedAt
                if from + tick <= now {
                    let latest = from + ((now - from) / tick).rounded(.down) * tick
                    consider(Due(at: latest, mark: ActivityEventMark(activity: record.id, kind: .tick(latest)), event: [:]))
                }
            }
            if let stale = record.content.staleDate, stale <= now, record.staleHandled != stale, phase == .stale {
                consider(Due(at: stale, mark: ActivityEventMark(activity: record.id, kind: .stale(stale)), event: [:]))
            }
        }
        return best.map { ($0.due, $0.record) }
    }

    /// Runs the updater of `record` for `due`; a failure is recorded and
    /// the event marked handled all the same. When the updater's commit
    /// meets another writer's change (a conflict, not the script's fault),
    /// it runs again on the new rows — unless another process ran the event
    /// meanwhile. Returns false when it kept conflicting: the event stays due.
    @discardableResult
    private func run(_ due: Due, record: ActivityRecord) throws(ActivityError) -> Bool {
        var event = due.event
        event["kind"] = .string(LuaString(due.kind))
        event["time"] = ClockBinding.date(due.at)
        var record = record
        for attempt in 1...Self.conflictAttempts {
            manager.prepareCall(handling: due.mark, source: "updater (\(due.kind))")
            let outcome = pool.call(.activityUpdater, "activity", record.type, "updater",
                                    [ActivityBinding.lua(record, at: manager.clock.now()), .table(LuaTable(fields: event))])
            manager.discardPrepared()
            guard outcome.storeConflict else {
                runs.append(UpdaterRun(at: due.at, activity: record.id, kind: due.kind, diagnostic: outcome.diagnostic))
                if !outcome.succeeded { try manager.markHandled(due.mark) }
                return true
            }
            conflicts += 1
            guard let fresh = try manager.get(record.id), !fresh.hasHandled(due.mark) else { return true }
            record = fresh
            if attempt == Self.conflictAttempts {
                runs.append(UpdaterRun(at: due.at, activity: record.id, kind: due.kind, diagnostic: outcome.diagnostic))
            }
        }
        return false
    }
}

extension ActivityRecord {
    /// Whether the event of `mark` has had its updater run (by any process).
    func hasHandled(_ mark: ActivityEventMark) -> Bool {
        switch mark.kind {
        case .push(let n): return n < pushes.count && pushes[n].handled
        case .tick(let t): return (lastTick ?? -.infinity) >= t
        case .stale(let t): return staleHandled == t
        case .signal: return false
        }
    }
}
