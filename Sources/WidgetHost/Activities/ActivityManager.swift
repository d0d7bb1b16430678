import LuaSandbox
import Logging
import SharedStore

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

    public init(refusal: ActivityRefusal?, message: String) {
        self.refusal = refusal
        self.message = message
    }
}

/// Who asks for an activity: ActivityKit starts them only from the app in
/// the foreground or from an intent.
public enum ActivityOrigin: String, Sendable {
    case app, intent, widget, updater

    var mayRequest: Bool { self == .app || self == .intent }
}

/// One change the manager made to an activity, as this process saw it
/// (the lanes of a simulation report): when, what, who asked, and the
/// encoded size of attributes and state against A1's limit.
public struct ActivityChange: Sendable, Codable {
    public enum Kind: String, Sendable, Codable {
        case started, updated, ended
    }
    public var at: Double
    public var activity: String
    public var kind: Kind
    /// Who made it: "app", "intent Start", "updater (push)", "limit (A3)", "cli"…
    public var source: String
    /// Attributes and state encoded together (A1), after the change.
    public var bytes: Int
    /// The alert an update asked for (`{ title =, body = }`), if any.
    public var alert: LuaValue?
    /// The activity after the change (its phase over time follows from it).
    public var staleDate: Double?
    public var endedAt: Double?
    public var dismissAt: Double?
}

/// The lifecycle of a bundle's Live Activities (rules A1–A9), on the host's
/// clock: requests checked against the declarations and the limits,
/// updates and ends, the stale date, the 8-hour and 4-hour limits, the
/// order of relevance, and the push budget.
///
/// The activities live in the bundle's app group's database (its first
/// app group), in tables of their own (`StoredActivities`), so the app,
/// scripts and other processes see the same ones. Each call of the app's
/// API is one transaction: it reads the rows under the write lock, applies
/// what time has done (deliveries, limits), makes its change and writes
/// what changed. A script call is all or nothing with its store writes: its
/// activity changes are kept in memory while it runs and committed in the
/// same transaction as its writes to that group, or not at all.
public final class ActivityManager: StoreAttachment {
    public let bundleID: String
    public let declarations: [ActivityDeclaration]
    public var policy: HostPolicy
    public let clock: HostClock
    /// The app group whose database holds the activities.
    public let group: StoreGroup
    /// bundle.json asks for frequent updates: the push budget is
    /// `activityFrequentPushBudget` instead of `activityPushBudget` (A6).
    public let frequentUpdates: Bool
    /// Every change this manager made that was committed, in order.
    public private(set) var changes: [ActivityChange] = []

    // The working copy: the rows as read, and the activities decoded from them.
    private var stored = StoredActivities()
    private var records: [ActivityRecord] = []
    private var enabled = true
    private var nextNumber: Int64 = 1
    private var pushBudget: RefreshBudget
    private var pendingChanges: [ActivityChange] = []
    /// Set while a script call runs (`beginCall`): operations work on the
    /// working copy, read once, and commit with the call.
    private var call: (source: String, loaded: Bool)?
    /// What the running call will commit, once it asked (`attachedWrite`).
    private var callWrite: ActivityWrite?
    /// The call's rows once time was applied, before the call changed anything.
    private var callBaseline: StoredActivities?
    /// What the next call handles (an updater's event), applied when it starts.
    private var preparedMark: ActivityEventMark?
    private var preparedSource: String?
    private var source = "app"
    /// The rows as last read or written, with their version.
    private var cache: StoredActivities?
    /// The records decoded from the rows at `version`.
    private var decoded: (version: Int64, records: [ActivityRecord])?
    /// Called when a call has read its rows (tests: a writer between a
    /// call's read and its commit).
    var afterCallLoad: (() -> Void)?
    /// The host's log: database failures in full (scripts get a neutral message).
    public var logger = Logger(label: "lunette.activities")

