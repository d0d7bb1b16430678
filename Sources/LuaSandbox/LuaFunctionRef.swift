/// A Lua function held by the host (a registry reference).
///
/// Call it with `LuaState.call(_:_:)`. The reference is released when this
/// object goes away; it does not keep its state alive.
public final class LuaFunctionRef {
    weak var state: LuaState?
    /// The state it belongs to, for the check on every call (a weak load
    /// costs atomic operations; this is a compare).
    let owner: ObjectIdentifier
    let reference: Int32

    /// Takes the function on top of `stack` (popping it).
    init(state: LuaState, popping stack: LuaStack) {
        self.state = state
        owner = ObjectIdentifier(state)
        self.reference = stack.reference()
    }

    deinit {
        // The innermost running thread's stack, as for every host operation.
        state?.stack.release(reference)
    }
}

@available(*, unavailable)
extension LuaFunctionRef: Sendable {}
