import CLua
import CLuaShims
import LuaSandbox
import Testing

/// The C fast path (`lunette_tape_read`) on its own: it must accept exactly
/// what the Swift reader accepts, or values would silently take the slow
/// path (or worse, cross unchecked). Conversion results cannot show which
/// path ran, so these tests call the C walk directly.
@Suite("The C value walk accepts exactly plain data within the limits")
final class TapeTests {
    let state: LuaState
    var tape = lunette_tape()

    init() throws {
        state = try LuaState()
    }

    deinit {
        lunette_tape_free(&tape)
    }

    /// Runs `return <expression>` and asks the C walk about the result.
    func accepts(_ expression: String, depth: Int = 100, bytes: Int = 64 << 20) throws -> Bool {
        try state.run("tapeValue = (function() return \(expression) end)()", name: "tape")
        return accepts(global: depth, bytes)
    }

    func accepts(global depth: Int, _ bytes: Int) -> Bool {
        let L = state.rawState
        let base = lua_gettop(L)   // the resting message handler
        lunette_pushglobaltable(L)
        _ = lua_pushstring(L, "tapeValue")
        lua_rawget(L, -2)
        defer { lua_settop(L, base) }
        return lunette_tape_read(L, -1, &tape, Int32(depth), bytes) != 0
    }

    @Test func acceptsPlainData() throws {
        for expression in ["nil", "true", "42", "0.5", "0/0", "'text\\0nul'", "{}", "{ 1, 2, { a = 'b' } }",
                           "{ 'x', name = 'mixed' }", "{ s = {}, s2 = {} }"] {
            #expect(try accepts(expression), "\(expression)")
        }
        #expect(try accepts("(function() local s = { 1 }; return { s, s } end)()"))  // shared, not cyclic
    }

    @Test func refusesWhatIsNotPlainData() throws {
        for expression in ["print", "coroutine.create(print)", "{ f = print }", "{ [true] = 1 }", "{ [1.5] = 1 }",
                           "{ [0] = 1 }", "{ 1, nil, 3 }", "{ [2^53] = 1 }",
                           "(function() local t = {}; t.self = t; return t end)()"] {
            #expect(try !accepts(expression), "\(expression)")
        }
    }

    @Test func limitsMatchTheSwiftReader() throws {
        #expect(try accepts("{{{}}}", depth: 3))
        #expect(try !accepts("{{{{}}}}", depth: 3))
        #expect(try accepts("{ 'abcd', 'efgh', 1 }", bytes: 72))
        #expect(try !accepts("{ 'abcd', 'efghi', 1 }", bytes: 72))
        #expect(try accepts("{ aaaaaaaaaaa = 'x', bbbbbbbbbbbb = 1 }", bytes: 72))
        #expect(try !accepts("{ aaaaaaaaaaaa = 'x', bbbbbbbbbbbb = 1 }", bytes: 72))
    }

    @Test func metamethodsDoNotRun() throws {
        try state.run("touched = false")
        #expect(try accepts("setmetatable({ 1 }, { __index = function() touched = true end, __pairs = function() touched = true end })"))
        #expect(try state.global("touched") == false)
    }

    @Test func acceptsEveryGeneratedValue() throws {
        var generator = ValueGenerator(seed: 0xC0FFEE)
        for _ in 0..<300 {
            let value = generator.value(depth: 0)
            try state.setGlobal("tapeValue", value)
            #expect(accepts(global: 100, 64 << 20), "\(value)")
        }
    }
}
