import Logging
import LuaSandbox

/// One bundle of a `WidgetService`: its runtime, engine, Control Center
/// and Live Activities, and how far its history has been published.
final class LoadedBundle {
    let bundle: ScriptBundle
    let runtime: WidgetRuntime
    let engine: TimelineEngine
    let controls: ControlCenter
    /// The bundle's Live Activities, when it declares any.
    let live: ActivityUpdaters?

    /// Per widget number: reloads, failures already published, what it was
    /// last seen showing, the end of the budget wait last reported.
    private var published: [Int: (reloads: Int, failures: Int, shown: Shown?, waitingUntil: Double?)] = [:]
    private var performances = 0
    private var activityChanges = 0
    private var updaterRuns = 0
    /// Per control kind: values published.
    private var controlValues: [String: Int] = [:]
    /// Per activity: the phase last published.
    private var phases: [String: ActivityPhase] = [:]
    /// Where the bundle's lasting state is kept, when the service keeps it.
    private var state: BundleState?
    /// The last save failed: the next writes the whole state.
    private var saveFailed = false

    private struct Shown: Equatable {
        var entry: TimelineEntry?
        var isPlaceholder: Bool
    }

    init(bundle: ScriptBundle, services: HostServices) {
        self.bundle = bundle
        let runtime = WidgetRuntime(bundle: bundle, services: services)
        self.runtime = runtime
        engine = TimelineEngine(runtime: runtime)
        controls = ControlCenter(engine: engine)
        live = services.activities.map { ActivityUpdaters(runtime: runtime, manager: $0) }
    }

    /// Keeps the bundle's lasting state in `state`: continues from what it
    /// holds (returns notes on what could not be restored), then notes
    /// every change for `saveState()`.
    func keepState(in state: BundleState) throws -> [String] {
        let kept = try state.load()
        engine.recordsStateChanges = true
        controls.recordsStateChanges = true
        self.state = state
        return engine.restore(kept.engine) + controls.restore(kept.controls)
    }

    /// Goes on from `old`, the same bundle's earlier version: its widgets,
    /// budgets and controls with their history, what has been published of
    /// them, and where their state is kept (written whole at the next save,
    /// so records of what this version dropped go). Returns notes on what
    /// was dropped.
    func takeOver(from old: LoadedBundle) -> [String] {
        engine.recordsStateChanges = old.engine.recordsStateChanges
        controls.recordsStateChanges = old.controls.recordsStateChanges
        let notes = engine.takeOver(from: old.engine) + controls.takeOver(from: old.controls)
        published = old.published
        performances = old.performances
        // Cursors of controls this version dropped go: one added again starts afresh.
        controlValues = old.controlValues.filter { kind, _ in controls.control(kind) != nil }
        phases = old.phases
        state = old.state
        saveFailed = old.state != nil
        return notes
    }

    /// One run of each provider of this version under its limits, as a
    /// check before it is swapped in: each widget kind's placeholder and
    /// timeline (its first family, the default configuration) and each
    /// control's value. Returns the failures, each naming what failed.
    func check() -> [Diagnostic] {
        var failures: [Diagnostic] = []
        func note(_ outcome: CallOutcome, _ what: String) {
            guard var diagnostic = outcome.diagnostic else { return }
            diagnostic.message = "\(what): \(diagnostic.message)"
            failures.append(diagnostic)
        }
        for widget in bundle.declarations.widgets {
            let configuration: WidgetConfiguration
            do { configuration = try runtime.configuration(kind: widget.kind) } catch {
                failures.append(Diagnostic(.invalid, "widget \(widget.kind): \(error.message)"))
                continue
            }
            note(runtime.placeholder(configuration).outcome, "widget \(widget.kind).placeholder")
            note(runtime.timeline(configuration).outcome, "widget \(widget.kind).timeline")
        }
        for control in bundle.declarations.controls {
            let context = LuaValue.table(LuaTable(fields: ["kind": .string(LuaString(control.kind)), "type": .string(LuaString(control.type))]))
            note(runtime.pool.call(.controlValue, "control", control.kind, "value", [context]), "control \(control.kind).value")
        }
        return failures
    }

    /// Writes the lasting state that changed since the last save. After a
    /// failure the next save writes all of it, so nothing stays lost.
    func saveState(logger: Logger) {
        guard let state else { return }
        let changes = engine.takeStateChanges()
        let controlChanges = controls.takeStateChanges()
        do {
            if saveFailed {
                try state.replace(with: engine.state, controls: controls.state)
                saveFailed = false
            } else if !changes.isEmpty || !controlChanges.isEmpty {
                try state.save(changes, controls: controlChanges)
            }
        } catch {
            saveFailed = true
            logger.error("could not keep the state of bundle \(bundle.manifest.id): \(error); the next save writes all of it",
                         metadata: ["bundle": "\(bundle.manifest.id)"])
        }
    }

