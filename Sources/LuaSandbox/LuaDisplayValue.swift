import CLuaShims
import LunetteJSON

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
            TableRendering.writeLiteral(array: t.array, fields: t.fields.map { ($0.key, $0.value) }, to: &out) { $0.write(to: &$1) }
        }
    }

    /// JSON text: plain data as `LuaValue.writeJSON` writes it; the other
    /// values as one-key objects, like `{"$bytes": …}` for bytes:
    /// `{"$function": "builtin"}`, `{"$function": "tasks.lua:12"}`,
    /// `{"$userdata": "FILE*"}` (or `null` without a name), `{"$thread": null}`.
    /// Tables follow the plain-data rules (an array, or an object with
    /// sorted keys and array entries keyed "1", "2", …).
    public func writeJSON(to writer: JSONWriter) {
        switch self {
        case .data(let value): value.writeJSON(to: writer)
        case .function(let definedAt):
            writer.object { writer.field("$function", string: definedAt ?? "builtin") }
        case .userdata(let name):
            writer.object { writer.field("$userdata", string: name) }
        case .thread:
            writer.object { writer.key("$thread"); writer.null() }
        case .table(let t):
            TableRendering.writeJSON(array: t.array, fields: t.fields.map { ($0.key, $0.value) }, to: writer) { $0.writeJSON(to: writer) }
        }
    }
}

// MARK: - Calling

extension LuaState {
    /// Calls `function` like `call(_:_:)`, but returns what is not plain
    /// data as a description instead of failing: for developer tools that
    /// show what a chunk returned (`lunette eval`). Tables are still read
    /// raw, with the same walk, rules and limits; a cycle, a bad key or a
    /// hole is still an error (`LuaError.value`).
    @discardableResult
    public func callForDisplay(_ function: LuaFunctionRef, _ arguments: [LuaValue] = []) throws(LuaError) -> [LuaDisplayValue] {
        precondition(function.owner == ObjectIdentifier(self), "LuaFunctionRef belongs to another LuaState")
        return try withLargeStack { () throws(LuaError) in
            try self.protectedCall(arguments, options: nil, pushFunction: { stack in
                stack.push(reference: function.reference)
            }, finish: { reader, first, last throws(LuaValueError) in
                first > last ? [] : try reader.readResultsForDisplay(first, last)
            })
        }
    }
}
