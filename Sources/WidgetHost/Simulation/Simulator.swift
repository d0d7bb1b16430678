import LuaSandbox
import SharedStore

/// Plays a scenario on a virtual clock: a day of widget life in about a
/// second. Time jumps from one moment that matters (an event, a due
/// reload) to the next; providers run for real, in fresh sandboxes, on
/// the real store given.
public final class Simulator {
    public let bundle: ScriptBundle
    public let scenario: Scenario
    public let store: SharedStore?
    /// Days and local times when the scenario names no time zone.
    public let calendar: HostCalendar
    /// Called with the fraction of simulated time done (0…1), at most every 1%.
    public var onProgress: ((Double) -> Void)?
    /// The capabilities granted to the bundle, as a plugin (`HostServices.grants`); nil: every service.
    public var grants: Set<String>?
    /// The plugin's quotas and quarantine (`HostServices.ledger`): its
    /// quarantine, if the run puts it there, is a note of the report.
    public var ledger: PluginLedger?
    /// Process isolation (`HostServices.workers`): the bundle's calls run in worker processes.
    public var workers: BundleWorkers?

    public init(bundle: ScriptBundle, scenario: Scenario, store: SharedStore?, calendar: HostCalendar = .fromEnvironment()) {
        self.bundle = bundle
        self.scenario = scenario
        self.store = store
        self.calendar = calendar
    }

