import LuaSandbox

/// The emulated Control Center (rules C1–C3, L4): the bundle's controls,
/// each with its current value and history.
///
/// A control's `value(ctx)` is read when it is added, after its action's
/// perform returns, and on `reload.controls(kind)` / `reload.allControls()`
/// (C2), under the control limits (soft 1 s, hard 5 s, L4); its `preview()`
/// is instant and cannot open the store (C1). A toggle flips at once when
/// tapped, its action gets the new value as `params.value` (C3), and then it
/// shows the value read again — which undoes the flip if the action failed.
public final class ControlCenter {
    public let engine: TimelineEngine
    /// The controls added, in order.
    public private(set) var controls: [ControlRecord] = []
    /// When true, changes of the controls' lasting state are noted for
    /// `takeStateChanges()`; a host that persists it sets this.
    public var recordsStateChanges = false
    private var changedKinds: [String] = []
    private var removedKinds: [String] = []

    /// A control center over `engine`'s bundle; scripts' control reload
    /// requests (from any call the engine makes) come here.
    public init(engine: TimelineEngine) {
        self.engine = engine
        engine.controlReloads = { [unowned self] request in self.apply(request) }
    }

    var runtime: WidgetRuntime { engine.runtime }
    var now: Double { runtime.services.clock.now() }

    /// The record of control `kind`, if it was added.
    public func control(_ kind: String) -> ControlRecord? { controls.first { $0.kind == kind } }

    /// Adds control `kind` and reads its value (C2). Adding it twice reads it again.
    @discardableResult
    public func add(_ kind: String) throws(IntentError) -> ControlRecord {
        let declaration = try self.declaration(kind)
        if control(kind) == nil {
            controls.append(ControlRecord(kind: kind, type: declaration.type))
            if recordsStateChanges, !changedKinds.contains(kind) { changedKinds.append(kind) }   // kept even if its read fails
        }
        read(kind, reason: .added)
        return control(kind)!
    }

    /// The control's `preview()` (C1): synchronous, instant, no store. A
    /// control without one previews as nil.
    public func preview(_ kind: String) throws(IntentError) -> (value: LuaValue?, outcome: CallOutcome) {
        guard try declaration(kind).hasPreview else { return (nil, CallOutcome()) }
        let outcome = runtime.pool.call(.controlPreview, "control", kind, "preview", [])
        return (outcome.succeeded ? outcome.values.first : nil, outcome)
    }

    /// Taps control `kind` (adding it first if needed): a toggle shows its
    /// flipped value at once; the action intent performs (a toggle's with
    /// `params.value` = the new value, C3); then the value is read again
    /// (C2), which is what the control shows — the old value again if the
    /// action failed.
    @discardableResult
    public func tap(_ kind: String) throws(IntentError) -> ControlTap {
        let declaration = try self.declaration(kind)
        if control(kind) == nil { try add(kind) }
        let before = control(kind)?.value
        var tap = ControlTap(kind: kind, before: before)
        if declaration.type == "toggle" {
            let flipped = LuaValue.boolean(!(before?.boolValue ?? false))
            tap.optimistic = flipped
            show(kind, flipped, read: nil)
        }
        if let action = declaration.action {
            var value: [String: LuaValue] = [:]
            if let flipped = tap.optimistic { value["value"] = flipped }
            let performance = try engine.perform(action, parameters: [:], hostValues: value, origin: "control \(kind)")
            tap.performance = performance
            if !performance.succeeded {
                update(kind) { $0.failures.append(CallFailure(at: now, role: .intent, diagnostic: performance.outcome.diagnostic ?? Diagnostic(.error, "failed"))) }
            }
        }
        read(kind, reason: .action)
        tap.after = control(kind)?.value
        return tap
    }

    /// Reads again the value of control `kind`, or of every control when nil.
    public func reload(_ kind: String?) {
        for record in controls where kind == nil || record.kind == kind { read(record.kind, reason: .request) }
    }

    /// A script's `reload.controls(kind)` / `reload.allControls()`.
    func apply(_ request: ReloadRequest) {
        switch request {
        case .controls(let kind): reload(kind)
        case .allControls: reload(nil)
        case .timelines, .allTimelines: break
        }
    }