    /// The manager of `bundle`'s activities in `store`, in the group of its
    /// first app group. Throws when the bundle lists no app group.
    public convenience init(bundle: ScriptBundle, store: SharedStore, policy: HostPolicy, clock: HostClock) throws(ActivityError) {
        guard let groupID = bundle.manifest.appGroups.first else {
            throw ActivityError(refusal: nil, message: "bundle \(bundle.manifest.id) declares Live Activities but lists no app group: activities live in an app group's store; list one in appGroups of bundle.json")
        }
        let group: StoreGroup
        do { group = try store.group(groupID) } catch {
            throw ActivityError(refusal: nil, message: "activities of \(bundle.manifest.id): \(error.message)")
        }
        self.init(bundleID: bundle.manifest.id, declarations: bundle.declarations.activities, group: group, policy: policy,
                  clock: clock, frequentUpdates: bundle.manifest.frequentActivityUpdates)
    }

    public init(bundleID: String, declarations: [ActivityDeclaration], group: StoreGroup, policy: HostPolicy,
                clock: HostClock, frequentUpdates: Bool = false) {
        self.bundleID = bundleID
        self.declarations = declarations
        self.policy = policy
        self.clock = clock
        self.group = group
        self.frequentUpdates = frequentUpdates
        pushBudget = RefreshBudget(limit: frequentUpdates ? policy.activityFrequentPushBudget : policy.activityPushBudget, window: 3600)
    }

    var now: Double { clock.now() }

    /// Counted pushes allowed per activity per hour (A6).
    public var pushesPerHour: Int { frequentUpdates ? policy.activityFrequentPushBudget : policy.activityPushBudget }

    // MARK: The app's API (and the script's, through ActivityBinding)

    /// Starts an activity of `type`. Refusals, in the order ActivityKit
    /// checks them: `visibility`, `denied`, `unknownType`, `invalidState`,
    /// `attributesTooLarge`, `targetMaximumExceeded`. A database failure is
    /// an error without a refusal.
    public func request(type: String, attributes: LuaTable, state: LuaTable, staleDate: Double? = nil,
                        relevance: Double = 0, from origin: ActivityOrigin) -> Result<ActivityRecord, ActivityError> {
        guard origin.mayRequest else {
            return .failure(refuse(.visibility, "activities start only from the app in the foreground or an intent, not from a \(origin.rawValue)"))
        }
        do {
            return .success(try transact { () throws(ActivityError) in
                try self.start(type: type, attributes: attributes, state: state, staleDate: staleDate, relevance: relevance)
            })
        } catch {
            return .failure(error)
        }
    }

    private func start(type: String, attributes: LuaTable, state: LuaTable, staleDate: Double?, relevance: Double) throws(ActivityError) -> ActivityRecord {
        guard enabled else { throw refuse(.denied, "Live Activities are switched off (activities.enabled() is false)") }
        guard let declaration = declarations.first(where: { $0.type == type }) else {
            let types = declarations.map(\.type).joined(separator: ", ")
            throw refuse(.unknownType, "no activity type '\(type)' (types: \(types.isEmpty ? "none" : types))")
        }
        if let problem = declaration.attributes.problem(in: .table(attributes), what: "attributes")
            ?? declaration.state.problem(in: .table(state), what: "state") {
            throw refuse(.invalidState, problem)
        }
        let bytes = try size(attributes, state, checking: [(attributes, "attributes"), (state, "state")])
        let live = records.filter { $0.phase(at: now) == .active || $0.phase(at: now) == .stale }.count
        guard live < policy.maxActiveActivities else {
            throw refuse(.targetMaximumExceeded, "\(live) activities are running, the most at once (A2: \(policy.maxActiveActivities))")
        }
        let record = ActivityRecord(id: "activity-\(nextNumber)", type: type, attributes: attributes,
                                    content: ActivityContent(state: state, staleDate: staleDate), relevance: relevance, startedAt: now)
        nextNumber += 1
        records.append(record)
        note(.started, record, bytes: bytes)
        return record
    }

