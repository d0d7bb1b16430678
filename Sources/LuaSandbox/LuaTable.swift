/// A plain-data Lua table: an array part `t[1...n]` and string-keyed fields.
///
/// Integer keys must form a sequence 1...n without holes; other keys must be
/// strings. A table may have both parts (`{ 1, 2, name = "x" }`).
public struct LuaTable: Sendable, Hashable {
    /// `t[1]`, `t[2]`, … in order (Swift index 0 is Lua index 1).
    public var array: [LuaValue]
    /// The string-keyed entries, sorted by key.
    public var fields: LuaFields

    public init(array: [LuaValue] = [], fields: LuaFields = LuaFields()) {
        self.array = array
        self.fields = fields
    }

    /// From a dictionary. A dictionary literal goes to the `LuaFields`
    /// initializer instead, which sorts it without hashing (this one is
    /// disfavoured for literals).
    @_disfavoredOverload
    public init(array: [LuaValue] = [], fields: [LuaString: LuaValue]) {
        self.init(array: array, fields: LuaFields(fields))
    }

    /// True when the table has no entries.
    public var isEmpty: Bool { array.isEmpty && fields.isEmpty }

    /// Number of entries in both parts.
    public var count: Int { array.count + fields.count }

    /// The fields whose keys are text, by key (array items, and keys that
    /// are not valid UTF-8, left out): named values such as an intent's
    /// parameters or a widget's configuration.
    public var namedFields: [String: LuaValue] {
        var out: [String: LuaValue] = [:]
        for field in fields { if let key = field.key.string { out[key] = field.value } }
        return out
    }

    /// `t[key]`, `.nil` when absent. Setting `.nil` removes the field.
    public subscript(key: LuaString) -> LuaValue {
        get { fields[key] ?? .nil }
        set { fields[key] = newValue }
    }

    /// `t[index]` with Lua's 1-based indexing; `.nil` outside 1...count.
    public subscript(index: Int) -> LuaValue {
        guard index >= 1, index <= array.count else { return .nil }
        return array[index - 1]
    }
}
