import LuaSandbox

/// Why a control's value was read again.
public enum ControlReloadReason: String, Sendable, CaseIterable, Codable {
    /// The control was added (C2).
    case added
    /// Its action's perform returned (C2).
    case action
    /// `reload.controls(kind)` or `reload.allControls()` (C2).
    case request
}

/// A control in the control center: its current value and its history.
public struct ControlRecord: Sendable {
    public var kind: String
    /// "toggle" or "button".
    public var type: String
    /// What it shows now: the last value read, or a toggle's optimistic
    /// flip while its action runs.
    public internal(set) var value: LuaValue?
    /// The last value `value(ctx)` returned.
    var lastRead: LuaValue?
    /// Every value it showed, from when: optimistic flips included.
    public internal(set) var values: [ControlValue] = []
    /// Every read of `value(ctx)`, with why and how it ended.
    public internal(set) var reloads: [(at: Double, reason: ControlReloadReason, status: CallStatus)] = []
    /// Calls that failed (value reads and actions).
    public internal(set) var failures: [CallFailure] = []

    /// Why the last value read failed, if it did.
    public var lastReadFailure: Diagnostic? {
        guard let last = reloads.last, last.status != .ok else { return nil }
        return failures.last(where: { $0.role == .controlValue })?.diagnostic
    }
}

/// What a host keeps of a control across restarts: what it shows and
/// what it last read.
public struct ControlState: Sendable, Codable, Equatable {
    public var kind: String
    public var type: String
    public var value: LuaValue?
    public var lastRead: LuaValue?
}

/// What changed in the controls' lasting state (`ControlCenter.takeStateChanges()`).
public struct ControlStateChanges: Sendable {
    /// Controls added or changed (their whole new state).
    public var changed: [ControlState] = []
    /// Controls dropped (the bundle no longer declares them).
    public var removed: [String] = []

    public var isEmpty: Bool { changed.isEmpty && removed.isEmpty }
}

extension ControlRecord {
    var state: ControlState { ControlState(kind: kind, type: type, value: value, lastRead: lastRead) }
}

/// A value a control showed from a moment on.
public struct ControlValue: Sendable {
    public var at: Double
    public var value: LuaValue?
    /// Why it was read, or nil for a toggle's optimistic flip (C3).
    public var read: ControlReloadReason?
}

/// What tapping a control did.
public struct ControlTap: Sendable {
    public var kind: String
    /// The value shown before the tap.
    public var before: LuaValue?
    /// A toggle's optimistic value while its action ran (nil for a button).
    public var optimistic: LuaValue?
    /// The action's performance, when the control has an action.
    public var performance: IntentPerformance?
    /// The value shown after: re-read once the action returned.
    public var after: LuaValue?
}
