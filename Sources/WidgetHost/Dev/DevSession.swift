#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LuaSandbox
import SharedStore

/// The `lunette dev` loop: a bundle on a `WidgetService` in developer mode
/// (no budget, no floor: rule B5), its widgets and controls on screen, and
/// on every save a new version loaded, checked and swapped in — or, when it
/// fails, the error with file:line while the last good version goes on.
///
/// The widgets are the scenario's (`--scenario`) or one of each kind in
/// its first family; the controls, the scenario's or every one declared.
/// The store (and with it Live Activities) is a real one that outlives
/// reloads, as on a device.
public actor DevSession {
    public nonisolated let service: WidgetService
    public nonisolated let clock: SteppedClock
    public nonisolated let path: String
    private let scenarioPath: String?
    private let say: @Sendable (String) -> Void

    /// The bundle's id, once a version has loaded.
    public private(set) var bundle: String?
    /// Why the last version tried was refused (nil: it runs).
    public private(set) var failure: [Diagnostic]?
    /// When the last version was tried, and how long it took until its new timelines were there.
    public private(set) var lastReload: (at: Double, milliseconds: Double)?
    /// Versions swapped in since the start.
    public private(set) var swaps = 0
    private var widgets: [WidgetID] = []

    public init(path: String, store: SharedStore, scenario: String? = nil, policy: HostPolicy = .standard,
                output: @escaping @Sendable (String) -> Void) {
        var policy = policy
        policy.developerMode = true
        self.path = path
        scenarioPath = scenario
        clock = SteppedClock()
        say = output
        service = WidgetService(store: store, clock: clock, policy: policy, persistence: .none, threadName: "lunette.dev")
    }

    /// Loads the bundle and puts its widgets and controls on screen; a
    /// bundle that does not load is reported, and the next save tries again.
    public func start() async {
        await tryVersion(changed: [])
    }

    /// Files of the bundle changed: try the new version.
    public func filesChanged(_ paths: [String]) async {
        await tryVersion(changed: paths)
    }

    private func tryVersion(changed paths: [String]) async {
        defer { changed() }
        let began = ContinuousClock.now
        if !paths.isEmpty { say("changed: \(paths.joined(separator: ", "))") }
        guard let bundle else {
            await firstLoad(began: began)
            return
        }
        var before: [WidgetID: Timeline?] = [:]
        for widget in widgets { before[widget] = try? await service.widget(widget).timeline }
        do {
            let version = try await service.update(bundle: bundle)
            failure = nil
            swaps += 1
            try await fillScreen()
            await rerunActivities(bundle)
            lastReload = (clock.now(), milliseconds(since: began))
            say("✓ version \(version) (\(Self.format(lastReload!.milliseconds)) ms)")
            for widget in widgets {
                guard let instance = try? await service.widget(widget) else { continue }
                say("  \(Self.name(instance)): \(TimelineDiff(old: before[widget] ?? nil, new: instance.timeline))")
                if let failed = instance.failures.last, failed.at >= lastReload!.at - 1, instance.reloads.last?.status != .ok {
                    say(Self.indent(failed.diagnostic.text))
                }
            }
        } catch let refused as BundleUpdateError {
            failure = refused.diagnostics
            lastReload = (clock.now(), milliseconds(since: began))
            say("✗ not swapped in; version \((try? await service.version(of: bundle)) ?? "?") goes on running")
            for diagnostic in refused.diagnostics { say(Self.indent(diagnostic.text)) }
        } catch {
            report(error)
        }
    }

    /// Keeps and shows a failure other than a refused version: every
    /// problem of the scenario file (the only file read here that reports
    /// `LocatedErrors`) on its own line, or the error.
    private func report(_ error: any Error) {
        if let errors = error as? LocatedErrors {
            failure = errors.errors
            say("✗ the scenario does not load")
            for diagnostic in errors.errors { say(Self.indent(diagnostic.text)) }
            return
        }
        failure = [(error as? LocatedError) ?? Diagnostic(.invalid, "\(error)")]
        say("✗ \(error)")
    }

    private func firstLoad(began: ContinuousClock.Instant) async {
        let loaded: ScriptBundle
        do {
            loaded = try ScriptBundle.load(path)
        } catch {
            failure = error.errors
            say("✗ \(path) does not load yet; the next save tries again")
            for diagnostic in error.errors { say(Self.indent(diagnostic.text)) }
            return
        }
        do {
            let id = try await service.add(loaded)
            bundle = id
            failure = nil
            try await fillScreen()
            let controls = try await service.controlKinds(bundle: id)
            lastReload = (clock.now(), milliseconds(since: began))
            say("✓ version \(loaded.version): \(widgets.count) widget(s), \(controls.count) control(s) (\(Self.format(lastReload!.milliseconds)) ms)")
            for widget in widgets {
                guard let instance = try? await service.widget(widget) else { continue }
                say("  \(Self.name(instance)): \(TimelineDiff(old: nil, new: instance.timeline))")
                if let failed = instance.failures.last { say(Self.indent(failed.diagnostic.text)) }
            }
        } catch {
            report(error)
        }
    }

    /// The event each active Live Activity's updater gets after a swap, so
    /// the new version's updater can work its content out again.
    public static let reloadEvent = "lunette.reload"

    /// Sends `reloadEvent` to every activity still on screen (active or stale).
    private func rerunActivities(_ bundle: String) async {
        guard let records = try? await service.activities(bundle: bundle) else { return }
        for record in records where [.active, .stale].contains(record.phase(at: clock.now())) {
            do {
                try await service.signal(bundle: bundle, activity: record.id, name: Self.reloadEvent)
            } catch {
                say("  activity \(record.id): its updater failed on \(Self.reloadEvent): \(error)")
            }
        }
    }

    /// Puts on screen what the running version should show and does not
    /// yet: a widget kind or control a save added, or everything when
    /// building the screen failed before. Widgets the version dropped leave
    /// the screen (and the page).
    private func fillScreen() async throws {
        guard let bundle else { return }
        // The version running (not the files again: they may have changed since).
        let running = try await service.scriptBundle(bundle)
        let (configurations, controls) = try Self.screen(of: running, scenario: scenarioPath, at: clock.now())
        var unmatched: [WidgetConfiguration] = []
        for id in try await service.widgets(bundle: bundle) { unmatched.append(try await service.widget(id).configuration) }
        for configuration in configurations {
            if let i = unmatched.firstIndex(where: { $0.kind == configuration.kind && $0.family == configuration.family }) {
                unmatched.remove(at: i)
                continue
            }
            _ = try await service.addWidget(bundle: bundle, kind: configuration.kind, family: configuration.family,
                                            values: configuration.values?.namedFields ?? [:])
        }
        let shown = Set(try await service.controlKinds(bundle: bundle))
        for control in controls where !shown.contains(control) { try await service.addControl(bundle: bundle, kind: control) }
        widgets = try await service.widgets(bundle: bundle)
    }

    /// The widgets and controls to put on screen: the scenario's, or one
    /// widget of each kind and every control.
    nonisolated static func screen(of bundle: ScriptBundle, scenario path: String?, at now: Double) throws -> ([WidgetConfiguration], [String]) {
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(clock: SystemClock()))
        let scenario = try path.map { path throws(LocatedErrors) in try Scenario.load(path, runtime: runtime, start: now) }
        let widgets = try scenario?.widgets ?? Scenario.everyKind(of: runtime, start: now).widgets
        let controls = scenario.map(\.controls).flatMap { $0.isEmpty ? nil : $0 } ?? bundle.declarations.controls.map(\.kind)
        return (widgets, controls)
    }

    /// The widgets on screen.
    public var widgetIDs: [WidgetID] { widgets }

    // MARK: The page

    private var subscribers: [Int: AsyncStream<Int>.Continuation] = [:]
    private var nextSubscriber = 0
    /// Bumped on every change the page shows.
    public private(set) var generation = 0
    private var running: Task<Void, Never>?

    /// A stream that yields the generation after each change (a version
    /// tried, a reload or value read by the run loop, a tap, a clock step).
    public func subscribe() -> AsyncStream<Int> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        guard !stopped else {
            continuation.finish()
            return stream
        }
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = continuation
        continuation.yield(generation)
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    private func unsubscribe(_ id: Int) { subscribers[id] = nil }

    /// Tells the subscribers that something changed.
    func changed() {
        generation += 1
        for continuation in subscribers.values { continuation.yield(generation) }
    }

    private func ping() {
        for continuation in subscribers.values { continuation.yield(generation) }
    }

    /// Runs the service's loop (reloads when policies come due, on the
    /// stepped clock) and turns its events into changes for the page.
    public func runInBackground() {
        guard running == nil else { return }
        let service = self.service
        running = Task {
            let loop = Task { await service.run() }
            // Every 15 s the subscribers hear the same generation again: a
            // page server writes a keep-alive, and notices pages that went.
            let heartbeat = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(15))
                    self.ping()
                }
            }
            for await _ in service.events { self.changed() }
            loop.cancel()
            heartbeat.cancel()
        }
    }

    private var stopped = false

    /// Stops the background loop and ends every subscription.
    public func stop() {
        stopped = true
        running?.cancel()
        running = nil
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }

    /// Taps control `kind` (its action performs, then its value is read).
    public func tap(control kind: String) async throws {
        guard let bundle else { throw ServiceError("no version of the bundle runs yet") }
        try await service.tapControl(bundle: bundle, kind: kind)
        changed()
    }

    /// Steps the clock ahead by `seconds`, or to the next reload when nil,
    /// and runs what is due then.
    public func step(by seconds: Double?) async throws {
        if let seconds {
            try clock.step(by: seconds)
        } else if let next = await service.nextDue() {
            try clock.step(to: next)
        }
        await service.runDue()
        service.wake()   // run() sleeps until a time worked out before the step
        changed()
    }

    /// What the page shows now.
    public func snapshot() async -> DevSnapshot {
        let now = clock.now()
        var snapshot = DevSnapshot(bundle: bundle, path: path, version: nil, now: now, ahead: clock.ahead, swaps: swaps,
                                   failure: failure.map { $0.map(DevSnapshot.Problem.init) }, lastReloadMilliseconds: lastReload?.milliseconds,
                                   widgets: [], controls: [], activities: [], logs: [])
        guard let bundle else { return snapshot }
        snapshot.version = try? await service.version(of: bundle)
        var logs: [DevSnapshot.Log] = []
        for id in widgets {
            guard let instance = try? await service.widget(id) else { continue }
            let timeline = instance.timeline
            let entries = (timeline?.entries ?? []).map { DevSnapshot.Entry(date: $0.date, content: $0.content) }
            let shown = timeline.flatMap { $0.entryIndex(at: now) }
            let counted = instance.reloads.filter { !$0.reason.isExempt && $0.at > now - 86_400 }.count
            let lastFailed = instance.reloads.last.map { $0.status != .ok } ?? false
            snapshot.widgets.append(DevSnapshot.Widget(
                id: instance.id, name: Self.name(instance), kind: instance.configuration.kind, family: instance.configuration.family.rawValue,
                entries: entries, shown: shown, placeholder: instance.placeholder?.content, policy: timeline.map { "\($0.policy)" },
                lastReload: instance.lastReloadAt, nextReload: try? await service.nextReload(id)?.at,
                failure: lastFailed ? instance.failures.last.map { DevSnapshot.Problem($0.diagnostic) } : nil,
                wouldHaveUsed: counted, budget: service.policy.budget))
            for line in instance.logs.suffix(50) {
                logs.append(DevSnapshot.Log(at: line.at, level: line.level.name, text: line.text, source: "#\(instance.id) \(instance.configuration.kind)"))
            }
        }
        snapshot.logs = Array(logs.sorted { $0.at < $1.at }.suffix(100))
        if let kinds = try? await service.controlKinds(bundle: bundle) {
            for kind in kinds {
                guard let control = try? await service.control(bundle: bundle, kind: kind) else { continue }
                snapshot.controls.append(DevSnapshot.Control(kind: control.kind, type: control.type, value: control.value,
                                                             failure: control.lastReadFailure.map(DevSnapshot.Problem.init)))
            }
        }
        for record in (try? await service.activities(bundle: bundle)) ?? [] {
            snapshot.activities.append(DevSnapshot.Activity(id: record.id, type: record.type, phase: record.phase(at: now).rawValue,
                                                            attributes: record.attributes, state: record.content.state,
                                                            staleDate: record.content.staleDate))
        }
        return snapshot
    }

    private func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 1000
    }

    static func format(_ milliseconds: Double) -> String { fixedText(milliseconds, decimals: 1) }

    static func name(_ instance: WidgetInstance) -> String {
        "#\(instance.id) \(instance.configuration)"
    }

    static func indent(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
    }
}

