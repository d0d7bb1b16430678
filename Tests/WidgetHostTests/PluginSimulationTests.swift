import Foundation
import SharedStore
import Testing
@testable import WidgetHost

/// Several bundles on one clock (`PluginSimulation`): each plugin's next
/// moment is asked when it has stepped, not at every step of the others.
@Suite("Plugins simulated together")
struct PluginSimulationTests {
    let t0 = BundleFixture.midnight

    func simulator(_ fixture: BundleFixture, store: SharedStore, hours: Double) throws -> Simulator {
        let bundle = try fixture.load()
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: .utc))
        let scenario = try Scenario.everyKind(of: runtime, start: t0, duration: hours * 3600)
        return Simulator(bundle: bundle, scenario: scenario, store: store, calendar: .utc)
    }

    @Test func aPluginsFailingActivityStoreIsNotedAtItsOwnStepsNotAtEveryOtherPluginsStep() throws {
        // A: Live Activities, whose rows in the store this host cannot read; a widget that never reloads.
        let a = try BundleFixture(main: """
            activity { type = "Delivery", attributes = { order = "string" }, state = { status = "string" }, updater = function() end }
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } }, policy = "never" } end }
            """)
        let store = a.store
        try store.group("group.test").updateActivities(of: "com.example.test") { rows in
            rows.activities.append(StoredActivity(id: "activity-9", record: ["written by": "a newer host"]))
        }
        // B: reloads every 10 minutes, in its own group of the same store.
        let b = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } }, policy = { after = clock.now() + 600 } } end }
            """, manifest: #"{ "id": "com.example.other", "appGroups": ["group.other"] }"#)
        let report = PluginSimulation([try simulator(a, store: store, hours: 6), try simulator(b, store: store, hours: 6)]).run()
        let (first, other) = (report.plugins[0], report.plugins[1])
        let reloads = other.report.reloadCounts(try #require(other.report.instances.first))
        #expect(reloads.total >= 30 && reloads.failed == 0, "\(reloads)")
        // A never steps: its activities were read when the run began (and for
        // the report's lanes), not at each of B's reloads.
        let unavailable = first.report.notes.filter { $0.message.contains("Live Activities is unavailable") }
        #expect((1...2).contains(unavailable.count), "\(unavailable.count) notes: \(unavailable.map(\.message))")
    }

    @Test func runsThatShareActivityRowsSeeEachOthersChanges() throws {
        // The same bundle twice in one store (the CLI refuses it; the API does
        // not): both runs read the same Live Activity rows.
        let fixture = try BundleFixture(main: """
            activity { type = "Delivery", attributes = { order = "string" }, state = { status = "string" }, tick = 600, updater = function() end }
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } }, policy = "never" } end }
            """)
        let store = fixture.store, bundle = try fixture.load()
        // The first runs 3 hours and starts nothing; the second starts an activity and stops after an hour.
        let watcher = Simulator(bundle: bundle, scenario: Scenario(start: t0, duration: 3 * 3600, widgets: []), store: store, calendar: .utc)
        let start = ScenarioEvent(at: t0 + 60, kind: .startActivity(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]),
                                                                    state: LuaTable(fields: ["status": "placed"]), staleDate: nil, relevance: 0))
        let starter = Simulator(bundle: bundle, scenario: Scenario(start: t0, duration: 3600, widgets: [], events: [start]), store: store, calendar: .utc)
        let report = PluginSimulation([watcher, starter]).run()
        // After the starter's hour, the watcher runs the activity's ticks: it
        // was asked again when the starter started it.
        let ticks = report.plugins[0].report.activities.first?.runs.filter { $0.kind == "tick" && $0.at > t0 + 3600 } ?? []
        #expect(ticks.count >= 10, "\(ticks.map(\.at))")
    }
}
