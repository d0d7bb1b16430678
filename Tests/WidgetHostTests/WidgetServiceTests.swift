import Foundation
import Logging
import MetricsTestKit
import SharedStore
import Testing
@testable import WidgetHost

/// The host as a service (issue 14, in progress): an actor on its own Lua
/// thread, with an event stream and a run loop.
@Suite("The widget service")
struct WidgetServiceTests {
    let t0 = BundleFixture.midnight

    static let main = """
        local G = "group.test"
        widget { kind = "W", families = { "systemSmall" },
          placeholder = function() return { n = -1 } end,
          timeline = function()
            local now = clock.now()
            local n = store.group(G):get("n") or 0
            return { entries = { { date = now, n = n }, { date = now + 600, n = n + 100 } },
                     policy = { after = now + 1800 } }
          end }
        intent { id = "Bump", perform = function() store.group(G):update("n", function(n) return (n or 0) + 1 end) end }
        activity { type = "Order", attributes = { id = "string" }, state = { s = "string" },
          updater = function(a, e) a:update({ s = e.payload.s }) end }
        """

    /// Takes `count` events from the stream (the service published them
    /// before returning); gives up after 10 s with what came, rather than hang
    /// (the stream then ends: a test that got too few fails).
    func drain(_ service: WidgetService, count: Int) async -> [HostEvent] {
        let collector = Task {
            var out: [HostEvent] = []
            for await event in service.events {
                out.append(event)
                if out.count == count { break }
            }
            return out
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(10))
            collector.cancel()
        }
        let out = await collector.value
        timer.cancel()
        #expect(out.count == count, "expected \(count) events, got \(out.map(describe))")
        return out
    }

    func describe(_ event: HostEvent) -> String {
        switch event {
        case .reloaded(let id, _, let reason, let counted, _, let status): return "reloaded \(id.number) \(reason.rawValue) \(counted ? "counted" : "exempt") \(status.rawValue)"
        case .shown(let id, _, let entry, let placeholder): return "shown \(id.number) \(placeholder ? "placeholder" : "entry") \(entry?.content["n"].description ?? "nil")"
        case .failed(let id, _, let role, _): return "failed \(id.number) \(role.rawValue)"
        case .budgetExhausted(let id, _, _): return "budget \(id.number)"
        case .budgetFreed(let id, _): return "budget freed \(id.number)"
        case .pushThrottled(_, let activity, _): return "push throttled \(activity)"
        case .bundleUpdated(_, let version, _): return "updated to \(version)"
        case .bundleUpdateFailed(_, _, let diagnostics): return "update failed: \(diagnostics.map(\.text))"
        case .performed(_, let p): return "performed \(p.intent) \(p.status.rawValue)"
        case .activity(_, let change): return "activity \(change.activity) \(change.kind.rawValue) by \(change.source)"
        case .updaterRan(_, let run): return "updater \(run.activity) \(run.kind) \(run.diagnostic == nil ? "ok" : "failed")"
        case .activityPhase(_, let activity, _, let phase): return "phase \(activity) \(phase.rawValue)"
        case .controlValue(_, let kind, _, let value, _): return "control \(kind) \(value?.description ?? "nil")"
        case .bundleUnloaded(let bundle, let widgets): return "unloaded \(bundle) \(widgets.map(\.number))"
        case .pluginLoaded(let plugin, _, let isolation, let grants): return "plugin loaded \(plugin) \(isolation.rawValue) \(grants)"
        case .pluginQuarantined(let plugin, let q): return "plugin quarantined \(plugin) \(q.cause.rawValue)"
        case .pluginReleased(let plugin, _, _): return "plugin released \(plugin)"
        }
    }

    @Test func whatHappensComesAsEventsInOrder() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let service = WidgetService(store: fixture.store, clock: clock, calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let widget = try await service.addWidget(bundle: bundle, kind: "W")
        #expect(widget == WidgetID(bundle: "com.example.test", number: 1))
        var events = await drain(service, count: 2)
        #expect(events.map(describe) == ["reloaded 1 widgetAdded exempt ok", "shown 1 entry 0"])
        // The next entry's date is due before the next reload.
        #expect(await service.nextDue() == t0 + 600)
        try clock.advance(to: t0 + 600)
        await service.runDue()
        events = await drain(service, count: 1)
        #expect(events.map(describe) == ["shown 1 entry 100"])
        if case .shown(_, let at, _, _) = events[0] { #expect(at == t0 + 600) }
        // A tap: perform, then the widget's exempt reload (I2).
        try await service.perform(bundle: bundle, intent: "Bump", from: widget)
        events = await drain(service, count: 3)
        #expect(events.map(describe) == ["reloaded 1 intent exempt ok", "shown 1 entry 1", "performed Bump ok"])
        #expect(try await service.shown(widget)?.content["n"] == 1)
    }

    @Test func liveActivitiesAndTheirUpdatersAreEventsToo() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let order = try await service.startActivity(bundle: bundle, type: "Order", attributes: LuaTable(fields: ["id": "A"]),
                                                    state: LuaTable(fields: ["s": "placed"]))
        try await service.push(bundle: bundle, activity: order.id, payload: ["s": "cooking"])
        let events = await drain(service, count: 3)
        #expect(events.map(describe) == ["activity activity-1 started by app", "activity activity-1 updated by updater (push)", "updater activity-1 push ok"])
        #expect(try await service.activities(bundle: bundle).first?.content.state["s"] == "cooking")
    }

    @Test func runSleepsUntilAskedAndEndsWhenCancelled() async throws {
        let fixture = try BundleFixture(main: Self.main)
        var policy = HostPolicy()
        policy.developerMode = true   // no 5-minute floor: a request reloads at once
        let clock = VirtualClock(t0)
        let service = WidgetService(store: fixture.store, clock: clock, calendar: .utc, policy: policy)
        let bundle = try await service.load(fixture.path)
        _ = try await service.addWidget(bundle: bundle, kind: "W")
        _ = await drain(service, count: 2)
        try clock.advance(to: t0 + 10)
        // Nothing is due for 590 s (the next entry): run() sleeps that long, unless woken.
        let running = Task { await service.run() }
        try await service.requestReload(bundle: bundle, kind: "W")
        let events = await drain(service, count: 1)
        #expect(events.map(describe).first?.hasPrefix("reloaded 1 request") == true, "\(events.map(describe))")
        running.cancel()
        await running.value   // returns: the loop ended
    }

    @Test func scriptLogLinesReachSwiftLogAsTheyHappen() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() log.warn("cache is cold") print("plain") return { entries = {} } end }
            """)
        let collected = CollectedLog()
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc,
                                    scriptLogger: Logger(label: "test.scripts", factory: collected.handler))
        let bundle = try await service.load(fixture.path)
        _ = try await service.addWidget(bundle: bundle, kind: "W")
        let lines = collected.all
        #expect(lines.contains { $0.hasPrefix("warning cache is cold ") && $0.contains("bundle=com.example.test")
            && $0.contains("function=widget W.timeline") && $0.contains("role=timeline") && $0.contains("call=")
            && $0.contains("kind=W") && $0.contains("family=systemSmall") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("info plain ") }, "\(lines)")
    }

    @Test func cancellingTheTaskEndsTheRunningCallAsADeadlineWould() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "Busy", placeholder = function() return {} end,
              timeline = function() while true do end end }
            """)
        var policy = HostPolicy()
        policy.timelineDeadline = HostPolicy.Deadline(soft: 20, hard: 20)
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc, policy: policy)
        let bundle = try await service.load(fixture.path)
        let adding = Task { try await service.addWidget(bundle: bundle, kind: "Busy") }
        // Wait until its first timeline is running (the placeholder comes first), then cancel.
        try await Task.sleep(for: .milliseconds(100))
        adding.cancel()
        let widget = try await adding.value
        let failure = try #require(try await service.widget(widget).failures.last)
        #expect(failure.status == .timeout)
        #expect(failure.diagnostic.message.contains("cancelled by the host after"), "\(failure.diagnostic.text)")
        guard case .deadline(let limit, let elapsed)? = failure.diagnostic.limit else { Issue.record("no deadline: \(failure.diagnostic)"); return }
        #expect(elapsed < (limit ?? .zero), "it ran to its deadline")
    }

    @Test func callsReloadsAndPushesAreCountedInSwiftMetrics() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let metrics = TestMetrics()
        var policy = HostPolicy()
        policy.activityPushBudget = 1
        let clock = VirtualClock(t0)
        let service = WidgetService(store: fixture.store, clock: clock, calendar: .utc, policy: policy, metrics: metrics)
        let bundle = try await service.load(fixture.path)
        let widget = try await service.addWidget(bundle: bundle, kind: "W")
        try await service.perform(bundle: bundle, intent: "Bump", from: widget)
        let order = try await service.startActivity(bundle: bundle, type: "Order", attributes: LuaTable(fields: ["id": "A"]),
                                                    state: LuaTable(fields: ["s": "placed"]))
        try await service.push(bundle: bundle, activity: order.id, payload: ["s": "cooking"])
        try await service.push(bundle: bundle, activity: order.id, payload: ["s": "ready"])   // over the budget of 1
        let b = ("bundle", "com.example.test")
        #expect(metrics.counterTotal(label: "lunette_calls_total", dimensions: [b, ("role", "timeline"), ("status", "ok")]) == 2)
        #expect(metrics.counterTotal(label: "lunette_calls_total", dimensions: [b, ("role", "intent"), ("status", "ok")]) == 1)
        #expect(metrics.counterTotal(label: "lunette_calls_total", dimensions: [b, ("role", "activityUpdater"), ("status", "ok")]) == 1)
        #expect(try metrics.expectTimer("lunette_call_duration", [b, ("role", "timeline")]).values.count == 2)
        #expect(try metrics.expectRecorder("lunette_call_memory_peak_bytes", [b, ("role", "placeholder")]).values.first ?? 0 > 0)
        #expect(metrics.counterTotal(label: "lunette_reloads_total", dimensions: [b, ("budget", "exempt"), ("reason", "widgetAdded")]) == 1)
        #expect(metrics.counterTotal(label: "lunette_reloads_total", dimensions: [b, ("budget", "exempt"), ("reason", "intent")]) == 1)
        #expect(metrics.counterTotal(label: "lunette_activity_pushes_total", dimensions: [b, ("delivery", "now"), ("priority", "10")]) == 1)
        #expect(metrics.counterTotal(label: "lunette_activity_pushes_total", dimensions: [b, ("delivery", "throttled"), ("priority", "10")]) == 1)
        // Counted reloads record the share of the budget in use.
        try await service.requestReload(bundle: bundle, kind: "W")
        try clock.advance(to: t0 + 300)
        await service.runDue()
        #expect(try metrics.expectRecorder("lunette_budget_used_ratio", [b]).values == [1.0 / 40.0])
    }

    @Test func theAppsOwnModulesReachBundlesThatDeclareTheirCapability() async throws {
        var weather = HostModule(name: "app.weather", capability: "weather")
        weather.add("today") { args in [.table(LuaTable(fields: ["city": .string(LuaString(try args.text(1))), "high": 21]))] }
        let main = """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function()
                local ok, today = pcall(function() return require("app.weather").today("Paris") end)
                return { entries = { { date = clock.now(), high = ok and today.high or -1, err = not ok and today or nil } } }
              end }
            """
        for (capabilities, expected) in [(#"["weather"]"#, LuaValue.integer(21)), ("[]", LuaValue.integer(-1))] {
            let fixture = try BundleFixture(main: main, manifest: """
                { "id": "com.example.test", "appGroups": ["group.test"], "capabilities": \(capabilities) }
                """)
            let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc, modules: [weather])
            let bundle = try await service.load(fixture.path)
            let widget = try await service.addWidget(bundle: bundle, kind: "W")
            let entry = try #require(try await service.shown(widget))
            #expect(entry.content["high"] == expected, "capabilities \(capabilities): \(entry.content)")
            if expected == -1 {
                #expect(entry.content["err"].stringValue?.contains("app.weather.today: bundle com.example.test does not have the capability 'weather'") == true,
                        "\(entry.content)")
            }
        }
        let bad = try BundleFixture(main: main, manifest: #"{ "id": "com.example.test", "capabilities": ["Weather!"] }"#)
        #expect(bad.loadErrors().first?.contains("'capabilities' has an invalid name \"Weather!\"") == true, "\(bad.loadErrors())")
    }

    @Test func controlValuesAndActivityPhasesAreEventsToo() async throws {
        let fixture = try BundleFixture(main: Self.main + """

            intent { id = "SetOn", parameters = { { name = "value", type = "bool" } },
              perform = function(params) store.group("group.test"):set("on", params.value) end }
            control { kind = "On", type = "toggle", action = "SetOn", value = function() return store.group("group.test"):get("on") == true end }
            """)
        let clock = VirtualClock(t0)
        let service = WidgetService(store: fixture.store, clock: clock, calendar: .utc)
        let bundle = try await service.load(fixture.path)
        #expect(try await service.addControl(bundle: bundle, kind: "On") == false)
        try await service.tapControl(bundle: bundle, kind: "On")
        var events = await drain(service, count: 4)   // three values, and the action's perform
        let controls = events.compactMap { event -> String? in
            guard case .controlValue(_, let kind, _, let value, let read) = event else { return nil }
            return "\(kind) \(value?.description ?? "nil") \(read?.rawValue ?? "optimistic")"
        }
        #expect(controls == ["On false added", "On true optimistic", "On true action"], "\(events.map(describe))")
        let order = try await service.startActivity(bundle: bundle, type: "Order", attributes: LuaTable(fields: ["id": "A"]),
                                                    state: LuaTable(fields: ["s": "placed"]), staleDate: t0 + 600)
        try clock.advance(to: t0 + 600)
        await service.runDue()
        try await service.endActivity(bundle: bundle, id: order.id, dismissal: .immediate)
        events = await drain(service, count: 5)   // started, stale, the stale event's updater run, ended, dismissed
        let phases = events.compactMap { event -> String? in
            guard case .activityPhase(_, let activity, let at, let phase) = event else { return nil }
            return "\(activity) \(phase.rawValue) +\(Int(at - t0))"
        }
        #expect(phases == ["activity-1 stale +600", "activity-1 dismissed +600"], "\(events.map(describe))")
    }

    @Test func everyProviderRoleHasADirectCallThatAddsNoWidget() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", families = { "systemSmall", "systemMedium" },
              placeholder = function(ctx) return { role = "placeholder", family = ctx.family } end,
              snapshot = function(ctx) return { role = "snapshot", preview = ctx.isPreview } end,
              timeline = function(ctx) return { entries = { { date = clock.now(), role = "timeline", family = ctx.family } } } end }
            """)
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let placeholder = try await service.placeholder(bundle: bundle, kind: "W", family: .systemMedium)
        #expect(placeholder.value?.content["role"] == "placeholder" && placeholder.value?.content["family"] == "systemMedium")
        let snapshot = try await service.snapshot(bundle: bundle, kind: "W")
        #expect(snapshot.value?.content["role"] == "snapshot" && snapshot.value?.content["preview"] == true, "\(String(describing: snapshot.value))")
        let timeline = try await service.timeline(bundle: bundle, kind: "W")
        #expect(timeline.outcome.succeeded && timeline.value?.entries.first?.content["family"] == "systemSmall")
        #expect(try await service.widgets(bundle: bundle).isEmpty)
        await #expect(throws: ParameterError.self) { try await service.timeline(bundle: bundle, kind: "W", family: .accessoryInline) }
    }

    @Test func mistakesAreErrorsThatSayWhat() async throws {
        let fixture = try BundleFixture(main: Self.main)
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await service.load(fixture.path)
        await #expect(throws: ServiceError("bundle com.example.test is already loaded")) { try await service.load(fixture.path) }
        await #expect(throws: ServiceError("no bundle com.example.nope in this service (bundles: com.example.test)")) {
            try await service.addWidget(bundle: "com.example.nope", kind: "W")
        }
        await #expect(throws: ServiceError("no widget com.example.test#7")) { try await service.shown(WidgetID(bundle: bundle, number: 7)) }
        await #expect(throws: ParameterError.self) { try await service.requestReload(bundle: bundle, kind: "Nope") }
    }

    @Test func eachServiceRunsOnAThreadOfItsOwn() async throws {
        let a = WidgetService(store: BundleFixture.temporaryStore(), clock: VirtualClock(t0), threadName: "a")
        let b = WidgetService(store: BundleFixture.temporaryStore(), clock: VirtualClock(t0), threadName: "b")
        #expect(a.thread !== b.thread)
        let onA = await a.isOnItsThread(), onB = await b.isOnItsThread()
        #expect(onA && onB)
    }
}

extension WidgetService {
    /// True when the actor's code runs on its own LuaThread.
    func isOnItsThread() -> Bool { thread.isCurrent }
}
