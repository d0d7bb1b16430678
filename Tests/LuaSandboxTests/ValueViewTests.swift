import LuaSandbox
import Testing

/// `LuaState.call(_:_:options:reading:)`: results read in place give what
/// `call` returns, by the same rules, and cannot outlive their closure.
@Suite("Results read in place")
struct ValueViewTests {
    static let source = """
        function many()
          return nil, true, 42, 2.0, 1.5, 'short', 'a string longer than sixteen bytes',
                 { 10, 'two', { x = 1 }, name = 'n', [ 'a key longer than sixteen' ] = false, b = 2.5 }
        end
        function none() end
        function tables() return { a = 1 }, { b = 2, c = { 3 } } end
        function echo(...) return ... end
        """

    func state() throws -> LuaState {
        let state = try LuaState()
        try state.run(Self.source, name: "views.lua")
        return state
    }

    func function(_ state: LuaState, _ name: String) throws -> LuaFunctionRef {
        try #require(try state.globalFunction(name))
    }

    @Test func everyValueReadsAsCallReturnsIt() throws {
        let state = try state()
        let many = try function(state, "many")
        let expected = try state.call(many)
        let read: [LuaValue] = try state.call(many) { results in results.map(\.value) }
        #expect(read == expected)

        try state.call(many) { r in
            #expect(r.count == 8)
            #expect(r[0].isNil && r[0].typeName == "nil")
            #expect(r[1].boolValue == true && r[1].typeName == "boolean" && r[1].integerValue == nil)
            #expect(r[2].isInteger && r[2].integerValue == 42 && r[2].doubleValue == 42)
            #expect(!r[3].isInteger && r[3].integerValue == 2 && r[3].doubleValue == 2.0)
            #expect(r[4].integerValue == nil && r[4].doubleValue == 1.5 && r[4].typeName == "number")
            #expect(r[5].stringValue == "short" && r[5].stringByteCount == 5 && r[5].boolValue == nil)
            #expect(r[6].luaStringValue == "a string longer than sixteen bytes" && r[6].stringByteCount == 34)

            let t = r[7]
            #expect(t.typeName == "table" && t.arrayCount == 3 && t.fieldCount == 3)
            #expect(t[1]?.integerValue == 10 && t[2]?.stringValue == "two" && t[3]?["x"]?.integerValue == 1)
            #expect(t[0] == nil && t[4] == nil && r[2][1] == nil)
            // Fields in ascending key byte order, as LuaFields keeps them.
            let keys = (0..<t.fieldCount).map { t.field(at: $0).key }
            #expect(keys == ["a key longer than sixteen", "b", "name"])
            #expect(t.field(at: 0).keyByteCount == 25 && t.field(at: 0).value.boolValue == false)
            #expect(t["name"]?.stringValue == "n" && t["b"]?.doubleValue == 2.5 && t["a key longer than sixteen"]?.boolValue == false)
            #expect(t["missing"] == nil && t["nam"] == nil && t["names"] == nil && r[5]["name"] == nil)
            #expect(t.value == expected[7])
            #expect(t[3]?.value == ["x": 1])
        }
    }

    @Test func noResultsAndSeveralTablesReadApart() throws {
        let state = try state()
        #expect(try state.call(try function(state, "none")) { $0.count } == 0)
        try state.call(try function(state, "tables")) { r in
            #expect(r.count == 2)
            // Reading the second result did not overwrite the first.
            #expect(r[0]["a"]?.integerValue == 1)
            #expect(r[1]["c"]?[1]?.integerValue == 3 && r[1]["b"]?.integerValue == 2)
        }
        // With arguments (the usual path) and a global read in the closure,
        // which uses the state's own walk buffers, not the results'.
        let echo = try function(state, "echo")
        try state.setGlobal("g", ["x": [1, 2]])
        try state.call(echo, [["k": "v"], 7]) { r in
            #expect((try? state.global("g")) == ["x": [1, 2]])
            #expect(r.count == 2 && r[0]["k"]?.stringValue == "v" && r[1].integerValue == 7)
        }
    }

    @Test func resultsThatBreakTheRulesThrowBeforeTheClosure() throws {
        let state = try state()
        try state.run("function bad() return 1, { f = print } end function big() return string.rep('x', 200) end", name: "bad.lua")
        var ran = false
        guard case .value(let e)? = luaError({ try state.call(try function(state, "bad")) { _ in ran = true } }) else {
            Issue.record("no value error"); return
        }
        #expect(e.path == "result #2.f" && e.reason.contains("function"))
        state.conversionLimits.maxBytes = 100
        guard case .value(let big)? = luaError({ try state.call(try function(state, "big")) { _ in ran = true } }) else {
            Issue.record("no value error"); return
        }
        #expect(big.reason.contains("too large"))
        #expect(!ran)
        // The state is fine after: the same call with room reads.
        state.conversionLimits.maxBytes = 1 << 20
        #expect(try state.call(try function(state, "big")) { $0[0].stringByteCount } == 200)
    }

    /// A Swift function that a script called may read a call's results in
    /// place; the running call keeps its limits after.
    @Test func aNestedReadingCallLeavesTheRunningCallArmed() throws {
        let state = try state()
        try state.run("function grow() local t = {} for i = 1, 1e7 do t[i] = i end end", name: "grow.lua")
        let tables = try function(state, "tables")
        var seen: Int64?
        try state.register(function: "peek") { [unowned state] _ in
            seen = try state.call(tables) { $0[1]["c"]?[1]?.integerValue }
            return []
        }
        // Twice: the second peek's call must also see that a call runs.
        try state.run("function peekThenGrow() peek() peek() grow() end", name: "peek.lua")
        let options = LuaCallOptions(limits: LuaLimits(memory: 4 << 20, timeout: .seconds(5)))
        guard case .memory? = luaError({ try state.call(try function(state, "peekThenGrow"), options: options) }) else {
            Issue.record("the memory cap did not hold after a nested reading call"); return
        }
        #expect(seen == 3)
        #expect(try state.call(tables) { $0[0]["a"]?.integerValue } == 1)
    }

