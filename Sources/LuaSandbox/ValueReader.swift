import CLua
import CLuaShims

/// Reads a value off a Lua stack into a `LuaValue`.
///
/// Only non-raising, raw C API calls are used (lua_type, lua_to*x,
/// lua_rawgeti, lua_next, lua_checkstack), so no metamethod runs and no Lua
/// error can longjmp through this code. Tables are walked with a depth limit,
/// a check for cycles on the current path, and a size budget.
struct ValueReader {
    let L: OpaquePointer
    let limits: LuaConversionLimits
    private var budget: Int
    private var onPath: [UnsafeRawPointer] = []

    init(_ L: OpaquePointer, limits: LuaConversionLimits) {
        self.L = L
        self.limits = limits
        self.budget = limits.maxBytes
    }

    /// Converts the value at `index`; the error's path is relative to it.
    mutating func read(at index: Int32) throws(PathedValueError) -> LuaValue {
        try read(lua_absindex(L, index), depth: 0)
    }

    private mutating func spend(_ bytes: Int) throws(PathedValueError) {
        budget -= bytes
        if budget < 0 {
            throw PathedValueError(reason: "value is too large (over \(limits.maxBytes) bytes)")
        }
    }

    private mutating func read(_ index: Int32, depth: Int) throws(PathedValueError) -> LuaValue {
        try spend(16)
        switch lua_type(L, index) {
        case LUA_TNIL, LUA_TNONE:
            return .nil
        case LUA_TBOOLEAN:
            return .boolean(lua_toboolean(L, index) != 0)
        case LUA_TNUMBER:
            if lua_isinteger(L, index) != 0 {
                return .integer(lua_tointegerx(L, index, nil))
            }
            return .number(lua_tonumberx(L, index, nil))
        case LUA_TSTRING:
            let s = readString(index)
            try spend(s.count)
            return .string(s)
        case LUA_TTABLE:
            return .table(try readTable(index, depth: depth))
        case let type:
            throw PathedValueError(reason: "\(Self.article(type)) is not plain data")
        }
    }

    /// The string at `index`, which must be of type string (never a number:
    /// lua_tolstring would convert the stack slot in place).
    func readString(_ index: Int32) -> LuaString {
        var length = 0
        guard let pointer = lua_tolstring(L, index, &length) else { return LuaString("") }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            LuaString(copying: UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private mutating func readTable(_ t: Int32, depth: Int) throws(PathedValueError) -> LuaTable {
        guard let identity = lua_topointer(L, t) else { return LuaTable() }
        if onPath.contains(identity) {
            throw PathedValueError(reason: "a table that contains itself (a cycle) is not plain data")
        }
        if depth >= limits.maxDepth {
            throw PathedValueError(reason: "tables are nested more than \(limits.maxDepth) deep")
        }
        guard lua_checkstack(L, 3) != 0 else {
            throw PathedValueError(reason: "out of Lua stack space while reading the value")
        }
        onPath.append(identity)
        defer { onPath.removeLast() }
        let top = lua_gettop(L)

        var fields: [LuaString: LuaValue] = [:]
        var integerKeys: Int64 = 0
        var largestKey: Int64 = 0
        lua_pushnil(L)
        while lua_next(L, t) != 0 {
            // key at -2, value at -1
            switch lua_type(L, -2) {
            case LUA_TSTRING:
                let key = readString(-2)
                try spend(key.count)
                do {
                    fields[key] = try read(top + 2, depth: depth + 1)
                } catch {
                    lua_settop(L, top)
                    throw error.adding(.field(key))
                }
            case LUA_TNUMBER where lua_isinteger(L, -2) != 0:
                let key = lua_tointegerx(L, -2, nil)
                if key < 1 {
                    lua_settop(L, top)
                    throw PathedValueError(reason: "array index \(key) is not plain data (arrays run from 1 to n)").adding(.index(key))
                }
                integerKeys += 1
                largestKey = max(largestKey, key)
            case let type:
                let description = type == LUA_TNUMBER ? "\(LuaLiteral.number(lua_tonumberx(L, -2, nil)))" : Self.typeName(type)
                lua_settop(L, top)
                throw PathedValueError(reason: "a \(Self.typeName(type)) key is not plain data (keys are strings or array indices 1..n)")
                    .adding(.key(description))
            }
            lunette_pop(L, 1)
        }

        var array: [LuaValue] = []
        if integerKeys > 0 {
            if largestKey != integerKeys {
                // Sparse: report the first missing index; never allocate by the largest key.
                var missing: Int64 = 1
                while missing <= integerKeys, lua_rawgeti(L, t, missing) != LUA_TNIL {
                    lunette_pop(L, 1)
                    missing += 1
                }
                lua_settop(L, top)
                throw PathedValueError(
                    reason: "array has a hole at [\(missing)] (\(integerKeys) integer keys, largest \(largestKey)); arrays must run from 1 to n without nil"
                )
            }
            array.reserveCapacity(Int(integerKeys))
            for i in 1...integerKeys {
                lua_rawgeti(L, t, i)
                do {
                    array.append(try read(top + 1, depth: depth + 1))
                } catch {
                    lua_settop(L, top)
                    throw error.adding(.index(i))
                }
                lunette_pop(L, 1)
            }
        }
        return LuaTable(array: array, fields: fields)
    }

    static func typeName(_ type: Int32) -> String {
        switch type {
        case LUA_TNIL: return "nil"
        case LUA_TBOOLEAN: return "boolean"
        case LUA_TLIGHTUSERDATA, LUA_TUSERDATA: return "userdata"
        case LUA_TNUMBER: return "number"
        case LUA_TSTRING: return "string"
        case LUA_TTABLE: return "table"
        case LUA_TFUNCTION: return "function"
        case LUA_TTHREAD: return "thread"
        default: return "no value"
        }
    }

    static func article(_ type: Int32) -> String {
        let name = typeName(type)
        return (name.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + name
    }
}
