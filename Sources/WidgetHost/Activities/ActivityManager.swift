import LuaSandbox

/// Why ActivityKit would refuse a request, by the names scripts see.
public enum ActivityRefusal: String, Error, Sendable, CaseIterable {
    /// Activities are switched off (A7).
    case denied
    /// Attributes and state encoded together are over the limit (A1).
    case attributesTooLarge
    /// Too many activities at once (A2).
    case targetMaximumExceeded
    /// No `activity { type = … }` of that type.
    case unknownType
    /// The attributes or state do not fit the declared schema.
    case invalidState
    /// Not from the app in the foreground or an intent (e.g. a timeline provider).
    case visibility
}

/// A request, update or finish the manager refused: the refusal's name (for
/// scripts and the CLI) and what exactly was wrong.
public struct ActivityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Set for requests ActivityKit refuses with a named error; nil for an
    /// update or finish of an activity that cannot take it (A8).
    public var refusal: ActivityRefusal?
    public var message: String
    public var description: String { message }
}

/// Who asks for an activity: ActivityKit starts them only from the app in
/// the foreground or from an intent.
public enum ActivityOrigin: String, Sendable {
    case app, intent, widget, updater

    var mayRequest: Bool { self == .app || self == .intent }
}

/// The lifecycle of a bundle's Live Activities (rules A1–A5, A7–A9), on
/// the host's clock: requests checked against the declarations and the
/// limits, updates and ends, the stale date, the 8-hour and 4-hour limits,
/// and the order of relevance. The manager keeps its activities in memory;
/// the store-backed, shared form and the updaters are the next steps of
/// issue 13.
public final class ActivityManager {
    public let declarations: [ActivityDeclaration]
    public var policy: HostPolicy
    public let clock: HostClock
    /// A7: when false, requests fail with `denied`.
    public var enabled = true
    private var records: [ActivityRecord] = []
    private var nextNumber = 1
    /// A6: counted pushes per activity over a rolling hour (the same
    /// rolling-window counter as the widgets' refresh budget).
    private var pushBudget: RefreshBudget
    /// Called for each push when it is delivered, in order (the updater's
    /// way in, next).
    public var onDeliver: ((ActivityRecord, PushRecord) -> Void)?

    public init(declarations: [ActivityDeclaration], policy: HostPolicy, clock: HostClock) {
        self.declarations = declarations
        self.policy = policy
        self.clock = clock
        pushBudget = RefreshBudget(limit: policy.activityPushBudget, window: 3600)
    }

    var now: Double { clock.now() }

    /// Starts an activity of `type`. Refusals, in the order ActivityKit
    /// checks them: `visibility`, `denied`, `unknownType`, `invalidState`,
    /// `attributesTooLarge`, `targetMaximumExceeded`.
    public func request(type: String, attributes: LuaTable, state: LuaTable, staleDate: Double? = nil,
                        relevance: Double = 0, from origin: ActivityOrigin) -> Result<ActivityRecord, ActivityError> {
        advance()
        guard origin.mayRequest else {
            return .failure(refuse(.visibility, "activities start only from the app in the foreground or an intent, not from a \(origin.rawValue)"))
        }
        guard enabled else { return .failure(refuse(.denied, "Live Activities are switched off (activities.enabled() is false)")) }
        guard let declaration = declarations.first(where: { $0.type == type }) else {
            let types = declarations.map(\.type).joined(separator: ", ")
            return .failure(refuse(.unknownType, "no activity type '\(type)' (types: \(types.isEmpty ? "none" : types))"))
        }
        if let problem = declaration.attributes.problem(in: .table(attributes), what: "attributes")
            ?? declaration.state.problem(in: .table(state), what: "state") {
            return .failure(refuse(.invalidState, problem))
        }
        if let problem = sizeProblem(attributes, state) { return .failure(refuse(.attributesTooLarge, problem)) }
        let live = records.filter { $0.phase(at: now) == .active || $0.phase(at: now) == .stale }.count
        guard live < policy.maxActiveActivities else {
            return .failure(refuse(.targetMaximumExceeded, "\(live) activities are running, the most at once (A2: \(policy.maxActiveActivities))"))
        }
        let record = ActivityRecord(id: "activity-\(nextNumber)", type: type, attributes: attributes,
                                    content: ActivityContent(state: state, staleDate: staleDate), relevance: relevance, startedAt: now)
        nextNumber += 1
        records.append(record)
        return .success(record)
    }

    /// Replaces the content state of activity `id` (still active or stale):
    /// checked against the schema and the size limit (A1); an ended or
    /// dismissed one refuses (A8). A new `staleDate` or `relevance` replaces the old.
    @discardableResult
    public func update(_ id: String, state: LuaTable, staleDate: Double? = nil, relevance: Double? = nil) throws(ActivityError) -> ActivityRecord {
        advance()
        let i = try index(id, doing: "update")
        try check(state, of: records[i])
        records[i].content = ActivityContent(state: state, staleDate: staleDate ?? records[i].content.staleDate)
        if let relevance { records[i].relevance = relevance }
        return records[i]
    }

    /// How an ended activity leaves the screen (A5).
    public enum Dismissal: Sendable, Equatable {
        /// Up to the 4-hour limit after the end.
        case standard
        case immediate
        /// At the earlier of `t` and the 4-hour limit; a past date means now.
        case after(Double)
    }

