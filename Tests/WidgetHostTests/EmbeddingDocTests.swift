import Foundation
import Logging
import SharedStore
import Testing
import WidgetHost

// snippet: actor
actor Widgets {
    let thread = LuaThread(name: "widgets")
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private let engine: TimelineEngine

    init(bundle: ScriptBundle, store: SharedStore) {
        engine = TimelineEngine(runtime: WidgetRuntime(bundle: bundle, services: HostServices(store: store)))
    }

    func show(_ kind: String) throws -> LuaTable? {
        let id = engine.addWidget(try engine.runtime.configuration(kind: kind))
        return engine.instance(id)?.shown(at: SystemClock().now())?.content
    }
}
// end snippet

/// docs/embedding.md: its snippets are here, compiled and run, and the page
/// holds the same code.
@Suite("docs/embedding.md")
struct EmbeddingDocTests {
    let tasks = WidgetCLITests.examples + "/tasks"

    @Test func theServiceSnippetRuns() async throws {
        let storeRoot = BundleFixture.temporaryStore().root
        let bundlePath = tasks
        try SharedStore(root: storeRoot).group("group.com.example.tasks")
            .set("tasks", .array([.map(["title": "Buy milk", "done": false]), .map(["title": "Call Anna", "done": false])]))
        // snippet: service
        let service = WidgetService(store: SharedStore(root: storeRoot), clock: SystemClock())
        let bundle = try await service.load(bundlePath)
        let widget = try await service.addWidget(bundle: bundle, kind: "TaskCount")
        let watcher = Task {
            var seen: [String] = []
            for await event in service.events {
                if case .shown(let id, _, let entry, _) = event, let entry {
                    seen.append("\(id): \(LuaValue.table(entry.content).jsonText)")
                }
                if seen.count == 2 { break }
            }
            return seen
        }
        let running = Task { await service.run() }     // sleeps until something is due, or until asked
        try await service.perform(bundle: bundle, intent: "CompleteTask", from: widget)
        let shown = await watcher.value                 // what the widget showed, as it changed
        running.cancel()
        // end snippet
        #expect(shown.count == 2)
        #expect(shown.first?.contains(#""remaining":2"#) == true && shown.last?.contains(#""remaining":1"#) == true, "\(shown)")
    }

    @Test func theActorSnippetRuns() async throws {
        let widgets = Widgets(bundle: try ScriptBundle.load(tasks, calendar: .utc), store: BundleFixture.temporaryStore())
        let content = try await widgets.show("TaskCount")
        #expect(content?["remaining"] == 0)
    }

    @Test func theObserveSnippetRuns() async throws {
        let storeRoot = BundleFixture.temporaryStore().root
        // snippet: observe
        let log = Logger(label: "widgets")
        let observed = WidgetService(store: SharedStore(root: storeRoot), scriptLogger: log)
        let encoded = try JSONEncoder().encode(WidgetID(bundle: "com.example.tasks", number: 1))
        // end snippet
        #expect(observed.scriptLogger.label == "widgets")
        #expect(String(decoding: encoded, as: UTF8.self).contains("com.example.tasks"))
    }

    @Test func thePageAndTheTestHoldTheSameSnippets() throws {
        let here = URL(fileURLWithPath: #filePath)
        let page = try String(contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/embedding.md"), encoding: .utf8)
        let test = try String(contentsOf: here, encoding: .utf8)
        let inPage = Self.snippets(in: page, end: "```")
        let inTest = Self.snippets(in: test, end: "// end snippet")
        #expect(inPage.keys.sorted() == ["actor", "observe", "service"], "\(inPage.keys.sorted())")
        for (name, code) in inPage {
            #expect(inTest[name] == code, "snippet '\(name)' differs between docs/embedding.md and this test")
        }
    }

    /// Code after each `// snippet: NAME` line up to `end`, without its common indentation.
    static func snippets(in text: String, end: String) -> [String: String] {
        var out: [String: String] = [:]
        let lines = text.components(separatedBy: "\n")
        var i = 0
        while i < lines.count {
            let line = lines[i].trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("// snippet: ") else { i += 1; continue }
            let name = String(line.dropFirst("// snippet: ".count))
            var body: [String] = []
            i += 1
            while i < lines.count, lines[i].trimmingCharacters(in: .whitespaces) != end { body.append(lines[i]); i += 1 }
            let indent = body.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                .map { $0.prefix { $0 == " " }.count }.min() ?? 0
            out[name] = body.map { $0.count >= indent ? String($0.dropFirst(indent)) : $0.trimmingCharacters(in: .whitespaces) }
                .joined(separator: "\n")
        }
        return out
    }
}
