import Foundation
import LuaSandbox
import SharedStore
import WidgetHost

/// The host as a service (issue 14): two `WidgetService`s, each on its own
/// Lua thread, reloading a CPU-bound widget — one after the other, then at
/// the same time (on 2 cores, up to twice as fast: the overlap) — and the
/// cost of one awaited service call (keeping the widget's state in the
/// store, and not) beside the same provider call made through the blocking
/// `TimelineEngine` on the caller's thread.
enum ServiceBenchmark {
    static let main = """
        widget { kind = "Busy", placeholder = function() return {} end,
          timeline = function()
            local x = 0 for i = 1, 300000 do x = x + i end
            return { entries = { { date = clock.now(), x = x } }, policy = "never" }
          end }
        widget { kind = "Light", placeholder = function() return {} end,
          timeline = function() return { entries = { { date = clock.now(), n = 1 } }, policy = "never" } end }
        """

    struct Figures {
        var sequentialSeconds: Double
        var concurrentSeconds: Double
        var serviceCallMicroseconds: Double
        var serviceCallWithoutStateMicroseconds: Double
        var blockingCallMicroseconds: Double
    }

    static func bundle(_ id: String, in dir: String) throws -> ScriptBundle {
        let path = dir + "/" + id
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try #"{ "id": "\#(id)", "appGroups": ["group.bench"] }"#.write(toFile: path + "/bundle.json", atomically: true, encoding: .utf8)
        try main.write(toFile: path + "/main.lua", atomically: true, encoding: .utf8)
        return try ScriptBundle.load(path, calendar: .utc)
    }

