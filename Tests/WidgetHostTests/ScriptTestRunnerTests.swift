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

    /// What a new author tripped over (issue 16): a mistyped group, option
    /// or filter looked green; dates were floats; argument numbers were off
    /// by one; t.eq showed one difference, oddly worded.
    @Test func mistakesInTestsAreCaughtWhereTheyAre() throws {
        let results = try run("""
            test("a group the bundle does not list", function(t) t.store("group.tset", { n = 1 }) end)
            test("an unknown option", function(t) t.timeline("W", { famliy = "systemSmall" }) end)
            test("an unknown perform option", function(t) t.perform("Bump", {}, { form = "W" }) end)
            test("a bad duration", function(t) t.advance("10 min") end)
            test("dates are integers when whole", function(t)
              t.at("2026-11-21T09:00:00Z")
              t.ok(math.type(t.now()) == "integer", "t.now() is an integer")
              local id = t.widget("W")
              t.ok(math.type(t.reloads(id)[1].at) == "integer", "a reload's time is an integer")
              t.ok(math.type(t.timeline("W").policy.after) == "integer", "policy.after is an integer")
            end)
            test("every difference", function(t)
              t.eq({ a = 1, b = { 2, 3 }, extra = false }, { a = 2, b = { 2, 4 }, gone = "x" })
            end)
            """)
        let failures = results.map { $0.failure?.message ?? "passed" }
        #expect(failures[0].contains(#"bad argument #1 to 'store' (t.store: group "group.tset" is not one of the bundle's app groups (did you mean 'group.test'? appGroups: group.test))"#), "\(failures[0])")
        #expect(failures[1].contains("bad argument #2 to 'timeline' (unknown option 'famliy' (did you mean 'family'? options: family, config))"), "\(failures[1])")
        #expect(failures[2].contains("bad argument #3 to 'perform' (unknown option 'form' (did you mean 'from'? options: from))"), "\(failures[2])")
        #expect(failures[3].contains("bad argument #1 to 'advance'"), "\(failures[3])")
        #expect(failures[4] == "passed", "\(failures[4])")
        #expect(failures[5].hasSuffix(#"w_test.lua:13: a: expected 2, got 1; b[2]: expected 4, got 3; extra: not expected (got false); gone: missing (expected "x")"#), "\(failures[5])")
    }

    @Test func aFilterThatMatchesNoTestIsAUsageErrorAndAnEmptyOneRunsAll() throws {
        let fixture = try BundleFixture(main: Self.main, files: ["tests/w_test.lua": #"test("one", function(t) end)"#])
        let none = try CLI.run(["test", fixture.path, "--filter", "nomatch"])
        #expect(none.status == 2 && none.stderr == "error: --filter nomatch: no test's name contains it (without --filter, every test runs and is listed)\n", "\(none.stderr)")
        let empty = try CLI.run(["test", fixture.path, "--filter", ""])
        #expect(empty.status == 0 && empty.stdout.contains("1 passed, 0 failed"), "\(empty.stdout)")
    }
}
