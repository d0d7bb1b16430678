import LuaSandbox
import SharedStore

/// The emulated widget system's scheduler: it keeps each widget instance's
/// timeline, decides when each reloads, and calls the providers.
///
/// A reload happens when the timeline's policy makes the widget eligible
/// (T6, T7) or a request is pending (B4), but never sooner than the
/// 5-minute floor after the widget's last reload (T8), and only when the
/// refresh budget has a free slot (B1); otherwise it is deferred until a
/// slot frees (B3). Exempt events (B2) reload at once, outside floor and
/// budget. Developer mode (B5) has neither. A failed call keeps the last
/// good timeline (T10) and is retried after the floor.
///
/// The engine reads time from its runtime's clock and never moves it: a
/// driver (the simulator, or a host app's run loop) asks `nextDue()`,
/// moves the clock there and calls `runDue()`.
public final class TimelineEngine {
    public let runtime: WidgetRuntime
    /// The bundle's intents and queries, in the same sandboxes.
    public let intents: IntentRuntime
    /// Its widgets in the order they were added: those on screen, and
    /// removed ones until their history has passed `historyRetention`.
    /// (Read and written on every reload, on the engine's one thread; no
    /// host code runs while the engine holds an access to it — a reload's
    /// record is written in place, and the host's metrics hear of the
    /// reload after — so no run-time exclusivity checks.)
    @exclusivity(unchecked) public internal(set) var instances: [WidgetInstance] = []
    /// Where each widget is in `instances`, by id.
    private var positions: [Int: Int] = [:]
    /// The id the next widget gets.
    public internal(set) var nextID = 1
    /// Every intent performed through the engine, in order.
    public internal(set) var performances: [PerformanceRecord] = []
    /// Where scripts' `reload.controls` / `reload.allControls` requests go
    /// (a `ControlCenter` sets it); nil drops them.
    public var controlReloads: ((ReloadRequest) -> Void)?
    /// (It, `dues`, `queue` and the settings and change records below are
    /// read or set on every reload, on the engine's one thread, and never
    /// held across a call that could reach the engine again: no run-time
    /// exclusivity checks.)
    @exclusivity(unchecked) var budget: RefreshBudget
    /// Each live instance's next reload, cached: (time, when it was wanted, reason).
    @exclusivity(unchecked) private var dues: [Due?] = []
    /// The same times, earliest first.
    @exclusivity(unchecked) private var queue = DueQueue()
    /// Each instance's slot in `budget` (its `budgetKey`), found once.
    @exclusivity(unchecked) private var budgetSlots: [Int] = []

    /// How many log lines each instance keeps.
    @exclusivity(unchecked) public var logLinesKept = 200
    /// How long each widget's history (reloads, displays, failures, notes,
    /// budget use, logs) is kept; older records are forgotten, and a
    /// removed widget's whole record once it was removed longer ago than
    /// this. Infinity keeps everything (the simulator does, for its report).
    @exclusivity(unchecked) public var historyRetention: Double = 2 * 86_400
    @exclusivity(unchecked) var lastTrim = -Double.infinity

    /// When true, the engine notes what changes in its lasting state
    /// (`EngineState`) for `takeStateChanges()`; a host that persists it sets this.
    @exclusivity(unchecked) public var recordsStateChanges = false
    /// What changed since `takeStateChanges()` last ran: which widgets and
    /// budget windows (their state is read when it is taken).
    @exclusivity(unchecked) private var changedWidgets = Set<Int>()
    private var removedWidgets: [Int] = []
    @exclusivity(unchecked) private var changedBudgets = Set<String>()
    private var nextIDChanged = false

    struct Due {
        var at: Double
        var wantedAt: Double
        var reason: ReloadReason
    }

    public init(runtime: WidgetRuntime) {
        self.runtime = runtime
        intents = IntentRuntime(pool: runtime.pool)
        budget = RefreshBudget(limit: runtime.services.policy.budget, window: runtime.services.policy.budgetWindow)
    }

    var policy: HostPolicy { runtime.services.policy }
    var now: Double { runtime.services.clock.now() }
    /// The 5-minute floor (T8), none in developer mode; never under one
    /// second, so that a widget that is always eligible cannot reload
    /// endlessly in one instant.
    private var floor: Double { max(1, policy.developerMode ? 0 : policy.minimumReloadInterval) }

    // MARK: Events

