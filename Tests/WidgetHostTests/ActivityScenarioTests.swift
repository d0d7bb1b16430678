import Foundation
import Testing
@testable import WidgetHost

/// Live Activities in scenarios (issue 13, point 7): events, lanes, reports.
@Suite("Live Activity scenarios")
struct ActivityScenarioTests {
    let t0 = BundleFixture.midnight

    /// The delivery example's own scenario, on a fresh store.
    func delivery() throws -> SimulationReport {
        let bundle = try ScriptBundle.load(WidgetCLITests.examples + "/delivery", calendar: .utc)
        let store = BundleFixture.temporaryStore()
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: store, calendar: .utc))
        let scenario = try Scenario.load(WidgetCLITests.examples + "/delivery/scenario.json", runtime: runtime, start: t0)
        return Simulator(bundle: bundle, scenario: scenario, store: store, calendar: .utc).run()
    }

    @Test("A6: the delivery scenario's throttled pushes are delivered late, in order, and none is lost")
    func deliveryScenario() throws {
        let report = try delivery()
        #expect(report.notes.isEmpty, "\(report.notes.map(\.message))")
        let order = try #require(report.activities.first)
        #expect(order.type == "Delivery" && report.activities.count == 2)
        let pushes = order.pushes
        #expect(pushes.count == 15)
        #expect(pushes.allSatisfy { $0.deliveredAt != nil }, "a push was never delivered")
        let late = pushes.filter { ($0.delay ?? 0) > 0 }
        #expect(late.count == 3 && late.allSatisfy(\.counted), "\(late)")
        #expect(late.map { $0.delay! } == [3000, 3000, 1320])
        let counted = pushes.filter(\.counted).map { $0.deliveredAt! }
        #expect(counted == counted.sorted(), "counted pushes out of order")
        // Each delivered push ran the updater once.
        #expect(order.runs.filter { $0.kind == "push" }.count == 15)
        // The stale date was reached, and the order was delivered and dismissed.
        #expect(order.states.map(\.state) == [.active, .stale, .active, .stale, .ended, .dismissed], "\(order.states)")
        #expect(order.ended != nil && order.dismissed == order.ended! + 15 * 60)
        #expect(order.lastState["status"] == "delivered")
        #expect(order.updates.contains { $0.alert != nil && $0.source == "updater (push)" })
        // The scenario's own start, cancelled by an event: ended and dismissed at once.
        let cancelled = report.activities[1]
        #expect(cancelled.updates.first?.source == "app" && cancelled.lastState["status"] == "cancelled")
        #expect(cancelled.states.last?.state == .dismissed && cancelled.dismissed == cancelled.ended)
    }

    @Test func theReportShowsLanesInTextJSONAndHTML() throws {
        let report = try delivery()
        #expect(report.text.contains("activity activity-1 (Delivery): active "))
        #expect(report.text.contains("pushes: 15 received, 14 counted, 3 throttled and delivered late, 0 still waiting"), "\(report.text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let lanes = try #require(object["activities"] as? [[String: Any]])
        #expect(lanes.count == 2)
        let lane = lanes[0]
        for key in ["id", "type", "started", "states", "updates", "pushes", "failures", "ended", "dismissed"] {
            #expect(lane[key] != nil, "no \(key)")
        }
        let push = try #require((lane["pushes"] as? [[String: Any]])?.first)
        #expect(Set(push.keys).isSuperset(of: ["at", "deliveredAt", "priority", "counted"]))
        let update = try #require((lane["updates"] as? [[String: Any]])?.first)
        #expect(update["source"] as? String == "intent OrderFood" && update["bytes"] is Int)
        #expect((lane["states"] as? [[String: Any]])?.first?["state"] as? String == "active")
        let html = SimulationPage(report: report).html
        #expect(html.contains("aria-label=\"lane of activity activity-1\"") && html.contains("throttled"))
    }

    static let bundle = """
        activity { type = "Order", attributes = { n = "string" }, state = { s = "string", eta = "date?" },
          updater = function(a, e) if e.kind == "event" and e.name == "boom" then error("boom") end end }
        widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
        """

    func scenario(_ json: String) throws -> (Scenario, ScriptBundle, BundleFixture) {
        let fixture = try BundleFixture(main: Self.bundle)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        let (runtime, _) = try fixture.runtime()
        return (try Scenario.load(path, runtime: runtime, start: t0), try fixture.load(), fixture)
    }

    @Test func eventsReferToActivitiesByIndexOrIdAndRefusalsAreNoted() throws {
        let (scenario, bundle, fixture) = try scenario("""
            { "duration": "2h", "events": [
              { "at": "+1m", "type": "startActivity", "activityType": "Order", "attributes": { "n": "1" }, "state": { "s": "a", "eta": "+30m" } },
              { "at": "+2m", "type": "activitiesEnabled", "value": false },
              { "at": "+3m", "type": "startActivity", "activityType": "Order", "attributes": { "n": "2" }, "state": { "s": "a" } },
              { "at": "+4m", "type": "push", "activity": 1, "payload": { "x": 1 } },
              { "at": "+5m", "type": "activityEvent", "activity": "activity-1", "name": "boom" },
              { "at": "+6m", "type": "endActivity", "activity": 0, "state": { "s": "done" }, "dismissal": "+10m" }
            ] }
            """)
        #expect(scenario.events.count == 6)
        guard case .startActivity(_, _, let state, _, _) = scenario.events[0].kind else { Issue.record("not a start"); return }
        #expect(state["eta"] == .integer(Int64(t0 + 60 + 1800)), "a date field's \"+30m\" is not after the event")
        let report = Simulator(bundle: bundle, scenario: scenario, store: fixture.store, calendar: .utc).run()
        let notes = report.notes.map(\.message)
        #expect(notes.contains { $0.hasPrefix("startActivity Order #1 refused: denied") }, "\(notes)")
        #expect(notes.contains { $0.contains("push activity #1: that startActivity was refused") }, "\(notes)")
        let lane = try #require(report.activities.first)
        #expect(report.activities.count == 1)
        #expect(lane.failures.first?.diagnostic.message.contains("boom") == true && lane.failures.first?.diagnostic.traceback != nil)
        #expect(lane.lastState == LuaTable(fields: ["s": "done"]))
        #expect(lane.dismissed == t0 + 360 + 600)
    }

    @Test func mistakesNameTheFileAndLine() throws {
        let cases: [(String, String)] = [
            (#"{ "events": [ { "at": "+1h", "type": "startActivity", "activityType": "Pizza", "attributes": {}, "state": {} } ] }"#,
             "'events[1].activityType' is not an activity type of the bundle: \"Pizza\" (types: Order)"),
            (#"{ "events": [ { "at": "+1h", "type": "startActivity", "activityType": "Order", "attributes": { "n": 1 }, "state": { "s": "a" } } ] }"#,
             "'events[1].attributes' does not fit the declared schema: attributes.n must be a string, got number"),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "push", "activity": 0, "payload": {} } ] }"#,
             "'events[1].activity' is 0, but only 0 startActivity event(s) come before it"),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "push", "activity": "a", "payload": {}, "priority": 7 } ] }"#,
             "'events[1].priority' must be 5 or 10, got 7"),
            (#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "endActivity", "activity": "a", "dismissal": "later" } ] }"#,
             "'events[1].dismissal' must be \"default\", \"immediate\", an ISO date or a time after the event"),
            (#"{ "events": [ { "at": "+1h", "type": "activitiesEnabled", "value": true } ] }"#, "nothing to simulate"),
        ]
        for (json, message) in cases {
            do {
                _ = try scenario(json)
                Issue.record("accepted: \(json)")
            } catch let errors as LocatedErrors {
                #expect(errors.errors.count == 1, "one mistake, one problem: \(errors)")
                let error = try #require(errors.errors.first)
                #expect(error.line == (message == "nothing to simulate" ? nil : 1), "\(error)")
                #expect(error.message.contains(message), "\(error.text)")
            }
        }
    }
}
