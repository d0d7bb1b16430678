import Foundation
import Testing
@testable import WidgetHost

/// Activity updaters (issue 13, point 4): one run per event, under L2.
@Suite("Activity updaters")
struct ActivityUpdaterTests {
    let t0 = BundleFixture.midnight

    static let bundle = """
        activity { type = "Delivery", attributes = { order = "string" },
          state = { status = "string", eta = "date?", events = "int?" }, tick = 600,
          updater = function(activity, event)
            local events = (activity.content.state.events or 0) + 1
            if event.kind == "push" then
              activity:update({ status = event.payload.status, events = events })
            elseif event.kind == "event" and event.name == "explode" then
              error("boom")
            elseif event.kind == "event" and event.name == "hog" then
              local t = {} for i = 1, 1e6 do t[i] = i .. "" end
            elseif event.kind == "event" then
              activity:finish({ status = event.name, events = events })
            else
              activity:update({ status = activity.content.state.status, events = events, eta = event.time })
            end
          end }
        intent { id = "Start", perform = function()
            local a = activities.request("Delivery", { order = "A1" }, { status = "placed" }, { staleDate = clock.now() + 1800 })
            return a.id
          end }
        widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
        """

    func host(policy: HostPolicy = .standard) throws -> (TimelineEngine, ActivityUpdaters, VirtualClock, String) {
        let fixture = try BundleFixture(main: Self.bundle)
        let bundle = try fixture.load()
        let clock = VirtualClock(t0)
        let manager = try ActivityManager(bundle: bundle, store: fixture.store, policy: policy, clock: clock)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: fixture.store, clock: clock, calendar: .utc, policy: policy, activities: manager))
        let engine = TimelineEngine(runtime: runtime)
        let id = try #require(try engine.perform("Start").result?.stringValue)
        return (engine, ActivityUpdaters(runtime: runtime, manager: manager), clock, id)
    }

    @Test func pushesEventsTicksAndTheStaleDateEachRunTheUpdater() throws {
        let (_, updaters, clock, id) = try host()
        try updaters.push(id, payload: ["status": "on its way"])
        #expect(try updaters.manager.get(id)?.content.state["status"] == "on its way")
        try play(updaters, clock, to: t0 + 1800)
        #expect(updaters.runs.map(\.kind) == ["push", "tick", "tick", "tick", "stale"])
        #expect(updaters.runs.map(\.at) == [t0, t0 + 600, t0 + 1200, t0 + 1800, t0 + 1800])
        #expect(try updaters.manager.get(id)?.content.state["events"] == 5)
        #expect(try updaters.manager.get(id)?.content.state["eta"] == .integer(Int64(t0 + 1800)))
        try updaters.signal(id, name: "delivered")
        #expect(try updaters.manager.get(id)?.phase(at: clock.time) == .ended)
        #expect(throws: ActivityError.self) { try updaters.signal(id, name: "again") }
    }

    /// Drives the updaters as the simulator does: to each due time up to `t`.
    func play(_ updaters: ActivityUpdaters, _ clock: VirtualClock, to t: Double) throws {
        while let due = try updaters.nextDue(), due <= t {
            try clock.advance(to: due)
            try updaters.runDue()
        }
        try clock.advance(to: t)
    }

    @Test func ticksMissedWhileNoHostRanAreNotReplayed() throws {
        let (_, updaters, clock, id) = try host()
        try clock.advance(to: t0 + 5 * 600 + 30)
        try updaters.runDue()
        #expect(updaters.runs.map(\.kind) == ["stale", "tick"], "missed ticks were replayed one by one, or out of order")
        #expect(updaters.runs.map(\.at) == [t0 + 1800, t0 + 3000])
        #expect(try updaters.manager.get(id)?.lastTick == t0 + 3000)
        try updaters.runDue()
        #expect(updaters.runs.count == 2, "an event ran twice")
    }

    @Test func aFailedUpdaterIsRecordedAndChangesNothing() throws {
        let (_, updaters, _, id) = try host()
        let before = try updaters.manager.get(id)?.content
        try updaters.signal(id, name: "explode")
        let run = try #require(updaters.runs.last)
        #expect(run.diagnostic?.kind == .error && run.diagnostic?.traceback?.contains("stack traceback") == true)
        #expect(try updaters.manager.get(id)?.content == before)
    }

    @Test("L2: an updater has the activity memory cap, not the widget one")
    func updatersHaveTheirOwnMemoryCap() throws {
        var policy = HostPolicy()
        policy.activityMemoryMB = 4
        policy.widgetMemoryMB = 200
        let (_, updaters, _, id) = try host(policy: policy)
        try updaters.signal(id, name: "hog")
        #expect(updaters.runs.last?.diagnostic?.kind == .memory, "\(String(describing: updaters.runs.last?.diagnostic))")
        guard case .memory(let cap, _)? = updaters.runs.last?.diagnostic?.limit else { Issue.record("no memory limit"); return }
        #expect(cap == 4 << 20)
    }
}
