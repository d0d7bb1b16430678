import Foundation
import Testing
@testable import WidgetHost

/// Rule L6: each call sees fresh globals, though the state is pooled.
@Suite("Calls share nothing")
struct CallIsolationTests {
    @Test("L6: globals, modules and store group objects do not survive a call") func globalsModulesAndGroupObjectsDoNotSurviveACall() throws {
        let fixture = try BundleFixture(main: """
            local counter = require("counter")
            widget { kind = "G", placeholder = function() return {} end,
              timeline = function()
                local seen = {
                  global = leftover, viaG = _G.leftoverG, viaLoad = leftoverLoad, module = counter.bump(),
                  raw = rawget(store.group("group.test"), "stash"),
                }
                leftover = true
                _G.leftoverG = true
                load("leftoverLoad = true")()
                -- The group's object is the same in every call: refused.
                seen.stashed = pcall(rawset, store.group("group.test"), "stash", true)
                seen.date = clock.now()
                return { entries = { seen } }
              end }
            """, files: ["counter.lua": "local n = 0\nreturn { bump = function() n = n + 1; return n end }"])
        let (runtime, _) = try fixture.runtime()
        let widget = try runtime.configuration(kind: "G")
        for _ in 0..<3 {
            let entry = try #require(runtime.timeline(widget).value?.entries.first?.content)
            #expect(entry["global"] == .nil)
            #expect(entry["viaG"] == .nil)
            #expect(entry["viaLoad"] == .nil)
            #expect(entry["raw"] == .nil)
            #expect(entry["stashed"] == false)
            #expect(entry["module"] == 1, "a module's state starts afresh each call")
        }
    }

    @Test("L6: libraries stay read-only and a failed call does not poison the next") func librariesStayReadOnlyAndAFailedCallDoesNotPoisonTheNext() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "R", placeholder = function() return {} end,
              timeline = function(ctx)
                if clock.now() % 2 == 0 then
                  local ok = pcall(function() string.upper = nil end)
                  assert(not ok, "string must be read-only")
                  error("boom")
                end
                return { entries = { { date = clock.now(), up = ("x"):upper() } } }
              end }
            """)
        let (runtime, clock) = try fixture.runtime()
        let widget = try runtime.configuration(kind: "R")
        let failed = runtime.timeline(widget)
        #expect(failed.outcome.status == .error)
        #expect(failed.outcome.message?.contains("boom") == true)
        try clock.advance(by: 1)
        #expect(runtime.timeline(widget).value?.entries.first?.content["up"] == "X")
    }

    @Test("T1: a placeholder cannot open the store") func aPlaceholderCannotOpenTheStore() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "P", placeholder = function() return { n = store.group("group.test"):get("n") } end,
              timeline = function() return { entries = {} } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let outcome = runtime.placeholder(try runtime.configuration(kind: "P")).outcome
        #expect(outcome.status == .error)
        #expect(outcome.message?.contains("not granted to bundle com.example.test's placeholder") == true, "\(outcome.message ?? "")")
        #expect(outcome.message?.contains("rule T1") == true)
    }

    @Test func hostUsageReportsMemoryTimeAndBudget() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "U", placeholder = function() return {} end,
              timeline = function()
                local u = host.usage()
                return { entries = { { date = clock.now(), mem = u.memory.used > 0 and u.memory.limit,
                  time = u.time.limit, used = u.budget.used, left = u.budget.remaining } } }
              end }
            """, manifest: #"{ "id": "com.example.test", "appGroups": ["group.test"], "limits": { "memoryMB": 8 } }"#)
        let (runtime, _) = try fixture.runtime()
        let entry = try #require(runtime.timeline(try runtime.configuration(kind: "U"), budget: (3, 37)).value?.entries.first?.content)
        #expect(entry["mem"] == .integer(8 << 20), "bundle.json's smaller cap wins")
        #expect(entry["time"] == .number(30))
        #expect(entry["used"] == 3 && entry["left"] == 37)
    }

    @Test("T3: a timeline call ends at its hard deadline, and one over its soft deadline draws a warning") func aHardDeadlineEndsTheCallAndASlowOneDrawsAWarning() throws {
        var policy = HostPolicy()
        policy.timelineDeadline = .init(soft: 0.001, hard: 0.05)
        let fixture = try BundleFixture(main: """
            widget { kind = "S", placeholder = function() return {} end,
              timeline = function(ctx)
                if clock.now() > 100 then while true do end end
                local t = os.clock() while os.clock() - t < 0.005 do end
                return { entries = {} }
              end }
            """)
        let (runtime, clock) = try fixture.runtime(at: 0, policy: policy)
        let slow = runtime.timeline(try runtime.configuration(kind: "S"))
        #expect(slow.outcome.status == .ok)
        #expect(slow.outcome.warnings.contains { $0.contains("over its soft deadline of 1.0 ms") }, "\(slow.outcome.warnings)")
        try clock.advance(to: 200)
        let stuck = runtime.timeline(try runtime.configuration(kind: "S"))
        #expect(stuck.outcome.status == .timeout)
    }
}
