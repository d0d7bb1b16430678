import CLua
import CLuaShims

/// Pushes `LuaValue`s onto a Lua stack.
///
/// Runs in host mode (the state's memory cap is not enforced), where the
/// C API calls used here can only fail by a real out-of-memory, which the
/// allocator turns into an abort rather than a longjmp through Swift. Keys
/// are strings or array indices, never nil or NaN, so lua_rawset cannot raise.
struct ValuePusher {
    let L: OpaquePointer
    let maxDepth: Int

    func push(_ value: LuaValue) throws(PathedValueError) {
        try push(value, depth: 0)
    }

    private func push(_ value: LuaValue, depth: Int) throws(PathedValueError) {
        guard lua_checkstack(L, 3) != 0 else {
            throw PathedValueError(reason: "out of Lua stack space while pushing the value")
        }
        switch value {
        case .nil:
            lua_pushnil(L)
        case .boolean(let b):
            lua_pushboolean(L, b ? 1 : 0)
        case .integer(let i):
            lua_pushinteger(L, i)
        case .number(let d):
            lua_pushnumber(L, d)
        case .string(let s):
            pushString(s)
        case .table(let t):
            if depth >= maxDepth {
                throw PathedValueError(reason: "tables are nested more than \(maxDepth) deep")
            }
            lua_createtable(L, Int32(clamping: t.array.count), Int32(clamping: t.fields.count))
            for (offset, element) in t.array.enumerated() {
                do { try push(element, depth: depth + 1) } catch {
                    lunette_pop(L, 1)
                    throw error.adding(.index(Int64(offset + 1)))
                }
                lua_rawseti(L, -2, Int64(offset + 1))
            }
            for entry in t.fields {
                pushString(entry.key)
                do { try push(entry.value, depth: depth + 1) } catch {
                    lunette_pop(L, 2)
                    throw error.adding(.field(entry.key))
                }
                lua_rawset(L, -3)
            }
        }
    }

    func pushString(_ s: LuaString) {
        s.withBytes { buffer in
            if let base = buffer.baseAddress {
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    _ = lua_pushlstring(L, $0, buffer.count)
                }
            } else {
                _ = lua_pushstring(L, "")
            }
        }
    }
}
