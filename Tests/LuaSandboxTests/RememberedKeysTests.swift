import CLuaShims
import LuaSandbox
import Testing

/// The C walk remembers the keys of tables it reads again and again and
/// reads a table with the same key objects against them (shims.c,
/// "Remembered keys"). These read tables that match, half match and stop
/// matching, and check every value read against the one Lua built, and
/// that the remembered keys were used where they should be.
@Suite("Tables read against remembered keys read as any other")
struct RememberedKeysTests {
    /// The key counts of the state's remembered tables (0: none), and
    /// whether any is still marked in use.
    func remembered(_ state: LuaState) -> (counts: [Int], busy: Bool) {
        let shapes = lunette_host_of(state.rawState).pointee.key_shapes
        return ([Int(shapes.0.n), Int(shapes.1.n)], shapes.0.busy != 0 || shapes.1.busy != 0)
    }

    /// `function` called `times` times with the loop's index, each result
    /// checked against `expected(i)`.
    func callAndCheck(_ state: LuaState, _ function: LuaFunctionRef, times: Int, sourceLocation: SourceLocation = #_sourceLocation,
                      _ expected: (Int) -> LuaValue) throws {
        for i in 1...times {
            let result = try state.call(function, [.integer(Int64(i))])
            #expect(result == [expected(i)], "call \(i)", sourceLocation: sourceLocation)
        }
    }

    func entry(_ i: Int) -> LuaValue {
        .table(LuaTable(fields: ["date": .integer(Int64(1_795_254_600 + i)), "title": "Groceries", "subtitle": "3 left",
                                 "remaining": 3, "total": 7, "progress": 0.42857142857143, "done": false, "color": "blue",
                                 "url": "lunette://tasks/1", "relevance": 0.5]))
    }

    @Test(arguments: [SandboxProfile.sandbox, .trusted])
    func aTableReadAgainAndAgainIsRemembered(_ profile: SandboxProfile) throws {
        let state = try LuaState(profile: profile)
        try state.run("""
            function entry(i)
              return { date = 1795254600 + i, title = 'Groceries', subtitle = '3 left', remaining = 3, total = 7,
                       progress = 0.42857142857143, done = false, color = 'blue', url = 'lunette://tasks/1', relevance = 0.5 }
            end
            """)
        let function = try #require(try state.globalFunction("entry"))
        try callAndCheck(state, function, times: 2, entry)
        // Read twice in the same key order, then recorded on the third read.
        try callAndCheck(state, function, times: 1, entry)
        #expect(remembered(state).counts.contains(10))
        try callAndCheck(state, function, times: 20, entry)
        #expect(remembered(state).counts.contains(10) && !remembered(state).busy)
        // Read in place too.
        let read = try state.call(function, [3]) { results in results[0].fieldCount }
        #expect(read == 10)
    }

    @Test func tablesOfAsManyKeysButOthersReadRight() throws {
        let state = try LuaState()
        // Same count, same first keys, one key differing; and a table of
        // other keys altogether, in turn.
        try state.run("""
            function make(i)
              local kind = i % 3
              if kind == 0 then return { a = i, b = 'x', c = true } end
              if kind == 1 then return { a = i, b = 'x', d = true } end
              return { p = i, q = 'x', r = true }
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 60) { i in
            switch i % 3 {
            case 0: return ["a": .integer(Int64(i)), "b": "x", "c": true]
            case 1: return ["a": .integer(Int64(i)), "b": "x", "d": true]
            default: return ["p": .integer(Int64(i)), "q": "x", "r": true]
            }
        }
        #expect(!remembered(state).busy)
    }

    @Test func fewerAndMoreKeysThanRememberedReadRight() throws {
        let state = try LuaState()
        // The same constructor, then a key removed (the table keeps its
        // layout, the walk meets one key fewer) or added, or an array
        // part: the walk leaves the remembered keys partway.
        try state.run("""
            function make(i)
              local t = { a = 1, b = 2, c = 3, d = 4, e = 5, f = 6 }
              if i > 5 and i % 4 == 0 then t.c = nil end
              if i > 5 and i % 4 == 1 then t.g = 7 end
              if i > 5 and i % 4 == 2 then t[1] = 'one' end
              return t
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 40) { i in
            var fields: [LuaString: LuaValue] = ["a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6]
            var array: [LuaValue] = []
            if i > 5 && i % 4 == 0 { fields["c"] = nil }
            if i > 5 && i % 4 == 1 { fields["g"] = 7 }
            if i > 5 && i % 4 == 2 { array = ["one"] }
            return .table(LuaTable(array: array, fields: fields))
        }
        #expect(remembered(state).counts.contains(6) && !remembered(state).busy)
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
            return .table(LuaTable(fields: ["items": .table(LuaTable(array: items)), "updated": .integer(Int64(i)), "title": "list"]))
        }
        #expect(remembered(state).counts.sorted() == [2, 3] && !remembered(state).busy)
    }

    /// Keys made at run time, remembered, then dropped and collected while
    /// new keys of the same lengths are made: without the anchor table the
    /// allocator hands the new strings the old ones' blocks, and the walk
    /// would read the old keys' bytes for them.
    @Test func keysMadeAtRunTimeAreNeverMistakenForCollectedOnes() throws {
        let state = try LuaState(profile: .trusted)
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
        #expect(!remembered(state).busy)
    }

    @Test func aReadThatFailsPartwayLeavesTheKeysUsable() throws {
        let state = try LuaState()
        try state.run("""
            function make(i)
              local t = { a = i, b = 'x', c = true, d = 4 }
              if i == 8 then t.c = print end
              return t
            end
            """)
        let function = try #require(try state.globalFunction("make"))
        try callAndCheck(state, function, times: 7) { i in ["a": .integer(Int64(i)), "b": "x", "c": true, "d": 4] }
        #expect(remembered(state).counts.contains(4))
        #expect(throws: LuaError.self) { try state.call(function, [8]) }
        #expect(!remembered(state).busy)
        let result = try state.call(function, [9])
        #expect(result == [["a": 9, "b": "x", "c": true, "d": 4]])
        #expect(remembered(state).counts.contains(4))
    }
}
