import CoreMetrics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import LunetteSystem
import Logging
import LuaSandbox
import SharedStore

/// The widget host as a service, for apps and servers that embed it: an
/// actor that owns bundles, the store, the clock and the rules, runs every
/// call on a large-stack thread of its own (its executor: awaiting it
/// blocks no cooperative thread, and calls need no hop), and tells what
/// happens as a stream of `HostEvent`s.
///
/// ```swift
/// let service = WidgetService(store: SharedStore(root: groupRoot))
/// let tasks = try await service.load("Widgets/tasks")
/// let small = try await service.addWidget(bundle: tasks, kind: "TaskCount")
/// let watcher = Task { for await event in service.events { print(event) } }
/// let running = Task { await service.run() }          // sleeps until something is due
/// try await service.requestReload(bundle: tasks, kind: "TaskCount")   // wakes it
/// ```
///
/// Each bundle gets a `TimelineEngine` (widgets, reloads, budgets), a
/// `ControlCenter`, and its Live Activities when it declares any. Two
/// services run at the same time on two threads; one service's calls run
/// one at a time, as a widget extension's do.
public actor WidgetService {
    /// The thread every call of this service runs on.
    public nonisolated let thread: LuaThread
    public nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    /// What happens, in order. One consumer reads it; events are kept (up
    /// to `eventBuffer`, the oldest dropped first) until it does.
    public nonisolated let events: AsyncStream<HostEvent>
    let continuation: AsyncStream<HostEvent>.Continuation

    public nonisolated let store: SharedStore
    public nonisolated let clock: HostClock
    public let calendar: HostCalendar
    public let policy: HostPolicy

    var loaded: [String: LoadedBundle] = [:]
    nonisolated let waker = Waker()
    /// The bundles loaded as plugins (`loadPlugin`), by id.
    var pluginRecords: [String: PluginRecord] = [:]
    /// Plugins' quarantines, told by their ledgers during calls, sent with
    /// the next `publish()` after the events of the call that caused them.
    nonisolated let pluginEvents = PendingPluginEvents()
    /// Ends the call running now when the task that asked for it is cancelled.
    private nonisolated let canceller = CallCanceller()

    /// Events kept for a consumer that reads slower than they come.
    public static let eventBuffer = 10_000

    /// Where scripts' log lines go as they happen (metadata: bundle, role,
    /// function, call number).
    public nonisolated let scriptLogger: Logger

    /// Where the service's figures go (nil: `MetricsSystem.factory`).
    private nonisolated let metrics: MetricsFactory?
    /// The app's own modules for scripts (`HostModule`).
    public nonisolated let modules: [HostModule]
    /// Where the service says what goes wrong outside scripts (a state it
    /// could not keep, a widget it could not restore).
    public nonisolated let logger: Logger
    /// Where bundles' lasting state is kept (`persistence`).
    public nonisolated let persistence: Persistence
    /// What the service grants the bundles it loads as plugins
    /// (`loadPlugin`): capabilities per trust level, and quotas. nil: it
    /// loads no plugins.
    public nonisolated let pluginPolicy: PluginPolicy?
    /// The worker processes of plugins loaded with `isolation: .process`
    /// (nil: none can be).
    public nonisolated let workers: BundleWorkers?

    /// Where a service keeps each bundle's lasting state: its widgets
    /// (stable ids, last timelines, pending requests), refresh-budget
    /// windows and control values.
    public enum Persistence: Sendable, Equatable {
        /// In the store: the bundle's first app group's database, or for a
        /// bundle without one, group `fallbackGroup`'s. A service started
        /// again on the same store continues where it was.
        case store(fallbackGroup: String)
        /// Nowhere: every start is a fresh screen.
        case none

        /// In the store; bundles without an app group in group `lunette.host`.
        public static let standard = Persistence.store(fallbackGroup: "lunette.host")
    }

    public init(store: SharedStore, clock: HostClock = SystemClock(), calendar: HostCalendar = .fromEnvironment(),
                policy: HostPolicy = .standard, persistence: Persistence = .standard,
                logger: Logger = Logger(label: "lunette.service"), scriptLogger: Logger = Logger(label: "lunette.scripts"),
                metrics: MetricsFactory? = nil, modules: [HostModule] = [], pluginPolicy: PluginPolicy? = nil,
                workers: BundleWorkers? = nil, threadName: String = "lunette.service") {
        self.store = store
        self.pluginPolicy = pluginPolicy
        self.workers = workers
        self.clock = clock
        self.calendar = calendar
        self.policy = policy
        self.persistence = persistence
        self.logger = logger
        self.scriptLogger = scriptLogger
        self.metrics = metrics
        self.modules = modules
        thread = LuaThread(name: threadName)
        (events, continuation) = AsyncStream.makeStream(of: HostEvent.self, bufferingPolicy: .bufferingNewest(Self.eventBuffer))
    }

    deinit { continuation.finish() }

    // MARK: Bundles and widgets

    /// Loads the bundle at `path` (checked; every problem with file:line)
    /// and returns its id. Loading a bundle already loaded is an error.
    @discardableResult
    public func load(_ path: String) throws -> String {
        let bundle = try ScriptBundle.load(path, calendar: calendar)
        return try add(bundle)
    }

    /// Adds a bundle already loaded. With `persistence` in the store, its
    /// widgets, budgets and controls continue from the state kept there:
    /// they are on screen again (no call is made), and reload when they
    /// would have. A widget or control the bundle no longer declares is
    /// dropped, with a warning in `logger`.
    @discardableResult
    public func add(_ bundle: ScriptBundle) throws -> String {
        try insert(bundle, announcing: nil)
    }

    /// Adds `bundle`, sending `event` (when given) before the events of its
    /// kept widgets.
    func insert(_ bundle: ScriptBundle, announcing event: HostEvent?) throws -> String {
        let id = bundle.manifest.id
        guard loaded[id] == nil else { throw ServiceError("bundle \(id) is already loaded") }
        let b = LoadedBundle(bundle: bundle, services: try services(for: bundle))
        if case .store(let fallback) = persistence {
            let group = try store.group(bundle.manifest.appGroups.first ?? fallback)
            for note in try b.keepState(in: BundleState(group: group, bundle: id)) {
                logger.warning("\(note)", metadata: ["bundle": "\(id)"])
            }
        }
        loaded[id] = b
        if let event { continuation.yield(event) }
        publish()
        waker.wake()   // run() watches the new bundle, and its kept widgets may be due
        return id
    }

    /// What a bundle's calls get from this service.
    private func services(for bundle: ScriptBundle) throws -> HostServices {
        var services = try HostServices(store: store, clock: clock, calendar: calendar, policy: policy).withActivities(of: bundle)
        services.scriptLogger = scriptLogger
        services.canceller = canceller
        services.metrics = metrics
        services.modules = modules
        if let plugin = pluginRecords[bundle.manifest.id] {
            services.grants = bundle.grants
            services.ledger = plugin.ledger
            if plugin.isolation == .process { services.workers = workers }
        }
        return services
    }

    /// Loads a new version of bundle `id` (from `path`, default where it
    /// was loaded from) beside the running one, checks it — its
    /// declarations, then one run of each widget's placeholder and timeline
    /// and each control's value, under the limits — and swaps it in
    /// between two calls: widgets, budgets, controls and activities go on,
    /// and the widgets reload at once (exempt, `.newVersion`), as an app's
    /// update reloads its widgets. When the check fails, the running
    /// version stays and `BundleUpdateError` says why, with file:line.
    /// Each call's outcome names the version it ran (`bundleVersion`).
    @discardableResult
    public func update(bundle id: String, from path: String? = nil) async throws -> String {
        let old = try bundle(id)
        let candidate: LoadedBundle
        do {
            let next = try reloadBundle(path ?? old.bundle.path, id: id)
            guard next.manifest.id == id else {
                throw BundleUpdateError(bundle: id, version: next.version, diagnostics: [
                    Diagnostic(.invalid, "bundle.json: the new version's id is \(next.manifest.id), not \(id)")])
            }
            candidate = LoadedBundle(bundle: next, services: try services(for: next))
            let failures = await cancellable { candidate.check() }
            guard failures.isEmpty else { throw BundleUpdateError(bundle: id, version: next.version, diagnostics: failures) }
        } catch {
            let failure = (error as? BundleUpdateError)
                ?? BundleUpdateError(bundle: id, version: nil, diagnostics: (error as? LocatedErrors)?.errors ?? [Diagnostic(.invalid, "\(error)")])
            continuation.yield(.bundleUpdateFailed(bundle: id, version: failure.version, diagnostics: failure.diagnostics))
            throw failure
        }
        for note in candidate.takeOver(from: old) { logger.warning("\(note)", metadata: ["bundle": "\(id)"]) }
        loaded[id] = candidate
        continuation.yield(.bundleUpdated(bundle: id, version: candidate.bundle.version, previous: old.bundle.version))
        await cancellable {
            try? candidate.engine.reloadNow(kind: nil, reason: .newVersion)
            candidate.controls.reload(nil)
        }
        publish()
        waker.wake()
        return candidate.bundle.version
    }

    /// Wakes `run()` to look again at what is due (after the clock was moved, say).
    public nonisolated func wake() { waker.wake() }

    /// The bundle `id` running now (its files as loaded, its declarations).
    public func scriptBundle(_ id: String) throws -> ScriptBundle { try bundle(id).bundle }

    /// The version of bundle `id` running now (`ScriptBundle.version`).
    public func version(of id: String) throws -> String { try bundle(id).bundle.version }

    /// The ids of the loaded bundles, sorted.
    public var bundles: [String] { loaded.keys.sorted() }

    /// The widgets of `bundle` on screen, in the order they were added
    /// (after a restart: those kept from before).
    public func widgets(bundle: String) throws -> [WidgetID] {
        try self.bundle(bundle).engine.instances.filter { $0.removedAt == nil }.map { WidgetID(bundle: bundle, number: $0.id) }
    }

    /// Adds a widget of `kind` (in `family`, default its first; `values`
    /// for its configuration intent): its placeholder shows, then its
    /// first timeline, exempt (as when the user adds it).
    public func addWidget(bundle: String, kind: String, family: WidgetFamily? = nil,
                          values: [String: LuaValue] = [:]) async throws -> WidgetID {
        let b = try self.bundle(bundle)
        let configuration = try b.runtime.configuration(kind: kind, family: family, values: values)
        let number = await cancellable { b.engine.addWidget(configuration) }
        publish()
        waker.wake()   // its next reload or entry may come before what run() sleeps until
        return WidgetID(bundle: bundle, number: number)
    }

    /// Removes a widget; its number is not given again.
    public func removeWidget(_ id: WidgetID) throws {
        let b = try bundle(id.bundle)
        _ = try instance(id)
        b.engine.removeWidget(id.number)
        publish()
    }

    /// What widget `id` shows now (its placeholder before its first timeline).
    public func shown(_ id: WidgetID) throws -> TimelineEntry? {
        try instance(id).shown(at: clock.now())
    }

    /// Widget `id`'s state: configuration, timeline, reloads, failures.
    public func widget(_ id: WidgetID) throws -> WidgetInstance { try instance(id) }

    /// When widget `id` reloads next and why (deferred by the budget or
    /// not); nil when nothing will reload it.
    public func nextReload(_ id: WidgetID) throws -> NextReload? {
        _ = try instance(id)
        return try bundle(id.bundle).engine.nextReload(of: id.number)
    }

    /// Counted reloads of widget `id`'s refresh budget in the window now, and the slots left (B1).
    public func budget(_ id: WidgetID) throws -> (used: Int, remaining: Int) {
        _ = try instance(id)
        return try bundle(id.bundle).engine.budgetUsage(of: id.number)
    }

    /// The controls of `bundle` in Control Center, in the order they were added.
    public func controlKinds(bundle: String) throws -> [String] {
        try self.bundle(bundle).controls.controls.map(\.kind)
    }

    /// Control `kind` of `bundle` as Control Center shows it (nil until added).
    public func control(bundle: String, kind: String) throws -> ControlRecord? {
        try self.bundle(bundle).controls.control(kind)
    }

    // MARK: Provider calls

    /// The placeholder of a widget of `kind` (no widget is added): L1's
    /// deadline, no store.
    public func placeholder(bundle: String, kind: String, family: WidgetFamily? = nil,
                            values: [String: LuaValue] = [:]) async throws -> ProviderResult<TimelineEntry> {
        let runtime = try self.bundle(bundle).runtime
        let configuration = try runtime.configuration(kind: kind, family: family, values: values)
        defer { publishPluginEvents() }
        return await cancellable { runtime.placeholder(configuration) }
    }

    /// The snapshot of a widget of `kind` (the widget gallery; `isPreview`).
    public func snapshot(bundle: String, kind: String, family: WidgetFamily? = nil, values: [String: LuaValue] = [:],
                         isPreview: Bool = true) async throws -> ProviderResult<TimelineEntry> {
        let runtime = try self.bundle(bundle).runtime
        let configuration = try runtime.configuration(kind: kind, family: family, values: values)
        defer { publishPluginEvents() }
        return await cancellable { runtime.snapshot(configuration, isPreview: isPreview) }
    }

    /// A timeline of a widget of `kind`, computed now, outside any widget's
    /// budget and history (a server answering a device, a preview). Widgets
    /// on screen reload through `requestReload` and `run()`.
    public func timeline(bundle: String, kind: String, family: WidgetFamily? = nil,
                         values: [String: LuaValue] = [:]) async throws -> ProviderResult<Timeline> {
        let runtime = try self.bundle(bundle).runtime
        let configuration = try runtime.configuration(kind: kind, family: family, values: values)
        defer { publishPluginEvents() }
        return await cancellable { runtime.timeline(configuration) }
    }

    // MARK: What the app does

    /// The app asks for a reload of `kind` (all when nil): counted, when
    /// floor and budget allow; it wakes `run()`.
    public func requestReload(bundle: String, kind: String?) throws {
        try self.bundle(bundle).engine.requestReload(kind: kind)
        publish()   // the request is kept: a restart still answers it
        waker.wake()
    }

    /// An exempt reload now (the app came to the foreground, the locale or
    /// the time zone changed…).
    public func reloadNow(bundle: String, kind: String?, reason: ReloadReason) async throws {
        let engine = try self.bundle(bundle).engine
        try await cancellable { () throws(ParameterError) in try engine.reloadNow(kind: kind, reason: reason) }
        publish()
    }

    /// Performs an intent from the app (or, with `widget`, from that
    /// widget's button: then it reloads at once, exempt, I2).
    @discardableResult
    public func perform(bundle: String, intent: String, parameters: [String: LuaValue] = [:],
                        from widget: WidgetID? = nil) async throws -> IntentPerformance {
        let b = try self.bundle(bundle)
        if let widget { _ = try instance(widget) }
        let performance = try await cancellable { () throws(IntentError) in
            if let widget { return try b.engine.tap(widget.number, intent: intent, parameters: parameters) }
            return try b.engine.perform(intent, parameters: parameters)
        }
        publish()
        waker.wake()
        return performance
    }

    /// Adds a control to Control Center: its value is read (C2). Returns what it shows.
    @discardableResult
    public func addControl(bundle: String, kind: String) async throws -> LuaValue? {
        let b = try self.bundle(bundle)
        defer { publish() }
        return try await cancellable { () throws(IntentError) in try b.controls.add(kind) }.value
    }

    /// Taps a control (C3): a toggle flips at once, its action performs, its value is read again.
    @discardableResult
    public func tapControl(bundle: String, kind: String) async throws -> ControlTap {
        let b = try self.bundle(bundle)
        defer { publish() }
        return try await cancellable { () throws(IntentError) in try b.controls.tap(kind) }
    }

    /// The app asks for the values of the controls of `kind` (all when nil) again.
    public func reloadControls(bundle: String, kind: String?) async throws {
        let b = try self.bundle(bundle)
        defer { publish() }
        await cancellable { b.controls.reload(kind) }
    }

    /// The app, in the foreground, starts a Live Activity (A1–A9: a refused
    /// request throws `ActivityError` with its `refusal`).
    public func startActivity(bundle: String, type: String, attributes: LuaTable, state: LuaTable,
                              staleDate: Double? = nil, relevance: Double = 0) throws -> ActivityRecord {
        let live = try activities(bundle)
        defer { publish(); waker.wake() }
        return try live.manager.request(type: type, attributes: attributes, state: state, staleDate: staleDate,
                                        relevance: relevance, from: .app).get()
    }

    /// The app updates an activity's content.
    @discardableResult
    public func updateActivity(bundle: String, id: String, state: LuaTable, staleDate: Double? = nil,
                               relevance: Double? = nil) throws -> ActivityRecord {
        let live = try activities(bundle)
        defer { publish(); waker.wake() }
        return try live.manager.update(id, state: state, staleDate: staleDate, relevance: relevance)
    }

    /// The app ends an activity (A5).
    @discardableResult
    public func endActivity(bundle: String, id: String, state: LuaTable? = nil,
                            dismissal: ActivityManager.Dismissal = .standard) throws -> ActivityRecord {
        let live = try activities(bundle)
        defer { publish() }
        return try live.manager.finish(id, state: state, dismissal: dismissal)
    }

    /// A bundle's activities on screen, the most relevant first (A9).
    public func activities(bundle: String) throws -> [ActivityRecord] {
        try activities(bundle).manager.list()
    }

    /// A push update for an activity (A6); its updater runs when it is delivered.
    @discardableResult
    public func push(bundle: String, activity: String, payload: LuaValue, priority: Int = 10) async throws -> PushRecord {
        let live = try activities(bundle)
        defer { publish(); waker.wake() }
        let record = try await cancellable { () throws(ActivityError) in try live.push(activity, payload: payload, priority: priority) }
        if record.isWaiting { continuation.yield(.pushThrottled(bundle: bundle, activity: activity, at: record.arrivedAt)) }
        return record
    }

    /// An event the app signals to an activity's updater.
    public func signal(bundle: String, activity: String, name: String, payload: LuaValue = .nil) async throws {
        let live = try activities(bundle)
        defer { publish() }
        try await cancellable { () throws(ActivityError) in try live.signal(activity, name: name, payload: payload) }
    }

    private func activities(_ bundle: String) throws -> ActivityUpdaters {
        guard let live = try self.bundle(bundle).live else { throw ServiceError("bundle \(bundle) declares no activity { }") }
        return live
    }

    // MARK: Time

    /// When something is next due in any bundle: a reload, an entry's
    /// date (what a widget shows changes), an activity's tick, stale date,
    /// throttled push or limit. Nil when nothing waits.
    public func nextDue() -> Double? {
        var next = Double.infinity
        let now = clock.now()
        for b in loaded.values {
            if let due = b.engine.nextDue() { next = min(next, due) }
            for instance in b.engine.instances where instance.removedAt == nil {
                if let date = instance.timeline?.entries.first(where: { $0.date > now })?.date { next = min(next, date) }
            }
            if let due = try? b.live?.nextDue() { next = min(next, due) }   // dismissals included: they are events
        }
        return next.isFinite ? next : nil
    }

    /// Runs what is due by now in every bundle, and publishes what happened.
    public func runDue() async {
        for b in loaded.values {
            await cancellable {
                b.engine.runDue()
                try? b.live?.runDue()
            }
        }
        publish()
    }

    /// Runs until the task is cancelled: what is due, then sleeps until the
    /// next thing is due on the real clock, or until the app asks for
    /// something (a reload request, a perform, a push), or until another
    /// process changes a bundle's Live Activities in the store (a push
    /// from `lunette activity push`, an app's update). Use a `SystemClock`;
    /// drive a `VirtualClock` with `runDue()` and `nextDue()`.
    public func run() async {
        var watched: [String] = []
        var observations: [StoreObservation] = []
        defer { for observation in observations { observation.cancel() } }
        while !Task.isCancelled {
            if watched != bundles {   // bundles loaded since: watch theirs too
                watched = bundles
                observations = watchActivityStores()
            }
            await runDue()
            let delay = nextDue().map { max(0, $0 - clock.now()) }
            await waker.sleep(seconds: delay)
        }
    }

    /// Wakes `run()` when another process or connection changes the
    /// activities of a loaded bundle (or the store cannot tell what changed).
    private func watchActivityStores() -> [StoreObservation] {
        var observations: [StoreObservation] = []
        let waker = self.waker
        for b in loaded.values where b.live != nil {
            let id = b.bundle.manifest.id
            guard let groupID = b.bundle.manifest.appGroups.first else { continue }
            do {
                observations.append(try store.group(groupID).observe { change in
                    if !change.isLocal && (change.activities.contains(id) || !change.isComplete) { waker.wake() }
                })
            } catch {
                logger.error("run() cannot watch the store of bundle \(id) for other processes' pushes: \(error)", metadata: ["bundle": "\(id)"])
            }
        }
        return observations
    }

    // MARK: Internals

    /// Runs `body` (a call into Lua); when the task is cancelled meanwhile,
    /// the running call ends as at its deadline.
    func cancellable<T, E: Error>(_ body: () throws(E) -> T) async throws(E) -> T {
        let canceller = self.canceller
        let result: Result<T, E> = await withTaskCancellationHandler {
            Result { () throws(E) -> T in
                try canceller.scope { () throws(E) -> T in
                    if Task.isCancelled { canceller.cancel() }   // cancelled before the scope began
                    if thread.isCurrent { return try body() }
                    // Once in CI this body ran on a worker thread of Swift's pool,
                    // beside an actor job on the service's thread (a data race:
                    // not reproduced since). The service's thread runs it instead,
                    // in turn with the actor's jobs, and the host log says so.
                    logger.warning("a WidgetService call ran off the service's thread (\(HostThread.current)); it was moved there")
                    return try thread.sync(body)
                }
            }
        } onCancel: {
            canceller.cancel()
        }
        return try result.get()
    }

    func bundle(_ id: String) throws -> LoadedBundle {
        guard let b = loaded[id] else {
            throw ServiceError("no bundle \(id) in this service (bundles: \(bundles.isEmpty ? "none" : bundles.joined(separator: ", ")))")
        }
        return b
    }

    private func instance(_ id: WidgetID) throws -> WidgetInstance {
        guard let instance = try bundle(id.bundle).engine.instance(id.number) else { throw ServiceError("no widget \(id)") }
        return instance
    }

    /// Keeps what changed in each bundle's lasting state, then sends the
    /// events of what happened since the last time, bundle by bundle:
    /// reloads, failures, budget waits, changes of what is shown,
    /// performs, activity changes and updater runs.
    func publish() {
        let now = clock.now()
        for id in loaded.keys.sorted() {
            let b = loaded[id]!
            b.saveState(logger: logger)
            for event in b.newEvents(at: now) { continuation.yield(event) }
            for event in pluginEvents.take(plugin: id) { continuation.yield(event) }
        }
    }

    /// Sends what plugins' ledgers told since the last publish (after a
    /// call that changes no widget: a provider call for the app).
    func publishPluginEvents() {
        for id in loaded.keys.sorted() {
            for event in pluginEvents.take(plugin: id) { continuation.yield(event) }
        }
    }
}

