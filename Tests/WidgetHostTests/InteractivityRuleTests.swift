import Foundation
import Testing
@testable import WidgetHost

/// The rules of intents, queries and controls (I1–I4, C1–C3, L3, L4). Each
/// test's name starts with its rule's id.
@Suite("Intents, queries and controls")
struct InteractivityRuleTests {
    let t0 = BundleFixture.midnight

    /// A task counter: a widget showing the stored count, an intent that
    /// completes tasks (writing first, so a perform that ran leaves a mark),
    /// a query of projects, and a focus toggle with its action.
    static let bundle = """
        local G = "group.test"
        query { id = "Projects",
          suggested = function() return { { id = "p1", title = "Home" }, { id = "p2", title = "Work" } } end,
          entities = function(ids)
            local all = { p1 = { id = "p1", title = "Home", color = "green" }, p2 = { id = "p2", title = "Work" } }
            local out = {}
            for _, id in ipairs(ids) do if all[id] then out[#out + 1] = all[id] end end
            return out
          end }
        intent { id = "CompleteTask", title = "Complete Task",
          parameters = {
            { name = "count", type = "int", default = 1 },
            { name = "note", type = "string", optional = true },
            { name = "due", type = "date", optional = true },
            { name = "size", type = "enum", values = { "small", "big" }, optional = true },
            { name = "project", type = "entity", query = "Projects", optional = true },
            { name = "urgent", type = "bool", optional = true },
          },
          perform = function(params, ctx)
            local g = store.group(G)
            g:set("ran", (g:get("ran") or 0) + 1)
            g:update("remaining", function(n) return math.max(0, (n or 5) - params.count) end)
            g:set("lastParams", params)
            if ctx.source then g:set("lastSource", ctx.source) else g:set("lastSource", "none") end
            if params.note == "fail" then error("cannot complete") end
            return { dialog = "Done", remaining = g:get("remaining") }
          end }
        intent { id = "Slow", perform = function() while true do end end }
        intent { id = "Reloader", parameters = { { name = "kind", type = "string", optional = true } },
          perform = function(params)
            if params.kind then reload.controls(params.kind) else reload.allControls() end
          end }
        intent { id = "SetFocus", parameters = { { name = "value", type = "bool" } },
          perform = function(params)
            if store.group(G):get("focusBroken") then error("focus is broken") end
            store.group(G):set("focus", params.value)
          end }
        control { kind = "Focus", type = "toggle", action = "SetFocus",
          preview = function() return store.group(G):get("focus") == true end,
          value = function(ctx)
            local g = store.group(G)
            g:set("valueReads", (g:get("valueReads") or 0) + 1)
            if g:get("slowValue") then while true do end end
            return g:get("focus") == true
          end }
        intent { id = "Remember", perform = function(params) store.group(G):set("remembered", params.value) end }
        control { kind = "Plain", type = "toggle", action = "Remember",
          value = function() return store.group(G):get("remembered") == true end }
        control { kind = "Refresh", type = "button", action = "CompleteTask",
          value = function() return store.group(G):get("remaining") or 5 end }
        widget { kind = "Tasks", families = { "systemSmall", "systemMedium" },
          placeholder = function() return { remaining = 0 } end,
          timeline = function(ctx)
            return { entries = { { date = clock.now(), remaining = store.group(G):get("remaining") or 5 } }, policy = "never" }
          end }
        """

    func host(policy: HostPolicy = .standard) throws -> (TimelineEngine, VirtualClock, BundleFixture) {
        let fixture = try BundleFixture(main: Self.bundle)
        let (runtime, clock) = try fixture.runtime(policy: policy)
        return (TimelineEngine(runtime: runtime), clock, fixture)
    }

    func stored(_ fixture: BundleFixture, _ key: String) throws -> StoreValue? {
        try fixture.store.group("group.test").get(key)
    }

    // MARK: Intents