    /// Replaces the content state of activity `id` (still active or stale):
    /// checked against the schema and the size limit (A1); an ended or
    /// dismissed one refuses (A8). A new `staleDate` or `relevance` replaces
    /// the old; an `alert` is recorded with the update.
    @discardableResult
    public func update(_ id: String, state: LuaTable, staleDate: Double? = nil, relevance: Double? = nil,
                       alert: LuaValue? = nil) throws(ActivityError) -> ActivityRecord {
        try transact { () throws(ActivityError) in
            let i = try index(id, doing: "update")
            let bytes = try check(state, of: records[i])
            records[i].content = ActivityContent(state: state, staleDate: staleDate ?? records[i].content.staleDate)
            if let relevance { records[i].relevance = relevance }
            note(.updated, records[i], bytes: bytes, alert: alert)
            return records[i]
        }
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
        try transact { () throws(ActivityError) in
            let i = try index(id, doing: "end")
            let bytes: Int
            if let state {
                bytes = try check(state, of: records[i])
                records[i].content.state = state
            } else {
                bytes = Self.encodedSize(records[i].attributes, records[i].content.state)
            }
            end(i, at: now, dismissal: dismissal)
            deliverPushes(i)   // what still waits is dropped
            note(.ended, records[i], bytes: bytes)
            return records[i]
        }
    }

    /// The activities still on screen (of `type`), the most relevant first,
    /// ties to the earliest started (A9).
    public func list(type: String? = nil) throws(ActivityError) -> [ActivityRecord] {
        try transact(reading: true) { () throws(ActivityError) in
            records.filter { (type == nil || $0.type == type) && $0.phase(at: now) != .dismissed }
                .sorted { ($0.relevance, -$0.startedAt) > ($1.relevance, -$1.startedAt) }
        }
    }

    /// Activity `id`, whatever its phase (nil once the store forgot it).
    public func get(_ id: String) throws(ActivityError) -> ActivityRecord? {
        try transact(reading: true) { () throws(ActivityError) in records.first { $0.id == id } }
    }

    /// Every activity the store keeps, dismissed ones too, in the order
    /// they were started.
    public func all() throws(ActivityError) -> [ActivityRecord] {
        try transact(reading: true) { () throws(ActivityError) in records }
    }

    /// A7: whether requests may start activities.
    public func isEnabled() throws(ActivityError) -> Bool {
        try transact(reading: true) { () throws(ActivityError) in enabled }
    }

    /// A7: switches Live Activities on or off (the user's setting).
    public func setEnabled(_ value: Bool) throws(ActivityError) {
        try transact { () throws(ActivityError) in enabled = value }
    }

    /// A push update for activity `id` arrives (A6). Priority 5 is
    /// delivered at once and not counted; priority 10 is counted against
    /// the activity's pushes per hour, and when the budget is used up it
    /// waits — delivered, in order, when a slot frees; never lost. An
    /// ended or dismissed activity refuses pushes (A8).
    @discardableResult
    public func push(_ id: String, payload: LuaValue, priority: Int = 10) throws(ActivityError) -> PushRecord {
        guard priority == 5 || priority == 10 else {
            throw ActivityError(refusal: nil, message: "a push's priority is 5 or 10, not \(priority)")
        }
        let push = PushRecord(arrivedAt: now, priority: priority, counted: priority == 10, payload: payload)
        do { _ = try push.storedRow() } catch {
            throw ActivityError(refusal: nil, message: "push to activity '\(id)': \(error.message)")
        }
        return try transact { () throws(ActivityError) in
            let i = try index(id, doing: "push to")
            records[i].pushes.append(push)
            deliverPushes(i)
            return records[i].pushes.last!
        }
    }