    /// On a thread with a large stack a call of no arguments takes the
    /// one-C-call path; its results read the same, and nothing returned
    /// gives an empty view.
    @Test func theTopLevelPathReadsTheSame() throws {
        let thread = LuaThread()
        try thread.sync { () throws in
            let state = try self.state()
            let many = try self.function(state, "many")
            let expected = try state.call(many)
            #expect(try state.call(many) { $0.map(\.value) } == expected)
            #expect(try state.call(try self.function(state, "none")) { $0.count } == 0)
        }
    }

    /// A weak table's values are held by nothing else, and collections
    /// during the closure free them; the views read the tape's copies.
    @Test func whatAWeakTableHoldsStaysWhileTheClosureRuns() throws {
        let state = try state()
        try state.run("""
            function weak() return setmetatable({ inner = { s = string.rep('y', 100) } }, { __mode = 'v' }) end
            """, name: "weak.lua")
        let text: String? = try state.call(try function(state, "weak")) { r in
            // Host allocations in the state, enough for several cycles.
            for i in 0..<2000 { try? state.setGlobal("junk\(i % 50)", .string(String(repeating: "z", count: 100))) }
            return r[0]["inner"]?["s"]?.stringValue
        }
        #expect(text == String(repeating: "y", count: 100))
    }

    /// The same for keys: a table of long keys (and short values only)
    /// that a collection frees during the closure is read from the tape's
    /// copies of its keys.
    @Test func longKeysOfAWeakTableStayWhileTheClosureRuns() throws {
        let state = try state()
        try state.run("""
            function weak()
              return setmetatable({ inner = { [string.rep('k', 40) .. 'a'] = 1, [string.rep('k', 40) .. 'b'] = 2 } }, { __mode = 'v' })
            end
            """, name: "weak.lua")
        let keys: [String] = try state.call(try function(state, "weak")) { r in
            for i in 0..<2000 { try? state.setGlobal("junk\(i % 50)", .string(String(repeating: "z", count: 41))) }
            guard let inner = r[0]["inner"] else { return [] }
            return (0..<inner.fieldCount).map { inner.field(at: $0).key.string ?? "?" }
        }
        #expect(keys == [String(repeating: "k", count: 40) + "a", String(repeating: "k", count: 40) + "b"])
    }

    /// Long keys that share their first bytes are sorted by comparing the
    /// rest (the walk compares them while they are still Lua's; they are
    /// copied after), and read back byte-exact.
    @Test func longKeysWithACommonPrefixSortAndReadBack() throws {
        let state = try LuaState()
        try state.run("""
            function keys()
              return { ['shared prefix of the keys B'] = 2, ['shared prefix of the keys A'] = 1,
                       ['shared prefix of the keys C'] = string.rep('v', 40), short = 0 }
            end
            """, name: "keys.lua")
        let keys = try function(state, "keys")
        let expected = try state.call(keys)
        try state.call(keys) { r in
            let t = r[0]
            #expect((0..<t.fieldCount).map { t.field(at: $0).key } ==
                    ["shared prefix of the keys A", "shared prefix of the keys B", "shared prefix of the keys C", "short"])
            #expect(t["shared prefix of the keys B"]?.integerValue == 2)
            #expect(t["shared prefix of the keys C"]?.stringValue == String(repeating: "v", count: 40))
            #expect(t.value == expected[0])
        }
    }

    /// Many results share one tape; the size budget runs over all of them.
    @Test func manyResultsShareOneTapeAndOneBudget() throws {
        let state = try state()
        try state.run("function bytes(n) return string.byte(string.rep('x', n), 1, -1) end", name: "bytes.lua")
        let bytes = try function(state, "bytes")
        let (count, last): (Int, Int64?) = try state.call(bytes, [5000]) { ($0.count, $0[4999].integerValue) }
        #expect(count == 5000 && last == 120)
        // 16 bytes a value: 40 values fit in 640 bytes, so the 41st is refused.
        state.conversionLimits.maxBytes = 640
        guard case .value(let e)? = luaError({ try state.call(bytes, [41]) { _ in } }) else { Issue.record("no value error"); return }
        #expect(e.path == "result #41" && e.reason.contains("too large"))
        #expect(try state.call(bytes, [40]) { $0.count } == 40)
    }

    @Test func aViewUsedAfterItsClosureTraps() async {
        await #expect(processExitsWith: .failure) {
            let state = try LuaState()
            try state.run("function t() return { a = 1 } end", name: "t.lua")
            let t = try #require(try state.globalFunction("t"))
            let kept = try state.call(t) { $0[0] }
            withExtendedLifetime(state) { _ = kept.integerValue }
            Issue.record("not reached")
        }
    }

    @Test func callingTheStateFromTheClosureTraps() async {
        await #expect(processExitsWith: .failure) {
            let state = try LuaState()
            try state.run("function t() return { a = 1 } end", name: "t.lua")
            let t = try #require(try state.globalFunction("t"))
            try state.call(t) { _ in _ = try? state.call(t) }
        }
    }

    @Test func takingASnapshotFromTheClosureTraps() async {
        await #expect(processExitsWith: .failure) {
            let state = try LuaState()
            try state.run("function t() return { a = 1 } end", name: "t.lua")
            let t = try #require(try state.globalFunction("t"))
            try state.call(t) { _ in _ = try? state.snapshot(rootsFrom: t) }
        }
    }
}
