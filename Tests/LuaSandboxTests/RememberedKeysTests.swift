import CLua
import CLuaShims
import LuaSandbox
import Testing

/// The C walk remembers the keys of tables it reads again and again and
/// reads a table with the same key objects against them (shims.c,
/// "Remembered keys"). These read tables that match, half match and stop
/// matching, and check every value read against the one Lua built, that
/// the remembered keys were used where they should be (the host counts the
/// tables read against them), and that a state with the debug library
/// remembers nothing.
@Suite("Tables read against remembered keys read as any other")
struct RememberedKeysTests {
    /// A trusted state without the debug library (which turns remembering off).
    static let trustedWithoutDebug = SandboxProfile.trusted([.base, .table, .string, .math])

    /// The key counts of the state's remembered tables (0: none), whether
    /// any is still marked in use, and how many tables were read against them.
    func remembered(_ state: LuaState) -> (counts: [Int], busy: Bool, reads: UInt64) {
        let host = lunette_host_of(state.rawState).pointee
        let shapes = host.key_shapes
        return ([Int(shapes.0.n), Int(shapes.1.n)], shapes.0.busy != 0 || shapes.1.busy != 0, host.key_shape_reads)
    }

    /// `function` called `times` times with the loop's index, each result
    /// checked against `expected(i)`.
    func callAndCheck(_ state: LuaState, _ function: LuaFunctionRef, times: Int, sourceLocation: SourceLocation = #_sourceLocation,
                      _ expected: (Int) -> [LuaValue]) throws {
        for i in 1...times {
            let result = try state.call(function, [.integer(Int64(i))])
            #expect(result == expected(i), "call \(i)", sourceLocation: sourceLocation)
        }
    }

    func entry(_ i: Int) -> LuaValue {
        .table(LuaTable(fields: ["date": .integer(Int64(1_795_254_600 + i)), "title": "Groceries", "subtitle": "3 left",
                                 "remaining": 3, "total": 7, "progress": 0.42857142857143, "done": false, "color": "blue",
                                 "url": "lunette://tasks/1", "relevance": 0.5]))
    }

    static let entrySource = """
        function entry(i)
          return { date = 1795254600 + i, title = 'Groceries', subtitle = '3 left', remaining = 3, total = 7,
                   progress = 0.42857142857143, done = false, color = 'blue', url = 'lunette://tasks/1', relevance = 0.5 }
        end
        function entries(i) return entry(i), entry(i + 1), entry(i + 2) end
        """

    @Test(arguments: [SandboxProfile.sandbox, trustedWithoutDebug])
    func aTableReadAgainAndAgainIsRemembered(_ profile: SandboxProfile) throws {
        let state = try LuaState(profile: profile)
        try state.run(Self.entrySource)
        let function = try #require(try state.globalFunction("entry"))
        // Read twice in the same key order, recorded on the third read,
        // read against its keys from the fourth.
        try callAndCheck(state, function, times: 3) { [entry($0)] }
        #expect(remembered(state).counts.contains(10) && remembered(state).reads == 0)
        try callAndCheck(state, function, times: 20) { [entry($0)] }
        #expect(remembered(state).reads == 20 && !remembered(state).busy)
        // Read in place too.
        let read = try state.call(function, [3]) { results in results[0].fieldCount }
        #expect(read == 10 && remembered(state).reads == 21)
        // Several results, read onto one tape.
        let several = try #require(try state.globalFunction("entries"))
        try callAndCheck(state, several, times: 5) { [entry($0), entry($0 + 1), entry($0 + 2)] }
        #expect(remembered(state).reads == 36)
    }

