import Foundation
import Logging
import SharedStore
import Testing
@testable import WidgetHost

/// A service keeps each bundle's widgets, budgets and controls in the
/// store, so a service started again continues where it was (issue 14,
/// point 4), and its run loop wakes for other processes' pushes.
@Suite("The widget service's lasting state")
struct WidgetServiceStateTests {
    let t0 = BundleFixture.midnight
    let events = WidgetServiceTests()

    static let main = WidgetServiceTests.main + """

        widget { kind = "V", families = { "systemSmall", "systemMedium" },
          placeholder = function() return {} end,
          timeline = function() return { entries = { { date = clock.now() } }, policy = "never" } end }
        intent { id = "SetOn", parameters = { { name = "value", type = "bool" } },
          perform = function(params) store.group("group.test"):set("on", params.value) end }
        control { kind = "On", type = "toggle", action = "SetOn", value = function() return store.group("group.test"):get("on") == true end }
        """

    /// A policy whose budget runs out after two counted reloads.
    var tightBudget: HostPolicy {
        var policy = HostPolicy()
        policy.budget = 2
        return policy
    }

    @Test func aServiceStartedAgainContinuesWithItsWidgetsBudgetsAndControls() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        var first: WidgetService? = WidgetService(store: fixture.store, clock: clock, calendar: .utc, policy: tightBudget)
        let bundle = try await first!.load(fixture.path)
        let a = try await first!.addWidget(bundle: bundle, kind: "W")
        let b = try await first!.addWidget(bundle: bundle, kind: "V", family: .systemMedium)
        try await first!.removeWidget(b)
        let c = try await first!.addWidget(bundle: bundle, kind: "V")
        #expect(a.number == 1 && b.number == 2 && c.number == 3)
        try await first!.tapControl(bundle: bundle, kind: "On")
        // Two counted reloads of `a` use its budget up; a third request waits for a slot.
        for step in 1...3 {
            try clock.advance(to: t0 + Double(step) * 400)
            try await first!.requestReload(bundle: bundle, kind: "W")
            await first!.runDue()
        }
        let before = (shown: try await first!.shown(a), budget: try await first!.budget(a), next: try await first!.nextReload(a),
                      timeline: try await first!.widget(a).timeline, pending: try await first!.widget(a).pendingRequestAt)
        #expect(before.budget == (2, 0))
        #expect(before.next?.isDeferred == true && before.next?.reason == .request && before.pending == t0 + 1200, "\(String(describing: before.next))")
        first = nil

