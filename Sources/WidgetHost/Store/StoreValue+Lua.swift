import LuaSandbox
import SharedStore

// Plain Lua data ↔ store values. A Lua string that is valid UTF-8 becomes
// `.string`, any other `.bytes`; both come back as the same Lua string.
// A table is an array (items 1...n) or a map (string keys), not both; an
// empty table is stored as an empty array.

extension StoreValue {
    /// The store value of `value`; nil for Lua nil (which removes a key).
    /// `path` names the value in errors ("value", "value.tasks[2]").
    init?(lua value: LuaValue, path: String = "value") throws(StoreError) {
        switch value {
        case .nil: return nil
        case .boolean(let b): self = .boolean(b)
        case .integer(let i): self = .integer(i)
        case .number(let d): self = .double(d)
        case .string(let s): self = StoreValue(lua: s)
        case .table(let t): self = try StoreValue(table: t, path: path)
        }
    }

    init(lua string: LuaString) {
        if let text = string.string { self = .string(text) } else { self = .bytes(string.bytes) }
    }

    private init(table: LuaTable, path: String) throws(StoreError) {
        if !table.array.isEmpty && !table.fields.isEmpty {
            throw StoreError(.invalidValue, "\(path) mixes array items and string keys; the store keeps arrays or maps")
        }
        if table.fields.isEmpty {
            var items: [StoreValue] = []
            items.reserveCapacity(table.array.count)
            for (i, item) in table.array.enumerated() {
                // Plain data arrays hold no nil (the conversion stops at the first hole).
                guard let converted = try StoreValue(lua: item, path: "\(path)[\(i + 1)]") else { continue }
                items.append(converted)
            }
            self = .array(items)
            return
        }
        var pairs: [(String, StoreValue)] = []
        pairs.reserveCapacity(table.fields.count)
        for entry in table.fields {
            guard let key = entry.key.string else {
                throw StoreError(.invalidValue, "\(path) has a key that is not valid UTF-8 (\(StoreText.quoted(entry.key.bytes))); map keys are text")
            }
            guard let converted = try StoreValue(lua: entry.value, path: "\(path).\(key)") else { continue }
            pairs.append((key, converted))
        }
        self = .map(StoreMap(pairs))
    }

    /// The value as plain Lua data.
    var lua: LuaValue {
        switch self {
        case .integer(let i): return .integer(i)
        case .double(let d): return .number(d)
        case .boolean(let b): return .boolean(b)
        case .string(let s): return .string(LuaString(s))
        case .bytes(let b): return .string(LuaString(bytes: b))
        case .array(let items): return .table(LuaTable(array: items.map(\.lua)))
        case .map(let map):
            var fields: [LuaString: LuaValue] = [:]
            for entry in map.entries { fields[LuaString(entry.key)] = entry.value.lua }
            return .table(LuaTable(fields: fields))
        }
    }
}
