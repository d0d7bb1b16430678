import Foundation
import Testing
import WidgetHost

@Suite("lunette eval: running files and reporting each")
struct EvalTests {
    func evaluate(_ source: String, name: String = "t.lua") -> EvalResult {
        ScriptEvaluator().evaluate(source: Array(source.utf8), name: name)
    }

    @Test func okResultCarriesValuesAndPrintedOutput() {
        let result = evaluate("print('a', 1, nil, true)\nprint('b')\nreturn 42, 'x', { 1, 2 }")
        #expect(result.status == .ok)
        #expect(result.message == nil)
        #expect(result.results == [42, "x", [1, 2]])
        #expect(result.output == "a\t1\tnil\ttrue\nb\n")
    }

    @Test func syntaxAndRuntimeErrorsAreStatuses() {
        let syntax = evaluate("return +", name: "bad.lua")
        #expect(syntax.status == .syntax)
        #expect(syntax.message == "bad.lua:1: unexpected symbol near '+'")
        let runtime = evaluate("local x = nil\nreturn x.y", name: "bad.lua")
        #expect(runtime.status == .error)
        #expect(runtime.message == "bad.lua:2: attempt to index a nil value (local 'x')")
        #expect(runtime.traceback?.contains("bad.lua:2: in main chunk") == true)
        let notPlain = evaluate("return print", name: "bad.lua")
        #expect(notPlain.status == .error)
        #expect(notPlain.message == "result: a function is not plain data")
    }

    @Test func outputBeforeAFailureIsKept() {
        let result = evaluate("print('before')\nerror('after')")
        #expect(result.status == .error)
        #expect(result.output == "before\n")
    }

    @Test func eachFileGetsAFreshState() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-eval-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("first.lua").path
        let second = directory.appendingPathComponent("second.lua").path
        try "leaked = 'yes'; return leaked".write(toFile: first, atomically: true, encoding: .utf8)
        try "return leaked".write(toFile: second, atomically: true, encoding: .utf8)
        let evaluator = ScriptEvaluator()
        #expect(evaluator.evaluate(file: first).results == ["yes"])
        #expect(evaluator.evaluate(file: second).results == [.nil])
        let missing = evaluator.evaluate(file: directory.appendingPathComponent("none.lua").path)
        #expect(missing.status == .error)
        #expect(missing.message?.hasSuffix("none.lua: no such file") == true)
    }

    @Test func jsonLineHasTheDocumentedShape() throws {
        let result = evaluate("print('hi')\nreturn { n = 1, f = 0.5, s = '\\xff', list = { true } }, 0/0, 1/0", name: "j.lua")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.jsonLine.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["file", "status", "message", "traceback", "elapsedMs", "memoryPeakBytes", "results", "output"])
        #expect((object["memoryPeakBytes"] as? Int ?? 0) > 0)
        #expect(object["file"] as? String == "j.lua")
        #expect(object["status"] as? String == "ok")
        #expect(object["message"] is NSNull)
        #expect(object["output"] as? String == "hi\n")
        #expect((object["elapsedMs"] as? Double).map { $0 >= 0 } == true)
        let results = try #require(object["results"] as? [Any])
        let table = try #require(results[0] as? [String: Any])
        #expect(table["n"] as? Int == 1)
        #expect(table["f"] as? Double == 0.5)
        #expect((table["s"] as? [String: String])?["$bytes"] == "/w==")
        #expect(table["list"] as? [Bool] == [true])
        #expect(results[1] as? String == "NaN", "non-finite numbers follow the one JSON convention (docs/json.md)")
        #expect(results[2] as? String == "Infinity")
    }
}
