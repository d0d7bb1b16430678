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

    public init(bundle: ScriptBundle, scenario: Scenario, store: SharedStore?, calendar: HostCalendar = .fromEnvironment()) {
        self.bundle = bundle
        self.scenario = scenario
        self.store = store
        self.calendar = calendar
    }

    /// Runs the scenario and reports what each widget did.
    public func run() -> SimulationReport {
        let clock = VirtualClock(scenario.start)
        var calendar = self.calendar
        if let zone = scenario.timeZone, let c = HostCalendar(timeZoneNamed: zone) { calendar = c }
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: store, clock: clock, calendar: calendar, policy: scenario.policy))
        let engine = TimelineEngine(runtime: runtime)
        let center = ControlCenter(engine: engine)
        let end = scenario.start + scenario.duration
        var notes: [CallNote] = []
        for widget in scenario.widgets { engine.addWidget(widget) }
        for control in scenario.controls { _ = try? center.add(control) }
        var next = 0
        var lastReported = -1
        let wallStart = ContinuousClock.now
        while true {
            let event = next < scenario.events.count ? scenario.events[next].at : .infinity
            let due = engine.nextDue() ?? .infinity
            let t = max(min(event, due), clock.time)
            guard t < end else { break }
            clock.advance(to: t)
            if let onProgress {
                let percent = Int((t - scenario.start) / scenario.duration * 100)
                if percent > lastReported { lastReported = percent; onProgress(Double(percent) / 100) }
            }
            if event <= due {
                apply(scenario.events[next], engine: engine, center: center, runtime: runtime, notes: &notes)
                next += 1
            } else {
                engine.runDue()
            }
        }
        onProgress?(1)
        let wall = ContinuousClock.now - wallStart
        var pending: [Int: NextReload] = [:]
        for instance in engine.instances {
            if let next = engine.nextReload(of: instance.id) { pending[instance.id] = next }
        }
        return SimulationReport(bundle: bundle.manifest.id, start: scenario.start, end: end, policy: scenario.policy,
                                instances: engine.instances, pending: pending, notes: notes,
                                performances: engine.performances, controls: center.controls,
                                wallSeconds: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
                                calendar: calendar)
    }

    private func apply(_ event: ScenarioEvent, engine: TimelineEngine, center: ControlCenter, runtime: WidgetRuntime, notes: inout [CallNote]) {
        switch event.kind {
        case .appForeground(let kind): engine.reloadNow(kind: kind, reason: .appForeground)
        case .reloadTimelines(let kind): engine.requestReload(kind: kind)
        case .reloadAll: engine.requestReload(kind: nil)
        case .localeChange: engine.reloadNow(kind: nil, reason: .localeChange)
        case .significantTimeChange: engine.reloadNow(kind: nil, reason: .significantTimeChange)
        case .timeZoneChange(let zone):
            if let calendar = HostCalendar(timeZoneNamed: zone) { runtime.services.calendar = calendar }
            engine.reloadNow(kind: nil, reason: .timeZoneChange)
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