    /// Adds a widget: its placeholder shows at once, then its timeline
    /// loads (exempt). Returns its id.
    @discardableResult
    public func addWidget(_ configuration: WidgetConfiguration) -> Int {
        let t = now
        var instance = WidgetInstance(id: nextID, configuration: configuration, addedAt: t)
        nextID += 1
        if recordsStateChanges { nextIDChanged = true }
        let placeholder = runtime.placeholder(configuration)
        note(placeholder.outcome, role: .placeholder, at: t, into: &instance)
        instance.placeholder = placeholder.value
        instance.displays.append((t, .placeholder(placeholder.value)))
        let i = insert(instance)
        reload(i, reason: .widgetAdded, deferredFrom: nil)
        return instance.id
    }

    /// Appends an instance; returns its position.
    @discardableResult
    func insert(_ instance: WidgetInstance) -> Int {
        let i = instances.count
        positions[instance.id] = i
        instances.append(instance)
        dues.append(nil)
        budgetSlots.append(budget.slot(budgetKey(i)))
        return i
    }

    /// Widget `id` (removed ones too, until their history is forgotten).
    public func instance(_ id: Int) -> WidgetInstance? {
        positions[id].map { instances[$0] }
    }

    /// Where widget `id` is in `instances`.
    func position(of id: Int) -> Int? { positions[id] }

    /// Removes a widget (its history stays in `instances` for `historyRetention`).
    public func removeWidget(_ id: Int) {
        guard let i = positions[id], instances[i].removedAt == nil else { return }
        instances[i].removedAt = now
        instances[i].displays.append((now, .removed))
        dues[i] = nil
        queue.set(i, at: nil)
        recordRemoval(id)
        if policy.budgetScope == .instance { forgetBudget(budgetKey(i)) }
    }

    /// A reload request (from the app or a script) for the widgets of
    /// `kind`, or all widgets when nil. It happens when floor and budget
    /// allow; requests made before it happens coalesce into it.
    public func requestReload(kind: String?) throws(ParameterError) {
        try checkKind(kind)
        requestKnownReload(kind: kind)
    }

    /// A widget kind the bundle declares (nil: all), or an error that lists them.
    private func checkKind(_ kind: String?) throws(ParameterError) {
        guard let kind, runtime.bundle.declarations.widget(kind) == nil else { return }
        let kinds = runtime.bundle.declarations.widgets.map(\.kind).joined(separator: ", ")
        throw ParameterError(message: "bundle \(runtime.bundle.manifest.id) has no widget kind '\(kind)' (kinds: \(kinds.isEmpty ? "none" : kinds))")
    }

    /// `requestReload` of a kind already checked (scripts' requests are, by `reload`).
    private func requestKnownReload(kind: String?) {
        let t = now
        for i in instances.indices where instances[i].removedAt == nil && (kind == nil || instances[i].configuration.kind == kind) {
            if instances[i].pendingRequestAt == nil { instances[i].pendingRequestAt = t }
            instances[i].pendingRequests += 1
            recordChange(i)
            schedule(i)
        }
    }

    /// An exempt event (app in the foreground, locale or time change, an
    /// intent run from the widget): the widgets of `kind` (all when nil)
    /// reload now, outside floor and budget.
    public func reloadNow(kind: String?, reason: ReloadReason) throws(ParameterError) {
        try checkKind(kind)
        for i in instances.indices where instances[i].removedAt == nil && (kind == nil || instances[i].configuration.kind == kind) {
            reload(i, reason: reason, deferredFrom: nil)
        }
    }

    /// Applies a script's reload requests.
    func apply(_ requests: [ReloadRequest]) {
        if !requests.isEmpty { applyRequests(requests) }
    }

    /// (Out of line: most calls request nothing.)
    @inline(never)
    private func applyRequests(_ requests: [ReloadRequest]) {
        for request in requests {
            switch request {
            case .timelines(let kind): requestKnownReload(kind: kind)
            case .allTimelines: requestKnownReload(kind: nil)
            case .controls, .allControls: controlReloads?(request)
            }
        }
    }

    // MARK: Scheduling

    /// When the next reload is due, or nil when none is.
    public func nextDue() -> Double? {
        queue.first()?.at
    }

