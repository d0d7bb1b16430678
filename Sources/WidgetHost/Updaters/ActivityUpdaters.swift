import LuaSandbox

/// One run of an activity's updater: what it was for, and how it ended.
public struct UpdaterRun: Sendable {
    public var at: Double
    public var activity: String
    /// "push", "event", "tick" or "stale".
    public var kind: String
    /// What went wrong (nil on success); the activity kept its last good content.
    public var diagnostic: Diagnostic?
}

/// Runs a bundle's Live Activity updaters (issue 13, point 4): once per
/// event — a push when the budget delivers it, an event the app signals, a
/// tick every `tick` seconds while the activity is active, its stale date —
/// with `updater(activity, event)`, where `activity` has `update` and
/// `finish`, under L2 and the call deadline. What an updater changes goes
/// through the manager's checks; a failed updater changes nothing and is
/// recorded. Events wait in order and run after the manager call that
/// produced them has returned, never inside it.
public final class ActivityUpdaters {
    public let manager: ActivityManager
    let pool: SandboxPool
    /// Every updater run, in order.
    public private(set) var runs: [UpdaterRun] = []
    private var pending: [(id: String, at: Double, kind: String, event: LuaFields)] = []
    /// The last tick run per activity, and the stale date already reported.
    private var lastTick: [String: Double] = [:]
    private var staleReported: [String: Double] = [:]

    /// Updaters of `runtime`'s bundle, over `manager` (which must be the one
    /// in `runtime.services.activities`, so updaters can change activities).
    public init(runtime: WidgetRuntime, manager: ActivityManager) {
        self.manager = manager
        pool = runtime.pool
        manager.onDeliver = { [unowned self] record, push in
            self.pending.append((record.id, push.deliveredAt ?? push.arrivedAt, "push",
                                 ["payload": push.payload, "priority": .integer(Int64(push.priority))]))
        }
    }

    /// A push for activity `id` (A6): its updater runs when it is delivered.
    @discardableResult
    public func push(_ id: String, payload: LuaValue, priority: Int = 10) throws(ActivityError) -> PushRecord {
        let push = try manager.push(id, payload: payload, priority: priority)
        drain()
        return push
    }

    /// An event the app (or a script) signals to activity `id`.
    public func signal(_ id: String, name: String, payload: LuaValue = .nil) throws(ActivityError) {
        guard let record = manager.get(id), record.phase(at: manager.clock.now()) == .active || record.phase(at: manager.clock.now()) == .stale else {
            throw ActivityError(refusal: nil, message: "cannot signal activity '\(id)': it is not running")
        }
        var event: LuaFields = ["name": .string(LuaString(name))]
        if payload != .nil { event["payload"] = payload }
        pending.append((id, manager.clock.now(), "event", event))
        drain()
    }

    /// Runs what is due up to now: delivered pushes, ticks, stale dates.
    public func runDue() {
        manager.advance()
        let now = manager.clock.now()
        for record in manager.list() {
            let phase = record.phase(at: now)
            if let tick = manager.declarations.first(where: { $0.type == record.type })?.tick, phase == .active || phase == .stale {
                var next = (lastTick[record.id] ?? record.startedAt) + tick
                while next <= now {
                    pending.append((record.id, next, "tick", [:]))
                    lastTick[record.id] = next
                    next += tick
                }
            }
            if phase == .stale, let stale = record.content.staleDate, staleReported[record.id] != stale {
                staleReported[record.id] = stale
                pending.append((record.id, stale, "stale", [:]))
            }
        }
        drain()
    }

    private func drain() {
        while !pending.isEmpty {
            let next = pending.removeFirst()
            guard let record = manager.get(next.id) else { continue }
            var event = next.event
            event["kind"] = .string(LuaString(next.kind))
            event["time"] = ClockBinding.date(next.at)
            let outcome = pool.call(.activityUpdater, "activity", record.type, "updater",
                                    [ActivityBinding.lua(record, at: manager.clock.now()), .table(LuaTable(fields: event))])
            runs.append(UpdaterRun(at: next.at, activity: next.id, kind: next.kind, diagnostic: outcome.diagnostic))
        }
    }
}
