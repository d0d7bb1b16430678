// An app that embeds the Lunette host (docs/embedding.md): one
// WidgetService owns the bundle, the store and the clock; the app awaits
// its calls, reads its event stream, lets run() schedule the reloads, and
// logs through swift-log. Run it twice on the same store: the second run
// continues with the same widget, its timeline and its refresh budget.
//
//   swift run lunette-example-app --store /tmp/app-store
//   swift run lunette-example-app --store /tmp/app-store     # continues
import ArgumentParser
import Foundation
import Logging
import SharedStore
import WidgetHost

@main
struct ExampleApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lunette-example-app",
        abstract: "An app that embeds the Lunette host: a task-count widget, its taps, its reloads and its budget.",
        discussion: """
            Each run loads the bundle into a WidgetService on the store, adds a TaskCount widget \
            the first time (and continues with it after), taps its Complete button, asks for a \
            reload every --every seconds while run() schedules them, and stops after --seconds. \
            Events go to standard output, one per line; logs (the app's and the scripts') go to \
            standard error through swift-log. The widget system's rules apply, with the floor \
            and budget given here so that a short run shows them.
            """)

    @Option(help: "The store's root folder (the app group's database lives under it).")
    var store: String

    @Option(help: "The script bundle.")
    var bundle = "examples/tasks"

    @Option(help: "How long the app runs, in seconds.")
    var seconds = 4.0

    @Option(help: "Seconds between the app's reload requests.")
    var every = 0.25

    @Option(help: "The minimum interval between two reloads of a widget, in seconds: at least 1 (the system's is 300).")
    var floor = 1.0

    @Option(help: "Counted reloads per widget per day (the system's is about 40).")
    var budget = 2

    mutating func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let log = Logger(label: "example.app")
        var policy = HostPolicy()
        policy.minimumReloadInterval = floor
        policy.budget = budget
        let service = WidgetService(store: SharedStore(root: store), clock: SystemClock(), calendar: .utc, policy: policy,
                                    logger: log, scriptLogger: Logger(label: "example.scripts"))
        let tasks = try await service.load(bundle)

        // The app's data, which the widget reads from the app group.
        let group = try service.store.group("group.com.example.tasks")
        if try group.get("tasks") == nil {
            let titles = ["Write the report", "Call Ana", "Water the plants"]
            try group.set("tasks", .array(titles.map { ["title": .string($0), "done": false] }))
        }

        let widget: WidgetID
        if let kept = try await service.widgets(bundle: tasks).first {
            widget = kept
            let used = try await service.budget(widget)
            print("continuing with \(widget): budget \(used.used) used, \(used.remaining) left")
        } else {
            widget = try await service.addWidget(bundle: tasks, kind: "TaskCount")
            print("added \(widget)")
        }

        // Events as they happen, one line each.
        let watcher = Task {
            for await event in service.events { print("event: \(Self.describe(event))") }
        }
        let running = Task { await service.run() }

        let tap = try await service.perform(bundle: tasks, intent: "CompleteTask", from: widget)
        log.info("tapped Complete", metadata: ["status": "\(tap.outcome.status.rawValue)", "dialog": "\(tap.result?.description ?? "none")"])

        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            try await service.requestReload(bundle: tasks, kind: "TaskCount")
            try await Task.sleep(for: .seconds(every))
        }
        running.cancel()
        await running.value

        let used = try await service.budget(widget)
        let next = try await service.nextReload(widget)
        print("widget \(widget): budget \(used.used) used, \(used.remaining) left")
        if let next {
            print("next reload: \(next.reason.rawValue) in \(Int((next.at - service.clock.now()).rounded())) s\(next.isDeferred ? " (waiting for the budget)" : "")")
        }
        if let shown = try await service.shown(widget) {
            print("shows: \(LuaValue.table(shown.content).jsonText)")
        }
        watcher.cancel()
    }

    static func describe(_ event: HostEvent) -> String {
        switch event {
        case .reloaded(let id, _, let reason, let counted, let deferredFrom, let status):
            return "\(id) reloaded (\(reason.rawValue), \(counted ? "counted" : "exempt")\(deferredFrom != nil ? ", deferred" : "")): \(status.rawValue)"
        case .shown(let id, _, let entry, let placeholder):
            return "\(id) shows \(placeholder ? "its placeholder" : entry.map { LuaValue.table($0.content).jsonText } ?? "nothing")"
        case .failed(let id, _, let role, let diagnostic): return "\(id) \(role.rawValue) failed: \(diagnostic.message)"
        case .budgetExhausted(let id, let at, let until): return "\(id) wants a reload from \(ISODate.format(at)) but is out of budget until \(ISODate.format(until))"
        case .budgetFreed(let id, _): return "\(id) has budget again"
        case .performed(_, let p): return "performed \(p.intent): \(p.status.rawValue)"
        default:
            let data = (try? JSONEncoder().encode(event)) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }
}