    /// Runs every reload due at or before now, earliest first (ties in
    /// the order widgets were added).
    public func runDue() {
        let t = now
        // One instant's reloads hand their store read transactions on to
        // each other while nothing is committed (`reusingReadTransactions`);
        // with nothing due, no scope is made.
        if let (_, at) = queue.first(), at <= t {
            SharedStore.reusingReadTransactions(of: runtime.services.store) {
                while let (i, at) = queue.first(), at <= t, let due = dues[i] {
                    reload(i, reason: due.reason, deferredFrom: due.at > due.wantedAt ? due.wantedAt : nil)
                }
            }
        }
        trimHistory(at: t)
    }

    /// Applies `historyRetention`, at most once an hour of (host) time: older
    /// history is forgotten, and widgets removed before it are freed.
    private func trimHistory(at t: Double) {
        guard historyRetention.isFinite, t - lastTrim >= 3600 else { return }
        lastTrim = t
        let horizon = t - historyRetention
        for i in instances.indices { instances[i].trim(before: horizon) }
        guard instances.contains(where: { $0.removedAt.map { $0 < horizon } ?? false }) else { return }
        // Free them; positions, cached dues and the queue are rebuilt (removed widgets have no due).
        var kept: [Int] = []
        for i in instances.indices {
            if instances[i].removedAt.map({ $0 >= horizon }) ?? true {
                kept.append(i)
            } else if policy.budgetScope == .instance {
                // A widget's own budget slot goes with it (its window went at its removal).
                budget.release(slot: budgetSlots[i])
            }
        }
        instances = kept.map { instances[$0] }
        dues = kept.map { dues[$0] }
        budgetSlots = kept.map { budgetSlots[$0] }
        positions = Dictionary(uniqueKeysWithValues: instances.enumerated().map { ($1.id, $0) })
        queue = DueQueue()
        for i in instances.indices { queue.set(i, at: dues[i]?.at) }
    }

    /// Works out instance `i`'s next reload and queues it.
    func schedule(_ i: Int) {
        let next = due(i)
        dues[i] = next
        queue.set(i, at: next?.at)
    }

    /// When widget `id` reloads next and why, or nil when nothing will reload it.
    public func nextReload(of id: Int) -> NextReload? {
        guard let i = positions[id], let due = dues[i] else { return nil }
        return NextReload(at: due.at, wantedAt: due.wantedAt, reason: due.reason)
    }

    /// Budget key of instance `i` under the policy's scope. (Out of line:
    /// a reload makes one only when changes are recorded.)
    @inline(never)
    func budgetKey(_ i: Int) -> String {
        switch policy.budgetScope {
        case .instance: return "instance:\(instances[i].id)"
        case .kind: return "kind:\(instances[i].configuration.kind)"
        case .app: return "app"
        }
    }

    /// Counted reloads and remaining slots of instance `i`'s budget now.
    public func budgetUsage(of id: Int) -> (used: Int, remaining: Int) {
        guard let i = positions[id] else { return (0, policy.budget) }
        let used = budget.used(slot: budgetSlots[i], at: now)
        return (used, max(0, policy.budget - used))
    }

    /// When instance `i` reloads next, and why; nil when nothing will reload it.
    private func due(_ i: Int) -> Due? {
        // The fields it needs, read in place: a copy of the instance would
        // retain and release each of its history arrays (every reload).
        guard instances[i].removedAt == nil else { return nil }
        let lastReloadAt = instances[i].lastReloadAt
        var wanted: Double? = nil
        var reason = ReloadReason.policy
        if let request = instances[i].pendingRequestAt {
            wanted = request
            reason = .request
        }
        // Without a good timeline, try again after the floor.
        let policyAt = instances[i].timeline != nil ? instances[i].timeline!.eligibleAt : (lastReloadAt ?? now)
        if let p = policyAt, wanted == nil || p < wanted! {
            wanted = p
            reason = .policy
        }
        guard var at = wanted else { return nil }
        if let last = lastReloadAt { at = max(at, last + floor) }
        let wantedAt = at
        if !policy.developerMode { at = max(at, budget.nextFree(slot: budgetSlots[i], at: at)) }
        return Due(at: at, wantedAt: wantedAt, reason: reason)
    }

    // MARK: Lasting state

