// A server that embeds the Lunette host (docs/embedding.md): it computes
// widget timelines for many devices, for two bundles at once. Each bundle
// gets its own WidgetService — an actor on a Lua thread of its own — so
// the two run in parallel; both keep their state in the store, so the
// server, started again, continues with the same widgets and budgets.
//
//   swift run lunette-example-server --store /tmp/server-store --devices 50 --hours 24
//   swift run lunette-example-server --store /tmp/server-store --hours 24    # the next day
import ArgumentParser
import Foundation
import Logging
import SharedStore
import WidgetHost

@main
struct ExampleServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lunette-example-server",
        abstract: "A server that embeds the Lunette host: two bundles' widgets for many devices, in parallel.",
        discussion: """
            Plays --hours of widget life (virtual time) for --devices widgets of each of two \
            bundles (tasks and weather), both services at once, and prints what happened. \
            The store keeps the widgets, their timelines and budgets, and where the server's \
            clock stopped: the next run continues from there. With --measure it first plays the \
            same work on a scratch store with the two services one after the other, then together, \
            and prints both times.
            """)

    @Option(help: "The store's root folder.")
    var store: String

    @Option(help: "Widgets per bundle (added on the first run only).")
    var devices = 20

    @Option(help: "Hours of widget life each run plays.")
    var hours = 24.0

    @Option(help: "Folder that holds the example bundles.")
    var examples = "examples"

    @Flag(inversion: .prefixedNo, help: "Measure the two services one after the other, then together, first.")
    var measure = true

    /// 2026-11-24T00:00:00Z: where the server's clock starts on its first run.
    static let firstStart = 1_795_478_400.0

    mutating func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = label == "example.scripts" ? .warning : .info
            return handler
        }
        let log = Logger(label: "example.server")
        let bundles = ["\(examples)/tasks", "\(examples)/weather"].map { try? ScriptBundle.load($0, calendar: .utc) }
        guard let tasks = bundles[0], let weather = bundles[1] else {
            throw ValidationError("cannot load the example bundles from \(examples)/tasks and \(examples)/weather (run from the repository's root, or give --examples)")
        }
        if measure { try await measureOverlap(tasks, weather, log: log) }

        let root = SharedStore(root: store)
        let own = try root.group("lunette.example.server")
        let start = try own.get("clock")?.doubleValue ?? Self.firstStart
        let end = start + hours * 3600
        log.info("playing \(ISODate.format(start)) → \(ISODate.format(end))")
        let farms = try await [tasks, weather].asyncMap { try await Farm(bundle: $0, store: root, start: start, devices: devices, persistence: .standard) }
        for farm in farms { print(try await farm.status("before")) }
        let began = ContinuousClock.now
        async let a: Void = farms[0].play(until: end)
        async let b: Void = farms[1].play(until: end)
        _ = try await (a, b)
        let wall = ContinuousClock.now - began
        for farm in farms { print(try await farm.status("after")) }
        print("played \(hours) h for \(farms.count) bundles in \(wall.seconds.formatted3) s")
        try own.set("clock", .double(end))
        for farm in farms { await farm.finish() }
    }

    /// The same work on a scratch store, without keeping state: the two
    /// services one after the other, then together.
    func measureOverlap(_ tasks: ScriptBundle, _ weather: ScriptBundle, log: Logger) async throws {
        func fresh() async throws -> [Farm] {
            let scratch = SharedStore(root: FileManager.default.temporaryDirectory.appendingPathComponent("lunette-server-\(UUID().uuidString)").path)
            return try await [tasks, weather].asyncMap { try await Farm(bundle: $0, store: scratch, start: Self.firstStart, devices: devices, persistence: .none) }
        }
        let end = Self.firstStart + hours * 3600
        let farms = try await fresh()
        let t0 = ContinuousClock.now
        try await farms[0].play(until: end)
        try await farms[1].play(until: end)
        let sequential = ContinuousClock.now - t0
        let together = try await fresh()
        let t1 = ContinuousClock.now
        async let a: Void = together[0].play(until: end)
        async let b: Void = together[1].play(until: end)
        _ = try await (a, b)
        let concurrent = ContinuousClock.now - t1
        print("overlap: one after the other \(sequential.seconds.formatted3) s, together \(concurrent.seconds.formatted3) s, speed-up \(String(format: "%.2f", sequential.seconds / concurrent.seconds))x")
    }
}

/// One bundle's widgets for all devices: a service on its own thread and
/// its own virtual clock, and a count of what its event stream said.
struct Farm: Sendable {
    let service: WidgetService
    let clock: VirtualClock
    let bundle: String
    let counts: EventCounts
    let reader: Task<Void, Never>

    init(bundle: ScriptBundle, store: SharedStore, start: Double, devices: Int, persistence: WidgetService.Persistence) async throws {
        clock = VirtualClock(start)
        service = WidgetService(store: store, clock: clock, calendar: .utc, persistence: persistence,
                                logger: Logger(label: "example.server"), scriptLogger: Logger(label: "example.scripts"),
                                threadName: "lunette.\(bundle.manifest.id)")
        self.bundle = try await service.add(bundle)
        let counts = EventCounts()
        self.counts = counts
        let events = service.events
        reader = Task { for await event in events { counts.add(event) } }
        if try await service.widgets(bundle: self.bundle).isEmpty {
            let kind = bundle.declarations.widgets[0].kind
            for _ in 0..<devices { _ = try await service.addWidget(bundle: self.bundle, kind: kind) }
        }
    }

    /// Runs everything due until `end`, as the system would over that time.
    func play(until end: Double) async throws {
        while let due = await service.nextDue(), due <= end {
            try clock.advance(to: max(due, clock.now()))
            await service.runDue()
        }
        try clock.advance(to: end)
        await service.runDue()
    }

    /// One line: widgets, their budget use and what the events counted.
    func status(_ when: String) async throws -> String {
        let widgets = try await service.widgets(bundle: bundle)
        var used = 0, waiting = 0
        for widget in widgets {
            used += try await service.budget(widget).used
            if try await service.nextReload(widget)?.isDeferred == true { waiting += 1 }
        }
        return "\(bundle) \(when): \(widgets.count) widgets (#\(widgets.first?.number ?? 0)–#\(widgets.last?.number ?? 0)), "
            + "\(used) counted reloads in their budgets' windows, \(waiting) waiting for budget; events so far: \(counts.summary)"
    }

    func finish() async {
        reader.cancel()
    }
}

/// Counts events by kind (the stream is read on another task).
final class EventCounts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    func add(_ event: HostEvent) {
        let name: String
        switch event {
        case .reloaded(_, _, _, let counted, _, let status): name = status == .ok ? (counted ? "counted reloads" : "exempt reloads") : "failed reloads"
        case .shown: name = "entries shown"
        case .failed: name = "failures"
        case .budgetExhausted: name = "budget waits"
        case .budgetFreed: name = "budget freed"
        default: name = "other"
        }
        lock.withLock { counts[name, default: 0] += 1 }
    }

    var summary: String {
        lock.withLock { counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") }
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension Double {
    var formatted3: String { String(format: "%.3f", self) }
}