    /// What happened since the last call, in order: per widget its reloads,
    /// failures, budget wait and what it shows now; then performs, activity
    /// changes and updater runs.
    func newEvents(at now: Double) -> [HostEvent] {
        var events: [HostEvent] = []
        let id = bundle.manifest.id
        for instance in engine.instances {
            let widget = WidgetID(bundle: id, number: instance.id)
            var seen = published[instance.id] ?? (0, 0, nil, nil)
            // Counted since the widget was added: history trimming does not move them.
            for r in instance.reloads.suffix(min(instance.reloads.count, instance.reloadsRecorded - seen.reloads)) {
                events.append(.reloaded(widget, at: r.at, reason: r.reason, counted: r.counted, deferredFrom: r.deferredFrom, status: r.status))
                if let wanted = r.deferredFrom {
                    // The budget held this reload back: its wait ended now
                    // (announced here if it began and ended between two publishes).
                    if seen.waitingUntil == nil { events.append(.budgetExhausted(widget, at: wanted, until: r.at)) }
                    events.append(.budgetFreed(widget, at: r.at))
                    seen.waitingUntil = nil
                }
            }
            for f in instance.failures.suffix(min(instance.failures.count, instance.failuresRecorded - seen.failures)) {
                events.append(.failed(widget, at: f.at, role: f.role, diagnostic: f.diagnostic))
            }
            seen.reloads = instance.reloadsRecorded
            seen.failures = instance.failuresRecorded
            if let next = engine.nextReload(of: instance.id), next.isDeferred {
                // One event per wait: a later request that joins it changes nothing.
                if seen.waitingUntil != next.at {
                    events.append(.budgetExhausted(widget, at: next.wantedAt, until: next.at))
                    seen.waitingUntil = next.at
                }
            } else if seen.waitingUntil != nil {
                // The wait ended otherwise: an exempt reload answered its
                // request (a freed slot), or the widget was removed (no event).
                if instance.removedAt == nil { events.append(.budgetFreed(widget, at: instance.lastReloadAt ?? now)) }
                seen.waitingUntil = nil
            }
            if instance.removedAt == nil {
                let current = Self.shown(instance, at: now)
                if current.shown != seen.shown {
                    events.append(.shown(widget, at: current.from, entry: current.shown.entry, isPlaceholder: current.shown.isPlaceholder))
                    seen.shown = current.shown
                }
            }
            published[instance.id] = seen
        }
        if published.count > engine.instances.count {   // freed widgets
            let ids = Set(engine.instances.map(\.id))
            published = published.filter { ids.contains($0.key) }
        }
        for p in engine.performances.dropFirst(performances) { events.append(.performed(bundle: id, p)) }
        performances = engine.performances.count
        for control in controls.controls {
            for shown in control.values.dropFirst(controlValues[control.kind] ?? 0) {
                events.append(.controlValue(bundle: id, kind: control.kind, at: shown.at, value: shown.value, read: shown.read))
            }
            controlValues[control.kind] = control.values.count
        }
        if let live {
            for change in live.manager.changes.dropFirst(activityChanges) { events.append(.activity(bundle: id, change)) }
            activityChanges = live.manager.changes.count
            for run in live.runs.dropFirst(updaterRuns) { events.append(.updaterRan(bundle: id, run)) }
            updaterRuns = live.runs.count
            for record in (try? live.manager.all()) ?? [] {
                let phase = record.phase(at: now)
                guard phases[record.id] != phase else { continue }
                let previous = phases.updateValue(phase, forKey: record.id)
                if previous == nil && phase == .active { continue }   // its start is an .activity event
                let since: Double
                switch phase {
                case .stale: since = record.content.staleDate ?? now
                case .ended: since = record.endedAt ?? now
                case .dismissed: since = record.dismissAt ?? now
                case .active: since = now
                }
                events.append(.activityPhase(bundle: id, activity: record.id, at: since, phase: phase))
            }
        }
        return events
    }

    /// What `instance` shows at `now`, and since when.
    private static func shown(_ instance: WidgetInstance, at now: Double) -> (shown: Shown, from: Double) {
        let since = instance.displays.last?.at ?? instance.addedAt
        if let timeline = instance.timeline, let i = timeline.entryIndex(at: now) {
            return (Shown(entry: timeline.entries[i], isPlaceholder: false), max(since, timeline.entries[i].date))
        }
        return (Shown(entry: instance.placeholder, isPlaceholder: true), since)
    }
}