    /// Calls `value(ctx)` and shows what it returned; a failed read keeps
    /// the value shown and is recorded. A toggle's value must be a boolean.
    private func read(_ kind: String, reason: ControlReloadReason) {
        guard let record = control(kind) else { return }
        let context = LuaValue.table(LuaTable(fields: ["kind": .string(LuaString(kind)), "type": .string(LuaString(record.type))]))
        var outcome = runtime.pool.call(.controlValue, "control", kind, "value", [context])
        let value = outcome.values.first ?? .nil
        if outcome.succeeded, record.type == "toggle", value.boolValue == nil {
            outcome.refuse("control '\(kind)': a toggle's value must be true or false, got \(value.typeName)")
        }
        let at = now
        update(kind) { $0.reloads.append((at, reason, outcome.status)) }
        if outcome.succeeded {
            show(kind, value, read: reason)
            update(kind) { $0.lastRead = value }
            // A value read may ask for widget reloads; its control reloads
            // are dropped (a control reloading itself would never end).
            engine.apply(outcome.reloadRequests.filter(\.isForTimelines))
        } else {
            update(kind) { $0.failures.append(CallFailure(at: at, role: .controlValue, diagnostic: outcome.diagnostic ?? Diagnostic(.error, "failed"))) }
            // The optimistic flip ends even when the read fails: the last value read shows again.
            if let record = control(kind), record.value != record.lastRead { show(kind, record.lastRead, read: reason) }
        }
    }

    private func show(_ kind: String, _ value: LuaValue?, read: ControlReloadReason?) {
        let at = now
        update(kind) {
            $0.value = value
            $0.values.append(ControlValue(at: at, value: value, read: read))
        }
    }

    private func update(_ kind: String, _ body: (inout ControlRecord) -> Void) {
        guard let i = controls.firstIndex(where: { $0.kind == kind }) else { return }
        let before = controls[i].state
        body(&controls[i])
        if recordsStateChanges, controls[i].state != before, !changedKinds.contains(kind) { changedKinds.append(kind) }
    }

    // MARK: Lasting state

    /// The controls' lasting state: what each shows and last read.
    public var state: [ControlState] { controls.map(\.state) }

    /// The controls whose state changed since the last call, and those
    /// dropped (only while `recordsStateChanges` is on).
    public func takeStateChanges() -> ControlStateChanges {
        defer { changedKinds = []; removedKinds = [] }
        return ControlStateChanges(changed: changedKinds.compactMap { control($0)?.state }, removed: removedKinds)
    }

    /// Takes over the controls of `old`, the control center of an earlier
    /// version of the bundle (one with no controls yet), with their values
    /// and history. A control this version no longer declares (or declares
    /// with another type) is dropped; the returned notes say which.
    @discardableResult
    public func takeOver(from old: ControlCenter) -> [String] {
        precondition(controls.isEmpty, "takeOver(from:) continues a control center that has no controls yet")
        var notes: [String] = []
        for record in old.controls {
            guard runtime.bundle.declarations.controls.contains(where: { $0.kind == record.kind && $0.type == record.type }) else {
                notes.append("control \(record.kind) was dropped: the bundle no longer declares it as a \(record.type)")
                if recordsStateChanges { removedKinds.append(record.kind) }
                continue
            }
            controls.append(record)
        }
        return notes
    }

    /// Continues from kept states (a control center with no controls yet):
    /// the controls show their values again without a read. A control the
    /// bundle no longer declares (or whose type changed) is dropped; the
    /// returned notes say which.
    @discardableResult
    public func restore(_ states: [ControlState]) -> [String] {
        precondition(controls.isEmpty, "restore(_:) continues a control center that has no controls yet")
        var notes: [String] = []
        for state in states {
            guard let declaration = runtime.bundle.declarations.controls.first(where: { $0.kind == state.kind }),
                  declaration.type == state.type else {
                notes.append("control \(state.kind) was dropped: the bundle no longer declares it as a \(state.type)")
                if recordsStateChanges { removedKinds.append(state.kind) }
                continue
            }
            var record = ControlRecord(kind: state.kind, type: state.type)
            record.value = state.value
            record.lastRead = state.lastRead
            controls.append(record)
        }
        return notes
    }

    private func declaration(_ kind: String) throws(IntentError) -> ControlDeclaration {
        guard let control = runtime.bundle.declarations.controls.first(where: { $0.kind == kind }) else {
            let kinds = runtime.bundle.declarations.controls.map(\.kind).joined(separator: ", ")
            throw IntentError(message: "bundle \(runtime.bundle.manifest.id) has no control '\(kind)' (controls: \(kinds.isEmpty ? "none" : kinds))")
        }
        return control
    }
}