        // A new service on the same store (a new SharedStore: as a new process would open it).
        let second = WidgetService(store: SharedStore(root: fixture.storeRoot), clock: clock, calendar: .utc, policy: tightBudget)
        #expect(try await second.load(fixture.path) == bundle)
        #expect(try await second.widgets(bundle: bundle) == [a, c])
        #expect(try await second.shown(a) == before.shown)
        #expect(try await second.widget(a).timeline == before.timeline)
        #expect(try await second.budget(a) == before.budget)
        #expect(try await second.nextReload(a) == before.next)
        #expect(try await second.widget(a).pendingRequestAt == before.pending)
        #expect(try await second.control(bundle: bundle, kind: "On")?.value == true)
        #expect(try await second.widget(c).configuration.kind == "V")
        await #expect(throws: ServiceError("no widget com.example.test#2")) { try await second.widget(b) }
        // What each widget shows, and the wait it is in, are published once as it continues.
        let restored = await events.drain(second, count: 3)
        #expect(restored.map(events.describe) == ["budget 1", "shown 1 entry 0", "shown 3 entry nil"])
        // Ids are never given again.
        #expect(try await second.addWidget(bundle: bundle, kind: "V").number == 4)
        _ = await events.drain(second, count: 2)
        // The deferred reload runs when the first counted one leaves the window, and the wait's end is an event.
        let slot = try #require(before.next).at
        try clock.advance(to: slot)
        await second.runDue()
        let freed = await events.drain(second, count: 2)
        #expect(freed.map(events.describe) == ["reloaded 1 request counted ok", "budget freed 1"])
        if case .reloaded(_, let at, _, _, let deferredFrom, _) = freed[0] {
            #expect(at == slot && deferredFrom == t0 + 1200)
        }
    }

    @Test func aKeptWidgetTheBundleNoLongerDeclaresIsDroppedWithAWarning() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let first = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await first.load(fixture.path)
        let w = try await first.addWidget(bundle: bundle, kind: "W")
        _ = try await first.addWidget(bundle: bundle, kind: "V")
        // The bundle changes: kind V is gone.
        try WidgetServiceTests.main.write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        let log = CollectedLog()
        let second = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc,
                                   logger: Logger(label: "test.service", factory: log.handler))
        _ = try await second.load(fixture.path)
        #expect(try await second.widgets(bundle: bundle) == [w])
        #expect(log.all.contains { $0.hasPrefix("warning widget #2 (V) was dropped: the bundle no longer declares that kind") && $0.contains("bundle=com.example.test") },
                "\(log.all)")
        // Its record is gone: a third start has nothing to drop.
        let log3 = CollectedLog()
        let third = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc,
                                  logger: Logger(label: "test.service", factory: log3.handler))
        _ = try await third.load(fixture.path)
        #expect(try await third.widgets(bundle: bundle) == [w])
        #expect(log3.all.isEmpty, "\(log3.all)")
    }

    @Test func aKeptRecordThisHostCannotReadStopsTheLoadAndIsLeftAsItIs() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let group = try fixture.store.group("group.test")
        try group.writeHostState(of: "com.example.test", [("widget:1", ["id": "one"])])
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        do {
            _ = try await service.load(fixture.path)
            Issue.record("the load went on")
        } catch let error as ServiceError {
            #expect(error.message.hasPrefix("the kept state of bundle com.example.test in \(group.path) has a record 'widget:1' this host cannot read (widget:1.family: not a widget family); nothing was changed."), "\(error)")
            #expect(error.message.hasSuffix("sqlite3 \(group.path) \"DELETE FROM host_state WHERE bundle = 'com.example.test'\""), "\(error)")
        }
        #expect(try group.hostState(of: "com.example.test")["widget:1"] == ["id": "one"])
        #expect(await service.bundles.isEmpty)
    }

    @Test func whatAWidgetShowsComesBackExactly() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "Odd", placeholder = function() return { p = 0.5 } end,
              timeline = function()
                return { entries = { { date = clock.now(), f = 2.0, big = math.huge, small = -math.huge, mixed = { 1, 2.5, x = "y" },
                                       raw = "\\255\\254", nested = { { a = { } } } } }, policy = "never" }
              end }
            control { kind = "Maybe", type = "button", value = function() return nil end }
            """)
        let first = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await first.load(fixture.path)
        let widget = try await first.addWidget(bundle: bundle, kind: "Odd")
        try await first.addControl(bundle: bundle, kind: "Maybe")
        let before = try #require(try await first.widget(widget).timeline)
        #expect(before.entries[0].content["f"] == .number(2.0) && before.entries[0].content["raw"].stringValue == nil)
        let second = WidgetService(store: SharedStore(root: fixture.storeRoot), clock: VirtualClock(t0), calendar: .utc)
        _ = try await second.load(fixture.path)
        #expect(try await second.widget(widget).timeline == before)
        #expect(try await second.widget(widget).placeholder?.content["p"] == .number(0.5))
        #expect(try await second.control(bundle: bundle, kind: "Maybe")?.value == .some(.nil))
    }

    @Test func aRequestIsKeptAtOnceAndAKeptWidgetThatIsDueWakesRun() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let first = WidgetService(store: fixture.store, clock: clock, calendar: .utc)
        let bundle = try await first.load(fixture.path)
        let widget = try await first.addWidget(bundle: bundle, kind: "W")
        try await first.requestReload(bundle: bundle, kind: "W")   // waits for the 5-minute floor
        // Another process, later: run() starts before the bundle is loaded, and sleeps.
        try clock.advance(to: t0 + 400)
        let second = WidgetService(store: SharedStore(root: fixture.storeRoot), clock: clock, calendar: .utc)
        let running = Task { await second.run() }
        _ = try await second.load(fixture.path)
        // The kept request is answered by run(), woken by the load (it may already have been).
        let events = await self.events.drain(second, count: 3)
        #expect(events.map(self.events.describe) == ["shown 1 entry 0", "reloaded 1 request counted ok", "shown 1 entry 0"], "\(events.map(self.events.describe))")
        let reload = try #require(try await second.widget(widget).reloads.last)
        #expect(reload.reason == .request && reload.at == t0 + 400 && reload.coalescedRequests == 1)
        running.cancel()
        await running.value
    }

    @Test func aWidgetThatStaysOutOfBudgetHearsOfEachWaitsEnd() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "Eager", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } }, policy = { after = clock.now() + 300 } } end }
            """)
        let clock = VirtualClock(t0)
        var policy = HostPolicy()
        policy.budget = 1
        policy.budgetWindow = 1000
        let service = WidgetService(store: fixture.store, clock: clock, calendar: .utc, policy: policy)
        let bundle = try await service.load(fixture.path)
        _ = try await service.addWidget(bundle: bundle, kind: "Eager")
        while let due = await service.nextDue(), due <= t0 + 2500 {
            try clock.advance(to: due)
            await service.runDue()
        }
        let all = await events.drain(service, count: 13)
        let waits = all.map(events.describe).filter { $0.hasPrefix("budget") || $0.hasPrefix("reloaded") }
        // Counted at +300; then each slot frees 1000 s after the last counted reload, which spends it again.
        #expect(waits == ["reloaded 1 widgetAdded exempt ok", "reloaded 1 policy counted ok", "budget 1",
                          "reloaded 1 policy counted ok", "budget freed 1", "budget 1",
                          "reloaded 1 policy counted ok", "budget freed 1", "budget 1"], "\(all.map(events.describe))")
    }

    @Test func aControlIsKeptEvenWhenItsFirstReadFailsAndDroppedOnesAreForgotten() async throws {
        let main = Self.main + """

            control { kind = "Broken", type = "button", value = function() error("no network") end }
            """
        let fixture = try BundleFixture(main: main)
        let first = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await first.load(fixture.path)
        try await first.addControl(bundle: bundle, kind: "Broken")
        try await first.addControl(bundle: bundle, kind: "On")
        let second = WidgetService(store: SharedStore(root: fixture.storeRoot), clock: VirtualClock(t0), calendar: .utc)
        _ = try await second.load(fixture.path)
        #expect(try await second.control(bundle: bundle, kind: "Broken") != nil)
        // A version of the bundle without control On: it is dropped, and its record with it.
        try Self.main.replacingOccurrences(of: "control { kind = \"On\"", with: "control { kind = \"Off\"")
            .write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        let log = CollectedLog()
        let third = WidgetService(store: SharedStore(root: fixture.storeRoot), clock: VirtualClock(t0), calendar: .utc,
                                  logger: Logger(label: "test.service", factory: log.handler))
        _ = try await third.load(fixture.path)
        #expect(log.all.contains { $0.contains("control On was dropped") }, "\(log.all)")
        #expect(try await third.control(bundle: bundle, kind: "On") == nil)
        let kept = try fixture.store.group("group.test").hostState(of: bundle).keys.sorted()
        #expect(!kept.contains("control:On") && !kept.contains("control:Broken"), "\(kept)")
    }

    @Test func withoutPersistenceEveryStartIsAFreshScreen() async throws {
        let fixture = try BundleFixture(main: Self.main)
        for _ in 1...2 {
            let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc, persistence: .none)
            let bundle = try await service.load(fixture.path)
            #expect(try await service.widgets(bundle: bundle).isEmpty)
            #expect(try await service.addWidget(bundle: bundle, kind: "W").number == 1)
        }
        #expect(try fixture.store.group("group.test").hostState(of: "com.example.test").isEmpty)
    }

    @Test func aBundleWithoutAnAppGroupKeepsItsStateInTheFallbackGroup() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } } } end }
            """, manifest: #"{ "id": "com.example.plain" }"#)
        for expected in [1, 2] {
            let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
            let bundle = try await service.load(fixture.path)
            #expect(try await service.addWidget(bundle: bundle, kind: "W").number == expected)
        }
        #expect(try fixture.store.group("lunette.host").hostState(of: "com.example.plain").keys.sorted() == ["engine", "widget:1", "widget:2"])
    }

    @Test func runWakesWhenAnotherProcessPushesToAnActivity() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let service = WidgetService(store: fixture.store, clock: clock, calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let order = try await service.startActivity(bundle: bundle, type: "Order", attributes: LuaTable(fields: ["id": "A"]),
                                                    state: LuaTable(fields: ["s": "placed"]))
        _ = await events.drain(service, count: 1)
        // Nothing is due: run() sleeps until woken.
        let running = Task { await service.run() }
        // Another process (its own store connection) records a push; the updater runs where the service runs.
        let other = try ActivityManager(bundle: fixture.load(), store: SharedStore(root: fixture.storeRoot), policy: .standard, clock: clock)
        try other.push(order.id, payload: ["s": "cooking"])
        let woken = await events.drain(service, count: 2)
        #expect(woken.map(events.describe) == ["activity activity-1 updated by updater (push)", "updater activity-1 push ok"])
        running.cancel()
        await running.value
    }

    @Test func aPushOverTheBudgetIsAnEvent() async throws {
        let fixture = try BundleFixture(main: Self.main)
        var policy = HostPolicy()
        policy.activityPushBudget = 1
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc, policy: policy)
        let bundle = try await service.load(fixture.path)
        let order = try await service.startActivity(bundle: bundle, type: "Order", attributes: LuaTable(fields: ["id": "A"]),
                                                    state: LuaTable(fields: ["s": "placed"]))
        try await service.push(bundle: bundle, activity: order.id, payload: ["s": "cooking"])
        #expect(try await service.push(bundle: bundle, activity: order.id, payload: ["s": "ready"]).isWaiting)
        let all = await events.drain(service, count: 4)
        #expect(all.map(events.describe) == ["activity activity-1 started by app", "activity activity-1 updated by updater (push)",
                                             "updater activity-1 push ok", "push throttled activity-1"])
    }
}