    /// When activity `id`'s throttled pushes will be delivered, in order,
    /// if no other push arrives before them.
    public func expectedDeliveries(of id: String) throws(ActivityError) -> [Double] {
        try transact(reading: true) { () throws(ActivityError) in
            guard let record = records.first(where: { $0.id == id }) else { return [] }
            var budget = pushBudget
            var out: [Double] = []
            for push in record.pushes where push.isWaiting && push.counted {
                let at = budget.nextFree(id, at: max(push.arrivedAt, out.last ?? push.arrivedAt))
                guard at.isFinite else { break }
                budget.record(id, at: at)
                out.append(at)
            }
            return out
        }
    }

    /// The next time something about the activities is due after now: a
    /// throttled push's delivery, an activity's 8-hour limit, its next tick
    /// or stale date (for its updater), its dismissal. Nil when nothing waits.
    public func nextDue() throws(ActivityError) -> Double? {
        try transact(reading: true) { () throws(ActivityError) in
            let now = self.now
            var next = Double.infinity
            for record in records {
                if let dismiss = record.dismissAt, dismiss > now { next = min(next, dismiss) }
                guard record.endedAt == nil else { continue }
                next = min(next, record.startedAt + policy.activityActiveLimit)
                if let waiting = record.pushes.first(where: \.isWaiting) {
                    next = min(next, pushBudget.nextFree(record.id, at: waiting.arrivedAt))
                }
                if let tick = declarations.first(where: { $0.type == record.type })?.tick {
                    next = min(next, (record.lastTick ?? record.startedAt) + tick)
                }
                if let stale = record.content.staleDate, stale > now, record.staleHandled != stale { next = min(next, stale) }
            }
            return next.isFinite ? max(next, now) : nil
        }
    }

    // MARK: Transactions

    /// Runs `body` on the working copy. Outside a call: one write
    /// transaction of the group — read the rows, apply what time has done,
    /// run `body`, write what changed. Inside a call: on the call's copy,
    /// committed with the call (`attachedWrite`).
    ///
    /// A `reading` body changes nothing: it first runs on rows read without
    /// the write lock, and only when time changed them (a delivery, a
    /// limit) does it run again in a write transaction that writes that.
    private func transact<R>(reading: Bool = false, _ body: () throws(ActivityError) -> R) throws(ActivityError) -> R {
        if reading && call == nil {
            var unchanged = false
            do throws(StoreError) {
                let rows = try group.activities(of: bundleID, cache: &cache)
                try load(rows)
                advance()
                unchanged = try save() == rows
            } catch {
                pendingChanges = []
                throw unavailable(error)
            }
            pendingChanges = []
            if unchanged { return try body() }
        }
        if let running = call {
            if !running.loaded {
                do throws(StoreError) { try load(try group.activities(of: bundleID, cache: &cache)) } catch { throw unavailable(error) }
                advance()
                // What time alone did is not the call's to write: a call
                // that only reads commits nothing (the next transaction
                // applies it again), so it cannot fail on another writer's
                // change it did not make.
                do throws(StoreError) { callBaseline = try save() } catch { throw unavailable(error) }
                if let mark = preparedMark { apply(mark) }
                call?.loaded = true
                afterCallLoad?()
            }
            advance()
            return try body()
        }
        var result: Result<R, ActivityError> = .failure(ActivityError(refusal: nil, message: "activities: not run"))
        var saved = false
        pendingChanges = []
        do throws(StoreError) {
            try group.updateActivities(of: bundleID, cache: &cache) { rows in
                do throws(StoreError) { try load(rows) } catch {
                    result = .failure(unavailable(error))
                    return
                }
                advance()
                // A refused operation changed nothing; what time did is written all the same.
                do throws(ActivityError) { result = .success(try body()) } catch { result = .failure(error) }
                do throws(StoreError) {
                    rows = try save()
                    saved = true
                } catch {
                    result = .failure(unavailable(error))
                }
            }
        } catch {
            saved = false
            result = .failure(unavailable(error))
        }
        if saved {
            changes += pendingChanges
            // The rows written are the working copy: the next load need not decode them.
            if let cache { decoded = (cache.version, records) }
        }
        pendingChanges = []
        return try result.get()
    }

