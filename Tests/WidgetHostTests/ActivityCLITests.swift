import Foundation
import Testing

/// `lunette activity` on examples/delivery: separate processes share the
/// activities through the store; refusals exit 1 with their names.
@Suite("lunette activity")
struct ActivityCLITests {
    let bundle = WidgetCLITests.examples + "/delivery"
    let store = FileManager.default.temporaryDirectory.appendingPathComponent("cli-activity-\(UUID().uuidString)").path

    func activity(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try CLI.run(["activity", bundle] + arguments + ["--store-dir", store])
    }

    func json(_ run: (status: Int32, stdout: String, stderr: String)) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)\(run.stderr)")
    }

    let attributes = #"{"orderNumber":"A-1","restaurant":"Noodle Bar"}"#

    @Test func processesShareActivitiesFromStartToEnd() throws {
        let start = try activity(["start", "Delivery", "--attributes", attributes, "--state", #"{"status":"placed","eta":"+30m"}"#, "--stale", "+40m", "--json"])
        #expect(start.status == 0, "\(start.stderr)")
        let started = try json(start)
        #expect(started["id"] as? String == "activity-1" && started["type"] as? String == "Delivery" && started["state"] as? String == "active")
        #expect((started["attributes"] as? [String: Any])?["restaurant"] as? String == "Noodle Bar")
        let content = try #require(started["content"] as? [String: Any])
        #expect((content["state"] as? [String: Any])?["status"] as? String == "placed")
        #expect(content["staleDate"] is Double && started["relevance"] is Double)
        // Another process pushes: the updater runs there and the change is in the store.
        let push = try activity(["push", "activity-1", "--payload", #"{"status":"picked up","driver":"Sam","etaMinutes":20}"#, "--json"])
        #expect(push.status == 0, "\(push.stderr)")
        let pushed = try json(push)
        #expect(((pushed["content"] as? [String: Any])?["state"] as? [String: Any])?["driver"] as? String == "Sam")
        #expect((pushed["updater"] as? [[String: Any]])?.first?["status"] as? String == "ok")
        // A third lists it; a fourth ends it.
        let list = try activity(["list", "--json"])
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]], "\(list.stdout)")
        #expect(listed.map { $0["id"] as? String } == ["activity-1"])
        let end = try activity(["end", "activity-1", "--dismissal", "immediate", "--json"])
        let ended = try json(end)
        #expect(end.status == 0 && ended["state"] as? String == "dismissed", "\(end.stdout)\(end.stderr)")
        let after = try activity(["update", "activity-1", "--state", #"{"status":"again","eta":1}"#])
        #expect(after.status == 1 && after.stderr.contains("cannot update activity 'activity-1': it is dismissed (A8)"), "\(after.stderr)")
        let empty = try activity(["list"])
        #expect(empty.status == 0 && empty.stdout == "no activities on screen\n")
    }

    @Test func theBundlesIntentStartsAnActivityAnotherCommandSees() throws {
        let order = try CLI.run(["intent", bundle, "OrderFood", "--param", "minutes=20", "--store-dir", store])
        #expect(order.status == 0 && order.stdout.contains("Order A-001 placed"), "\(order.stdout)\(order.stderr)")
        let list = try activity(["list"])
        #expect(list.stdout.contains("activity-1  Delivery  active"), "\(list.stdout)")
        let widget = try CLI.run(["timeline", bundle, "--kind", "Order", "--store-dir", store])
        #expect(widget.status == 0 && widget.stdout.contains(#""status":"placed""#), "\(widget.stdout)\(widget.stderr)")
    }

    @Test func refusalsExitOneWithTheirNames() throws {
        let big = String(repeating: "x", count: 5000)
        let tooLarge = try activity(["start", "Delivery", "--attributes", attributes, "--state", #"{"status":"\#(big)","eta":1}"#, "--json"])
        #expect(tooLarge.status == 1)
        #expect(try json(tooLarge)["error"] as? String == "attributesTooLarge")
        let invalid = try activity(["start", "Delivery", "--attributes", #"{"orderNumber":"A-1"}"#, "--state", #"{"status":"placed","eta":1}"#])
        #expect(invalid.status == 1 && invalid.stderr.hasPrefix("error: invalidState: attributes.restaurant is missing"), "\(invalid.stderr)")
        let unknown = try activity(["start", "Pizza", "--attributes", "{}", "--state", "{}"])
        #expect(unknown.status == 1 && unknown.stderr.hasPrefix("error: unknownType"), "\(unknown.stderr)")
        for n in 0..<5 {
            let ok = try activity(["start", "Delivery", "--attributes", attributes, "--state", #"{"status":"placed","eta":\#(n)}"#])
            #expect(ok.status == 0, "\(ok.stderr)")
        }
        let sixth = try activity(["start", "Delivery", "--attributes", attributes, "--state", #"{"status":"placed","eta":1}"#])
        #expect(sixth.status == 1 && sixth.stderr.hasPrefix("error: targetMaximumExceeded"), "\(sixth.stderr)")
        let badDate = try activity(["start", "Delivery", "--attributes", attributes, "--state", #"{"status":"placed","eta":"soon"}"#])
        #expect(badDate.status == 1 && badDate.stderr.contains("state.eta: expected an ISO 8601 date or a time from now"), "\(badDate.stderr)")
    }

    @Test func overBudgetPushesWaitAndAreDeliveredByALaterProcess() throws {
        let policy = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID().uuidString).json").path
        try #"{ "activityPushBudget": 1 }"#.write(toFile: policy, atomically: true, encoding: .utf8)
        _ = try activity(["start", "Delivery", "--attributes", attributes, "--state", #"{"status":"placed","eta":"+30m"}"#])
        let first = try activity(["push", "activity-1", "--payload", #"{"status":"preparing"}"#, "--policy", policy])
        #expect(first.stdout.contains("delivered"), "\(first.stdout)")
        let second = try activity(["push", "activity-1", "--payload", #"{"status":"ready"}"#, "--policy", policy])
        #expect(second.status == 0 && second.stdout.contains("throttled: over its budget of 1 per hour, it waits until"), "\(second.stdout)")
        #expect(second.stdout.contains(#""status":"preparing""#), "a throttled push changed the content")
        // It waits for the first delivery to leave the hour's window.
        func date(after marker: String, in text: String) -> Date? {
            guard let range = text.range(of: marker) else { return nil }
            return ISO8601DateFormatter().date(from: String(text[range.upperBound...].prefix(20)))
        }
        let delivered = try #require(date(after: "delivered at ", in: first.stdout))
        let until = try #require(date(after: "it waits until ", in: second.stdout))
        #expect(until.timeIntervalSince(delivered) == 3600)
    }

    @Test func usageMistakesExitTwo() throws {
        let missing = try activity(["push"])
        #expect(missing.status == 2 && missing.stderr.contains("activity push takes <id>, got none"), "\(missing.stderr)")
        let stray = try activity(["list", "--payload", "1"])
        #expect(stray.status == 2 && stray.stderr.contains("--payload does not go with activity list"), "\(stray.stderr)")
        let priority = try activity(["push", "activity-1", "--payload", "1", "--priority", "7"])
        #expect(priority.status == 2 && priority.stderr.contains("--priority must be 5 or 10"), "\(priority.stderr)")
    }
}
