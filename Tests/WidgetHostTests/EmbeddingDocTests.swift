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

    @Test func thePersistSnippetRuns() async throws {
        let storeRoot = BundleFixture.temporaryStore().root
        let bundlePath = tasks
        // snippet: persist
        let first = WidgetService(store: SharedStore(root: storeRoot))
        let tasks = try await first.load(bundlePath)
        let widget = try await first.addWidget(bundle: tasks, kind: "TaskCount")
        // … the process ends; another starts on the same store:
        let again = WidgetService(store: SharedStore(root: storeRoot))
        _ = try await again.load(bundlePath)
        let kept = try await again.widgets(bundle: tasks)      // [widget]: same id, timeline, budget
        let budget = try await again.budget(widget)             // (used, remaining), as before
        // end snippet
        #expect(kept == [widget])
        #expect(budget == (0, 40))
        #expect(try await again.widget(widget).timeline == first.widget(widget).timeline)
    }

    @Test func theModuleSnippetRuns() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "Today", placeholder = function() return {} end,
              timeline = function()
                local today = require("app.weather").today("Lyon")
                return { entries = { { date = clock.now(), city = today.city, high = today.high } } }
              end }
            """, manifest: #"{ "id": "com.example.weather", "capabilities": ["weather"] }"#)
        let store = fixture.store
        // snippet: module
        var weather = HostModule(name: "app.weather", capability: "weather")
        weather.add("today") { args in
            let city = try args.text(1)                          // a Lua error at the script's line if not a string
            return [.table(LuaTable(fields: ["city": .string(LuaString(city)), "high": 21]))]
        }
        let service = WidgetService(store: store, modules: [weather])
        // bundle.json: { "id": "com.example.weather", "capabilities": ["weather"] }
        // main.lua:    local today = require("app.weather").today("Lyon")
        // end snippet
        let bundle = try await service.load(fixture.path)
        let widget = try await service.addWidget(bundle: bundle, kind: "Today")
        let entry = try #require(try await service.shown(widget))
        #expect(entry.content["city"] == "Lyon" && entry.content["high"] == 21, "\(entry.content)")
    }

    @Test func theUpdateSnippetRuns() async throws {
        // A copy of examples/tasks, edited while it runs.
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-update-\(UUID().uuidString)").path
        try FileManager.default.copyItem(atPath: tasks, toPath: copy)
        let service = WidgetService(store: BundleFixture.temporaryStore(), clock: VirtualClock(BundleFixture.midnight), calendar: .utc)
        _ = try await service.load(copy)
        let before = try await service.version(of: "com.example.tasks")
        let main = try String(contentsOfFile: copy + "/main.lua", encoding: .utf8)
        try main.replacingOccurrences(of: "minutes = 30", with: "minutes = 20").write(toFile: copy + "/main.lua", atomically: true, encoding: .utf8)
        // snippet: update
        do {
            let version = try await service.update(bundle: "com.example.tasks")   // from where it was loaded
            print("now running \(version)")
        } catch let refused as BundleUpdateError {
            print(refused)   // each failure with file:line; the running version stays
        }
        // end snippet
        #expect(try await service.version(of: "com.example.tasks") != before)
    }

    @Test func theBatchSnippetRuns() throws {
        let store = BundleFixture.temporaryStore()
        let group = try store.group("group.com.example.tasks")
        try group.set("tasks", .array([.map(["title": "Buy milk", "done": false])]))
        let runtime = WidgetRuntime(bundle: try ScriptBundle.load(tasks, calendar: .utc), services: HostServices(store: store))
        let widgets = try (0..<20).map { _ in try runtime.configuration(kind: "TaskCount") }
        group.parkedAgeLimit = .seconds(10)   // the count below does not hang on the machine's speed
        let begun = group.readTransactionsBegun
        // snippet: batch
        let timelines = store.reusingReadTransactions {
            widgets.map { runtime.timeline($0) }   // one device's widget each, say
        }
        // end snippet
        #expect(timelines.allSatisfy { $0.value != nil })
        // The first call finds the group's WAL index (its own transaction is
        // not kept); the 19 others share one.
        #expect(group.readTransactionsBegun - begun == 2, "the 20 calls began \(group.readTransactionsBegun - begun) read transactions")
        #expect(!group.holdsReadTransaction)
    }

    @Test func thePageAndTheTestHoldTheSameSnippets() throws {
        let here = URL(fileURLWithPath: #filePath)
        let page = try String(contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/embedding.md"), encoding: .utf8)
        let test = try String(contentsOf: here, encoding: .utf8)
        let inPage = Self.snippets(in: page, end: "```")
        let inTest = Self.snippets(in: test, end: "// end snippet")
        #expect(inPage.keys.sorted() == ["actor", "batch", "module", "observe", "persist", "service", "update"], "\(inPage.keys.sorted())")
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
