// @testable: what a dropped value releases is only seen through its
// storage (the bytes of a long string), which is internal.
@testable import LuaSandbox
import Testing

/// The allocation of a string over 16 bytes, which the string holds.
private func bytes(of string: LuaString) -> LuaString.HeapBytes? {
    if case .heap(let bytes) = string.storage { return bytes }
    return nil
}

/// `LuaFields`' storage destroys only the entries that hold a reference
/// (`holdsReference`); one it missed would keep what it holds for ever.
@Suite("Dropped fields release what their entries hold")
struct LuaFieldsReleaseTests {
    /// Long keys, long string values and nested tables' entries, in fields
    /// made from a literal, copied and changed: all released when the
    /// fields and their copies go.
    @Test func fieldsMadeInSwift() throws {
        weak var key, value, innerKey, added: LuaString.HeapBytes?
        do {
            let k = LuaString("a key longer than sixteen bytes"), v = LuaString("a value longer than sixteen bytes")
            let ik = LuaString("an inner key longer than sixteen bytes"), a = LuaString("an added value longer than sixteen bytes")
            key = bytes(of: k)
            value = bytes(of: v)
            innerKey = bytes(of: ik)
            added = bytes(of: a)
            var fields: LuaFields = [k: .string(v), "short": 1, "table": .table(LuaTable(fields: [ik: "v"]))]
            let copy = fields
            fields["short"] = nil
            fields["added"] = .string(a)
            #expect(copy.count == 3 && fields.count == 3)
        }
        #expect(key == nil && value == nil && innerKey == nil && added == nil)
    }

    /// The same for fields the value reader builds from a Lua table.
    @Test func fieldsReadFromLua() throws {
        weak var key, value, innerValue: LuaString.HeapBytes?
        try {
            let state = try LuaState()
            let read = try #require(try state.run("""
                local long = string.rep('x', 40)
                return { [long .. 'k'] = long .. 'v', n = 1, t = { inner = long .. 'i' } }
                """)[0].tableValue)
            for field in read.fields {
                if field.key.count > 16 { key = bytes(of: field.key) }
                if let s = field.value.luaStringValue { value = bytes(of: s) }
                if case .table(let t) = field.value, let s = t["inner"].luaStringValue { innerValue = bytes(of: s) }
            }
            #expect(key != nil && value != nil && innerValue != nil)
        }()
        #expect(key == nil && value == nil && innerValue == nil)
    }

    /// The same for a table read again and again, whose later reads go
    /// against its remembered keys (the C walk marks what its entries hold
    /// there too).
    @Test func fieldsReadAgainstRememberedKeys() throws {
        weak var value, innerValue: LuaString.HeapBytes?
        try {
            let state = try LuaState()
            try state.run("""
                local long = string.rep('x', 40)
                function make() return { v = long .. 'v', n = 1, t = { inner = long .. 'i' } } end
                """)
            let make = try #require(try state.globalFunction("make"))
            for _ in 0..<5 {
                let read = try #require(try state.call(make)[0].tableValue)
                value = read["v"].luaStringValue.flatMap(bytes(of:))
                innerValue = read["t"]["inner"].luaStringValue.flatMap(bytes(of:))
                #expect(value != nil && innerValue != nil)
            }
        }()
        #expect(value == nil && innerValue == nil)
    }
}
