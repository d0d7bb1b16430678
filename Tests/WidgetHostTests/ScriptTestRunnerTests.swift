import Foundation
import LuaSandbox
import Testing
@testable import WidgetHost

/// `lunette test` (issue 16, point 1): tests written in Lua against the
/// bundle, each on a fresh store and clock, failures located in the test.
@Suite("Script tests")
struct ScriptTestRunnerTests {
    static let main = """
        local G = "group.test"
        widget { kind = "W", families = { "systemSmall", "systemMedium" },
          placeholder = function() return { n = -1 } end,
          timeline = function(ctx)
            local n = store.group(G):get("n") or 0
            return { entries = { { date = clock.now(), n = n, family = ctx.family } }, policy = { after = clock.now() + 600 } }
          end }
        widget { kind = "Broken", placeholder = function() return {} end,
          timeline = function() local x = nil; return x.field end }
        intent { id = "Bump", perform = function() store.group(G):update("n", function(n) return (n or 0) + 1 end); return "bumped" end }
        """

    func run(_ tests: String, filter: String? = nil) throws -> [ScriptTestResult] {
        let fixture = try BundleFixture(main: Self.main, files: ["tests/w_test.lua": tests])
        return ScriptTestRunner(bundle: try fixture.load(), filter: filter).run()
    }

    @Test func passingTestsPassAndEachGetsAFreshStoreAndClock() throws {
        let results = try run("""
            test("reads the store", function(t)
              t.store("group.test", { n = 5 })
              t.eq(t.timeline("W").entries[1].n, 5)
            end)
            test("a fresh store", function(t)
              t.eq(t.timeline("W", { family = "systemMedium" }).entries[1], { n = 0, family = "systemMedium", date = t.now() })
            end)
            test("time and reloads", function(t)
              t.at("2026-11-21T09:00:00Z")
              local w = t.widget("W")
              t.advance("30m")
              t.eq(#t.reloads(w), 4)
              t.eq(t.perform("Bump", {}, { from = "W" }), "bumped")
              t.eq(t.shown(w).n, 1)
            end)
            """)
        #expect(results.map(\.name) == ["reads the store", "a fresh store", "time and reloads"])
        let failures = results.compactMap(\.failure).map(\.text)
        #expect(failures.isEmpty, "\(failures)")
        #expect(results.map(\.line) == [1, 5, 8])
    }

    @Test func failuresSayWhatAndWhereInTheTest() throws {
        let results = try run("""
            test("a wrong value", function(t)
              t.eq(t.timeline("W").entries[1], { n = 1, family = "systemSmall", date = t.now() })
            end)
            test("a plain assert", function(t)
              assert(1 == 2, "one is not two")
            end)
            test("a failing provider", function(t)
              t.timeline("Broken")
            end)
            test("a mistake in the test", function(t)
              t.timeline("Nope")
            end)
            """)
        #expect(results.map(\.passed) == [false, false, false, false])
        let texts = results.map { $0.failure?.text ?? "" }
        #expect(texts[0].contains("w_test.lua:2: n: expected 1, got 0"), "\(texts[0])")
        #expect(texts[1].contains("w_test.lua:5: one is not two"), "\(texts[1])")
        #expect(texts[2].contains("w_test.lua:8: timeline of Broken failed: ") && texts[2].contains("main.lua:9:"), "\(texts[2])")
        #expect(texts[3].contains("w_test.lua:11: ") && texts[3].contains("no widget kind 'Nope'"), "\(texts[3])")
        #expect(results[1].failure?.traceback?.contains("w_test.lua:5") == true, "\(String(describing: results[1].failure?.traceback))")
    }

    @Test func aFilterRunsSomeTestsAndABrokenFileIsOneFailure() throws {
        let filtered = try run("""
            test("one", function(t) end)
            test("two", function(t) end)
            """, filter: "tw")
        #expect(filtered.map(\.name) == ["two"])
        let broken = try run("test(\"x\", function(t) end")
        #expect(broken.count == 1 && broken[0].name == "(file)" && broken[0].failure?.kind == .syntax)
    }

    @Test func lunetteTestPrintsALinePerTestAndExitsOneOnAFailure() throws {
        let fixture = try BundleFixture(main: Self.main, files: ["tests/w_test.lua": """
            test("good", function(t) t.eq(1, 1) end)
            test("bad", function(t) t.eq(2, 1) end)
            """])
        let run = try CLI.run(["test", fixture.path])
        #expect(run.status == 1)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("✓ tests/w_test.lua:1 good (") == true, "\(run.stdout)")
        #expect(lines.contains { $0.hasPrefix("✗ tests/w_test.lua:2 bad (") }, "\(run.stdout)")
        #expect(lines.contains { $0.contains("w_test.lua:2: expected 1, got 2") }, "\(run.stdout)")
        #expect(lines.last == "1 passed, 1 failed")
        let json = try CLI.run(["test", fixture.path, "--json"])
        #expect(json.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["passed"] as? Int == 1 && object?["failed"] as? Int == 1, "\(json.stdout)")
        let tests = object?["tests"] as? [[String: Any]]
        #expect(tests?.map { $0["name"] as? String } == ["good", "bad"])
        #expect((tests?[1]["failure"] as? [String: Any])?["message"] != nil, "\(json.stdout)")
        let examples = try CLI.run(["test", WidgetCLITests.examples + "/tasks"])
        #expect(examples.status == 0, "\(examples.stdout)\(examples.stderr)")
    }

    @Test func activitiesAreDrivenByPushesAndAFailingUpdaterFailsTheTest() throws {
        let fixture = try BundleFixture(main: Self.main + """

            activity { type = "Order", attributes = { id = "string" }, state = { s = "string" },
              updater = function(a, e) if e.payload.s == "boom" then error("cannot") end a:update({ s = e.payload.s }) end }
            """, files: ["tests/a_test.lua": """
            test("a push updates the state", function(t)
              local a = t.activity("Order", { id = "A" }, { s = "placed" })
              t.eq(t.push(a.id, { s = "cooking" }).state, { s = "cooking" })
            end)
            test("a failing updater fails the test", function(t)
              local a = t.activity("Order", { id = "A" }, { s = "placed" })
              t.push(a.id, { s = "boom" })
            end)
            """])
        let results = ScriptTestRunner(bundle: try fixture.load()).run()
        #expect(results.map(\.passed) == [true, false], "\(results.compactMap(\.failure).map(\.text))")
        #expect(results[1].failure?.text.contains("a_test.lua:7: the updater of activity-1 failed: ") == true, "\(String(describing: results[1].failure?.text))")
        #expect(results[1].failure?.text.contains("cannot") == true)
    }
}