/// A new version of a bundle that was not swapped in: it did not load,
/// or one of its providers failed its check run. The running version stays.
public struct BundleUpdateError: Error, Sendable, CustomStringConvertible {
    public var bundle: String
    /// The new version's digest, when its files were read.
    public var version: String?
    /// What failed, each with its file and line when known.
    public var diagnostics: [Diagnostic]

    public var description: String {
        "the new version of \(bundle) was not swapped in (the running version stays):\n"
            + diagnostics.map { "  " + $0.text.replacing("\n", with: "\n  ") }.joined(separator: "\n")
    }
}

/// A mistake in a call to a `WidgetService`: an unknown bundle or widget,
/// a bundle loaded twice.
public struct ServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Lets `run()` sleep until a time or until woken, whichever comes first.
/// The sleeper resumes on its own executor (the service's thread): a timer
/// on a dispatch queue or a wake-up resumes it, so it needs no thread of
/// Swift's cooperative pool.
final class Waker: @unchecked Sendable {
    private let lock = FastLock()
    private var continuation: CheckedContinuation<Void, Never>?
    /// A wake-up came while nobody slept: the next sleep returns at once.
    private var pending = false
    /// Bumped by each sleep, so a timer of an earlier sleep wakes nothing.
    private var generation = 0

    /// Wakes the sleeper now, or makes its next sleep return at once.
    func wake() {
        lock.lock()
        let waiting = continuation
        continuation = nil
        if waiting == nil { pending = true }
        lock.unlock()
        waiting?.resume()
    }

    /// Sleeps `seconds` (nil: until woken), or until woken or cancelled.
    func sleep(seconds: Double?) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                lock.lock()
                generation += 1
                let mine = generation
                if pending || Task.isCancelled {
                    pending = false
                    lock.unlock()
                    c.resume()
                    return
                }
                continuation = c
                lock.unlock()
                guard let seconds else { return }
                DispatchQueue.global().asyncAfter(deadline: .now() + min(seconds, 86_400)) { [self] in
                    lock.lock()
                    let waiting = generation == mine ? continuation : nil
                    if waiting != nil { continuation = nil }
                    lock.unlock()
                    waiting?.resume()
                }
            }
        } onCancel: {
            self.wake()
        }
    }
}