    /// Ends activity `id`, with a last state if given, and schedules its
    /// dismissal (A5). An ended or dismissed one refuses (A8).
    @discardableResult
    public func finish(_ id: String, state: LuaTable? = nil, dismissal: Dismissal = .standard) throws(ActivityError) -> ActivityRecord {
        advance()
        let i = try index(id, doing: "end")
        if let state {
            try check(state, of: records[i])
            records[i].content.state = state
        }
        end(i, at: now, dismissal: dismissal)
        return records[i]
    }

    /// The activities still on screen (of `type`), the most relevant first,
    /// ties to the earliest started (A9).
    public func list(type: String? = nil) -> [ActivityRecord] {
        advance()
        return records.filter { (type == nil || $0.type == type) && $0.phase(at: now) != .dismissed }
            .sorted { ($0.relevance, -$0.startedAt) > ($1.relevance, -$1.startedAt) }
    }

    /// Activity `id`, whatever its phase.
    public func get(_ id: String) -> ActivityRecord? {
        advance()
        return records.first { $0.id == id }
    }

    /// What a call may change, to put back when the call fails: a failed
    /// call changes no activity (as it writes nothing to the store).
    public struct Checkpoint: Sendable {
        fileprivate var records: [ActivityRecord]
        fileprivate var nextNumber: Int
        fileprivate var pushBudget: RefreshBudget
    }

    public func checkpoint() -> Checkpoint { Checkpoint(records: records, nextNumber: nextNumber, pushBudget: pushBudget) }

    public func restore(_ checkpoint: Checkpoint) {
        records = checkpoint.records
        nextNumber = checkpoint.nextNumber
        pushBudget = checkpoint.pushBudget
    }

    /// A push update for activity `id` arrives (A6). Priority 5 is
    /// delivered at once and not counted; priority 10 is counted against
    /// the activity's pushes per hour, and when the budget is used up it
    /// waits — delivered, in order, when a slot frees; never lost. An
    /// ended or dismissed activity refuses pushes (A8).
    @discardableResult
    public func push(_ id: String, payload: LuaValue, priority: Int = 10) throws(ActivityError) -> PushRecord {
        advance()
        guard priority == 5 || priority == 10 else {
            throw ActivityError(refusal: nil, message: "a push's priority is 5 or 10, not \(priority)")
        }
        let i = try index(id, doing: "push to")
        records[i].pushes.append(PushRecord(arrivedAt: now, deliveredAt: nil, priority: priority, counted: priority == 10, payload: payload))
        deliverPushes(i)
        return records[i].pushes.last!
    }

    /// Delivers activity `i`'s waiting pushes whose turn has come by now:
    /// low priority at once, counted ones in order as the budget frees slots.
    private func deliverPushes(_ i: Int) {
        let id = records[i].id
        var blocked = false   // a counted push waits: the counted ones after it wait behind it
        for p in records[i].pushes.indices where records[i].pushes[p].deliveredAt == nil {
            let push = records[i].pushes[p]
            var at = push.arrivedAt
            if push.counted {
                if blocked { continue }
                at = max(at, pushBudget.nextFree(id, at: at))
                guard at <= now else { blocked = true; continue }
                pushBudget.record(id, at: at)
            }
            records[i].pushes[p].deliveredAt = at
            onDeliver?(records[i], records[i].pushes[p])
        }
    }

    /// Applies the limits up to now: an activity active for the 8-hour
    /// limit ends then, and is dismissed the 4-hour limit later (A3).
    public func advance() {
        let t = now
        for i in records.indices where records[i].pushes.contains(where: { $0.deliveredAt == nil }) {
            deliverPushes(i)
        }
        for i in records.indices where records[i].endedAt == nil {
            let limit = records[i].startedAt + policy.activityActiveLimit
            if t >= limit { end(i, at: limit, dismissal: .standard) }
        }
    }

    private func end(_ i: Int, at t: Double, dismissal: Dismissal) {
        records[i].endedAt = t
        let latest = t + policy.activityDismissLimit
        switch dismissal {
        case .standard: records[i].dismissAt = latest
        case .immediate: records[i].dismissAt = t
        case .after(let d): records[i].dismissAt = min(max(d, t), latest)
        }
    }

    private func index(_ id: String, doing what: String) throws(ActivityError) -> Int {
        guard let i = records.firstIndex(where: { $0.id == id }) else {
            throw ActivityError(refusal: nil, message: "no activity '\(id)'")
        }
        let phase = records[i].phase(at: now)
        guard phase == .active || phase == .stale else {
            throw ActivityError(refusal: nil, message: "cannot \(what) activity '\(id)': it is \(phase.rawValue) (A8)")
        }
        return i
    }

    private func check(_ state: LuaTable, of record: ActivityRecord) throws(ActivityError) {
        if let declaration = declarations.first(where: { $0.type == record.type }),
           let problem = declaration.state.problem(in: .table(state), what: "state") {
            throw refuse(.invalidState, problem)
        }
        if let problem = sizeProblem(record.attributes, state) { throw refuse(.attributesTooLarge, problem) }
    }

    /// A1: attributes and state, encoded together as JSON, within the limit.
    private func sizeProblem(_ attributes: LuaTable, _ state: LuaTable) -> String? {
        let bytes = LuaValue.table(LuaTable(fields: ["attributes": .table(attributes), "state": .table(state)])).jsonText.utf8.count
        guard bytes > policy.activityPayloadBytes else { return nil }
        return "attributes and state encode to \(bytes) bytes, over the limit of \(policy.activityPayloadBytes) (A1)"
    }

    private func refuse(_ refusal: ActivityRefusal, _ message: String) -> ActivityError {
        ActivityError(refusal: refusal, message: "\(refusal.rawValue): \(message)")
    }
}