    /// The debug library reaches the registry (the anchor table) and makes
    /// light userdata of any address (`debug.upvalueid`), which could be a
    /// remembered key's: a state that has it remembers nothing.
    @Test func aStateWithTheDebugLibraryRemembersNoKeys() throws {
        let state = try LuaState(profile: .trusted)
        try state.run(Self.entrySource)
        let function = try #require(try state.globalFunction("entry"))
        try callAndCheck(state, function, times: 10) { [entry($0)] }
        #expect(remembered(state).counts == [0, 0] && remembered(state).reads == 0)
        #expect(throws: LuaError.self) {
            try state.run("local up = 1; local function f() return up end; return { [debug.upvalueid(f, 1)] = 1 }")
        }
    }

    @Test func tablesOfAsManyKeysButOthersReadRight() throws {
        let state = try LuaState()
        // Same count, same first keys, one key differing; and a table of
        // other keys altogether, in turn, after the first of them six
        // times (so that it is remembered whatever the hash seed).
        try state.run("""
            function make(i)
              local kind = i <= 6 and 0 or i % 3
              if kind == 0 then return { a = i, b = 'x', c = true } end
              if kind == 1 then return { a = i, b = 'x', d = true } end
              return { p = i, q = 'x', r = true }
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 60) { i in
            switch i <= 6 ? 0 : i % 3 {
            case 0: return [["a": .integer(Int64(i)), "b": "x", "c": true]]
            case 1: return [["a": .integer(Int64(i)), "b": "x", "d": true]]
            default: return [["p": .integer(Int64(i)), "q": "x", "r": true]]
            }
        }
        #expect(remembered(state).reads >= 3 && !remembered(state).busy)
    }

    /// Two shapes read in turn at one level are both remembered.
    @Test func twoShapesReadInTurnAreBothRemembered() throws {
        let state = try LuaState()
        try state.run("""
            function make(i)
              if i % 2 == 0 then return { a = i, b = 'x' } end
              return { p = i, q = 'x', r = true, s = 4 }
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 40) { i in
            i % 2 == 0 ? [["a": .integer(Int64(i)), "b": "x"]] : [["p": .integer(Int64(i)), "q": "x", "r": true, "s": 4]]
        }
        #expect(remembered(state).counts.sorted() == [2, 4] && remembered(state).reads >= 30)
    }

    @Test func fewerAndMoreKeysThanRememberedReadRight() throws {
        let state = try LuaState()
        // The same constructor, then one key removed in turn (the table
        // keeps its layout, so the walk meets one key fewer: wherever the
        // removed key came in the traversal, the last among them, which
        // ends the walk early), a key added, or an array part: the walk
        // leaves the remembered keys partway or at the end.
        try state.run("""
            local keys = { 'a', 'b', 'c', 'd', 'e', 'f' }
            function make(i)
              local t = { a = 1, b = 2, c = 3, d = 4, e = 5, f = 6 }
              local kind = i % 9
              if i > 5 then
                if kind < 6 then t[keys[kind + 1]] = nil
                elseif kind == 6 then t.g = 7
                elseif kind == 7 then t[1] = 'one' end
              end
              return t
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        let keys: [LuaString] = ["a", "b", "c", "d", "e", "f"]
        try callAndCheck(state, function, times: 60) { i in
            var fields: [LuaString: LuaValue] = ["a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6]
            var array: [LuaValue] = []
            let kind = i % 9
            if i > 5 {
                if kind < 6 { fields[keys[kind]] = nil }
                if kind == 6 { fields["g"] = 7 }
                if kind == 7 { array = ["one"] }
            }
            return [.table(LuaTable(array: array, fields: fields))]
        }
        // Which shapes stay remembered at the end depends on the state's
        // hash seed (the tables of five keys may be recorded over the one
        // of six); the first five calls read against it in any case.
        #expect(remembered(state).reads >= 2 && !remembered(state).busy)
    }

    @Test func nestedTablesOfTwoShapesAreBothRemembered() throws {
        let state = try LuaState()
        try state.run("""
            function make(i)
              local items = {}
              for k = 1, 4 do items[k] = { name = 'item' .. k, count = k * i } end
              return { items = items, updated = i, title = 'list' }
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 30) { i in
            let items: [LuaValue] = (1...4).map { k in ["name": .string(LuaString("item\(k)")), "count": .integer(Int64(k * i))] }
            return [.table(LuaTable(fields: ["items": .table(LuaTable(array: items)), "updated": .integer(Int64(i)), "title": "list"]))]
        }
        #expect(remembered(state).counts.sorted() == [2, 3] && !remembered(state).busy)
    }

    /// Tables nested three deep, each level a shape of its own (so both
    /// remembered tables are in use while the innermost would be
    /// recorded), and a shape nested in itself.
    @Test func deepAndSelfNestedShapesReadRight() throws {
        let state = try LuaState()
        try state.run("""
            function deep(i) return { x = { y = { z = { w = i } } } } end
            function selfNested(i) return { a = i, b = { a = i + 1, b = { a = i + 2, b = 'end' } } } end
            """)
        let deep = try #require(try state.globalFunction("deep"))
        try callAndCheck(state, deep, times: 20) { i in [["x": ["y": ["z": ["w": .integer(Int64(i))]]]]] }
        #expect(!remembered(state).busy)
        let selfNested = try #require(try state.globalFunction("selfNested"))
        try callAndCheck(state, selfNested, times: 20) { i in
            [["a": .integer(Int64(i)), "b": ["a": .integer(Int64(i + 1)), "b": ["a": .integer(Int64(i + 2)), "b": "end"]]]]
        }
        #expect(remembered(state).counts.contains(2) && remembered(state).reads > 0 && !remembered(state).busy)
    }

    /// A table with a key too long to remember, read again and again,
    /// replaces no remembered table.
    @Test func aTableWithALongKeyReplacesNothingRemembered() throws {
        let state = try LuaState()
        try state.run("""
            function make(i)
              if i <= 20 then
                if i % 2 == 0 then return { a = i, b = 'x' } end
                return { p = i, q = 'x', r = true, s = 4 }
              end
              return { a = i, ['a key of over sixteen bytes'] = true }
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 40) { i in
            if i <= 20 { return i % 2 == 0 ? [["a": .integer(Int64(i)), "b": "x"]] : [["p": .integer(Int64(i)), "q": "x", "r": true, "s": 4]] }
            return [["a": .integer(Int64(i)), "a key of over sixteen bytes": true]]
        }
        #expect(remembered(state).counts.sorted() == [2, 4])
    }

    /// Keys made at run time, remembered, then dropped and collected while
    /// new keys of the same lengths are made: without the anchor table the
    /// allocator hands the new strings the old ones' blocks, and the walk
    /// would read the old keys' bytes for them.
    @Test func keysMadeAtRunTimeAreNeverMistakenForCollectedOnes() throws {
        let state = try LuaState(profile: .trusted([.base]))   // collectgarbage
        try state.run("""
            function make(prefix)
              local t = {}
              for k = 1, 8 do t[prefix .. k] = k end
              return t
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        for round in 0..<40 {
            let prefix = "r\(round % 10)k"   // a new prefix each round, of one length
            for _ in 0..<4 {
                let result = try state.call(function, [.string(LuaString(prefix))])
                let expected: LuaValue = .table(LuaTable(fields: LuaFields(Dictionary(uniqueKeysWithValues: (1...8).map {
                    (LuaString("\(prefix)\($0)"), LuaValue.integer(Int64($0)))
                }))))
                #expect(result == [expected], "round \(round)")
            }
            try state.run("collectgarbage('collect'); collectgarbage('collect')")
        }
        #expect(remembered(state).reads >= 40 && !remembered(state).busy)
    }

    /// A value that fails the read, once while the table is recorded and
    /// once while it is read against its keys, leaves the keys usable.
    @Test func readsThatFailPartwayLeaveTheKeysUsable() throws {
        let state = try LuaState()
        try state.run("""
            function make(i)
              local t = { a = i, b = 'x', c = true, d = 4 }
              if i == 3 or i == 8 then t.c = print end
              return t
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        for i in 1...12 {
            if i == 3 || i == 8 {
                #expect(throws: LuaError.self) { try state.call(function, [.integer(Int64(i))]) }
                #expect(!remembered(state).busy)
                continue
            }
            let result = try state.call(function, [.integer(Int64(i))])
            #expect(result == [["a": .integer(Int64(i)), "b": "x", "c": true, "d": 4]], "call \(i)")
        }
        #expect(remembered(state).counts.contains(4) && remembered(state).reads > 0)
    }

    /// The byte budget runs out at the same value as in the usual walk:
    /// a table that leaves its remembered keys at the end (its last key
    /// removed) is read within exactly the bytes the usual walk needs.
    @Test func theBudgetRunsOutWhereTheUsualWalksDoes() throws {
        let state = try LuaState()
        try state.run("""
            function make(drop)
              local t = { aaaaaaaaaaaaaaa1 = 1, aaaaaaaaaaaaaaa2 = 2, aaaaaaaaaaaaaaa3 = 3, aaaaaaaaaaaaaaa4 = 4 }
              if drop then
                local last
                for k in next, t do last = k end
                t[last] = nil
              end
              return t
            end
            """)
        var tape = lunette_tape()
        defer { lunette_tape_free(&tape) }
        let L = state.rawState
        func read(drop: Bool, bytes: Int) throws -> Bool {
            try state.run("tapeValue = make(\(drop))")
            let base = lua_gettop(L)
            defer { lua_settop(L, base) }
            lunette_pushglobaltable(L)
            _ = lua_pushstring(L, "tapeValue")
            lua_rawget(L, -2)
            return lunette_tape_read(L, -1, &tape, 100, bytes) != 0
        }
        // The root and four fields: 16 bytes a value, 16 a key.
        for _ in 0..<4 { #expect(try read(drop: false, bytes: 16 + 4 * 32)) }
        let before = remembered(state).reads
        #expect(before > 0)
        #expect(try read(drop: true, bytes: 16 + 3 * 32))
        #expect(try !read(drop: true, bytes: 16 + 3 * 32 - 1))
        #expect(try read(drop: false, bytes: 16 + 4 * 32) && remembered(state).reads > before)
        #expect(try !read(drop: false, bytes: 16 + 4 * 32 - 1))
        #expect(!remembered(state).busy)
    }
}