    /// Runs the scenario and reports what each widget did.
    public func run() -> SimulationReport {
        let clock = VirtualClock(scenario.start)
        let run = SimulationRun(self, clock: clock)
        var lastReported = -1
        let wallStart = ContinuousClock.now
        while let t = run.next() {
            try? clock.advance(to: t)   // t ≥ clock.time: never refused
            if let onProgress {
                let percent = Int((t - scenario.start) / scenario.duration * 100)
                if percent > lastReported { lastReported = percent; onProgress(Double(percent) / 100) }
            }
            run.step()
        }
        onProgress?(1)
        return run.report(wall: Self.seconds(ContinuousClock.now - wallStart))
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    fileprivate func apply(_ event: ScenarioEvent, engine: TimelineEngine, center: ControlCenter, runtime: WidgetRuntime,
                           activities: ActivityLive?, notes: inout [CallNote]) {
        switch event.kind {
        case .startActivity, .push, .activityEvent, .endActivity, .activitiesEnabled:
            guard let activities else {
                notes.append(CallNote(at: event.at, message: "\(event.kind): no Live Activities in this simulation (no store)"))
                return
            }
            activities.apply(event, notes: &notes)
        case .appForeground(let kind): try? engine.reloadNow(kind: kind, reason: .appForeground)   // kinds checked at load
        case .reloadTimelines(let kind): try? engine.requestReload(kind: kind)
        case .reloadAll: try? engine.requestReload(kind: nil)
        case .localeChange: try? engine.reloadNow(kind: nil, reason: .localeChange)
        case .significantTimeChange: try? engine.reloadNow(kind: nil, reason: .significantTimeChange)
        case .timeZoneChange(let zone):
            if let calendar = HostCalendar(timeZoneNamed: zone) { runtime.services.calendar = calendar }
            try? engine.reloadNow(kind: nil, reason: .timeZoneChange)
        case .widgetAdded(let widget): engine.addWidget(widget)
        case .widgetRemoved(let kind, let family):
            for instance in engine.instances where instance.removedAt == nil && instance.configuration.kind == kind
                && (family == nil || instance.configuration.family == family) {
                engine.removeWidget(instance.id)
            }
        case .tap(let kind, let family, let config, let intent, let params):
            var wanted: WidgetConfiguration?
            if let config { wanted = try? runtime.configuration(kind: kind, family: family, values: config) }
            let target = engine.instances.first { instance in
                instance.removedAt == nil && instance.configuration.kind == kind
                    && (family == nil || instance.configuration.family == family)
                    && (wanted == nil || instance.configuration == wanted)
            }
            guard let target else {
                notes.append(CallNote(at: event.at, message: "tap \(kind) (\(intent)): no such widget on screen"))
                return
            }
            do { try engine.tap(target.id, intent: intent, parameters: params) } catch {
                notes.append(CallNote(at: event.at, message: "tap \(kind) (\(intent)): \(error.message)"))
            }
        case .perform(let intent, let params):
            do { try engine.perform(intent, parameters: params) } catch {
                notes.append(CallNote(at: event.at, message: "perform \(intent): \(error.message)"))
            }
        case .controlAdded(let kind):
            do { try center.add(kind) } catch { notes.append(CallNote(at: event.at, message: "controlAdded \(kind): \(error.message)")) }
        case .controlTap(let kind):
            do { try center.tap(kind) } catch { notes.append(CallNote(at: event.at, message: "controlTap \(kind): \(error.message)")) }
        case .reloadControls(let kind):
            center.reload(kind)
        case .storeSet(let group, let key, let value):
            guard let store else {
                notes.append(CallNote(at: event.at, message: "storeSet \(group) \(key): no store in this simulation"))
                return
            }
            do {
                let g = try store.group(group)
                if let value { try g.set(key, value) } else { try g.remove(key) }
            } catch {
                notes.append(CallNote(at: event.at, message: "storeSet \(group) \(key) failed: \(error)"))
            }
        }
    }
}

/// The simulation's Live Activities: the manager and updaters, and the ids
/// of the activities the scenario started, in order (events name them by
/// index).
fileprivate final class ActivityLive {
    let updaters: ActivityUpdaters
    var manager: ActivityManager { updaters.manager }
    /// One per startActivity event, in time order: its id, or nil when it was refused.
    private var started: [String?] = []

    init(updaters: ActivityUpdaters) { self.updaters = updaters }

    func nextDue(notes: inout [CallNote], at t: Double) -> Double? {
        do { return try updaters.nextDue() } catch {
            notes.append(CallNote(at: t, message: error.message))
            return nil
        }
    }

    func runDue(notes: inout [CallNote], at t: Double) {
        do { try updaters.runDue() } catch { notes.append(CallNote(at: t, message: error.message)) }
    }

    func apply(_ event: ScenarioEvent, notes: inout [CallNote]) {
        func note(_ text: String) { notes.append(CallNote(at: event.at, message: text)) }
        do throws(ActivityError) {
            switch event.kind {
            case .startActivity(let type, let attributes, let state, let staleDate, let relevance):
                try updaters.runDue()
                switch manager.request(type: type, attributes: attributes, state: state, staleDate: staleDate, relevance: relevance, from: .app) {
                case .success(let record): started.append(record.id)
                case .failure(let error):
                    started.append(nil)
                    note("startActivity \(type) #\(started.count - 1) refused: \(error.message)")
                }
            case .push(let reference, let payload, let priority):
                guard let id = id(reference, for: "push", note: note) else { return }
                try updaters.push(id, payload: payload, priority: priority)
            case .activityEvent(let reference, let name, let payload):
                guard let id = id(reference, for: "activityEvent \(name)", note: note) else { return }
                try updaters.signal(id, name: name, payload: payload)
            case .endActivity(let reference, let state, let dismissal):
                guard let id = id(reference, for: "endActivity", note: note) else { return }
                try updaters.runDue()
                try manager.finish(id, state: state, dismissal: dismissal)
            case .activitiesEnabled(let value):
                try manager.setEnabled(value)
            default:
                return
            }
        } catch {
            note("\(Self.name(of: event.kind)): \(error.message)")
        }
    }

    private func id(_ reference: ScenarioEvent.ActivityReference, for what: String, note: (String) -> Void) -> String? {
        switch reference {
        case .id(let id): return id
        case .index(let n):
            guard n < started.count, let id = started[n] else {
                note("\(what) \(reference): that startActivity was refused, so there is no such activity")
                return nil
            }
            return id
        }
    }

    private static func name(of kind: ScenarioEvent.Kind) -> String {
        switch kind {
        case .push(let reference, _, _): return "push to \(reference)"
        case .activityEvent(let reference, let name, _): return "activityEvent \(name) to \(reference)"
        case .endActivity(let reference, _, _): return "endActivity \(reference)"
        case .activitiesEnabled(let value): return "activitiesEnabled \(value)"
        default: return "startActivity"
        }
    }

    /// A lane per activity the store keeps for the bundle, in the order they started.
    func lanes(end: Double, notes: inout [CallNote]) -> [ActivityLane] {
        do {
            return try manager.all().map { ActivityLane(record: $0, changes: manager.changes, runs: updaters.runs, end: end) }
        } catch {
            notes.append(CallNote(at: end, message: error.message))
            return []
        }
    }
}

/// One bundle's simulation under way, on a clock the caller moves: the
/// time of its next moment (`next`), and what happens then (`step`).
/// `Simulator.run` drives one; `PluginSimulation` drives several on one
/// clock, as plugins of one host.
final class SimulationRun {
    let simulator: Simulator
    let clock: VirtualClock
    let calendar: HostCalendar
    let runtime: WidgetRuntime
    let engine: TimelineEngine
    let center: ControlCenter
    fileprivate let activities: ActivityLive?
    var notes: [CallNote] = []
    let end: Double
    private var nextEvent = 0

