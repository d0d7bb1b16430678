import Foundation
import SharedStore
import Testing
import WidgetHost

/// docs/host.md's widget-service snippet, compiled and run on the tasks example.
@Suite("docs/host.md snippets")
struct HostDocSnippetTests {
    @Test func theWidgetServiceSnippetRuns() async throws {
        let groupRoot = BundleFixture.temporaryStore().root
        try await snippet(groupRoot: groupRoot, tasksPath: WidgetCLITests.examples + "/tasks")
    }

    /// The snippet as the page has it, but for the bundle's path.
    func snippet(groupRoot: String, tasksPath: String) async throws {
        let service = WidgetService(store: SharedStore(root: groupRoot), clock: SystemClock())
        let tasks = try await service.load(tasksPath)                 // bundle id; problems with file:line
        let widget = try await service.addWidget(bundle: tasks, kind: "TaskCount", family: .systemSmall)

        let watcher = Task {
            for await event in service.events {
                switch event {
                case .shown(let id, let at, let entry, _): print(id, "shows", entry.map { LuaValue.table($0.content).jsonText } ?? "nothing", "from", at)
                case .reloaded(let id, _, let reason, let counted, _, let status): print(id, reason, counted, status)
                case .failed(let id, _, _, let diagnostic): print(id, diagnostic.text)
                default: break
                }
            }
        }
        let running = Task { await service.run() }      // sleeps until the next reload or entry, or until asked
        try await service.requestReload(bundle: tasks, kind: "TaskCount")   // wakes it
        try await service.perform(bundle: tasks, intent: "CompleteTask", from: widget)
        running.cancel()                                 // run() returns
        watcher.cancel()
        await running.value
        // What the snippet did: the widget was added, then reloaded for the tap (I2).
        let reasons = try await service.widget(widget).reloads.map(\.reason)
        #expect(reasons.first == .widgetAdded && reasons.contains(.intent), "\(reasons)")
        #expect(try await service.widget(widget).failures.isEmpty)
    }
}
