import Foundation
import Testing
@testable import WidgetHost

/// Scenarios with taps, performs and controls, and what the reports show.
@Suite("Interactive scenarios")
struct InteractiveScenarioTests {
    let t0 = BundleFixture.midnight

    func scenario(_ json: String, _ fixture: BundleFixture) throws -> (Scenario, WidgetRuntime) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        let (runtime, _) = try fixture.runtime()
        return (try Scenario.load(path, runtime: runtime, start: t0), runtime)
    }

    static let bundle = """
        local G = "group.test"
        intent { id = "Bump", parameters = { { name = "by", type = "int", default = 1 } },
          perform = function(params) return store.group(G):update("n", function(n) return (n or 0) + params.by end) end }
        intent { id = "Ask", perform = function() reload.timelines("W") end }
        intent { id = "SetOn", parameters = { { name = "value", type = "bool" } },
          perform = function(params) store.group(G):set("on", params.value) end }
        control { kind = "On", type = "toggle", action = "SetOn", value = function() return store.group(G):get("on") == true end }
        widget { kind = "W", placeholder = function() return { n = 0 } end,
          timeline = function() return { entries = { { date = clock.now(), n = store.group(G):get("n") or 0 } }, policy = "never" } end }
        """

    @Test("I2: a tap in a simulated day: perform, the exempt reload, the new entry in the same minute")
    func aTapShowsPerformThenTheExemptReloadThenTheNewEntry() throws {
        let fixture = try BundleFixture(main: Self.bundle)
        let (scenario, _) = try scenario("""
            { "widgets": [ { "kind": "W" } ], "duration": "4h",
              "events": [ { "at": "+2h", "type": "tap", "kind": "W", "intent": "Bump", "params": { "by": 5 } } ] }
            """, fixture)
        let report = Simulator(bundle: try fixture.load(), scenario: scenario, store: fixture.store, calendar: .utc).run()
        let tap = t0 + 7200
        #expect(report.performances.map(\.at) == [tap])
        #expect(report.performances.first?.status == .ok && report.performances.first?.source == "widget #1 (W)")
        let reload = try #require(report.instances[0].reloads.last)
        #expect(reload.at == tap && reload.reason == .intent && !reload.counted)
        let shown = report.shown(report.instances[0])
        func entry(at t: Double) -> LuaValue? { shown.first { $0.from <= t && t < $0.to }?.entry?.content["n"] }
        #expect(entry(at: tap - 1) == 0)
        #expect(entry(at: tap) == 5, "the new entry is not on screen in the minute of the tap")
        #expect(report.text.contains("Intents performed"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let intents = try #require(json["intents"] as? [[String: Any]])
        #expect(intents.first?["intent"] as? String == "Bump" && intents.first?["status"] as? String == "ok")
        #expect(SimulationPage(report: report).html.contains("Intents performed"))
    }

    @Test func aPerformFromTheAppReloadsNothingUnlessTheScriptAsksAndABadParameterIsRecorded() throws {
        let fixture = try BundleFixture(main: Self.bundle)
        let (scenario, _) = try scenario("""
            { "widgets": [ { "kind": "W" } ], "duration": "4h",
              "events": [ { "at": "+1h", "type": "perform", "intent": "Bump" },
                          { "at": "+2h", "type": "perform", "intent": "Ask" },
                          { "at": "+3h", "type": "perform", "intent": "Bump", "params": { "by": "lots" } } ] }
            """, fixture)
        let report = Simulator(bundle: try fixture.load(), scenario: scenario, store: fixture.store, calendar: .utc).run()
        let reasons = report.instances[0].reloads.map(\.reason)
        #expect(reasons == [.widgetAdded, .request], "\(reasons)")
        #expect(report.instances[0].reloads.last?.at == t0 + 7200)
        #expect(report.performances.map(\.status) == [.ok, .ok, .invalid])
        #expect(report.performances.last?.performed == false)
    }

    @Test func controlsOverADay() throws {
        let fixture = try BundleFixture(main: Self.bundle)
        let (scenario, _) = try scenario("""
            { "widgets": [ { "kind": "W" } ], "duration": "4h", "controls": ["On"],
              "events": [ { "at": "+1h", "type": "controlTap", "kind": "On" },
                          { "at": "+2h", "type": "storeSet", "group": "group.test", "key": "on", "value": false },
                          { "at": "+2h", "type": "reloadControls", "kind": "On" } ] }
            """, fixture)
        let report = Simulator(bundle: try fixture.load(), scenario: scenario, store: fixture.store, calendar: .utc).run()
        let control = try #require(report.controls.first)
        #expect(control.values.map(\.value) == [false, true, true, false])
        #expect(control.values.map(\.read) == [.added, nil, .action, .request])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let controls = try #require(json["controls"] as? [[String: Any]])
        #expect(controls.first?["kind"] as? String == "On" && (controls.first?["reloads"] as? [Any])?.count == 3)
    }

    @Test func mistakesNameTheFileAndLine() throws {
        let fixture = try BundleFixture(main: Self.bundle)
        let cases: [(String, String)] = [
            (#"{ "widgets": [ { "kind": "W" } ], "controls": ["Off"] }"#, "'controls' names \"Off\", which is not a control of the bundle"),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "tap", "kind": "W", "intent": "Nope" } ] }"#, "'events[1].intent' is not an intent of the bundle: \"Nope\""),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "tap", "intent": "Bump" } ] }"#, "tap needs the widget kind"),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "controlTap", "kind": "W" } ] }"#, "is not a control of the bundle: \"W\""),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "perform", "intent": "Bump", "params": [1] } ] }"#, "'events[1].params' must be an object"),
        ]
        for (json, message) in cases {
            do {
                _ = try scenario(json, fixture)
                Issue.record("accepted: \(json)")
            } catch let errors as LocatedErrors {
                #expect(errors.errors.count == 1, "one mistake, one problem: \(errors)")
                let error = try #require(errors.errors.first)
                #expect(error.line == 1, "\(error)")
                #expect(error.message.contains(message), "\(error.text)")
            }
        }
    }
}