    static func measure(reloads: Int, calls: Int, rounds: Int) throws -> Figures {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-service-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = SharedStore(root: dir + "/store")
        var policy = HostPolicy.standard
        policy.developerMode = true
        let clock = VirtualClock(1_795_219_200)
        let a = WidgetService(store: store, clock: clock, calendar: .utc, policy: policy, threadName: "bench.a")
        let b = WidgetService(store: store, clock: clock, calendar: .utc, policy: policy, threadName: "bench.b")
        // The same calls without keeping state in the store (persistence .none).
        let c = WidgetService(store: store, clock: clock, calendar: .utc, policy: policy, persistence: .none, threadName: "bench.c")
        let bundleA = try bundle("com.example.a", in: dir), bundleB = try bundle("com.example.b", in: dir)
        // The blocking API on this thread, for the per-call comparison.
        let runtime = WidgetRuntime(bundle: bundleA, services: HostServices(store: store, clock: clock, calendar: .utc, policy: policy))
        let engine = TimelineEngine(runtime: runtime)
        let light = engine.addWidget(try runtime.configuration(kind: "Light"))
        _ = engine.instance(light)

        let box = FiguresBox()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                try await a.add(bundleA)
                try await b.add(bundleB)
                try await c.add(try bundle("com.example.c", in: dir))
                _ = try await c.addWidget(bundle: "com.example.c", kind: "Light")
                _ = try await a.addWidget(bundle: "com.example.a", kind: "Busy")
                _ = try await b.addWidget(bundle: "com.example.b", kind: "Busy")
                _ = try await a.addWidget(bundle: "com.example.a", kind: "Light")
                var sequential: [Double] = [], concurrent: [Double] = [], service: [Double] = [], stateless: [Double] = []
                for _ in 0..<rounds {
                    sequential.append(try await seconds {
                        try await reload(a, "com.example.a", "Busy", times: reloads)
                        try await reload(b, "com.example.b", "Busy", times: reloads)
                    })
                    concurrent.append(try await seconds {
                        async let first: Void = reload(a, "com.example.a", "Busy", times: reloads)
                        async let second: Void = reload(b, "com.example.b", "Busy", times: reloads)
                        _ = try await (first, second)
                    })
                    service.append(try await seconds { try await reload(a, "com.example.a", "Light", times: calls) } / Double(calls) * 1e6)
                    stateless.append(try await seconds { try await reload(c, "com.example.c", "Light", times: calls) } / Double(calls) * 1e6)
                }
                box.figures = Figures(sequentialSeconds: median(sequential), concurrentSeconds: median(concurrent),
                                      serviceCallMicroseconds: median(service), serviceCallWithoutStateMicroseconds: median(stateless),
                                      blockingCallMicroseconds: 0)
            } catch {
                box.error = "\(error)"
            }
            done.signal()
        }
        done.wait()
        if let error = box.error { throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: error]) }
        var blocking: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<calls { try engine.reloadNow(kind: "Light", reason: .appForeground) }
            blocking.append(elapsedSeconds(since: start) / Double(calls) * 1e6)
        }
        guard engine.instances.allSatisfy({ $0.failures.isEmpty }) else {
            throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "a blocking call failed"])
        }
        var figures = box.figures!
        figures.blockingCallMicroseconds = median(blocking)
        return figures
    }

    /// A day of `widgets` widgets that reload every 15 minutes (budget
    /// permitting), played through a service with a virtual clock: in
    /// seconds, keeping the state in the store and not.
    static func day(widgets: Int) throws -> (kept: Double, notKept: Double) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-day-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/com.example.day"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try #"{ "id": "com.example.day", "appGroups": ["group.bench"] }"#.write(toFile: path + "/bundle.json", atomically: true, encoding: .utf8)
        try """
            widget { kind = "Quarter", placeholder = function() return {} end,
              timeline = function()
                local now = clock.now()
                return { entries = { { date = now, n = 1 }, { date = now + 450, n = 2 } }, policy = { after = now + 900 } }
              end }
            """.write(toFile: path + "/main.lua", atomically: true, encoding: .utf8)
        let bundle = try ScriptBundle.load(path, calendar: .utc)
        var out: [Double] = []
        for (n, persistence) in [WidgetService.Persistence.standard, .none].enumerated() {
            let box = SecondsBox()
            let done = DispatchSemaphore(value: 0)
            Task {
                do {
                    let clock = VirtualClock(1_795_219_200)
                    let service = WidgetService(store: SharedStore(root: dir + "/store-\(n)"), clock: clock, calendar: .utc,
                                                persistence: persistence, threadName: "bench.day")
                    let id = try await service.add(bundle)
                    for _ in 0..<widgets { _ = try await service.addWidget(bundle: id, kind: "Quarter") }
                    let end = clock.now() + 86_400
                    box.seconds = try await seconds {
                        while let due = await service.nextDue(), due <= end {
                            try clock.advance(to: max(due, clock.now()))
                            await service.runDue()
                        }
                    }
                    let failures = try await service.widgets(bundle: id).asyncCompactMap { try await service.widget($0).failures.first }
                    if let failure = failures.first { box.error = failure.diagnostic.text }
                } catch {
                    box.error = "\(error)"
                }
                done.signal()
            }
            done.wait()
            if let error = box.error { throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: error]) }
            out.append(box.seconds)
        }
        return (out[0], out[1])
    }

    /// `times` exempt reloads of `kind`, each a provider call; throws when one failed.
    static func reload(_ service: WidgetService, _ bundle: String, _ kind: String, times: Int) async throws {
        for _ in 0..<times { try await service.reloadNow(bundle: bundle, kind: kind, reason: .appForeground) }
        let widgets = await (1...3).asyncCompactMap { try? await service.widget(WidgetID(bundle: bundle, number: $0)) }
        if let failure = widgets.flatMap(\.failures).first {
            throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: failure.diagnostic.text])
        }
    }

    static func seconds(_ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        return elapsedSeconds(since: start)
    }

    static func elapsedSeconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

final class SecondsBox: @unchecked Sendable {
    var seconds = 0.0
    var error: String?
}

final class FiguresBox: @unchecked Sendable {
    var figures: ServiceBenchmark.Figures?
    var error: String?
}

extension Sequence where Element: Sendable {
    func asyncCompactMap<T>(_ transform: (Element) async throws -> T?) async rethrows -> [T] {
        var out: [T] = []
        for element in self { if let value = try await transform(element) { out.append(value) } }
        return out
    }
}
