import CLua
import CLuaShims

/// A Lua function held by the host (a registry reference).
///
/// Call it with `LuaState.call(_:_:)`. The reference is released when this
/// object goes away; it does not keep its state alive.
public final class LuaFunctionRef {
    weak var state: LuaState?
    let reference: Int32

    /// Takes the function on top of `L`'s stack (popping it).
    init(state: LuaState, popping L: OpaquePointer) {
        self.state = state
        self.reference = luaL_ref(L, lunette_registry_index())
    }

    deinit {
        if let state {
            luaL_unref(state.rawState, lunette_registry_index(), reference)
        }
    }
}

@available(*, unavailable)
extension LuaFunctionRef: Sendable {}
