import LuaSandbox

/// What a caller keeps of a call's results: read in place when the call
/// ran in process (`LuaValueView`s: no `LuaValue` made of what is not
/// kept), or from the `LuaValue`s a worker process sent. One generic
/// reader serves both, so the two ways of running a call give the same
/// answer.
protocol CallResultReader {
    associatedtype Output
    func read<Results: RandomAccessCollection>(_ results: Results) -> Output where Results.Element: ProviderValue
}

/// The results as they are (`CallOutcome.values`).
struct PlainResults: CallResultReader {
    func read<Results: RandomAccessCollection>(_ results: Results) -> [LuaValue] where Results.Element: ProviderValue {
        results.map(\.luaValue)
    }
}

/// A value of a call's results, as a `CallResultReader` reads it: a
/// `LuaValue`, or a `LuaValueView` read in place.
protocol ProviderValue {
    /// "nil", "boolean", "number", "string" or "table".
    var typeName: String { get }
    var isTable: Bool { get }
    var doubleValue: Double? { get }
    var luaStringValue: LuaString? { get }
    /// Tables: array items, and string-keyed fields in key order (0 for other values).
    var arrayCount: Int { get }
    var fieldCount: Int { get }
    /// Array item `position` (0-based).
    func item(_ position: Int) -> Self
    func fieldKey(_ position: Int) -> LuaString
    func fieldValue(_ position: Int) -> Self
    /// Field `position`'s key length in bytes and its value, found once.
    func keyedField(_ position: Int) -> (keyByteCount: Int, value: Self)
    /// The field `key` of a table; nil when absent.
    func field(_ key: LuaString) -> Self?
    /// About the length of its JSON text (rule T9's measure: `LuaValue.encodedSize`).
    var encodedSize: Int { get }
    /// The value as a `LuaValue` to keep (a view's is copied out).
    var luaValue: LuaValue { get }
}

extension LuaValue: ProviderValue {
    var isTable: Bool {
        if case .table = self { return true }
        return false
    }

    private var table: LuaTable {
        if case .table(let t) = self { return t }
        return LuaTable()
    }

    var arrayCount: Int { table.array.count }
    var fieldCount: Int { table.fields.count }
    func item(_ position: Int) -> LuaValue { table.array[position] }
    func fieldKey(_ position: Int) -> LuaString { table.fields[position].key }
    func fieldValue(_ position: Int) -> LuaValue { table.fields[position].value }
    func keyedField(_ position: Int) -> (keyByteCount: Int, value: LuaValue) {
        let field = table.fields[position]
        return (field.key.count, field.value)
    }
    func field(_ key: LuaString) -> LuaValue? { table.fields[key] }
    var luaValue: LuaValue { self }
}

extension LuaValueView: ProviderValue {
    func item(_ position: Int) -> LuaValueView { self[position + 1]! }
    func fieldKey(_ position: Int) -> LuaString { field(at: position).key }
    func fieldValue(_ position: Int) -> LuaValueView { field(at: position).value }
    func keyedField(_ position: Int) -> (keyByteCount: Int, value: LuaValueView) {
        let field = field(at: position)
        return (field.keyByteCount, field.value)
    }
    func field(_ key: LuaString) -> LuaValueView? { self[key] }
    var luaValue: LuaValue { value }
}
