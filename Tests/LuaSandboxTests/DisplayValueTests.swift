import LuaSandbox
import LunetteJSON
import Testing

/// `callForDisplay` reads results for developer tools: plain data exactly
/// as `call` reads it, the same errors for tables that break the
/// plain-data rules, and functions, userdata and threads described.
@Suite("Reading results for display")
struct DisplayValueTests {
    func both(_ source: String) throws -> (plain: Result<[LuaValue], LuaError>, shown: Result<[LuaDisplayValue], LuaError>) {
        let state = try LuaState(profile: .trusted)
        let chunk = try state.load(source, name: "show.lua")
        let plain = Result { () throws(LuaError) in try state.call(chunk) }
        let shown = Result { () throws(LuaError) in try state.callForDisplay(chunk) }
        return (plain, shown)
    }

    @Test(arguments: [
        "return 1, 2.5, 'x', '\\255', true, nil, 1/0",
        "return { 1, 2, { a = { b = { 'deep' } } }, name = 'x', [''] = false }",
        "return {}, { {} }, { [1] = 1, [2] = 2, x = { y = 1 } }",
        "local s = { 1 }; return { s, s }",
        "return setmetatable({ list = setmetatable({ 1 }, { __index = error, __len = error }) }, { __pairs = error })",
    ])
    func plainDataReadsAsCallReadsIt(_ source: String) throws {
        let (plain, shown) = try both(source)
        let values = try plain.get()
        let displayed = try shown.get()
        #expect(displayed.map(\.data) == values.map(Optional.some))
    }

    @Test(arguments: [
        "local t = { f = print }; t.t = t; return t",
        "local t = {}; for i = 1, 1000 do t = { t, print } end; return t",
        "return { print, [0] = 1 }",
        "return { 1, 2, nil, print }",
        "return { f = print, [1.5] = 1 }",
        "return { f = print, [true] = 1 }",
        "return { [print] = 1 }",
        "return 1, { x = { [{}] = print } }",
    ])
    func tablesThatBreakTheRulesFailAsInCall(_ source: String) throws {
        let (plain, shown) = try both(source)
        guard case .failure(.value(let expected)) = plain, case .failure(.value(let error)) = shown else {
            Issue.record("expected value errors, got \(plain) and \(shown)")
            return
        }
        // The display reader never refuses a value for being a function, a
        // thread or userdata; where the plain reader stopped at one of those,
        // the display reader goes on to the rule the table breaks elsewhere.
        let nonData = ["a function is not plain data", "a thread is not plain data", "a userdata is not plain data"]
        #expect(!nonData.contains(error.reason), "\(error)")
        if !nonData.contains(expected.reason) {
            #expect(error == expected)
        }
    }

    @Test func aTooLargeValueFailsAsInCall() throws {
        let state = try LuaState(profile: .trusted)
        state.conversionLimits = LuaConversionLimits(maxDepth: 100, maxBytes: 1000)
        let chunk = try state.load("return { print, string.rep('x', 2000) }", name: "big.lua")
        guard case .value(let error)? = luaError({ try state.callForDisplay(chunk) }) else { return }
        #expect(error.description == "result[2]: value is too large (over 1000 bytes)")
    }

    @Test func nonDataIsDescribed() throws {
        let state = try LuaState(profile: .trusted)
        let chunk = try state.load("""
            local function f() end
            return print, f, load('return 1', '=inline'), coroutine.running(), io.stdout, { f }, { x = { 1, f } }
            """, name: "show.lua")
        let shown = try state.callForDisplay(chunk)
        #expect(shown == [
            .function(definedAt: nil), .function(definedAt: "show.lua:1"), .function(definedAt: "inline"), .thread,
            .userdata(name: "FILE*"), .table(LuaDisplayTable(array: [.function(definedAt: "show.lua:1")])),
            .table(LuaDisplayTable(fields: [.init(key: "x", value: .table(LuaDisplayTable(array: [.data(1), .function(definedAt: "show.lua:1")])))])),
        ])
        #expect(shown.map(\.description) == [
            "<function: builtin>", "<function: show.lua:1>", "<function: inline>", "<thread>", "<userdata: FILE*>",
            "{<function: show.lua:1>}", "{x = {1, <function: show.lua:1>}}",
        ])
        var json = ""
        for value in shown {
            let writer = JSONWriter()
            value.writeJSON(to: writer)
            json += writer.text + "\n"
        }
        #expect(json == """
            {"$function":"builtin"}
            {"$function":"show.lua:1"}
            {"$function":"inline"}
            {"$thread":null}
            {"$userdata":"FILE*"}
            [{"$function":"show.lua:1"}]
            {"x":[1,{"$function":"show.lua:1"}]}

            """)
    }

    @Test func callStillRefusesNonData() throws {
        let (plain, _) = try both("return { f = print }")
        guard case .failure(.value(let error)) = plain else {
            Issue.record("expected a value error, got \(plain)")
            return
        }
        #expect(error.description == "result.f: a function is not plain data")
    }
}
