import Foundation
import Testing
@testable import WidgetHost

@Suite("The timeline engine: policies, floor, budget")
struct TimelineEngineTests {
    let t0 = BundleFixture.midnight

    func engine(_ main: String, policy: HostPolicy = .standard) throws -> (TimelineEngine, VirtualClock) {
        let fixture = try BundleFixture(main: main)
        let (runtime, clock) = try fixture.runtime(policy: policy)
        return (TimelineEngine(runtime: runtime), clock)
    }

    func times(_ instance: WidgetInstance) -> [Double] { instance.reloads.map { $0.at - t0 } }

    @Test("T6, B2: an after(d) policy makes the widget eligible from d, and adding a widget is an exempt reload") func afterPolicyReloadsAtItsDateAndAddingIsExempt() throws {
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 30 }) }"))
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 2 * 3600)
        let instance = engine.instance(id)!
        #expect(times(instance) == [0, 1800, 3600, 5400, 7200])
        #expect(instance.reloads.map(\.reason) == [.widgetAdded, .policy, .policy, .policy, .policy])
        #expect(instance.reloads.map(\.counted) == [false, true, true, true, true])
        #expect(instance.shown(at: t0 + 7200)?.content["n"] == 5)
    }

    @Test("T6: atEnd waits for the last entry's date; never waits for a request") func atEndWaitsForTheLastEntryAndNeverWaitsForARequest() throws {
        let (engine, clock) = try engine("""
            widget { kind = "E", placeholder = function() return {} end, timeline = function()
              local now = clock.now()
              return { entries = { { date = now }, { date = now + 3600 } }, policy = "atEnd" } end }
            widget { kind = "N", placeholder = function() return {} end, timeline = function()
              return { entries = { { date = clock.now() } }, policy = "never" } end }
            """)
        let e = engine.addWidget(try engine.runtime.configuration(kind: "E"))
        let n = engine.addWidget(try engine.runtime.configuration(kind: "N"))
        try advance(engine, clock, to: t0 + 3 * 3600)
        #expect(times(engine.instance(e)!) == [0, 3600, 7200, 10_800])
        #expect(times(engine.instance(n)!) == [0])
        try engine.requestReload(kind: "N")
        try advance(engine, clock, to: t0 + 4 * 3600)
        #expect(times(engine.instance(n)!) == [0, 10_800])
        #expect(engine.instance(n)!.reloads.last?.reason == .request)
    }

    @Test("T8, T7: reloads of one widget are at least 5 minutes apart; a policy date in the past means now") func reloadsAreFiveMinutesApartAndAPastPolicyMeansNow() throws {
        // The policy date is an hour in the past: eligible at once, but not before the floor.
        let (engine, clock) = try engine(policyWidget("{ after = now - 3600 }"))
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 1200)
        #expect(times(engine.instance(id)!) == [0, 300, 600, 900, 1200])
    }

    @Test("B4: reload requests coalesce until the reload happens") func requestsCoalesceUntilTheReloadHappens() throws {
        let (engine, clock) = try engine(policyWidget("\"never\""))
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try clock.advance(to: t0 + 60)
        try engine.requestReload(kind: "W")
        try clock.advance(to: t0 + 120)
        try engine.requestReload(kind: nil)
        try advance(engine, clock, to: t0 + 3600)
        let reloads = engine.instance(id)!.reloads
        #expect(reloads.map { $0.at - t0 } == [0, 300])
        #expect(reloads[1].coalescedRequests == 2)
        #expect(reloads[1].reason == .request)
    }

    @Test("B3, B1: a reload over budget is deferred until the rolling window frees a slot, not lost") func overBudgetReloadsAreDeferredUntilASlotFreesNotLost() throws {
        var policy = HostPolicy()
        policy.budget = 3
        policy.budgetWindow = 3600
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 10 }) }"), policy: policy)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 2 * 3600)
        let reloads = engine.instance(id)!.reloads
        // Counted at 10, 20, 30 min; the 40-min reload waits until the 10-min one leaves the window (70 min).
        #expect(reloads.map { $0.at - t0 } == [0, 600, 1200, 1800, 4200, 4800, 5400])
        #expect(reloads[4].deferredFrom.map { $0 - t0 } == 2400)
        #expect(reloads[4].counted)
        #expect(engine.budgetUsage(of: id).used == 3)
        let next = try #require(engine.nextReload(of: id))
        #expect(next.isDeferred)
        #expect(next.at - t0 == 7800)
    }

    @Test("B2: exempt events reload at once, outside floor and budget") func exemptEventsReloadAtOnceOutsideFloorAndBudget() throws {
        var policy = HostPolicy()
        policy.budget = 1
        let (engine, clock) = try engine(policyWidget("\"never\""), policy: policy)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try clock.advance(to: t0 + 10)
        try engine.reloadNow(kind: nil, reason: .appForeground)
        try clock.advance(to: t0 + 20)
        try engine.reloadNow(kind: "W", reason: .significantTimeChange)
        let reloads = engine.instance(id)!.reloads
        #expect(reloads.map { $0.at - t0 } == [0, 10, 20])
        #expect(reloads.allSatisfy { r in !r.counted })
        #expect(engine.budgetUsage(of: id).used == 0)
    }

    @Test("T10: a failed call keeps the last good timeline and is recorded") func aFailedCallKeepsTheLastGoodTimelineAndIsRecorded() throws {
        let (engine, clock) = try engine("""
            widget { kind = "F", placeholder = function() return { text = "placeholder" } end,
              timeline = function()
                local g = store.group("group.test")
                local n = g:get("n") or 0
                if n >= 1 then error("the server is down") end
                g:set("n", n + 1)
                return { entries = { { date = clock.now(), text = "good" } }, policy = { after = clock.now() + 600 } }
              end }
            """)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "F"))
        try advance(engine, clock, to: t0 + 1200)
        let instance = engine.instance(id)!
        #expect(instance.reloads.map(\.status) == [.ok, .error, .error, .error])
        // Retried after the floor, each retry counted.
        #expect(times(instance) == [0, 600, 900, 1200])
        #expect(instance.reloads.dropFirst().allSatisfy { $0.counted })
        #expect(instance.failures.count == 3)
        #expect(instance.failures[0].message.contains("main.lua:5: the server is down"), "\(instance.failures[0].message)")
        #expect(instance.failures[0].traceback?.contains("main.lua:5") == true)
        #expect(instance.shown(at: clock.time)?.content["text"] == "good")
    }

    @Test("B1: under the kind scope the instances of a kind share one budget") func theBudgetScopeDecidesWhoShares() throws {
        var policy = HostPolicy()
        policy.budget = 2
        policy.budgetScope = .kind
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 10 }) }"), policy: policy)
        let widget = try engine.runtime.configuration(kind: "W")
        let a = engine.addWidget(widget)
        let b = engine.addWidget(widget)
        try advance(engine, clock, to: t0 + 3600)
        let counted = engine.instances.flatMap(\.reloads).filter(\.counted)
        #expect(counted.count == 2, "two instances of one kind share a budget of 2")
        #expect(engine.budgetUsage(of: a).used == 2 && engine.budgetUsage(of: b).used == 2)
    }

    @Test("B1: each widget keeps its own budget after removed widgets' history is forgotten") func budgetsStayEachWidgetsOwnAfterHistoryIsForgotten() throws {
        // The engine finds a widget's budget slot once; forgetting a removed
        // widget moves the others in `instances`, and their slots with them.
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 10 }) }"))
        engine.historyRetention = 2 * 3600
        let widget = try engine.runtime.configuration(kind: "W")
        let a = engine.addWidget(widget)
        try advance(engine, clock, to: t0 + 1800)
        let b = engine.addWidget(widget)
        try advance(engine, clock, to: t0 + 3600)
        engine.removeWidget(a)
        let c = engine.addWidget(widget)
        try advance(engine, clock, to: t0 + 4 * 3600)
        #expect(engine.instance(a) == nil, "the removed widget's history is forgotten")
        let d = engine.addWidget(widget)
        try advance(engine, clock, to: t0 + 6 * 3600)
        // Each counted reload adds one to the widget's own count (the day's
        // window holds them all): a count that drops or jumps was another's.
        for id in [b, c, d] {
            let used = engine.instance(id)!.budgetUsage.map(\.used)
            #expect(used.count >= 12)
            #expect(zip(used, used.dropFirst()).allSatisfy { $1 == $0 + 1 }, "widget \(id): \(used)")
            #expect(engine.budgetUsage(of: id).used == used.last)
        }
        #expect(engine.instance(d)!.budgetUsage.first?.used == 1, "a widget added after the forgetting starts its own count")
        // Widgets come and go for days: the budget keeps slots for those it may still count.
        for day in 0..<3 {
            let ids = (0..<5).map { _ in engine.addWidget(widget) }
            try advance(engine, clock, to: clock.time + 3600)
            for id in ids { engine.removeWidget(id) }
            try advance(engine, clock, to: clock.time + 6 * 3600)
            #expect(engine.budget.keyCount <= engine.instances.count, "day \(day): \(engine.budget.keyCount) keys for \(engine.instances.count) widgets")
        }
    }

    @Test("B5: developer mode has no budget and no 5-minute floor") func developerModeHasNoBudgetAndNoFloor() throws {
        var policy = HostPolicy()
        policy.budget = 1
        policy.developerMode = true
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 1 }) }"), policy: policy)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 600)
        #expect(engine.instance(id)!.reloads.count == 11)
        #expect(engine.instance(id)!.reloads.allSatisfy { !$0.counted })
    }

    @Test("T8: a floor set to 0 still keeps reloads a second apart") func aZeroFloorStillKeepsReloadsASecondApart() throws {
        var policy = HostPolicy()
        policy.minimumReloadInterval = 0
        policy.budget = 1000
        let (engine, clock) = try engine(policyWidget("\"atEnd\""), policy: policy)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 3)
        #expect(times(engine.instance(id)!) == [0, 1, 2, 3])
    }

    @Test("B4: a script's reload.timelines is a request like the app's") func aScriptsReloadRequestIsARequestToo() throws {
        let (engine, clock) = try engine("""
            widget { kind = "A", placeholder = function() return {} end,
              timeline = function() reload.timelines("B"); return { entries = { { date = clock.now() } }, policy = "never" } end }
            widget { kind = "B", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } }, policy = "never" } end }
            """)
        let b = engine.addWidget(try engine.runtime.configuration(kind: "B"))
        try clock.advance(to: t0 + 600)
        _ = engine.addWidget(try engine.runtime.configuration(kind: "A"))
        try advance(engine, clock, to: t0 + 3600)
        #expect(engine.instance(b)!.reloads.map(\.reason) == [.widgetAdded, .request])
        #expect(times(engine.instance(b)!) == [0, 600])
    }

    @Test func reloadsOfAnUnknownKindAreErrors() throws {
        let (engine, _) = try engine(policyWidget("\"never\""))
        #expect(throws: ParameterError(message: "bundle com.example.test has no widget kind 'Nope' (kinds: W)")) {
            try engine.requestReload(kind: "Nope")
        }
        #expect(throws: ParameterError.self) { try engine.reloadNow(kind: "Nope", reason: .appForeground) }
        try engine.requestReload(kind: nil)
        try engine.reloadNow(kind: "W", reason: .appForeground)
    }

    @Test("T4: shown(at:) of a past time gives the entry shown then, not the latest timeline's")
    func shownAtAPastTimeAnswersFromHistory() throws {
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 30 }) }"))
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 3600)
        let instance = engine.instance(id)!
        #expect(instance.shown(at: t0 + 60)?.content["n"] == 1, "07:01 answered from the latest timeline")
        #expect(instance.shown(at: t0 + 1800)?.content["n"] == 2)
        #expect(instance.shown(at: t0 + 3600)?.content["n"] == 3)
        #expect(instance.shown(at: t0 - 1) == nil, "a time before the widget was added")
    }

    @Test func freeingTheFirstWidgetKeepsTheOthersSchedulesAndIds() throws {
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 30 }) }"))
        engine.historyRetention = 3600
        let ids = try (0..<3).map { _ in engine.addWidget(try engine.runtime.configuration(kind: "W")) }
        engine.removeWidget(ids[0])
        let before = engine.nextReload(of: ids[2])
        try advance(engine, clock, to: t0 + 3 * 3600)
        #expect(engine.instance(ids[0]) == nil && engine.instances.map(\.id) == [ids[1], ids[2]])
        // The others went on reloading every 30 minutes, each on its own schedule, after the free.
        for id in ids.dropFirst() {
            #expect(engine.instance(id)!.reloads.last.map { $0.at } == t0 + 3 * 3600, "\(times(engine.instance(id)!))")
            #expect(engine.nextReload(of: id)?.at == t0 + 3 * 3600 + 1800)
        }
        #expect(before?.at == t0 + 1800)
        #expect(engine.addWidget(try engine.runtime.configuration(kind: "W")) == 4, "an id was given again")
    }

    @Test func historyIsKeptForTheRetentionAndRemovedWidgetsAreFreed() throws {
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 30 }) }"))
        engine.historyRetention = 3600
        let kept = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        let removed = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        try advance(engine, clock, to: t0 + 1800)
        engine.removeWidget(removed)
        try advance(engine, clock, to: t0 + 4 * 3600)
        let instance = engine.instance(kept)!
        #expect(instance.reloads.allSatisfy { $0.at >= t0 + 4 * 3600 - 3600 - 3600 }, "\(times(instance))")
        #expect(instance.reloads.count < 9 && instance.reloadsRecorded == 9)
        #expect(instance.shown(at: t0 + 4 * 3600 - 1800) != nil, "history within the retention was lost")
        #expect(engine.instance(removed) == nil && engine.instances.map(\.id) == [kept], "a removed widget's record was kept")
    }
}