    @Test("I1: parameters are checked against their declared types before perform, and a bad one never reaches it")
    func parametersAreCheckedBeforePerform() throws {
        let (engine, _, fixture) = try host()
        let bad: [(String, [String: LuaValue], String)] = [
            ("wrong type", ["count": "three"], "parameter 'count' expects a whole number, got string \"three\""),
            ("a float for an int", ["count": 1.5], "parameter 'count' expects a whole number"),
            ("unknown name", ["colour": "red"], "intent 'CompleteTask' has no parameter 'colour'"),
            ("not an enum value", ["size": "huge"], "parameter 'size': \"huge\" is not one of small, big"),
            ("bad date", ["due": "tomorrow"], "parameter 'due'"),
            ("unresolved entity", ["project": "p9"], "parameter 'project': query 'Projects' has no entity with id \"p9\""),
            ("bool as text", ["urgent": "yes"], "parameter 'urgent' expects a boolean"),
        ]
        for (what, parameters, message) in bad {
            let performance = try engine.perform("CompleteTask", parameters: parameters)
            #expect(performance.outcome.status == .invalid, "\(what)")
            #expect(performance.outcome.message?.contains(message) == true, "\(what): \(performance.outcome.message ?? "")")
            #expect(!performance.performed, "\(what)")
        }
        #expect(try stored(fixture, "ran") == nil, "perform ran for a bad parameter")

        let required = try engine.perform("SetFocus")
        #expect(required.outcome.message == "intent 'SetFocus': parameter 'value' is required (a boolean) and has no default")
    }

