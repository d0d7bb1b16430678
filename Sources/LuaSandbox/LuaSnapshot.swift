import CLuaShims

/// What some of a state's objects held at one moment: the raw entries and
/// metatable of every table, and the upvalues of every function, reachable
/// from the roots it was taken from, less the host's objects (see
/// `LuaState.snapshot`). `LuaState.restore` puts them back, so a
/// host can start each call from the state a setup script left (a bundle's
/// main.lua) without running it again: whatever a call changed in those
/// objects is undone, and whatever it created becomes unreachable from them.
///
/// Objects keep their identity: a restore changes contents, never
/// references. The snapshot lives in the state's registry and is released
/// with this object.
public final class LuaSnapshot {
    /// The snapshot table, held in the registry as a function is (the same
    /// reference, released with this object).
    let held: LuaFunctionRef

    init(state: LuaState, popping stack: LuaStack) {
        held = LuaFunctionRef(state: state, popping: stack)
    }
}

@available(*, unavailable)
extension LuaSnapshot: Sendable {}

/// Why a snapshot was not taken: what the roots reach cannot be put back
/// exactly, or would cost too much to copy.
public enum LuaSnapshotRefusal: Error, Equatable, Sendable {
    /// A coroutine is reachable: its stack cannot be copied.
    case coroutine
    /// A userdata that is not the host's is reachable (a `string.gmatch`
    /// iterator's state, say): its memory cannot be copied.
    case userdata
    /// More entries and upvalues than the limit would be copied.
    case tooLarge(limit: Int)
    /// The state ran out of memory while copying.
    case outOfMemory

    /// A sentence for logs and documentation.
    public var reason: String {
        switch self {
        case .coroutine: return "a coroutine is reachable, and its stack cannot be copied"
        case .userdata: return "a userdata is reachable, and its memory cannot be copied"
        case .tooLarge(let limit): return "more than \(limit) table entries and upvalues are reachable"
        case .outOfMemory: return "the state ran out of memory while copying"
        }
    }
}

extension LuaState {
    /// Calls of functions whose result or effect belongs to the moment of
    /// the call since the state was made: the clock (`os.time()`,
    /// `os.date` without a time, `os.clock`), `math.random` and
    /// `math.randomseed`, output (`print`, `log.*`, `warn`), and every
    /// Swift function not marked `replayable`. A setup run that made none
    /// leaves a state that a snapshot can stand for.
    public var effects: UInt64 { host.pointee.effects }

    /// Snapshots what the values `roots` returns (called in host mode, with
    /// no arguments) and `functions` reach, except the host's objects: the
    /// state's globals, the values `hostObjects` returns, and everything
    /// their tables reach (libraries, read-only views, host modules; the
    /// functions met there are constants, not entered). Script state must
    /// therefore live outside the state's own globals, as a bundle's does
    /// (each call's globals are a table of their own). At most `maxSlots`
    /// table entries and upvalues are copied. Returns the snapshot, or why
    /// none was taken (the state is unchanged then). Either way the garbage
    /// of the walk is collected.
    public func snapshot(rootsFrom roots: LuaFunctionRef, hostObjects: LuaFunctionRef? = nil, functions: [LuaFunctionRef] = [],
                         maxSlots: Int = 4096) throws(LuaError) -> Result<LuaSnapshot, LuaSnapshotRefusal> {
        refuseInsideReading()
        let stack = stack
        let base = stack.top
        defer { stack.setTop(base) }
        if let hostObjects { try pushResults(of: hostObjects, on: stack) }
        let hostCount = stack.top - base
        try pushResults(of: roots, on: stack)
        try stack.reserveOrThrow(functions.count + 4)
        for function in functions {
            precondition(function.owner == ObjectIdentifier(self), "LuaFunctionRef belongs to another LuaState")
            stack.push(reference: function.reference)
        }
        switch stack.takeSnapshot(hostCount: hostCount, count: stack.top - base - hostCount, maxSlots: maxSlots) {
        case LUNETTE_SNAPSHOT_TAKEN: return .success(LuaSnapshot(state: self, popping: stack))
        case LUNETTE_SNAPSHOT_COROUTINE: return .failure(.coroutine)
        case LUNETTE_SNAPSHOT_USERDATA: return .failure(.userdata)
        case LUNETTE_SNAPSHOT_TOO_LARGE: return .failure(.tooLarge(limit: maxSlots))
        default: return .failure(.outOfMemory)
        }
    }

    /// Calls `function` in host mode with no arguments and leaves all its
    /// results on the stack.
    private func pushResults(of function: LuaFunctionRef, on stack: LuaStack) throws(LuaError) {
        precondition(function.owner == ObjectIdentifier(self), "LuaFunctionRef belongs to another LuaState")
        try stack.reserveOrThrow(2)
        stack.push(reference: function.reference)
        let status = stack.hostCall(arguments: 0, results: LuaLifecycle.multipleResults)
        guard status == LuaLifecycle.ok else { throw callError(status: status, stack: stack) }
    }

    /// Puts back every table and upvalue `snapshot` holds. Runs no script
    /// code. Throws only when the state runs out of memory.
    public func restore(_ snapshot: LuaSnapshot) throws(LuaError) {
        precondition(snapshot.held.owner == ObjectIdentifier(self), "LuaSnapshot belongs to another LuaState")
        refuseInsideReading()
        let stack = stack
        let base = stack.top
        defer { stack.setTop(base) }
        try stack.reserveOrThrow(3)
        stack.push(reference: snapshot.held.reference)
        let status = stack.restoreSnapshot(at: -1)
        guard status == LuaLifecycle.ok else {
            // No message handler ran (the closure form has none, and there is
            // no script frame to show): the error as it is, with no traceback
            // (`callError` would take a stale one left by an earlier call).
            if status == LuaLifecycle.memoryStatus { throw .memory(memoryError()) }
            throw .runtime(runtimeError(at: -1, stack: stack))
        }
    }
}
