import LuaSandbox
import Testing

@Suite("Hostile values are rejected without running script code")
struct HostileValueTests {
    func valueError(_ state: LuaState, _ source: String) -> LuaValueError? {
        guard case .value(let error)? = luaError({ try state.run(source) }) else { return nil }
        return error
    }

    @Test func functionsAreNotPlainDataAndThePathIsNamed() throws {
        let state = try LuaState()
        let error = try #require(valueError(state, "return { entries = { {}, {}, { icon = print } } }"))
        #expect(error.description == "result.entries[3].icon: a function is not plain data")
        let second = try #require(valueError(state, "return 1, coroutine.create(print)"))
        #expect(second.description == "result #2: a thread is not plain data")
        let key = try #require(valueError(state, "return { ['odd key'] = { [true] = 1 } }"))
        #expect(key.description == "result[\"odd key\"][boolean]: a boolean key is not plain data (keys are strings or array indices 1..n)")
    }

    @Test func cyclesAreRejected() throws {
        let state = try LuaState()
        let error = try #require(valueError(state, "local t = { a = { } }; t.a.b = t; return t"))
        #expect(error.path == "result.a.b")
        #expect(error.reason.contains("cycle"))
        // A table reachable twice without a cycle is fine.
        #expect(try state.run("local s = { 1 }; return { s, s }") == [[[1], [1]]])
    }

    @Test func deepNestingIsRejected() throws {
        let state = try LuaState()
        let error = try #require(valueError(state, "local t = {}; for i = 1, 100000 do t = { t } end; return t"))
        #expect(error.reason == "tables are nested more than 100 deep")
        #expect(error.path.hasPrefix("result[1][1]"))
    }

    @Test func hugeSparseIndexDoesNotAllocate() throws {
        let state = try LuaState()
        let error = try #require(valueError(state, "return { [2^53] = 1 }"))
        #expect(error.reason.contains("hole at [1]"))
        #expect(error.reason.contains("largest 9007199254740992"))
        let sparse = try #require(valueError(state, "return { 1, 2, nil, 4 }"))
        #expect(sparse.reason.hasPrefix("array has a hole at [3]"))
        let zero = try #require(valueError(state, "return { [0] = 'x' }"))
        #expect(zero.description == "result[0]: array index 0 is not plain data (arrays run from 1 to n)")
        let float = try #require(valueError(state, "return { [1.5] = 'x' }"))
        #expect(float.description == "result[1.5]: a number key is not plain data (keys are strings or array indices 1..n)")
    }

    @Test func metamethodsNeverRun() throws {
        let state = try LuaState()
        let source = """
            touched = false
            local function trap() touched = true; while true do end end
            local inner = setmetatable({ 1, 2 }, { __index = trap, __len = trap, __pairs = trap, __newindex = trap })
            return setmetatable({ list = inner, name = 'x' }, { __index = trap, __len = trap, __pairs = trap, __eq = trap })
            """
        let results = try state.run(source)
        #expect(results == [["list": [1, 2], "name": "x"]])
        #expect(try state.global("touched") == false)
    }

    @Test func sizeBudgetStopsExponentialSharing() throws {
        let state = try LuaState()
        state.conversionLimits = LuaConversionLimits(maxDepth: 100, maxBytes: 1 << 20)
        // 2^40 paths through 40 shared levels: must stop at the budget, not expand.
        let error = try #require(valueError(state, "local t = { 'leaf' }; for i = 1, 40 do t = { t, t } end; return t"))
        #expect(error.reason == "value is too large (over 1048576 bytes)")
        let big = try #require(valueError(state, "return string.rep('x', 2 * 1024 * 1024)"))
        #expect(big.reason == "value is too large (over 1048576 bytes)")
    }

    /// The Swift reader draws these lines; TapeTests checks the C walk draws the same.
    @Test func limitsAreExact() throws {
        let state = try LuaState()
        state.conversionLimits = LuaConversionLimits(maxDepth: 3, maxBytes: 16 * 4 + 8)
        #expect(try state.run("return {{{}}}") == [[[[:]]]])
        #expect(valueError(state, "return {{{{}}}}")?.reason == "tables are nested more than 3 deep")
        // 4 values (16 bytes each) and 8 string bytes fit exactly; one byte more does not.
        #expect(try state.run("return { 'abcd', 'efgh', 1 }") == [["abcd", "efgh", 1]])
        #expect(valueError(state, "return { 'abcd', 'efghi', 1 }")?.reason == "value is too large (over 72 bytes)")
        // Field keys count too: 3 values (48) + 'x' (1) + keys of 11 and 12 bytes = 72.
        #expect(try state.run("return { aaaaaaaaaaa = 'x', bbbbbbbbbbbb = 1 }") == [["aaaaaaaaaaa": "x", "bbbbbbbbbbbb": 1]])
        #expect(valueError(state, "return { aaaaaaaaaaaa = 'x', bbbbbbbbbbbb = 1 }")?.reason == "value is too large (over 72 bytes)")
    }

    @Test func stackIsBalancedAfterRejections() throws {
        let state = try LuaState()
        for _ in 0..<1000 {
            _ = valueError(state, "return { a = { b = { print } } }")
        }
        #expect(try state.run("return select('#', 1, 2, 3)") == [3])
        #expect(lua_gettop_(state) == 0)
    }
}

import CLua
/// The values on the state's stack above the message handler its top-level
/// calls keep at index 1 (`lunette_rest_handler`).
func lua_gettop_(_ state: LuaState) -> Int32 { lua_gettop(state.rawState) - 1 }
