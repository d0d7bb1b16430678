/// A snapshot of plain Lua data that can cross any boundary.
///
/// Plain data is what scripts and the host exchange: nil, booleans, numbers
/// (integers stay integers), byte-exact strings, and tables of plain data
/// without cycles. Functions, userdata, threads and cyclic tables are not
/// plain data and are rejected with an error that names where they were.
///
/// Equality is structural: `.integer(1)` and `.number(1.0)` are different
/// values (Lua's `==` would call them equal), and `.number(.nan)` is not
/// equal to itself, as in Lua.
public enum LuaValue: Sendable, Hashable {
    case `nil`
    case boolean(Bool)
    case integer(Int64)
    case number(Double)
    case string(LuaString)
    case table(LuaTable)
}

extension LuaValue {
    /// False when destroying the value releases nothing (nil, booleans,
    /// numbers, strings of up to 16 bytes).
    @inline(__always)
    var holdsReference: Bool {
        // Two tests of the case, not a switch over all six: a switch
        // compiled to a jump table whose one indirect jump mispredicted
        // from entry to entry (LuaFields.Storage's deinit asks this of each).
        if case .string(let s) = self { return s.holdsReference }
        if case .table = self { return true }
        return false
    }

    /// The Lua type name: "nil", "boolean", "number", "string" or "table".
    public var typeName: String {
        switch self {
        case .nil: return "nil"
        case .boolean: return "boolean"
        case .integer, .number: return "number"
        case .string: return "string"
        case .table: return "table"
        }
    }

    /// True for `.nil`.
    public var isNil: Bool {
        if case .nil = self { return true }
        return false
    }

    /// Lua truthiness: everything but nil and false is true.
    public var isTruthy: Bool {
        switch self {
        case .nil, .boolean(false): return false
        default: return true
        }
    }

    /// The boolean, if this is one.
    public var boolValue: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }

    /// The integer, if this is an integer or a float with an exact integer value.
    public var integerValue: Int64? {
        switch self {
        case .integer(let i): return i
        case .number(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// The number as a Double, for integers and floats.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default: return nil
        }
    }

    /// The text, if this is a string of valid UTF-8.
    public var stringValue: String? {
        if case .string(let s) = self { return s.string }
        return nil
    }

    /// The string (any bytes), if this is one.
    public var luaStringValue: LuaString? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The table, if this is one.
    public var tableValue: LuaTable? {
        if case .table(let t) = self { return t }
        return nil
    }

    /// `value[key]` for tables (`.nil` for anything else or a missing key).
    public subscript(key: LuaString) -> LuaValue {
        tableValue?[key] ?? .nil
    }

    /// `value[index]` with Lua's 1-based array indexing (`.nil` when absent).
    public subscript(index: Int) -> LuaValue {
        tableValue?[index] ?? .nil
    }
}

// MARK: - Literals

extension LuaValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .nil }
}

extension LuaValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
}

extension LuaValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension LuaValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension LuaValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(LuaString(value)) }
}

extension LuaValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: LuaValue...) { self = .table(LuaTable(array: elements)) }
}

extension LuaValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (LuaString, LuaValue)...) {
        self = .table(LuaTable(fields: LuaFields(Dictionary(elements, uniquingKeysWith: { _, last in last }))))
    }
}

extension LuaValue {
    /// A string value from Swift text.
    public static func string(_ text: String) -> LuaValue { .string(LuaString(text)) }
}