    /// A store failure as the caller may see it: the store's rule
    /// (`StoreBinding.scriptMessage`), since the caller may be a script.
    private func unavailable(_ error: StoreError) -> ActivityError {
        ActivityError(refusal: nil, message: StoreBinding.scriptMessage(error, subject: "the store of \(bundleID)'s Live Activities", logger: logger,
                                                                        metadata: ["bundle": "\(bundleID)", "group": "\(group.id)"]))
    }

    /// Decodes the rows into the working copy, and rebuilds the push budget
    /// from the deliveries they record. Rows at the version last decoded
    /// are not decoded again. A row that does not decode (written by
    /// another version, or damaged) stops the load: writing back without it
    /// would delete it.
    private func load(_ rows: StoredActivities) throws(StoreError) {
        if let decoded, decoded.version == rows.version {
            records = decoded.records
        } else {
            var out: [ActivityRecord] = []
            for row in rows.activities {
                guard let record = ActivityRecord(id: row.id, row: row.record, pushes: row.pushes) else {
                    throw StoreError(.corruptValue, "store group \(group.id): activity '\(row.id)' of \(bundleID) holds a row this host cannot read; nothing was changed")
                }
                out.append(record)
            }
            records = out
            decoded = (rows.version, out)
        }
        stored = rows
        enabled = rows.enabled
        nextNumber = rows.nextNumber
        pushBudget = RefreshBudget(limit: pushesPerHour, window: 3600)
        var deliveries: [(String, Double)] = []
        for record in records {
            for push in record.pushes where push.counted { if let at = push.deliveredAt { deliveries.append((record.id, at)) } }
        }
        for (id, at) in deliveries.sorted(by: { $0.1 < $1.1 }) { pushBudget.record(id, at: at) }
    }

