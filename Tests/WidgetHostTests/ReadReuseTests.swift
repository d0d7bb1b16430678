import Foundation
import SharedStore
import Testing
@testable import WidgetHost

/// The engine runs each instant's reloads inside the store's
/// `reusingReadTransactions`, so provider calls that read the store hand
/// their read transaction on while nothing is committed; an intent's
/// commit in between is seen by the next reload, and none is left open.
@Suite("An instant's reloads share the store's read transactions")
struct ReadReuseTests {
    static let bundle = """
        local G = "group.test"
        intent { id = "Bump", perform = function() return store.group(G):update("n", function(n) return (n or 0) + 1 end) end }
        widget { kind = "W", placeholder = function() return { n = 0 } end,
          timeline = function()
            return { entries = { { date = clock.now(), n = store.group(G):get("n") or 0 } }, policy = { after = clock.now() + 900 } }
          end }
        """

    @Test func reloadsAtOneInstantShareTransactionsAndSeeEveryCommit() throws {
        let fixture = try BundleFixture(main: Self.bundle)
        let store = fixture.store
        try store.group("group.test").set("n", .integer(7))
        let (runtime, _) = try fixture.runtime()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).json").path
        let widgets = Array(repeating: #"{ "kind": "W" }"#, count: 20).joined(separator: ", ")
        try """
            { "widgets": [ \(widgets) ], "duration": "2h",
              "events": [ { "at": "+1h", "type": "tap", "kind": "W", "intent": "Bump" } ] }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let scenario = try Scenario.load(path, runtime: runtime, start: BundleFixture.midnight)
        let group = try store.group("group.test")
        group.parkedAgeLimit = .seconds(10)   // the count below does not hang on the machine's speed
        let begunBefore = group.readTransactionsBegun
        let report = Simulator(bundle: try fixture.load(), scenario: scenario, store: store, calendar: .utc).run()

        let reloads = report.instances.flatMap(\.reloads)
        #expect(reloads.count >= 20 * 8 && reloads.allSatisfy { $0.status == .ok })
        // Each reload shows what was committed before it: 7, then 8 from the tap on.
        let tap = BundleFixture.midnight + 3600
        for instance in report.instances {
            for reload in instance.reloads {
                let shown = instance.shown(at: reload.at)?.content["n"]
                #expect(shown == (reload.at < tap ? 7 : 8), "reload at +\(Int(reload.at - BundleFixture.midnight)) s shows \(String(describing: shown))")
            }
        }
        // Far fewer read transactions than reads: about one an instant (the
        // widgets' first reloads, made as the simulator adds them, included),
        // and one after the tap's commit.
        let begun = group.readTransactionsBegun - begunBefore
        #expect(begun > 0 && begun * 10 < reloads.count, "\(begun) read transactions for \(reloads.count) reloads")
        // And none is left open once the run is over.
        #expect(!group.holdsReadTransaction)
    }
}