/// What changed between two timelines of a widget, in a line:
/// "3 entries (+1 −0 ~2), policy atEnd → after 07:30".
public struct TimelineDiff: CustomStringConvertible, Sendable {
    public var added = 0, removed = 0, changed = 0, kept = 0
    public var entries = 0
    public var policy: (old: ReloadPolicy?, new: ReloadPolicy?)
    public var failed: Bool

    public init(old: Timeline?, new: Timeline?) {
        failed = new == nil
        entries = new?.entries.count ?? 0
        policy = (old?.policy, new?.policy)
        let before = Dictionary((old?.entries ?? []).map { ($0.date, $0) }, uniquingKeysWith: { a, _ in a })
        let after = Dictionary((new?.entries ?? []).map { ($0.date, $0) }, uniquingKeysWith: { a, _ in a })
        for (date, entry) in after {
            if let previous = before[date] { if previous == entry { kept += 1 } else { changed += 1 } } else { added += 1 }
        }
        removed = before.keys.filter { after[$0] == nil }.count
    }

    public var description: String {
        if failed { return "no timeline (the call failed; it keeps showing the last good one)" }
        var text = "\(entries) entr\(entries == 1 ? "y" : "ies") (+\(added) −\(removed) ~\(changed))"
        if policy.old == nil { text += ", policy \(policy.new!)" } else if policy.old != policy.new { text += ", policy \(policy.old!) → \(policy.new!)" }
        if added == 0 && removed == 0 && changed == 0 && policy.old != nil && policy.old == policy.new { text += ", unchanged" }
        return text
    }
}
