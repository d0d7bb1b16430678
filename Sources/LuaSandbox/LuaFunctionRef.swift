/// A Lua function held by the host (a registry reference).
///
/// Call it with `LuaState.call(_:_:)`. The reference is released when this
/// object goes away; it does not keep its state alive.
public final class LuaFunctionRef {
    /// Whether its state is still open, without a weak reference: a weak
    /// reference would give the state a side table, which makes every
    /// retain and release of the state take the runtime's slow path.
    let life: LuaState.Life
    /// The state it belongs to, for the check on every call (a compare).
    let owner: ObjectIdentifier
    let reference: Int32

    /// Takes the function on top of `stack` (popping it).
    init(state: LuaState, popping stack: LuaStack) {
        life = state.life
        owner = ObjectIdentifier(state)
        self.reference = stack.reference()
    }

    deinit {
        // The innermost running thread's stack, as for every host operation.
        if let state = life.state { state.stack.release(reference) }
    }
}

@available(*, unavailable)
extension LuaFunctionRef: Sendable {}
