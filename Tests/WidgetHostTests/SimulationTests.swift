import Foundation
import Testing
@testable import WidgetHost

@Suite("Scenarios and simulations")
struct SimulationTests {
    let t0 = BundleFixture.midnight

    func scenarioFile(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func theAppsWritesAndRequestsReachTheWidget() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "T", placeholder = function() return { n = -1 } end,
              timeline = function()
                return { entries = { { date = clock.now(), n = store.group("group.test"):get("n") or 0 } }, policy = "never" }
              end }
            """)
        let (runtime, _) = try fixture.runtime()
        let scenario = try Scenario.load(try scenarioFile("""
            { "start": "2026-11-21T00:00:00Z", "duration": "2h",
              "widgets": [ { "kind": "T" } ],
              "events": [
                { "at": "+30m", "type": "storeSet", "group": "group.test", "key": "n", "value": 5 },
                { "at": "+30m", "type": "reloadTimelines", "kind": "T" },
                { "at": "2026-11-21T01:00:00Z", "type": "appForeground" } ] }
            """), runtime: runtime, start: 0)
        #expect(scenario.start == t0)
        #expect(scenario.duration == 7200)
        let report = Simulator(bundle: runtime.bundle, scenario: scenario, store: fixture.store).run()
        let instance = try #require(report.instances.first)
        #expect(instance.reloads.map { $0.at - t0 } == [0, 1800, 3600])
        #expect(instance.reloads.map(\.reason) == [.widgetAdded, .request, .appForeground])
        let shown = report.shown(instance)
        #expect(shown.map { $0.from - t0 } == [0, 1800, 3600])
        #expect(shown.map { $0.entry?.content["n"] } == [0, 5, 5])
        #expect(shown.last?.to == t0 + 7200)
        #expect(report.placeholderSeconds(instance) == 0)
    }

    @Test func theJSONReportHasTheDocumentedFields() throws {
        let fixture = try BundleFixture(main: policyWidget("{ after = clock.add(now, { minutes = 15 }) }"))
        let (runtime, _) = try fixture.runtime()
        var policy = HostPolicy()
        policy.budget = 4
        let scenario = Scenario(start: t0, duration: 7200, widgets: [try runtime.configuration(kind: "W")], policy: policy)
        let report = Simulator(bundle: runtime.bundle, scenario: scenario, store: fixture.store).run()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let instances = try #require(json["instances"] as? [[String: Any]])
        let instance = try #require(instances.first)
        for key in ["kind", "family", "config", "reloads", "shown", "failures", "budget"] {
            #expect(instance[key] != nil, "missing \(key)")
        }
        let reloads = try #require(instance["reloads"] as? [[String: Any]])
        #expect(reloads.count == 5)
        for key in ["at", "reason", "counted", "deferredFrom"] { #expect(reloads[0][key] != nil, "missing reloads[].\(key)") }
        let deferred = try #require(instance["next"] as? [String: Any])
        #expect(deferred["deferred"] as? Bool == true, "the fifth counted reload waits for the budget")
        let budget = try #require(instance["budget"] as? [String: Any])
        #expect(budget["limit"] as? Int == 4 && budget["used"] as? Int == 4)
        let shown = try #require(instance["shown"] as? [[String: Any]])
        for key in ["from", "to", "entry"] { #expect(shown[0][key] != nil, "missing shown[].\(key)") }
    }

    @Test("B1: a shared budget is reported for every widget that shares it") func aSharedBudgetIsReportedForEveryWidgetThatSharesIt() throws {
        let fixture = try BundleFixture(main: policyWidget("{ after = clock.add(now, { minutes = 10 }) }"))
        let (runtime, _) = try fixture.runtime()
        var policy = HostPolicy()
        policy.budget = 5
        policy.budgetScope = .kind
        let widget = try runtime.configuration(kind: "W")
        let scenario = Scenario(start: t0, duration: 7200, widgets: [widget, widget], policy: policy)
        let report = Simulator(bundle: runtime.bundle, scenario: scenario, store: fixture.store).run()
        let counted = report.instances.map { $0.reloads.filter(\.counted).count }
        #expect(counted.reduce(0, +) == 5)
        #expect(report.instances.map { report.budgetUsed($0) } == [5, 5])
    }

    @Test func scenarioMistakesNameTheFileAndLine() throws {
        let fixture = try BundleFixture(main: policyWidget("\"never\""))
        let (runtime, _) = try fixture.runtime()
        let cases: [(String, String)] = [
            (#"{ "widgets": [ { "kind": "Nope" } ] }"#, "no widget kind 'Nope'"),
            ("{\n  \"widgets\": [ { \"kind\": \"W\" } ],\n  \"events\": [ { \"at\": \"+1h\", \"type\": \"explode\" } ]\n}", ":3:38: 'events[1].type' is not an event type: \"explode\""),
            ("{\n  \"widgets\": [ { \"kind\": \"W\" } ],\n  \"duraton\": \"2h\"\n}", ".json:3:3: unknown key 'duraton'"),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "storeSet", "group": "group.other", "key": "k" } ] }"#, "is not an app group of the bundle"),
            (#"{ "widgets": [ { "kind": "W" } ], "timezone": "Mars/Olympus" }"#, "not a known IANA time zone"),
            (#"{ "widgets": [ { "kind": "W" } ], "policy": { "budgetScope": "planet" } }"#, "'policy.budgetScope' must be one of instance, kind, app"),
        ]
        for (json, message) in cases {
            let path = try scenarioFile(json)
            do {
                _ = try Scenario.load(path, runtime: runtime, start: t0)
                Issue.record("accepted: \(json)")
            } catch {
                #expect(error.description.hasPrefix("invalid: " + path), "\(error)")
                #expect(error.description.contains(message), "\(error)")
            }
        }
    }

    @Test("B1, B3: the 15-minute wallpaper spends its 40 reloads by the afternoon, and its next reload waits") func theWallpaperVariantRunsOutOfBudgetInTheAfternoon() throws {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples/wallpaper").path
        let bundle = try ScriptBundle.load(examples, calendar: .utc)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: .utc))
        let scenario = try Scenario.load(examples + "/scenario-15min.json", runtime: runtime, start: 0)
        let storeRoot = FileManager.default.temporaryDirectory.appendingPathComponent("wallpaper-\(UUID().uuidString)").path
        let report = Simulator(bundle: bundle, scenario: scenario, store: SharedStore(root: storeRoot)).run()
        let paris = try #require(HostCalendar(timeZoneNamed: "Europe/Paris"))
        for instance in report.instances {
            let last = try #require(instance.reloads.last)
            #expect(instance.reloads.filter(\.counted).count == 40)
            let hour = paris.components(last.at).hour
            #expect((12...18).contains(hour), "the budget ran out at \(hour):00, not in the afternoon")
            #expect(report.pending[instance.id]?.isDeferred == true)
        }
    }
}
