import Foundation
import Testing

/// `lunette intent`, `query` and `control` on examples/tasks.
@Suite("lunette intent, query and control")
struct InteractivityCLITests {
    let bundle = WidgetCLITests.examples + "/tasks"
    let store = FileManager.default.temporaryDirectory.appendingPathComponent("cli-interactive-\(UUID().uuidString)").path

    func seed() throws {
        let set = try CLI.run(["store", "set", "--group", "group.com.example.tasks", "--store-dir", store, "tasks",
                               #"[{"title":"Buy milk","done":false},{"title":"Call Anna","done":false}]"#])
        #expect(set.status == 0, "\(set.stderr)")
    }

    func json(_ run: (status: Int32, stdout: String, stderr: String)) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)\(run.stderr)")
    }

    func tasks() throws -> [[String: Any]] {
        let get = try CLI.run(["store", "get", "--group", "group.com.example.tasks", "--store-dir", store, "tasks"])
        return try #require(try JSONSerialization.jsonObject(with: Data(get.stdout.utf8)) as? [[String: Any]], "\(get.stdout)\(get.stderr)")
    }

    @Test func anIntentFromAWidgetReloadsItWithTheNewEntry() throws {
        try seed()
        let run = try CLI.run(["intent", bundle, "CompleteTask", "--from", "TaskCount", "--config", "filter=all", "--json", "--store-dir", store])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try json(run)
        #expect(object["intent"] as? String == "CompleteTask" && object["status"] as? String == "ok")
        #expect((object["result"] as? [String: Any])?["dialog"] as? String == "Done: Buy milk")
        let reloads = try #require(object["reloads"] as? [[String: Any]])
        #expect(reloads.count == 1)
        #expect(reloads.first?["reason"] as? String == "intent" && reloads.first?["kind"] as? String == "TaskCount")
        #expect((reloads.first?["entry"] as? [String: Any])?["remaining"] as? Int == 1, "\(reloads)")
        #expect(try tasks().map { $0["done"] as? Bool } == [true, false])
    }

    @Test func aBadParameterExitsOneAndPerformDoesNotRun() throws {
        try seed()
        let run = try CLI.run(["intent", bundle, "CompleteTask", "--param", "task=9", "--json", "--store-dir", store])
        #expect(run.status == 1)
        let object = try json(run)
        #expect(object["status"] as? String == "invalid" && object["performed"] as? Bool == false)
        #expect((object["message"] as? String)?.contains("parameter 'task'") == true)
        let unknown = try CLI.run(["intent", bundle, "CompleteTask", "--param", "colour=red", "--store-dir", store])
        #expect(unknown.status == 1 && unknown.stderr.contains("has no parameter 'colour'"), "\(unknown.stderr)")
        let typed = try CLI.run(["intent", bundle, "SetFocus", "--param", "value=maybe", "--store-dir", store])
        #expect(typed.status == 1 && typed.stderr.contains("parameter 'value' expects true or false"), "\(typed.stderr)")
        #expect(try tasks().allSatisfy { $0["done"] as? Bool == false }, "perform ran")
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try CLI.run(["intent", bundle, "Nope"]).status == 2)
        #expect(try CLI.run(["intent", bundle, "CompleteTask", "--family", "systemSmall"]).status == 2)
        #expect(try CLI.run(["query", bundle, "Nope"]).status == 2)
        #expect(try CLI.run(["control", bundle, "Nope"]).status == 2)
        #expect(try CLI.run(["intent", bundle, "TaskListConfig"]).stderr.contains("configuration intent"))
    }

    @Test func queriesPrintTheirEntities() throws {
        try seed()
        let run = try CLI.run(["query", bundle, "Tasks", "--json", "--store-dir", store])
        #expect(run.status == 0, "\(run.stderr)")
        let entities = try #require(try json(run)["entities"] as? [[String: Any]])
        #expect(entities.map { $0["title"] as? String } == ["Buy milk", "Call Anna"])
        let text = try CLI.run(["query", bundle, "Tasks", "--ids", "2", "--store-dir", store])
        #expect(text.stdout.contains("Call Anna") && !text.stdout.contains("Buy milk"), "\(text.stdout)")
    }

    @Test func aToggleTapFlipsRunsItsActionAndReadsTheValueAgain() throws {
        let read = try CLI.run(["control", bundle, "FocusMode", "--json", "--store-dir", store])
        let value = try json(read)["value"] as? Bool
        #expect(read.status == 0 && value == false)
        let tap = try CLI.run(["control", bundle, "FocusMode", "--tap", "--json", "--store-dir", store])
        #expect(tap.status == 0, "\(tap.stderr)")
        let object = try json(tap)
        #expect(object["optimistic"] as? Bool == true && object["value"] as? Bool == true)
        #expect((object["performed"] as? [String: Any])?["intent"] as? String == "SetFocus")
        let again = try CLI.run(["control", bundle, "FocusMode", "--store-dir", store])
        #expect(again.stdout == "FocusMode (toggle): true\n", "\(again.stdout)")
    }
}
