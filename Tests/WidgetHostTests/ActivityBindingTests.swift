import Foundation
import Testing
@testable import WidgetHost

/// `activities` in scripts, over the manager (issue 13, in progress).
@Suite("activities in scripts")
struct ActivityBindingTests {
    let t0 = BundleFixture.midnight

    static let bundle = """
        activity { type = "Delivery", attributes = { order = "string" }, state = { status = "string" }, updater = function() end }
        intent { id = "Start", parameters = { { name = "fail", type = "bool", default = false } },
          perform = function(params)
            local a, err, message = activities.request("Delivery", { order = "A1" }, { status = "placed" }, { relevance = 2 })
            if params.fail then error("after the request") end
            if not a then return { err = err, message = message } end
            local b = a:update({ status = "on its way" })
            return { id = a.id, state = a.state, status = b.content.state.status, enabled = activities.enabled(),
                     listed = #activities.list("Delivery") }
          end }
        intent { id = "Deliver", parameters = { { name = "id", type = "string" } },
          perform = function(params)
            local a = activities.get(params.id)
            a:finish({ status = "delivered" }, { dismissal = "immediate" })
            local ok, message = pcall(function() a:update({ status = "again" }) end)
            return { ok = ok, message = message }
          end }
        widget { kind = "W", placeholder = function() return {} end,
          timeline = function()
            local a, err = activities.request("Delivery", { order = "X" }, { status = "placed" })
            return { entries = { { date = clock.now(), err = err } } }
          end }
        """

    func engine() throws -> (TimelineEngine, ActivityManager) {
        let fixture = try BundleFixture(main: Self.bundle)
        let bundle = try fixture.load()
        let clock = VirtualClock(t0)
        let manager = try ActivityManager(bundle: bundle, store: fixture.store, policy: .standard, clock: clock)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: fixture.store, clock: clock, calendar: .utc, activities: manager))
        return (TimelineEngine(runtime: runtime), manager)
    }

    @Test func anIntentStartsUpdatesAndEndsAnActivity() throws {
        let (engine, manager) = try engine()
        let started = try engine.perform("Start")
        #expect(started.succeeded, "\(started.outcome.diagnostic?.text ?? "")")
        let result = try #require(started.result)
        #expect(result == ["id": "activity-1", "state": "active", "status": "on its way", "enabled": true, "listed": 1])
        let ended = try engine.perform("Deliver", parameters: ["id": "activity-1"])
        #expect(ended.result?.tableValue?["ok"] == false)
        #expect(ended.result?.tableValue?["message"].stringValue?.contains("cannot update activity 'activity-1': it is dismissed (A8)") == true,
                "\(String(describing: ended.result))")
        #expect(try manager.get("activity-1")?.content.state["status"] == "delivered")
    }

    @Test("A7, visibility: a timeline provider cannot start an activity")
    func providersGetVisibility() throws {
        let (engine, manager) = try engine()
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        #expect(engine.instance(id)!.timeline?.entries.first?.content["err"] == "visibility")
        #expect(try manager.list().isEmpty)
    }

    /// The glue's methods live as long as the state: were they reachable
    /// (they were, through `getmetatable(a).__index`, until 2026-11-27), a
    /// call could leave a value in them for the next call to find.
    @Test func anActivitysMethodsCarryNothingFromOneCallToTheNext() throws {
        let fixture = try BundleFixture(main: Self.bundle + """

            intent { id = "Leave", parameters = {},
              perform = function()
                local a = activities.list("Delivery")[1]
                local meta = getmetatable(a)
                local index = type(meta) == "table" and meta.__index or nil
                local found = index and index.left
                if index then index.left = (found or 0) + 1 end
                return { found = found, meta = type(meta) }
              end }
            """)
        let bundle = try fixture.load()
        let clock = VirtualClock(t0)
        let manager = try ActivityManager(bundle: bundle, store: fixture.store, policy: .standard, clock: clock)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: fixture.store, clock: clock, calendar: .utc, activities: manager))
        let engine = TimelineEngine(runtime: runtime)
        #expect(try engine.perform("Start").succeeded)
        for call in 1...3 {
            let left = try engine.perform("Leave")
            #expect(left.succeeded, "\(left.outcome.diagnostic?.text ?? "")")
            #expect(left.result == ["meta": "boolean"], "call \(call): \(String(describing: left.result))")
        }
    }

    @Test func aFailedCallChangesNoActivity() throws {
        let (engine, manager) = try engine()
        let failed = try engine.perform("Start", parameters: ["fail": true])
        #expect(failed.outcome.status == .error)
        #expect(try manager.list().isEmpty, "a failed perform left its activity behind")
        #expect(try engine.perform("Start").result?.tableValue?["id"] == "activity-1", "the failed call used up an id")
    }

    @Test func aHostWithoutActivitiesSaysSoInsteadOfANilGlobal() throws {
        let fixture = try BundleFixture(main: Self.bundle)
        let runtime = WidgetRuntime(bundle: try fixture.load(), services: HostServices(store: nil, clock: VirtualClock(t0), calendar: .utc))
        let performance = try TimelineEngine(runtime: runtime).perform("Start")
        #expect(performance.outcome.status == .error)
        #expect(performance.outcome.diagnostic?.message.contains("activities.request: this host gives bundle com.example.test no Live Activities") == true,
                "\(performance.outcome.diagnostic?.text ?? "")")
    }
}