    init(_ simulator: Simulator, clock: VirtualClock) {
        self.simulator = simulator
        self.clock = clock
        let scenario = simulator.scenario, bundle = simulator.bundle
        var calendar = simulator.calendar
        if let zone = scenario.timeZone, let c = HostCalendar(timeZoneNamed: zone) { calendar = c }
        self.calendar = calendar
        var services = HostServices(store: simulator.store, clock: clock, calendar: calendar, policy: scenario.policy)
        services.grants = simulator.grants
        services.ledger = simulator.ledger
        services.workers = simulator.workers
        if let store = simulator.store, !bundle.declarations.activities.isEmpty {
            do { services.activities = try ActivityManager(bundle: bundle, store: store, policy: scenario.policy, clock: clock) } catch {
                notes.append(CallNote(at: scenario.start, message: error.message))
            }
        }
        runtime = WidgetRuntime(bundle: bundle, services: services)
        engine = TimelineEngine(runtime: runtime)
        engine.historyRetention = .infinity   // the report shows the whole run
        center = ControlCenter(engine: engine)
        let runtime = self.runtime
        activities = services.activities.map { ActivityLive(updaters: ActivityUpdaters(runtime: runtime, manager: $0)) }
        if let manager = services.activities, let existing = try? manager.all(), !existing.isEmpty {
            // A store given with --store-dir may hold activities of an earlier run, at other times.
            notes.append(CallNote(at: scenario.start, message: "the store already holds \(existing.count) activities of \(bundle.manifest.id) (\(existing.map(\.id).joined(separator: ", "))), from before this run: they count towards the limits (A2) and ids go on from them"))
        }
        end = scenario.start + scenario.duration
        // The widgets' first reloads, one after another, share the store's
        // read transactions as an instant's reloads do (`runDue`).
        let engine = self.engine
        SharedStore.reusingReadTransactions(of: simulator.store) {
            for widget in scenario.widgets { engine.addWidget(widget) }
        }
        for control in scenario.controls { _ = try? center.add(control) }
    }

    /// The Live Activity rows its due times read: its app group's database
    /// and its bundle id (nil: it has none). Another run with the same rows
    /// (the same bundle id, in the same store) changes its due times when it steps.
    var activityRows: String? {
        activities.map { $0.manager.group.path + "\u{0}" + $0.manager.bundleID }
    }

    private var nextEventTime: Double {
        nextEvent < simulator.scenario.events.count ? simulator.scenario.events[nextEvent].at : .infinity
    }

    private func nextDue() -> Double {
        min(engine.nextDue() ?? .infinity, activities?.nextDue(notes: &notes, at: clock.time) ?? .infinity)
    }

    /// Whether the moment `next` found is the next event (else due work).
    private var eventIsNext = false

    /// When its next moment is (never before the clock's time); nil when
    /// none comes before the end.
    func next() -> Double? {
        let event = nextEventTime, due = nextDue()
        eventIsNext = event <= due
        let t = max(min(event, due), clock.time)
        return t < end ? t : nil
    }

    /// What happens at the clock's time, the moment `next` found: the next
    /// event, or the reloads and activity work due.
    func step() {
        if eventIsNext {
            simulator.apply(simulator.scenario.events[nextEvent], engine: engine, center: center, runtime: runtime, activities: activities, notes: &notes)
            nextEvent += 1
        } else {
            engine.runDue()
            activities?.runDue(notes: &notes, at: clock.time)
        }
    }

    /// The report of the run so far, which took `wall` seconds.
    func report(wall: Double) -> SimulationReport {
        let scenario = simulator.scenario, bundle = simulator.bundle
        if let quarantine = simulator.ledger?.quarantine {
            notes.append(CallNote(at: quarantine.since, message: "plugin \(bundle.manifest.id) quarantined (\(quarantine.cause.rawValue)): \(quarantine.reason); its calls were refused from then on"))
        }
        var pending: [Int: NextReload] = [:]
        for instance in engine.instances {
            if let next = engine.nextReload(of: instance.id) { pending[instance.id] = next }
        }
        return SimulationReport(bundle: bundle.manifest.id, start: scenario.start, end: end, policy: scenario.policy,
                                instances: engine.instances, pending: pending, notes: notes,
                                performances: engine.performances, controls: center.controls,
                                activities: activities?.lanes(end: end, notes: &notes) ?? [],
                                events: scenario.events.filter { $0.at < end }.map { event in
                                    var mark = event.mark
                                    mark.at = max(mark.at, scenario.start)   // one before the start happens at the start
                                    return mark
                                },
                                wallSeconds: wall, calendar: calendar)
    }
}
