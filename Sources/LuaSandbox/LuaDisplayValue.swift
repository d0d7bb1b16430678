import CLua
import CLuaShims

/// A value as a developer tool shows it (`lunette eval`): plain data, or a
/// description of a value that is not plain data (a function, userdata, a
/// thread), also inside tables.
///
/// Hosts exchange plain data (`LuaValue`); this type is only for showing
/// what a script returned, never for passing it on. Read one with
/// `LuaState.callForDisplay(_:_:)`.
public indirect enum LuaDisplayValue: Sendable, Hashable {
    /// Plain data, all the way down.
    case data(LuaValue)
    /// A function: where a Lua function was defined ("tasks.lua:12", or the
    /// chunk's name for a main chunk); nil for a C function.
    case function(definedAt: String?)
    /// Full or light userdata, with the `__name` of its metatable when it
    /// has one (Lua's files say "FILE*").
    case userdata(name: String?)
    /// A coroutine.
    case thread
    /// A table that holds one of the above somewhere inside.
    case table(LuaDisplayTable)
}

/// A table that holds a value that is not plain data: an array part
/// `t[1...n]` and string-keyed fields, as in `LuaTable`.
public struct LuaDisplayTable: Sendable, Hashable {
    /// One string key and its value.
    public struct Field: Sendable, Hashable {
        public var key: LuaString
        public var value: LuaDisplayValue

        public init(key: LuaString, value: LuaDisplayValue) {
            self.key = key
            self.value = value
        }
    }

    /// `t[1]`, `t[2]`, … in order.
    public var array: [LuaDisplayValue]
    /// The string-keyed entries, in ascending key order.
    public var fields: [Field]

    public init(array: [LuaDisplayValue] = [], fields: [Field] = []) {
        self.array = array
        self.fields = fields.sorted { $0.key < $1.key }
    }
}

extension LuaDisplayValue {
    /// The plain data, when the whole value is plain data.
    public var data: LuaValue? {
        if case .data(let value) = self { return value }
        return nil
    }
}

// MARK: - Text and JSON

extension LuaDisplayValue: CustomStringConvertible {
    /// Lua source for plain data (as `LuaValue.description`); the other
    /// values in angle brackets, which no Lua literal uses:
    /// `<function: builtin>`, `<function: tasks.lua:12>`,
    /// `<userdata: FILE*>`, `<userdata>`, `<thread>`.
    public var description: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .data(let value): out += value.description
        case .function(let definedAt): out += "<function: \(definedAt ?? "builtin")>"
        case .userdata(let name): out += name.map { "<userdata: \($0)>" } ?? "<userdata>"
        case .thread: out += "<thread>"
        case .table(let t):
            out += "{"
            var first = true
            for element in t.array {
                if !first { out += ", " }
                first = false
                element.write(to: &out)
            }
            for field in t.fields {
                if !first { out += ", " }
                first = false
                if let name = field.key.string, PathComponent.isIdentifier(name) {
                    out += name
                } else {
                    out += "[" + LuaLiteral.quoted(field.key) + "]"
                }
                out += " = "
                field.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// JSON text: plain data as `LuaValue.writeJSON` writes it; the other
    /// values as one-key objects, like `{"$bytes": …}` for bytes:
    /// `{"$function": "builtin"}`, `{"$function": "tasks.lua:12"}`,
    /// `{"$userdata": "FILE*"}` (or `null` without a name), `{"$thread": null}`.
    /// Tables follow the plain-data rules (an array, or an object with
    /// sorted keys and array entries keyed "1", "2", …).
    public func writeJSON(to out: inout String) {
        switch self {
        case .data(let value): value.writeJSON(to: &out)
        case .function(let definedAt):
            out += "{\"$function\":"
            JSON.writeString(definedAt ?? "builtin", to: &out)
            out += "}"
        case .userdata(let name):
            out += "{\"$userdata\":"
            if let name { JSON.writeString(name, to: &out) } else { out += "null" }
            out += "}"
        case .thread:
            out += "{\"$thread\":null}"
        case .table(let t):
            if t.fields.isEmpty, !t.array.isEmpty {
                out += "["
                for (i, element) in t.array.enumerated() {
                    if i > 0 { out += "," }
                    element.writeJSON(to: &out)
                }
                out += "]"
                return
            }
            out += "{"
            var first = true
            for (i, element) in t.array.enumerated() {
                if !first { out += "," }
                first = false
                out += "\"\(i + 1)\":"
                element.writeJSON(to: &out)
            }
            for field in t.fields {
                if !first { out += "," }
                first = false
                JSON.writeString(field.key.displayText, to: &out)
                out += ":"
                field.value.writeJSON(to: &out)
            }
            out += "}"
        }
    }
}

// MARK: - Calling

extension LuaState {
    /// Calls `function` like `call(_:_:)`, but returns what is not plain
    /// data as a description instead of failing: for developer tools that
    /// show what a chunk returned (`lunette eval`). Tables are still read
    /// raw, with the same rules and limits; a cycle, a bad key or a hole
    /// is still an error (`LuaError.value`).
    @discardableResult
    public func callForDisplay(_ function: LuaFunctionRef, _ arguments: [LuaValue] = []) throws(LuaError) -> [LuaDisplayValue] {
        precondition(function.state === self, "LuaFunctionRef belongs to another LuaState")
        let limits = conversionLimits
        return try withLargeStack { () throws(LuaError) in
            try self.protectedCall(arguments, options: self.options, pushFunction: { L in
                lua_rawgeti(L, lunette_registry_index(), Int64(function.reference))
            }, readResults: { reader, first, last throws(LuaValueError) in
                var display = DisplayReader(reader.L, limits: limits)
                return try display.readResults(first, last)
            })
        }
    }
}

// MARK: - Reading

/// The display variant of `ValueReader`'s Swift walk: the same rules (raw
/// access only, depth limit, no cycles, size budget, string keys or array
/// indices 1...n without holes) and the same messages, except that
/// functions, userdata and threads are described instead of refused. The
/// tests hold the two walks to the same results and errors.
struct DisplayReader {
    let L: OpaquePointer
    let limits: LuaConversionLimits
    private var budget: Int
    private var onPath: [UnsafeRawPointer] = []

