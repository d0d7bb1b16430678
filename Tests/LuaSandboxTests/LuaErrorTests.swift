import LuaSandbox
import Testing

@Suite("Errors raised by scripts")
struct LuaErrorTests {
    @Test func syntaxErrorNamesChunkAndLine() throws {
        let h = try Harness()
        let error = luaError { _ = try h.state.load("local x = 1\nif x then\n  return 2\n", name: "widgets/tasks.lua") }
        guard case .syntax(let syntax)? = error else { Issue.record("not a syntax error: \(String(describing: error))"); return }
        #expect(syntax.chunk == "widgets/tasks.lua")
        #expect(syntax.line == 4)
        #expect(syntax.message == "'end' expected (to close 'if' at line 2) near <eof>")
        #expect(syntax.description == "widgets/tasks.lua:4: 'end' expected (to close 'if' at line 2) near <eof>")
        #expect(error?.status == .syntax)
    }

    @Test func longChunkNamesKeepTheirEnd() throws {
        let h = try Harness()
        let name = "/very/long/path/" + String(repeating: "nested/", count: 12) + "widget.lua"
        let error = luaError { try h.run("error('deep')", name: name) }
        guard case .runtime(let runtime)? = error else { Issue.record("expected runtime error"); return }
        #expect(runtime.message.hasPrefix("..."))
        #expect(runtime.message.hasSuffix("nested/widget.lua:1: deep"))
    }

    @Test func binaryChunksAreRefused() throws {
        let h = try Harness()
        let error = luaError { _ = try h.state.load(bytes: [0x1B] + Array("Lua".utf8) + [0x54, 0], name: "blob") }
        guard case .syntax(let syntax)? = error else { Issue.record("expected syntax error"); return }
        #expect(syntax.message.contains("attempt to load a binary chunk"))
    }

    @Test func runtimeErrorHasLocationAndTraceback() throws {
        let h = try Harness()
        let error = luaError {
            try h.run("""
                local function inner() local t = nil; return t.field end
                local function outer() local v = inner(); return v end
                local result = outer()
                return result
                """, name: "crash.lua")
        }
        guard case .runtime(let runtime)? = error else { Issue.record("expected runtime error"); return }
        #expect(runtime.message == "crash.lua:1: attempt to index a nil value (local 't')")
        #expect(runtime.chunk == "crash.lua")
        #expect(runtime.line == 1)
        let traceback = try #require(runtime.traceback)
        #expect(traceback.hasPrefix("stack traceback:"))
        #expect(traceback.contains("crash.lua:1: in"))
        #expect(traceback.contains("crash.lua:2: in"))
        #expect(error?.status == .error)
    }

    @Test func errorWithLevelZeroHasNoLocation() throws {
        let h = try Harness()
        let error = luaError { try h.run("error('plain', 0)") }
        guard case .runtime(let runtime)? = error else { Issue.record("expected runtime error"); return }
        #expect(runtime.message == "plain")
        #expect(runtime.chunk == nil)
        #expect(runtime.line == nil)
    }

    @Test func nonStringErrorObjectsAreDescribedAndKept() throws {
        let h = try Harness()
        let cases: [(String, String, LuaValue?)] = [
            ("error(nil)", "(error object is a nil value)", .nil),
            ("error({ code = 7 })", "(error object is a table value)", ["code": 7]),
            ("error(42)", "42", 42),
            ("error(2.5)", "2.5", 2.5),
            ("error(false)", "(error object is a boolean value)", false),
            ("error(print)", "(error object is a function value)", nil),
        ]
        for (source, message, value) in cases {
            let error = luaError { try h.run(source) }
            guard case .runtime(let runtime)? = error else { Issue.record("\(source): expected runtime error"); continue }
            #expect(runtime.message == message, "\(source)")
            #expect(runtime.value == value, "\(source)")
        }
    }

    @Test func errorObjectWithLoopingToStringIsNotCalled() throws {
        let h = try Harness()
        let error = luaError {
            try h.run("called = false; error(setmetatable({}, { __tostring = function() called = true; while true do end end }))")
        }
        #expect(error?.message == "(error object is a table value)")
        #expect(try h.state.global("called") == false)
    }

    @Test func hugeMessagesAreCutAndNULIsKept() throws {
        let h = try Harness()
        let huge = luaError { try h.run("error(string.rep('E', 8 * 1024 * 1024), 0)") }
        let message = try #require(huge?.message)
        #expect(message.utf8.count < LuaRuntimeError.maxMessageBytes + 100)
        #expect(message.hasSuffix("(message cut: 8388608 bytes in all)"))
        let nul = luaError { try h.run("error('visible\\0hidden suffix', 0)") }
        #expect(nul?.message == "visible\0hidden suffix")
    }

    @Test func stateStaysUsableAfterErrors() throws {
        let h = try Harness()
        for _ in 0..<100 { _ = luaError { try h.run("error('again')") } }
        #expect(try h.run("return 1 + 1") == [2])
    }
}
