import LuaSandbox
import Testing

/// `LuaFields` keeps its entries sorted in one allocation, inserting and removing
/// in place: these check it against a dictionary through random changes.
@Suite("Fields changed one by one")
struct LuaFieldsTests {
    /// Sets, replaces and removes keys at random (short and long keys, so
    /// both `LuaString` forms are stored), taking copies on the way: each
    /// step the fields hold what a dictionary holds, in key order, and every
    /// copy still holds what it held when it was taken.
    @Test func randomChangesMatchADictionaryAndLeaveCopiesAlone() {
        var generator = ValueGenerator(seed: 0x5EED_F1E1D5)
        let keys: [LuaString] = (0..<24).map { i in
            i % 3 == 0 ? LuaString("a key longer than sixteen bytes, number \(i)") : LuaString("k\(i)")
        }
        var fields = LuaFields()
        var reference: [LuaString: LuaValue] = [:]
        var copies: [(LuaFields, [LuaString: LuaValue])] = []
        for step in 0..<4_000 {
            let key = keys[generator.int(keys.count)]
            // One change in four removes (setting .nil); the rest set a value.
            let value: LuaValue = generator.int(4) == 0 ? .nil : (generator.int(2) == 0 ? .integer(Int64(step)) : .string(LuaString("value of \(step), long enough to be on the heap")))
            fields[key] = value
            // (Not `reference[key] = value.isNil ? nil : value`: that nil is `LuaValue.nil`.)
            if value.isNil { reference.removeValue(forKey: key) } else { reference[key] = value }
            if step % 97 == 0 { copies.append((fields, reference)) }
            #expect(fields.count == reference.count)
            #expect(fields.keys == reference.keys.sorted())
            for (k, v) in reference where fields[k] != .some(v) { Issue.record("step \(step): \(k) reads \(String(describing: fields[k])), not \(v)") }
        }
        for (copy, expected) in copies {
            #expect(copy == LuaFields(expected), "a copy changed with the value it was taken from")
        }
    }

    /// Fields with the same entries are equal and hash alike, whether made
    /// from a literal or set one by one in another order; a different value
    /// or key makes them unequal.
    @Test func equalityAndHashFollowTheEntries() {
        let built: LuaFields = ["b": 2, "a": "x", "c": .table(LuaTable(fields: ["d": true]))]
        var oneByOne = LuaFields()
        oneByOne["c"] = .table(LuaTable(fields: ["d": true]))
        oneByOne["a"] = "x"
        oneByOne["b"] = 2
        #expect(built == oneByOne)
        #expect(built.hashValue == oneByOne.hashValue)
        var changed = oneByOne
        changed["b"] = 3
        #expect(changed != built && oneByOne == built)
        var renamed = oneByOne
        renamed["b"] = nil
        renamed["bb"] = 2
        #expect(renamed != built)
        #expect(LuaFields() == LuaFields([]))
        var emptied: LuaFields = ["only": 1]
        emptied["only"] = nil
        #expect(emptied.isEmpty && emptied == LuaFields() && emptied.hashValue == LuaFields().hashValue)
    }

    /// A table read from Lua (built from the C walk's tape) changes like any
    /// other, and the read value is unchanged by changes to a copy.
    @Test func fieldsReadFromLuaChangeLikeAnyOthers() throws {
        let state = try LuaState()
        let read = try #require(try state.run("return { z = 1, a = 'a string longer than sixteen bytes', m = { n = 2 } }")[0].tableValue)
        var copy = read
        copy["b"] = 5
        copy["z"] = nil
        #expect(copy.fields.keys == ["a", "b", "m"])
        #expect(read.fields.keys == ["a", "m", "z"])
        #expect(read["a"] == "a string longer than sixteen bytes" && read["m"] == .table(LuaTable(fields: ["n": 2])))
    }
}