    /// The rows of the working copy. Only what changed since the rows were
    /// read is encoded again.
    private func save() throws(StoreError) -> StoredActivities {
        var rows = stored
        rows.enabled = enabled
        rows.nextNumber = nextNumber
        let before = Dictionary(zip(decoded?.records.map(\.id) ?? [], decoded?.records ?? []), uniquingKeysWith: { a, _ in a })
        let storedRows = Dictionary(stored.activities.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var activities: [StoredActivity] = []
        activities.reserveCapacity(records.count)
        for record in records {
            let old = before[record.id], oldRow = storedRows[record.id]
            if let old, let oldRow, old == record {
                activities.append(oldRow)
                continue
            }
            var pushes: [StoreValue] = []
            pushes.reserveCapacity(record.pushes.count)
            for (n, push) in record.pushes.enumerated() {
                if let old, let oldRow, n < old.pushes.count, n < oldRow.pushes.count, old.pushes[n] == push {
                    pushes.append(oldRow.pushes[n])
                } else {
                    pushes.append(try push.storedRow())
                }
            }
            activities.append(StoredActivity(id: record.id, record: try record.storedRecord(), pushes: pushes))
        }
        rows.activities = activities
        return rows
    }

    // MARK: Script calls

    /// Changes a call in a worker process committed (`BundleWorkers`): its
    /// rows are in the store already; the changes join this manager's.
    func adopt(_ committed: [ActivityChange]) {
        changes += committed
    }

    /// The changes so far, which this manager then forgets (a worker
    /// process's: it sends each call's to the host, and keeps none).
    func takeChanges() -> [ActivityChange] {
        defer { changes = [] }
        return changes
    }

    /// A script call starts: until `endCall`, operations work on a copy
    /// read at the first one, and commit with the call. `source` names the
    /// caller in `changes` ("intent Start").
    func beginCall(source: String) {
        call = (preparedSource ?? source, false)
        callWrite = nil
        pendingChanges = []
    }

    public var attachmentGroup: String { group.id }

    /// The call's changes, to commit with its store writes in the
    /// activities' group (nil: none).
    public func attachedWrite() throws(StoreError) -> (group: String, write: ActivityWrite)? {
        guard let call, call.loaded else { return nil }
        let new = try save()
        guard new != callBaseline else { return nil }
        let write = ActivityWrite(bundle: bundleID, old: stored, new: new)
        callWrite = write
        return (group.id, write)
    }

    /// The call ended: its changes count when it `committed`.
    func endCall(committed: Bool) {
        // A call that wrote nothing leaves time's effects to the next transaction, which notes them.
        if committed, let write = callWrite {
            changes += pendingChanges
            cache = write.written
            decoded = (write.written.version, records)
        }
        callWrite = nil
        callBaseline = nil
        pendingChanges = []
        call = nil
        preparedMark = nil
        preparedSource = nil
    }

    /// The next call runs an updater for `mark`: the call marks it handled
    /// with its own changes, so the event's updater runs once, or again
    /// after a crash that lost the call.
    func prepareCall(handling mark: ActivityEventMark, source: String) {
        preparedMark = mark
        preparedSource = source
    }

    /// The event the next call is prepared for, and its source (for a call
    /// in a worker process, which prepares its own manager the same way).
    var prepared: (mark: ActivityEventMark, source: String)? {
        preparedMark.map { ($0, preparedSource ?? "") }
    }

    /// Forgets a prepared event that no call took (the call failed before
    /// its function ran).
    func discardPrepared() {
        preparedMark = nil
        preparedSource = nil
    }

    /// Marks an event handled on its own (its updater failed).
    func markHandled(_ mark: ActivityEventMark) throws(ActivityError) {
        try transact { () throws(ActivityError) in apply(mark) }
    }

    private func apply(_ mark: ActivityEventMark) {
        guard let i = records.firstIndex(where: { $0.id == mark.activity }) else { return }
        switch mark.kind {
        case .push(let n): if n < records[i].pushes.count { records[i].pushes[n].handled = true }
        case .tick(let t): records[i].lastTick = t
        case .stale(let t): records[i].staleHandled = t
        case .signal: break
        }
    }

    // MARK: Time

    /// Delivers activity `i`'s waiting pushes whose turn has come by now:
    /// low priority at once, counted ones in order as the budget frees slots.
    private func deliverPushes(_ i: Int, before cutoff: Double = .infinity) {
        let id = records[i].id
        let end = records[i].endedAt ?? .infinity
        var blocked = false   // a counted push waits: the counted ones after it wait behind it
        for p in records[i].pushes.indices where records[i].pushes[p].isWaiting {
            let push = records[i].pushes[p]
            var at = push.arrivedAt
            if push.counted {
                if blocked { continue }
                at = max(at, pushBudget.nextFree(id, at: at))
            }
            // A push whose turn comes only after the activity ended is dropped, visibly.
            if at >= end {
                records[i].pushes[p].dropped = true
                continue
            }
            guard at <= now, at < cutoff else {
                if push.counted { blocked = true }
                continue
            }
            if push.counted { pushBudget.record(id, at: at) }
            records[i].pushes[p].deliveredAt = at
        }
    }

    /// Applies what time has done up to now: throttled pushes whose slot
    /// freed are delivered; an activity active for the 8-hour limit ends
    /// then (its pushes whose slot came before it delivered first, the rest
    /// dropped), and is dismissed the 4-hour limit later (A3); activities
    /// dismissed longer ago than the retention are forgotten.
    private func advance() {
        let t = now
        for i in records.indices where records[i].endedAt == nil {
            let limit = records[i].startedAt + policy.activityActiveLimit
            if t >= limit {
                deliverPushes(i, before: limit)
                end(i, at: limit, dismissal: .standard)
                let bytes = Self.encodedSize(records[i].attributes, records[i].content.state)
                note(.ended, records[i], bytes: bytes, at: limit, source: "limit (A3)")
            }
        }
        for i in records.indices where records[i].pushes.contains(where: \.isWaiting) {
            deliverPushes(i)
        }
        let horizon = t - policy.activityRetention
        records.removeAll { record in record.dismissAt.map { $0 < horizon } ?? false }
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

    // MARK: Checks

    private func index(_ id: String, doing what: String) throws(ActivityError) -> Int {
        guard let i = records.firstIndex(where: { $0.id == id }) else {
            throw ActivityError(refusal: nil, message: "no activity '\(id)' in bundle \(bundleID)")
        }
        let phase = records[i].phase(at: now)
        guard phase == .active || phase == .stale else {
            throw ActivityError(refusal: nil, message: "cannot \(what) activity '\(id)': it is \(phase.rawValue) (A8)")
        }
        return i
    }

    /// Checks a new state of `record` (schema, A1); returns the encoded size.
    private func check(_ state: LuaTable, of record: ActivityRecord) throws(ActivityError) -> Int {
        if let declaration = declarations.first(where: { $0.type == record.type }),
           let problem = declaration.state.problem(in: .table(state), what: "state") {
            throw refuse(.invalidState, problem)
        }
        return try size(record.attributes, state, checking: [(state, "state")])
    }

    /// A1: attributes and state, encoded together as JSON, within the
    /// limit; and `checking` (the new state, or the attributes too at a
    /// start) storable. Returns the encoded size.
    private func size(_ attributes: LuaTable, _ state: LuaTable, checking: [(LuaTable, String)]) throws(ActivityError) -> Int {
        do {
            for (table, what) in checking { _ = try ActivityRecord.stored(table, what) }
        } catch {
            throw refuse(.invalidState, error.message)
        }
        let bytes = Self.encodedSize(attributes, state)
        guard bytes <= policy.activityPayloadBytes else {
            throw refuse(.attributesTooLarge, "attributes and state encode to \(bytes) bytes, over the limit of \(policy.activityPayloadBytes) (A1)")
        }
        return bytes
    }

    /// The size A1 limits: `{"attributes":…,"state":…}` as JSON.
    public static func encodedSize(_ attributes: LuaTable, _ state: LuaTable) -> Int {
        LuaValue.table(LuaTable(fields: ["attributes": .table(attributes), "state": .table(state)])).jsonText.utf8.count
    }

    private func refuse(_ refusal: ActivityRefusal, _ message: String) -> ActivityError {
        ActivityError(refusal: refusal, message: "\(refusal.rawValue): \(message)")
    }

    private func note(_ kind: ActivityChange.Kind, _ record: ActivityRecord, bytes: Int, alert: LuaValue? = nil,
                      at: Double? = nil, source: String? = nil) {
        pendingChanges.append(ActivityChange(at: at ?? now, activity: record.id, kind: kind, source: source ?? call?.source ?? self.source,
                                             bytes: bytes, alert: alert, staleDate: record.content.staleDate,
                                             endedAt: record.endedAt, dismissAt: record.dismissAt))
    }

    /// Runs `body` with `source` naming the caller in `changes` ("cli", "app").
    public func withSource<R>(_ source: String, _ body: () throws(ActivityError) -> R) throws(ActivityError) -> R {
        let old = self.source
        self.source = source
        defer { self.source = old }
        return try body()
    }
}

/// An event an updater runs for, to mark handled with the updater's call.
struct ActivityEventMark: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// The push at this index of the activity's pushes.
        case push(Int)
        case tick(Double)
        case stale(Double)
        /// An event the app signalled: nothing to mark.
        case signal
    }
    var activity: String
    var kind: Kind
}