    init(_ L: OpaquePointer, limits: LuaConversionLimits) {
        self.L = L
        self.limits = limits
        self.budget = limits.maxBytes
    }

    mutating func readResults(_ first: Int32, _ last: Int32) throws(LuaValueError) -> [LuaDisplayValue] {
        var results: [LuaDisplayValue] = []
        for index in first...last {
            let root = first == last ? "result" : "result #\(index - first + 1)"
            do { results.append(try read(index, depth: 0)) } catch { throw error.rooted(at: root) }
        }
        return results
    }

    private mutating func spend(_ bytes: Int) throws(PathedValueError) {
        budget -= bytes
        if budget < 0 {
            throw PathedValueError(reason: "value is too large (over \(limits.maxBytes) bytes)")
        }
    }

    private mutating func read(_ index: Int32, depth: Int) throws(PathedValueError) -> LuaDisplayValue {
        try spend(16)
        switch lua_type(L, index) {
        case LUA_TNIL, LUA_TNONE:
            return .data(.nil)
        case LUA_TBOOLEAN:
            return .data(.boolean(lua_toboolean(L, index) != 0))
        case LUA_TNUMBER:
            if lua_isinteger(L, index) != 0 { return .data(.integer(lua_tointegerx(L, index, nil))) }
            return .data(.number(lua_tonumberx(L, index, nil)))
        case LUA_TSTRING:
            let s = ValueReader.string(L, at: index)
            try spend(s.count)
            return .data(.string(s))
        case LUA_TTABLE:
            return try readTable(index, depth: depth)
        case LUA_TFUNCTION:
            return .function(definedAt: definition(of: index))
        case LUA_TUSERDATA, LUA_TLIGHTUSERDATA:
            return .userdata(name: metatableName(of: index))
        default:
            return .thread
        }
    }

    /// "chunk:line" of a Lua function, the chunk for a main chunk, nil for a C function.
    private func definition(of index: Int32) -> String? {
        guard lua_checkstack(L, 1) != 0 else { return nil }
        var ar = lua_Debug()
        lua_pushvalue(L, index)
        guard lua_getinfo(L, ">S", &ar) != 0, let what = ar.what, String(cString: what) != "C" else { return nil }
        let source = withUnsafeBytes(of: &ar.short_src) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return ar.linedefined > 0 ? "\(source):\(ar.linedefined)" : source
    }

    /// The string `__name` of the value's metatable, read raw.
    private func metatableName(of index: Int32) -> String? {
        guard lua_checkstack(L, 2) != 0, lua_getmetatable(L, index) != 0 else { return nil }
        defer { lunette_pop(L, 2) }
        _ = lua_pushstring(L, "__name")
        guard lua_rawget(L, -2) == LUA_TSTRING else { return nil }
        return ValueReader.string(L, at: -1).displayText
    }

    private mutating func readTable(_ t: Int32, depth: Int) throws(PathedValueError) -> LuaDisplayValue {
        guard let identity = lua_topointer(L, t) else { return .data(.table(LuaTable())) }
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
        var fields: [LuaDisplayTable.Field] = []
        var integerKeys: Int64 = 0
        var largestKey: Int64 = 0
        lua_pushnil(L)
        while lua_next(L, t) != 0 {
            switch lua_type(L, -2) {
            case LUA_TSTRING:
                let key = ValueReader.string(L, at: -2)
                try spend(key.count)
                do {
                    fields.append(LuaDisplayTable.Field(key: key, value: try read(top + 2, depth: depth + 1)))
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
                let description = type == LUA_TNUMBER ? "\(LuaLiteral.number(lua_tonumberx(L, -2, nil)))" : ValueReader.typeName(type)
                lua_settop(L, top)
                throw PathedValueError(reason: "a \(ValueReader.typeName(type)) key is not plain data (keys are strings or array indices 1..n)")
                    .adding(.key(description))
            }
            lunette_pop(L, 1)
        }

        var array: [LuaDisplayValue] = []
        if integerKeys > 0 {
            if largestKey != integerKeys {
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
        // Plain data when every entry is: the same value the plain reader gives.
        let plainArray = array.compactMap(\.data)
        let plainFields = fields.compactMap { field in field.value.data.map { LuaFields.Entry(key: field.key, value: $0) } }
        if plainArray.count == array.count, plainFields.count == fields.count {
            return .data(.table(LuaTable(array: plainArray, fields: LuaFields(sorted: plainFields.sorted { $0.key < $1.key }))))
        }
        return .table(LuaDisplayTable(array: array, fields: fields))
    }
}