    @Test("I1: defaults fill in, dates are seconds or ISO 8601, entities arrive resolved")
    func goodParametersArriveTyped() throws {
        let (engine, _, fixture) = try host()
        let performance = try engine.perform("CompleteTask", parameters: ["due": "2026-11-21T09:30:00Z", "project": "p1", "size": "big"])
        #expect(performance.succeeded, "\(performance.outcome.diagnostic?.text ?? "")")
        #expect(performance.result == .table(LuaTable(fields: ["dialog": "Done", "remaining": 4])))
        let params = try #require(try stored(fixture, "lastParams"))
        #expect(params == ["count": 1, "due": 1_795_253_400, "size": "big",
                           "project": ["id": "p1", "title": "Home", "color": "green"]])
        #expect(try stored(fixture, "lastSource") == "none")
    }

    @Test("I1: a failed perform writes nothing (all or nothing)")
    func aFailedPerformWritesNothing() throws {
        let (engine, _, fixture) = try host()
        let performance = try engine.perform("CompleteTask", parameters: ["note": "fail"])
        #expect(performance.outcome.status == .error)
        #expect(performance.outcome.message?.hasSuffix("cannot complete") == true)
        #expect(try stored(fixture, "ran") == nil)
        #expect(throws: IntentError.self) { try engine.perform("Nope") }
    }

    @Test("I2, B2: a perform from a widget reloads that widget at once, exempt; a failed one reloads nothing")
    func aWidgetTapReloadsItsWidget() throws {
        var policy = HostPolicy()
        policy.budget = 0   // any counted reload would be deferred for ever
        let (engine, clock, fixture) = try host(policy: policy)
        let small = engine.addWidget(try engine.runtime.configuration(kind: "Tasks", family: .systemSmall))
        let medium = engine.addWidget(try engine.runtime.configuration(kind: "Tasks", family: .systemMedium))
        try clock.advance(to: t0 + 60)
        let performance = try engine.tap(small, intent: "CompleteTask", parameters: ["count": 2])
        #expect(performance.succeeded)
        let reload = try #require(engine.instance(small)!.reloads.last)
        #expect(reload.reason == .intent && !reload.counted && reload.at == t0 + 60)
        #expect(engine.instance(small)!.shown(at: t0 + 60)?.content["remaining"] == 3)
        #expect(engine.instance(medium)!.reloads.count == 1, "the other widget reloaded")
        #expect(try stored(fixture, "lastSource") == ["kind": "Tasks", "family": "systemSmall"])
        #expect(engine.performances.last?.source == "widget #1 (Tasks)")

        try clock.advance(to: t0 + 120)
        let failed = try engine.tap(small, intent: "CompleteTask", parameters: ["note": "fail"])
        #expect(failed.outcome.status == .error)
        #expect(engine.instance(small)!.reloads.count == 2, "a failed perform reloaded the widget")
        #expect(engine.instance(small)!.failures.last?.role == .intent)
        #expect(engine.performances.map(\.status) == [.ok, .error])
    }

    @Test("I3: a configuration intent gives each instance its own values; a non-optional parameter needs a default")
    func configurationsArePerInstance() throws {
        let fixture = try BundleFixture(main: """
            intent { id = "Cfg", configuration = true, parameters = {
              { name = "filter", type = "enum", values = { "today", "all" }, default = "today" } } }
            intent { id = "Note", perform = function(params, ctx) store.group("group.test"):set("seen." .. ctx.source.config.filter, true) end }
            widget { kind = "W", configuration = "Cfg", placeholder = function() return {} end,
              timeline = function(ctx, config) return { entries = { { date = clock.now(), filter = config.filter } } } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let engine = TimelineEngine(runtime: runtime)
        let today = engine.addWidget(try runtime.configuration(kind: "W"))
        let all = engine.addWidget(try runtime.configuration(kind: "W", values: ["filter": "all"]))
        #expect(engine.instance(today)!.timeline?.entries.first?.content["filter"] == "today")
        #expect(engine.instance(all)!.timeline?.entries.first?.content["filter"] == "all")
        try engine.tap(all, intent: "Note")
        #expect(try fixture.store.group("group.test").keys() == ["seen.all"])

        let noDefault = try BundleFixture(main: """
            intent { id = "Cfg", configuration = true, parameters = { { name = "n", type = "int" } } }
            widget { kind = "W", configuration = "Cfg", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
            """)
        #expect(noDefault.loadErrors().first?.contains("parameter 'n' is not optional and has no default") == true, "\(noDefault.loadErrors())")
    }

    @Test("I4: suggested() gives an entity parameter's options, entities(ids) resolves stored ids, results are checked")
    func queriesAnswerAndAreChecked() throws {
        let (engine, _, _) = try host()
        let suggested = try engine.intents.suggested("Projects")
        #expect(suggested.entities?.map(\.id) == ["p1", "p2"])
        let resolved = try engine.intents.entities("Projects", ids: ["p2", "p9"])
        #expect(resolved.entities?.map(\.title) == ["Work"])

        let fixture = try BundleFixture(main: """
            query { id = "Bad", suggested = function() return { { id = "x" } } end }
            query { id = "NotList", suggested = function() return "x" end }
            widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
            """)
        let intents = IntentRuntime(bundle: try fixture.load(), services: HostServices(clock: VirtualClock(t0), calendar: .utc))
        let bad = try intents.suggested("Bad")
        #expect(bad.outcome.status == .invalid)
        #expect(bad.outcome.message == "query 'Bad': entities[1].title must be a string, got nil")
        #expect(try intents.suggested("NotList").outcome.message?.contains("must return an array") == true)
        #expect(throws: IntentError.self) { try intents.suggested("Missing") }
    }

    @Test("L3: a perform ends at the intent deadline")
    func performHasTheIntentDeadline() throws {
        var policy = HostPolicy()
        policy.intentDeadline = 0.05
        policy.timelineDeadline = .init(soft: 5, hard: 10)
        let (engine, _, _) = try host(policy: policy)
        let started = ContinuousClock.now
        let performance = try engine.perform("Slow")
        #expect(performance.outcome.status == .timeout)
        #expect(ContinuousClock.now - started < .seconds(2), "the perform did not get the intent's own deadline")
        guard case .deadline(let limit, _)? = performance.outcome.diagnostic?.limit else { Issue.record("no deadline limit"); return }
        #expect(limit == .milliseconds(50))
    }

    // MARK: Controls

    @Test("C1: a control's preview is instant and cannot open the store")
    func previewCannotOpenTheStore() throws {
        let (engine, _, _) = try host()
        let center = ControlCenter(engine: engine)
        let preview = try center.preview("Focus")
        #expect(preview.outcome.status == .error)
        #expect(preview.outcome.deniedGroups == ["group.test"])
        #expect(preview.outcome.message?.contains("a control's preview must be instant (rule C1)") == true)
        #expect(try center.preview("Refresh").value == nil, "a control without preview previews as nil")
    }

    @Test("C2: a control's value is read when it is added, after its action, and on reload.controls / allControls")
    func valueIsReadWhenItShould() throws {
        let (engine, clock, fixture) = try host()
        let center = ControlCenter(engine: engine)
        try center.add("Focus")
        #expect(center.control("Focus")?.value == false)
        try fixture.store.group("group.test").set("focus", true)
        #expect(center.control("Focus")?.value == false, "read without a reason")
        try clock.advance(to: t0 + 10)
        try engine.perform("Reloader", parameters: ["kind": "Focus"])
        #expect(center.control("Focus")?.value == true, "reload.controls(kind) did not read the value again")
        try fixture.store.group("group.test").set("focus", false)
        try clock.advance(to: t0 + 20)
        try engine.perform("Reloader")
        #expect(center.control("Focus")?.value == false, "reload.allControls() did not read the value again")
        try clock.advance(to: t0 + 30)
        try center.tap("Refresh")
        let focus = try #require(center.control("Focus"))
        #expect(focus.reloads.map(\.reason) == [.added, .request, .request])
        #expect(center.control("Refresh")?.reloads.map(\.reason) == [.added, .action])
        #expect(center.control("Refresh")?.value == 4, "the value after the action is the one read after perform")
    }

    @Test("C3, C2: a toggle flips at once, its action gets the new value as params.value, then it shows the value read again")
    func aToggleFlipsAndIsReadAgain() throws {
        let (engine, clock, fixture) = try host()
        let center = ControlCenter(engine: engine)
        try center.add("Focus")
        try clock.advance(to: t0 + 5)
        let tap = try center.tap("Focus")
        #expect(tap.before == false && tap.optimistic == true && tap.after == true)
        #expect(try stored(fixture, "focus") == true, "the action did not get params.value = true")
        #expect(tap.performance?.parameters == LuaTable(fields: ["value": true]))
        #expect(engine.performances.last?.source == "control Focus")
        // An action that does not declare `value` gets it all the same.
        #expect(try center.tap("Plain").after == true)
        #expect(try stored(fixture, "remembered") == true)

        // A failing action: the toggle shows its flip, then the value read again.
        try fixture.store.group("group.test").set("focusBroken", true)
        try clock.advance(to: t0 + 10)
        let failed = try center.tap("Focus")
        #expect(failed.optimistic == false && failed.performance?.outcome.status == .error)
        #expect(failed.after == true, "the toggle did not return to the value read after the failed action")
        let shown = try #require(center.control("Focus")).values.map(\.value)
        #expect(shown == [false, true, true, false, true])
        #expect(center.control("Focus")?.failures.last?.role == .intent)
    }

    @Test("L4: a control's value read ends at the control deadline and keeps the value shown")
    func valueHasTheControlDeadline() throws {
        var policy = HostPolicy()
        policy.controlDeadline = .init(soft: 0.01, hard: 0.05)
        policy.timelineDeadline = .init(soft: 5, hard: 10)
        let (engine, _, fixture) = try host(policy: policy)
        let center = ControlCenter(engine: engine)
        try center.add("Focus")
        try fixture.store.group("group.test").set("slowValue", true)
        let started = ContinuousClock.now
        center.reload("Focus")
        #expect(ContinuousClock.now - started < .seconds(2), "the value read did not get the control's own deadline")
        let record = try #require(center.control("Focus"))
        #expect(record.reloads.last?.status == .timeout)
        #expect(record.value == false, "a failed read changed the value shown")
        #expect(record.failures.last?.role == .controlValue)
    }

    @Test("C2: a toggle's value must be a boolean")
    func toggleValuesAreBooleans() throws {
        let fixture = try BundleFixture(main: """
            control { kind = "T", type = "toggle", value = function() return "on" end }
            widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let center = ControlCenter(engine: TimelineEngine(runtime: runtime))
        let record = try center.add("T")
        #expect(record.reloads.last?.status == .invalid)
        #expect(record.failures.last?.message == "control 'T': a toggle's value must be true or false, got string")
    }
}
