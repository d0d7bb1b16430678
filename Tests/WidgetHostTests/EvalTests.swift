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
        #expect(result.results == [.data(42), .data("x"), .data([1, 2])])
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
        let cyclic = evaluate("local t = { f = print }; t.t = t; return t", name: "bad.lua")
        #expect(cyclic.status == .invalid)
        #expect(cyclic.message == "result.t: a table that contains itself (a cycle) is not plain data")
    }

    @Test func functionsAndOtherNonDataResultsAreShownNotRefused() throws {
        let result = evaluate("""
            local function f() end
            return print, f, coroutine.create(f), { n = 1, list = { 2, f }, ['a b'] = print }, 'x'
            """, name: "show.lua")
        #expect(result.status == .ok, "\(result.message ?? "")")
        let table = LuaDisplayTable(array: [], fields: [
            .init(key: "list", value: .table(LuaDisplayTable(array: [.data(2), .function(definedAt: "show.lua:1")]))),
            .init(key: "n", value: .data(1)),
            .init(key: "a b", value: .function(definedAt: nil)),
        ])
        #expect(result.results == [.function(definedAt: nil), .function(definedAt: "show.lua:1"), .thread, .table(table), .data("x")])
        #expect(result.results.map(\.description) == [
            "<function: builtin>", "<function: show.lua:1>", "<thread>",
            #"{["a b"] = <function: builtin>, list = {2, <function: show.lua:1>}, n = 1}"#, #""x""#,
        ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.jsonLine.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [Any])
        #expect((results[0] as? [String: String]) == ["$function": "builtin"])
        #expect((results[1] as? [String: String]) == ["$function": "show.lua:1"])
        #expect((results[2] as? [String: Any])?["$thread"] is NSNull)
        let shown = try #require(results[3] as? [String: Any])
        #expect((shown["a b"] as? [String: String]) == ["$function": "builtin"])
        #expect(((shown["list"] as? [Any])?[1] as? [String: String]) == ["$function": "show.lua:1"])
    }

    @Test func userdataIsShownWithItsTypeName() {
        let evaluator = ScriptEvaluator(profile: .trusted)
        let result = evaluator.evaluate(source: Array("return io.stdout, { io.stderr }".utf8), name: "u.lua")
        #expect(result.status == .ok)
        #expect(result.results.map(\.description) == ["<userdata: FILE*>", "{<userdata: FILE*>}"])
        #expect(result.jsonLine.contains(#""results":[{"$userdata":"FILE*"},[{"$userdata":"FILE*"}]]"#))
    }

    @Test func preludeRunsInEachFilesStateBeforeTheFile() {
        var evaluator = ScriptEvaluator()
        evaluator.prelude = ["_port = true", "_soft = _port and 1"]
        let result = evaluator.evaluate(source: Array("return _port, _soft".utf8), name: "p.lua")
        #expect(result.results == [.data(true), .data(1)])
        evaluator.prelude = ["error('no')"]
        let failed = evaluator.evaluate(source: Array("return 1".utf8), name: "p.lua")
        #expect(failed.status == .error)
        #expect(failed.message == "(command line):1: no")
    }

    @Test func aFirstLineStartingWithHashIsSkippedInFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-eval-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("script.lua").path
        try "#!/usr/bin/env lunette eval\nlocal x = 1\nerror('line 3')".write(toFile: script, atomically: true, encoding: .utf8)
        let result = ScriptEvaluator().evaluate(file: script)
        #expect(result.status == .error)
        #expect(result.message?.hasSuffix("script.lua:3: line 3") == true, "\(result.message ?? "")")
        let bom = directory.appendingPathComponent("bom.lua").path
        try Data([0xEF, 0xBB, 0xBF] + Array("# comment\nreturn 2".utf8)).write(to: URL(fileURLWithPath: bom))
        #expect(ScriptEvaluator().evaluate(file: bom).results == [.data(2)])
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
        #expect(evaluator.evaluate(file: first).results == [.data("yes")])
        #expect(evaluator.evaluate(file: second).results == [.data(.nil)])
        let missing = evaluator.evaluate(file: directory.appendingPathComponent("none.lua").path)
        #expect(missing.status == .error)
        #expect(missing.diagnostic?.locatedMessage.hasSuffix("none.lua: no such file") == true)
    }

    @Test func jsonLineHasTheDocumentedShape() throws {
        let result = evaluate("print('hi')\nreturn { n = 1, f = 0.5, s = '\\xff', list = { true } }, 0/0, 1/0", name: "j.lua")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.jsonLine.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["file", "status", "message", "traceback", "location", "limit", "elapsedMs", "memoryPeakBytes", "results", "output"])
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
