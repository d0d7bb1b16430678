import Foundation
import LuaSandbox
import LunetteJSON
import Testing

/// One diagnostic value, one text and one JSON rendering for every failure.
@Suite("Diagnostics")
struct DiagnosticTests {
    func json(_ diagnostic: Diagnostic?) throws -> [String: Any] {
        let writer = JSONWriter()
        writer.object { Diagnostic.writeFields(of: diagnostic, to: writer) }
        return try #require(try JSONSerialization.jsonObject(with: Data(writer.text.utf8)) as? [String: Any])
    }

    @Test func aRuntimeErrorKeepsLuasMessageAndGivesItsLocationAsData() throws {
        let h = try Harness(profile: .sandbox)
        let error = try #require(luaError { try h.run("local t = nil\nreturn t.x", name: "w.lua") })
        let d = error.diagnostic
        #expect(d.kind == .error && error.status == .error)
        #expect(d.file == "w.lua" && d.line == 2)
        #expect(d.locatedMessage == "w.lua:2: attempt to index a nil value (local 't')")
        #expect(d.summary == "error: w.lua:2: attempt to index a nil value (local 't')")
        #expect(d.text.hasPrefix(d.summary + "\nstack traceback:"))
        let object = try json(d)
        #expect(object["status"] as? String == "error")
        #expect(object["message"] as? String == d.locatedMessage)
        #expect((object["location"] as? [String: Any])?["line"] as? Int == 2)
        #expect(object["limit"] is NSNull)
    }

    @Test func aFileMistakeReadsLikeACompilerError() throws {
        let d = Diagnostic(file: "b/bundle.json", line: 3, column: 5, message: "unknown key 'x'")
        #expect(d.kind == .invalid)
        #expect(d.text == "invalid: b/bundle.json:3:5: unknown key 'x'")
        let location = try #require(try json(d)["location"] as? [String: Any])
        #expect(location["file"] as? String == "b/bundle.json" && location["column"] as? Int == 5)
    }

    @Test func limitsAreData() throws {
        let h = try Harness(profile: .sandbox)
        h.state.options.limits = LuaLimits(memory: 1 << 20, timeout: .seconds(5))
        let memory = try #require(luaError { try h.run("local s = {} for i = 1, 1e7 do s[i] = i end") }).diagnostic
        guard case .memory(let cap, let peak)? = memory.limit else { Issue.record("\(memory)"); return }
        #expect(cap == 1 << 20 && peak <= 1 << 20)
        let memoryJSON = try #require(try json(memory)["limit"] as? [String: Any])
        #expect(memoryJSON["kind"] as? String == "memory" && memoryJSON["capBytes"] as? Int == 1 << 20)

        h.state.options.limits = LuaLimits(timeout: .milliseconds(20))
        let timeout = try #require(luaError { try h.run("while true do end") }).diagnostic
        guard case .deadline(let limit, let elapsed)? = timeout.limit else { Issue.record("\(timeout)"); return }
        #expect(limit == .milliseconds(20) && elapsed >= .milliseconds(20))
        #expect((try json(timeout)["limit"] as? [String: Any])?["limitMs"] as? Double == 20)

        h.state.options.limits = LuaLimits(output: 10)
        let output = try #require(luaError { try h.run("print(string.rep('x', 100))") }).diagnostic
        #expect(output.limit == .output(cap: 10))
    }

    @Test func successWritesNullFields() throws {
        let object = try json(nil)
        #expect(object["status"] as? String == "ok")
        for key in ["message", "traceback", "location", "limit"] { #expect(object[key] is NSNull, "\(key)") }
    }
}
