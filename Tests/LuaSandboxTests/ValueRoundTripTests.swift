import LuaSandbox
import Testing

@Suite("LuaValue round trips through Lua")
struct ValueRoundTripTests {
    /// Sends `value` into Lua as an argument and back as a result.
    func roundTrip(_ state: LuaState, _ value: LuaValue) throws -> LuaValue {
        let identity = try state.load("return ...", name: "identity")
        let results = try state.call(identity, [value])
        return results.first ?? .nil
    }

    @Test func scalarsKeepTheirTypes() throws {
        let state = try LuaState()
        let values: [LuaValue] = [
            .nil, true, false, 0, -1, .integer(.max), .integer(.min), 0.5, -0.0, 1e308, .number(.leastNonzeroMagnitude),
            .number(.infinity), .number(-.infinity), 3.0,
        ]
        for value in values {
            #expect(try roundTrip(state, value) == value)
        }
        if case .number(let d) = try roundTrip(state, .number(.nan)) { #expect(d.isNaN) } else { Issue.record("NaN lost") }
        if case .number(let d) = try roundTrip(state, -0.0) { #expect(d.sign == .minus) }
    }

    @Test func integersStayIntegersAndFloatsStayFloats() throws {
        let state = try LuaState()
        #expect(try state.run("return 3, 3.0, 2^53, 7 // 2, 7 / 2") == [3, 3.0, 9_007_199_254_740_992.0, 3, 3.5])
    }

    @Test func stringsAreByteExact() throws {
        let state = try LuaState()
        let samples: [LuaString] = [
            "", "plain", "with\0nul", "é", "e\u{301}", "🙂",
            LuaString(bytes: [0xFF, 0xFE]), LuaString(bytes: [0xC0, 0xAF]), LuaString(bytes: [0xED, 0xA0, 0x80]),
            LuaString(bytes: [0xF4, 0x90, 0x80, 0x80]), LuaString(bytes: [0x80]),
        ]
        for sample in samples {
            let back = try roundTrip(state, .string(sample))
            #expect(back == .string(sample))
            #expect(back.luaStringValue?.bytes == sample.bytes)
        }
        // Precomposed and decomposed é are different Lua strings.
        #expect(LuaString("é") != LuaString("e\u{301}"))
        #expect(try state.run("return #'with\\0nul', '\\xff\\xfe'") == [8, .string(LuaString(bytes: [0xFF, 0xFE]))])
        #expect(LuaString(bytes: [0xFF]).string == nil)
        #expect(LuaString(bytes: Array("ok".utf8)).string == "ok")
    }

    /// Strings in tables are read by the C walk, which packs those of up to
    /// 16 bytes into words with a few overlapping loads: every length, as a
    /// value and as a key, with bytes that differ at every position (and
    /// include NUL and 0xFF), must come back exact and in byte order.
    @Test func stringsOfEveryLengthInTablesAreByteExact() throws {
        let state = try LuaState()
        let strings = (0...24).map { length in
            LuaString(bytes: (0..<length).map { UInt8(truncatingIfNeeded: $0 == 1 ? 0 : $0 == 2 ? 0xFF : 0x41 + length * 7 + $0 * 13) })
        }
        let values = LuaValue.table(LuaTable(array: strings.map(LuaValue.string)))
        #expect(try roundTrip(state, values) == values)
        var fields = LuaFields()
        for (index, key) in strings.enumerated() { fields[key] = .integer(Int64(index)) }
        let keyed = LuaValue.table(LuaTable(fields: fields))
        let back = try #require(try roundTrip(state, keyed).tableValue)
        #expect(back.fields.keys.map(\.bytes) == strings.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
        for (index, key) in strings.enumerated() { #expect(back.fields[key] == .integer(Int64(index)), "\(key.bytes)") }
    }

    @Test func aFieldsLiteralIsSortedKeepsTheLastOfARepeatedKeyAndDropsNil() {
        let fields: LuaFields = ["b": 2, "a": 1, "c": 3, "b": 20, "gone": 1, "gone": .nil, "d": .nil]
        #expect(fields.keys == ["a", "b", "c"])
        #expect(fields.values == [1, 20, 3])
        // A table literal goes through it too, and equals the same table made from a dictionary.
        let dictionary: [LuaString: LuaValue] = ["z": true, "y": "x"]
        #expect(LuaTable(fields: ["z": true, "y": "x"]) == LuaTable(fields: dictionary))
    }

    /// An absent key reads as no value (`Optional.none`), not as a field
    /// holding `.nil`: `LuaValue` is `ExpressibleByNilLiteral`, and the
    /// getter once turned its `nil` into `.some(.nil)`.
    @Test func anAbsentFieldIsNoneAndAPresentOneIsItsValue() {
        let fields: LuaFields = ["a": 1, "b": .nil]
        #expect(fields["a"] == .some(1))
        if case .some(let value) = fields["b"] { Issue.record("a field set to nil reads as \(value)") }
        if case .some(let value) = fields["zz"] { Issue.record("an absent key reads as \(value)") }
        #expect(LuaTable(fields: fields)["zz"] == .nil)
    }

    @Test func fieldsFromEntriesInAnyOrderEqualTheSameFieldsSetOneByOne() {
        let keys: [LuaString] = ["b", "a", "c", "b", "gone", "gone", "d", "a-long-key-of-more-than-sixteen-bytes", "a"]
        let values: [LuaValue] = [2, 1, 3, 20, 1, .nil, .nil, "long", 10]
        var oneByOne = LuaFields()
        for (key, value) in zip(keys, values) { oneByOne[key] = value }
        let entries = zip(keys, values).map { LuaFields.Entry(key: $0, value: $1) }
        #expect(LuaFields(entries) == oneByOne)
        #expect(LuaFields(entries).keys == ["a", "a-long-key-of-more-than-sixteen-bytes", "b", "c"])
        #expect(LuaFields(entries).values == [10, "long", 20, 3])
        // Already ascending, unique and without nil: kept as given.
        let sorted = oneByOne.entries
        #expect(LuaFields(sorted) == oneByOne)
        #expect(LuaFields([]).isEmpty)
        // Unique keys out of order are sorted; a lone nil is dropped.
        #expect(LuaFields([.init(key: "y", value: 1), .init(key: "x", value: 2)]).keys == ["x", "y"])
        #expect(LuaFields([.init(key: "x", value: .nil)]).isEmpty)
        // Ascending but with an adjacent repeat, or ending in nil: not taken as given.
        #expect(LuaFields([.init(key: "a", value: 1), .init(key: "a", value: 2), .init(key: "b", value: 3)]).values == [2, 3])
        #expect(LuaFields([.init(key: "a", value: 1), .init(key: "b", value: .nil)]).keys == ["a"])
    }

    @Test func tablesRoundTrip() throws {
        let state = try LuaState()
        let value: LuaValue = [
            "entries": [["date": 1_700_000_000, "title": "A"], ["date": 1_700_000_600, "title": "B", "done": true]],
            "policy": ["after": 1_700_003_600.5],
            "empty": [:],
            "nested": [[[["deep"]]]],
        ]
        #expect(try roundTrip(state, value) == value)
        #expect(value["entries"][2]["title"] == "B")
    }

    @Test func emptyTablesInAFreshState() throws {
        // The first conversion of a state, of tables with no entries at all.
        #expect(try LuaState().run("return {}") == [[:]])
        #expect(try LuaState().run("return {{}, {}}") == [[[:], [:]]])
    }

    @Test func mixedTablesKeepBothParts() throws {
        let state = try LuaState()
        let results = try state.run("return { 'a', 'b', name = 'x' }")
        let table = try #require(results.first?.tableValue)
        #expect(table.array == ["a", "b"])
        #expect(table.fields == ["name": "x"])
    }

    /// Fields come back in byte order, and lookups find every key, even when
    /// tables of the same size but other keys were read just before (the C
    /// walk reuses the last key order it saw for a field count when it fits).
    @Test func fieldsAreSortedWhateverWasReadBefore() throws {
        let state = try LuaState()
        let keySets: [[String]] = [
            ["date", "title", "subtitle", "remaining", "total", "progress", "done", "color", "url", "relevance"],
            ["date", "title", "subtitle", "remaining", "total", "progress", "done", "color", "url", "relevance"],
            ["prefix00a", "prefix00", "prefix00\\0", "prefix00\\255", "p", "prefix01", "a", "\\128", "", "prefix00b"],
            ["j", "i", "h", "g", "f", "e", "d", "c", "b", "a"],
            ["date", "title", "subtitle", "remaining", "total", "progress", "done", "color", "url", "relevance"],
            (0..<40).map { "key\($0 * 7919 % 40)" },   // beyond the remembered sizes
            (0..<20).map { "k\(19 - $0)" },            // Shell sort sizes
        ]
        for keys in keySets {
            let fields = keys.enumerated().map { "[\"\($1)\"] = \($0)" }.joined(separator: ", ")
            let table = try #require(try state.run("return { \(fields) }").first?.tableValue)
            let expected = keys.map { try! luaBytes($0) }.sorted { $0.lexicographicallyPrecedes($1) }
            #expect(table.fields.keys.map(\.bytes) == expected, "\(keys)")
            for (index, key) in keys.enumerated() {
                #expect(table.fields[LuaString(bytes: try luaBytes(key))] == .integer(Int64(index)), "\(key)")
            }
        }
    }

    /// The remembered order is checked and written out in one pass, and
    /// a check that fails partway leaves the sort to write every field:
    /// many key sets of each size, read in turn, make the check fail at
    /// every place (which place depends on Lua's hash order, seeded per
    /// state, so the sets are many). Keys share 8-byte prefixes so that
    /// prefix ties fall back to the bytes.
    @Test func fieldsAreSortedWhenTheRememberedOrderFailsPartway() throws {
        let state = try LuaState()
        var seed: UInt64 = 0x5eed
        func next() -> UInt64 {   // SplitMix64: the same sets every run
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for size in 2...9 {
            for _ in 0..<60 {
                var keys = Set<String>()
                while keys.count < size {
                    let stem = next() % 3 == 0 ? "prefix__" : ""
                    let tail = (0..<Int(1 + next() % 6)).map { _ in String(UnicodeScalar(UInt8(97 + next() % 4))) }.joined()
                    keys.insert(stem + tail)
                }
                let order = Array(keys)
                let fields = order.enumerated().map { "[\"\($1)\"] = \($0)" }.joined(separator: ", ")
                let table = try #require(try state.run("return { \(fields) }").first?.tableValue)
                #expect(table.fields.keys.map(\.bytes) == order.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }, "\(order)")
                for (index, key) in order.enumerated() {
                    #expect(table.fields[LuaString(key)] == .integer(Int64(index)), "\(key)")
                }
            }
        }
    }

    /// The bytes of a Lua string literal body that uses only `\ddd` escapes.
    private func luaBytes(_ literal: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = Substring(literal)
        while let c = rest.first {
            rest = rest.dropFirst()
            if c == "\\" {
                let digits = rest.prefix { $0.isNumber }
                bytes.append(try #require(UInt8(digits)))
                rest = rest.dropFirst(digits.count)
            } else {
                bytes.append(contentsOf: Array(String(c).utf8))
            }
        }
        return bytes
    }

    /// Property: any generated plain value survives Swift → Lua → Swift unchanged.
    @Test func generatedValuesRoundTrip() throws {
        let state = try LuaState()
        var generator = ValueGenerator(seed: 0x5EED)
        for _ in 0..<500 {
            let value = generator.value(depth: 0)
            let back = try roundTrip(state, value)
            #expect(back == value || (value.hasNaN && back.hasNaN), "\(value)")
        }
    }
}

/// Deterministic generator of plain values (xorshift), for property tests.
struct ValueGenerator {
    var seed: UInt64
    mutating func next() -> UInt64 {
        seed ^= seed << 13
        seed ^= seed >> 7
        seed ^= seed << 17
        return seed
    }
    mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    mutating func value(depth: Int) -> LuaValue {
        switch int(depth > 3 ? 5 : 7) {
        case 0: return .nil
        case 1: return .boolean(int(2) == 0)
        case 2: return .integer(Int64(bitPattern: next()) >> Int64(int(64)))
        case 3:
            let specials: [Double] = [0, -0.0, .infinity, -.infinity, .nan, .ulpOfOne, .greatestFiniteMagnitude]
            return int(4) == 0 ? .number(specials[int(specials.count)]) : .number(Double(bitPattern: next() & 0x7FEF_FFFF_FFFF_FFFF))
        case 4: return .string(string())
        case 5:
            var array: [LuaValue] = []
            for _ in 0..<int(6) {
                let element = value(depth: depth + 1)
                array.append(element.isNil ? 0 : element)  // nil cannot be an array element
            }
            return .table(LuaTable(array: array))
        default:
            var fields: [LuaString: LuaValue] = [:]
            for _ in 0..<int(6) {
                let element = value(depth: depth + 1)
                if !element.isNil { fields[string()] = element }
            }
            return .table(LuaTable(fields: fields))
        }
    }

    mutating func string() -> LuaString {
        let length = int(12)
        var bytes: [UInt8] = []
        for _ in 0..<length { bytes.append(int(3) == 0 ? UInt8(truncatingIfNeeded: next()) : UInt8(97 + int(26))) }
        return LuaString(bytes: bytes)
    }
}

extension LuaValue {
    var hasNaN: Bool {
        switch self {
        case .number(let d): return d.isNaN
        case .table(let t): return t.array.contains { $0.hasNaN } || t.fields.values.contains { $0.hasNaN }
        default: return false
        }
    }
}