    /// What changed in the engine's lasting state since the last call
    /// (only while `recordsStateChanges` is on).
    public func takeStateChanges() -> EngineStateChanges {
        defer {
            changedWidgets = []
            removedWidgets = []
            changedBudgets = []
            nextIDChanged = false
        }
        var changes = EngineStateChanges()
        if nextIDChanged { changes.nextID = nextID }
        changes.widgets = changedWidgets.sorted().compactMap { id in
            position(of: id).flatMap { instances[$0].removedAt == nil ? instances[$0].state : nil }
        }
        changes.removed = removedWidgets
        let t = now
        for key in changedBudgets { changes.budgets[key] = budget.window(key, at: t) }   // empty: gone
        return changes
    }

    /// Notes that instance `i`'s lasting state changed.
    func recordChange(_ i: Int) {
        if recordsStateChanges { insertChange(i) }
    }

    @inline(never)
    private func insertChange(_ i: Int) { changedWidgets.insert(instances[i].id) }

    /// Notes that widget `id` is gone from the lasting state.
    func recordRemoval(_ id: Int) {
        guard recordsStateChanges else { return }
        changedWidgets.remove(id)
        removedWidgets.append(id)
    }

    /// Notes that budget window `key` changed (or is gone); the key is made
    /// only when changes are recorded (a reload's is, on every reload).
    func recordBudgetChange(_ key: @autoclosure () -> String) {
        if recordsStateChanges { insertBudgetChange(key()) }
    }

    @inline(never)
    private func insertBudgetChange(_ key: String) { changedBudgets.insert(key) }

    private func forgetBudget(_ key: String) {
        budget.restore(key, [])
        recordBudgetChange(key)
    }

    // MARK: Reloading

    func reload(_ i: Int, reason: ReloadReason, deferredFrom: Double?) {
        let t = now
        let counted = !reason.isExempt && !policy.developerMode
        let slot = budgetSlots[i]
        let used: Int
        if counted {
            used = budget.record(slot: slot, at: t)
            recordBudgetChange(budgetKey(i))
        } else {
            used = budget.used(slot: slot, at: t)
        }
        let result = runtime.timeline(instances[i].configuration, budget: (used, max(0, policy.budget - used)))
        record(result, reason: reason, counted: counted, used: used, deferredFrom: deferredFrom, at: t, into: &instances[i])
        // After the record is written, not while: the host's metrics may read the engine.
        runtime.pool.metrics.reload(reason: reason.rawValue, counted: counted, deferred: deferredFrom != nil,
                                    budgetUsed: counted ? used : nil, budgetLimit: policy.budget)
        recordChange(i)
        apply(result.outcome.reloadRequests)
        if counted && policy.budgetScope != .instance {
            scheduleSharing(slot)
        } else {
            schedule(i)
        }
    }

    /// Schedules again every instance whose budget is `slot` (a budget
    /// shared by kind or app: one reload moves them all). Out of line.
    @inline(never)
    private func scheduleSharing(_ slot: Int) {
        for j in instances.indices where budgetSlots[j] == slot { schedule(j) }
    }

    /// Records a reload on the instance (in place: its history is not copied).
    private func record(_ result: ProviderResult<Timeline>, reason: ReloadReason, counted: Bool, used: Int,
                        deferredFrom: Double?, at t: Double, into instance: inout WidgetInstance) {
        instance.append(ReloadRecord(at: t, reason: reason, counted: counted, deferredFrom: deferredFrom,
                                             coalescedRequests: instance.pendingRequests, status: result.outcome.status,
                                             elapsed: result.outcome.elapsed))
        instance.lastReloadAt = t
        instance.pendingRequestAt = nil
        instance.pendingRequests = 0
        if counted { instance.budgetUsage.append((t, used)) }
        if let timeline = result.value {
            instance.timeline = timeline
            instance.timelineAt = t
            instance.displays.append((t, .timeline(timeline)))
        }
        note(result.outcome, role: .timeline, at: t, into: &instance)
    }

    /// Records a call's failure, warnings and logs on the instance.
    private func note(_ outcome: CallOutcome, role: CallRole, at t: Double, into instance: inout WidgetInstance) {
        if !outcome.succeeded {
            instance.append(CallFailure(at: t, role: role, diagnostic: outcome.diagnostic ?? Diagnostic(.error, "failed")))
        }
        for warning in outcome.warnings { instance.notes.append(CallNote(at: t, message: warning)) }
        for line in outcome.logs { instance.logs.append((t, line.level, line.text)) }
        if instance.logs.count > logLinesKept { instance.logs.removeFirst(instance.logs.count - logLinesKept) }
    }
}
