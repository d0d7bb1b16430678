import Foundation
import LuaSandbox
import SharedStore
import WidgetHost

/// Process isolation for bundles' calls (issue 17, point 6): a provider
/// call (`WidgetRuntime.timeline`) in a bundle's worker against the same
/// call in this process, a bundle worker's cold start, a crash until the
/// next call is served, and 100 plugins over a simulated day. The workers
/// run the release `lunette` built beside this executable.
enum BundleWorkerBenchmark {
    static let start = 1_795_219_200.0   // 2026-11-21T00:00:00Z

    /// A small realistic provider: reads the store, returns four entries,
    /// reloads after `minutes`. Kind "Spin" never returns (for the crash).
    static func mainLua(minutes: Int, group: String) -> String {
        """
        widget {
          kind = "Bench", families = { "systemSmall" },
          placeholder = function(ctx) return { n = 0 } end,
          timeline = function(ctx)
            local now = clock.now()
            local n = store.group("\(group)"):get("count") or 0
            local entries = {}
            for i = 0, 3 do
              entries[#entries + 1] = { date = clock.add(now, { minutes = \(minutes / 4) * i }), n = n + i, label = "entry " .. i }
            end
            return { entries = entries, policy = { after = clock.add(now, { minutes = \(minutes) }) } }
          end,
        }
        widget {
          kind = "Spin", families = { "systemSmall" },
          placeholder = function(ctx) return { n = 0 } end,
          timeline = function(ctx) local i = 0; while true do i = i + 1 end end,
        }
        """
    }

    /// Writes bundle `index` (id com.example.bench<index>, group group.bench<index>) under `root`.
    static func makeBundle(root: String, index: Int, minutes: Int) throws -> String {
        let dir = root + "/bundle\(index)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try #"{ "id": "com.example.bench\#(index)", "appGroups": ["group.bench\#(index)"] }"#
            .write(toFile: dir + "/bundle.json", atomically: true, encoding: .utf8)
        try mainLua(minutes: minutes, group: "group.bench\(index)").write(toFile: dir + "/main.lua", atomically: true, encoding: .utf8)
        return dir
    }

    /// A scratch directory, removed by `body`'s end.
    static func withScratch<T>(_ name: String, _ body: (String) throws -> T) throws -> T {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-\(name)-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try body(dir)
    }

    /// A store under `root` where bundle `index`'s group holds "count".
    static func store(_ root: String, groups: Range<Int>) throws -> SharedStore {
        let store = SharedStore(root: root)
        for i in groups { try store.group("group.bench\(i)").set("count", .integer(7)) }
        return store
    }

    /// Bundle 0 (reloads after 15 min) made in `root` and loaded, and its store.
    static func firstBundle(_ root: String) throws -> (ScriptBundle, SharedStore) {
        (try ScriptBundle.load(try makeBundle(root: root, index: 0, minutes: 15), calendar: .utc), try store(root + "/store", groups: 0..<1))
    }

    static func microseconds(_ d: Duration) -> Double { WorkerBenchmark.microseconds(d) }

    static func services(_ store: SharedStore, _ clock: HostClock, _ workers: BundleWorkers?) -> HostServices {
        var services = HostServices(store: store, clock: clock, calendar: .utc)
        services.workers = workers
        return services
    }

    static func expectOK(_ outcome: CallOutcome, _ what: String) throws {
        guard outcome.status == .ok else { throw WorkerBenchmark.failure("\(what): \(outcome.status) \(outcome.message ?? "")") }
    }

    // MARK: 1. A provider call

    struct CallFigures {
        var worker: [Double] = [], inProcess: [Double] = []
        /// In a worker that does not follow its caller's processor (`BundleWorkers.followsCaller` false).
        var unpinned: [Double] = []
        /// What one call's messages carry, for the wire figure.
        var arguments: [LuaValue] = [], values: [LuaValue] = []
        /// The call's own time as its pool measured it (`CallOutcome.elapsed`): in the worker, and in process.
        var workerElapsed: [Double] = [], inProcessElapsed: [Double] = []
    }

    /// `samples` alternating timeline calls of one bundle, in its worker and in this process (µs).
    static func providerCall(samples: Int) throws -> CallFigures {
        try withScratch("call") { root in
            let (bundle, store) = try firstBundle(root)
            let workers = BundleWorkers(executable: WorkerBenchmark.lunette)
            defer { workers.stop() }
            let unpinnedWorkers = BundleWorkers(executable: WorkerBenchmark.lunette)
            unpinnedWorkers.followsCaller = false
            defer { unpinnedWorkers.stop() }
            let clock = SystemClock()
            let inWorker = WidgetRuntime(bundle: bundle, services: services(store, clock, workers))
            let inUnpinned = WidgetRuntime(bundle: bundle, services: services(store, clock, unpinnedWorkers))
            let inProcess = WidgetRuntime(bundle: bundle, services: services(store, clock, nil))
            let widget = try inProcess.configuration(kind: "Bench")
            // Warm them (the workers' open, the pool's first state).
            for _ in 0..<5 {
                try expectOK(inWorker.timeline(widget).outcome, "the worker's call")
                try expectOK(inUnpinned.timeline(widget).outcome, "the unpinned worker's call")
                try expectOK(inProcess.timeline(widget).outcome, "the call in process")
            }
            var figures = CallFigures()
            // The context a timeline gets (WidgetRuntime's), and no configuration.
            figures.arguments = [.table(LuaTable(fields: ["displaySize": .table(LuaTable(fields: ["height": 170, "width": 170])),
                                                          "family": "systemSmall", "isPreview": false, "kind": "Bench"])), .nil]
            // What the provider returns (a worker sends it as it is; in
            // process the runtime decodes it in place and keeps no copy),
            // made again from the decoded timeline.
            guard let timeline = inProcess.timeline(widget).value else { throw WorkerBenchmark.failure("the call in process gave no timeline") }
            let policy: LuaValue
            switch timeline.policy {
            case .atEnd: policy = "atEnd"
            case .never: policy = "never"
            case .after(let t): policy = .table(LuaTable(fields: ["after": Int64(exactly: t).map(LuaValue.integer) ?? .number(t)]))
            }
            figures.values = [.table(LuaTable(fields: ["entries": .table(LuaTable(array: timeline.entries.map { .table($0.content) })), "policy": policy]))]
            let c = ContinuousClock()
            for _ in 0..<samples {
                var t = c.now
                let w = inWorker.timeline(widget).outcome
                figures.worker.append(microseconds(c.now - t))
                try expectOK(w, "the worker's call")
                figures.workerElapsed.append(w.elapsed * 1e6)
                t = c.now
                let p = inProcess.timeline(widget).outcome
                figures.inProcess.append(microseconds(c.now - t))
                try expectOK(p, "the call in process")
                figures.inProcessElapsed.append(p.elapsed * 1e6)
                t = c.now
                let u = inUnpinned.timeline(widget).outcome
                figures.unpinned.append(microseconds(c.now - t))
                try expectOK(u, "the unpinned worker's call")
            }
            guard workers.workersStarted == 1 else { throw WorkerBenchmark.failure("\(workers.workersStarted) workers served one bundle") }
            return figures
        }
    }

    /// `calls` timeline calls in one worker, nothing else (`--only-bundle-calls`, for profilers).
    static func workerCalls(_ calls: Int) throws -> Double {
        try withScratch("calls") { root in
            let (bundle, store) = try firstBundle(root)
            let workers = BundleWorkers(executable: WorkerBenchmark.lunette)
            defer { workers.stop() }
            let runtime = WidgetRuntime(bundle: bundle, services: services(store, SystemClock(), workers))
            let widget = try runtime.configuration(kind: "Bench")
            try expectOK(runtime.timeline(widget).outcome, "the first call")
            let c = ContinuousClock()
            let t = c.now
            for _ in 0..<calls { try expectOK(runtime.timeline(widget).outcome, "a call") }
            return microseconds(c.now - t) / Double(calls)
        }
    }

    /// µs to write and read back, in the binary wire form (`WireWriter`,
    /// `WireReader`), what a call's two messages carry: `arguments` and the
    /// answer's `values`.
    static func wirePieces(arguments: [LuaValue], values: [LuaValue], iterations: Int) throws -> Double {
        let c = ContinuousClock()
        let t = c.now
        for _ in 0..<iterations {
            for part in [arguments, values] {
                var w = WireWriter(.call)
                w.values(part)
                var r = WireReader(w.bytes)
                guard try r.values().count == part.count else { throw WorkerBenchmark.failure("the values did not round-trip") }
            }
        }
        return microseconds(c.now - t) / Double(iterations)
    }

    // MARK: 2. Cold start

    /// ms from nothing (a fresh BundleWorkers) to the first timeline call
    /// answered; and, as a baseline, the first call of a fresh runtime in process.
    /// With `forking` false the host's workers are all spawned (no fork
    /// server starts beside the first).
    static func coldStart(samples: Int, forking: Bool = true) throws -> (worker: Double, inProcess: Double, warmWorker: Double) {
        try withScratch("cold") { root in
            let (bundle, store) = try firstBundle(root)
            let clock = SystemClock()
            var cold: [Double] = [], local: [Double] = [], warm: [Double] = []
            let c = ContinuousClock()
            for _ in 0..<samples {
                let workers = BundleWorkers(executable: WorkerBenchmark.lunette, forksWorkers: forking)
                var t = c.now
                let runtime = WidgetRuntime(bundle: bundle, services: services(store, clock, workers))
                let widget = try runtime.configuration(kind: "Bench")
                try expectOK(runtime.timeline(widget).outcome, "the first call in a worker")
                cold.append(microseconds(c.now - t) / 1000)
                t = c.now
                try expectOK(runtime.timeline(widget).outcome, "the second call in a worker")
                warm.append(microseconds(c.now - t) / 1000)
                workers.stop()
                t = c.now
                let fresh = WidgetRuntime(bundle: bundle, services: services(store, clock, nil))
                try expectOK(fresh.timeline(try fresh.configuration(kind: "Bench")).outcome, "the first call in process")
                local.append(microseconds(c.now - t) / 1000)
            }
            return (median(cold), median(local), median(warm))
        }
    }

    // MARK: 3. Crash → next call served

    /// ms from a SIGKILL (or SIGSEGV) of a worker busy in a call to the
    /// next call of the bundle answered (by a fresh worker).
    static func recovery(samples: Int, signal: Int32) throws -> (total: [Double], reported: [Double]) {
        try withScratch("crash") { root in
            let (bundle, store) = try firstBundle(root)
            let workers = BundleWorkers(executable: WorkerBenchmark.lunette)
            defer { workers.stop() }
            let runtime = WidgetRuntime(bundle: bundle, services: services(store, SystemClock(), workers))
            let bench = try runtime.configuration(kind: "Bench")
            let spin = try runtime.configuration(kind: "Spin")
            try expectOK(runtime.timeline(bench).outcome, "the first call")
            var times: [Double] = [], reported: [Double] = []
            let c = ContinuousClock()
            for _ in 0..<samples {
                let killedAt = Locked<ContinuousClock.Instant?>(nil)
                let killer = Thread {
                    let deadline = Date().addingTimeInterval(5)
                    while workers.busyWorkers.isEmpty && Date() < deadline { usleep(200) }
                    usleep(2000)   // well inside the call's loop
                    guard let pid = workers.busyWorkers.first?.pid else { return }
                    killedAt.set(c.now)
                    kill(pid, signal)
                }
                killer.start()
                let crashed = runtime.timeline(spin).outcome
                guard crashed.status == .crashed, let at = killedAt.get() else {
                    throw WorkerBenchmark.failure("the killed call ended \(crashed.status): \(crashed.message ?? "")")
                }
                reported.append(microseconds(c.now - at) / 1000)
                try expectOK(runtime.timeline(bench).outcome, "the call after the crash")
                times.append(microseconds(c.now - at) / 1000)
            }
            guard workers.workersStarted == samples + 1 else { throw WorkerBenchmark.failure("\(workers.workersStarted) workers for \(samples) crashes") }
            return (times, reported)
        }
    }

    // MARK: 4. 100 plugins × 24 h

    struct DayFigures {
        var wallSeconds: Double
        /// Of which adding the widgets (each plugin's placeholder and first timeline; in workers, their cold starts).
        var addSeconds: Double
        var calls: Int
        var failures: Int
        var workersStarted: Int
        /// The host's peak RSS during the run (kB; VmHWM, reset before the run), nil where it cannot be reset.
        var hostPeakKB: Int?
        /// The workers alive at the end: their number, summed VmRSS and VmHWM (kB).
        var workersAlive = 0
        var workersRSSKB = 0
        var workersPeakKB = 0
        /// Of the RSS, the workers' private memory (RssAnon) and their proportional share (Pss, smaps_rollup; 0 where unreadable).
        var workersAnonKB = 0
        var workersPssKB = 0
        var callsPerSecond: Double { Double(calls) / wallSeconds }
    }

    /// `plugins` bundles (reloads after 15, 30, 45 or 60 min), one widget
    /// each, one TimelineEngine each on one VirtualClock, over 24 h: in
    /// workers (one shared BundleWorkers) when `workers`, else in process.
    static func day(bundles: [ScriptBundle], storeRoot: String, workers: BundleWorkers?) throws -> DayFigures {
        let store = try store(storeRoot, groups: 0..<bundles.count)
        let clock = VirtualClock(start)
        let resetPeak = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        let c = ContinuousClock()
        let began = c.now
        var engines: [TimelineEngine] = []
        for bundle in bundles {
            let runtime = WidgetRuntime(bundle: bundle, services: services(store, clock, workers))
            let engine = TimelineEngine(runtime: runtime)
            engine.addWidget(try runtime.configuration(kind: "Bench"))
            engines.append(engine)
        }
        let added = c.now - began
        let end = start + 86_400
        // As a host does: the earliest due reload of any plugin next.
        while true {
            var t = Double.infinity
            for engine in engines { if let due = engine.nextDue(), due < t { t = due } }
            guard t < end else { break }
            try clock.advance(to: max(t, clock.time))
            for engine in engines { if let due = engine.nextDue(), due <= clock.time { engine.runDue() } }
        }
        let wall = c.now - began
        var figures = DayFigures(wallSeconds: microseconds(wall) / 1e6, addSeconds: microseconds(added) / 1e6,
                                 calls: engines.reduce(0) { $0 + $1.instances.reduce(0) { $0 + 1 + $1.reloadsRecorded } },
                                 failures: engines.reduce(0) { $0 + $1.instances.reduce(0) { $0 + $1.failuresRecorded } },
                                 workersStarted: workers?.workersStarted ?? 0,
                                 hostPeakKB: resetPeak ? status(getpid(), "VmHWM") : nil)
        if let workers {
            let pids = workers.processIdentifiers
            figures.workersAlive = pids.count
            figures.workersRSSKB = pids.reduce(0) { $0 + (status($1, "VmRSS") ?? 0) }
            figures.workersPeakKB = pids.reduce(0) { $0 + (status($1, "VmHWM") ?? 0) }
            figures.workersAnonKB = pids.reduce(0) { $0 + (status($1, "RssAnon") ?? 0) }
            figures.workersPssKB = pids.reduce(0) { $0 + (status($1, "Pss", file: "smaps_rollup") ?? 0) }
        }
        if figures.failures > 0, let failure = engines.lazy.flatMap(\.instances).flatMap(\.failures).first {
            throw WorkerBenchmark.failure("\(figures.failures) calls failed: \(failure.message)")
        }
        return figures
    }

    /// A kB field of /proc/<pid>/status (VmRSS, VmHWM), nil where there is none.
    static func status(_ pid: Int32, _ field: String, file: String = "status") -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/\(file)", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// The day in process, then in workers (fresh stores, the same bundles).
    static func days(plugins: Int) throws -> (inProcess: DayFigures, inWorkers: DayFigures, stopSeconds: Double) {
        try withScratch("day") { root in
            var bundles: [ScriptBundle] = []
            for i in 0..<plugins {
                bundles.append(try ScriptBundle.load(try makeBundle(root: root, index: i, minutes: 15 * (1 + i % 4)), calendar: .utc))
            }
            let local = try day(bundles: bundles, storeRoot: root + "/store-in-process", workers: nil)
            let workers = BundleWorkers(executable: WorkerBenchmark.lunette, maxIdle: plugins + 28)
            defer { workers.stop() }
            let isolated = try day(bundles: bundles, storeRoot: root + "/store-workers", workers: workers)
            let c = ContinuousClock()
            let t = c.now
            workers.stop()
            return (local, isolated, microseconds(c.now - t) / 1e6)
        }
    }
}

/// A value shared with a thread.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func get() -> T { lock.withLock { value } }
    func set(_ new: T) { lock.withLock { value = new } }
}

/// Bundles' figures, printed by `workerFigures()`.
func bundleWorkerFigures() throws {
    let samples = quick ? 50 : 300
    print("\nProcess isolation for bundles (WidgetRuntime.timeline of a bundle that reads the store and returns 4 entries)")
    let call = try BundleWorkerBenchmark.providerCall(samples: samples)
    let (w, p) = (median(call.worker), median(call.inProcess))
    let goal = 2 * p + 30
    print("a provider call, \(samples) alternating samples".padding(toLength: 44, withPad: " ", startingAt: 0)
          + " in process median \(figure(p)) µs (p90 \(figure(percentile(call.inProcess, 90)))),"
          + " in a worker median \(figure(w)) µs (p90 \(figure(percentile(call.worker, 90))))   ratio \(figure(w / p, decimals: 2))"
          + "   (goal ≤ 2× + 30 µs = \(figure(goal)) µs: \(w <= goal ? "met" : "MISSED"))")
    let (we, pe) = (median(call.workerElapsed), median(call.inProcessElapsed))
    print("of which the call itself (its pool's elapsed): \(figure(we)) µs in the worker, \(figure(pe)) µs in process;"
          + " the rest in a worker, \(figure(w - we)) µs, is the request and answer (wire form, pipes, the processes' wake-ups)")
    let unpinned = median(call.unpinned)
    print("baseline, the same call in a worker that does not follow its caller's processor (followsCaller false): median \(figure(unpinned)) µs (p90 \(figure(percentile(call.unpinned, 90))))"
          + "   ratio \(figure(unpinned / p, decimals: 2)) to in process")
    let wire = try BundleWorkerBenchmark.wirePieces(arguments: call.arguments, values: call.values, iterations: 20_000)
    print("profile, measured here: the call's arguments and its answer's values written and read back in the binary wire form: \(figure(wire)) µs")
    let colds = quick ? 5 : 20
    let cold = try BundleWorkerBenchmark.coldStart(samples: colds)
    print("a bundle worker's cold start to its first call answered (open: sources, load, groups, lockdown), median of \(colds): "
          + "\(figure(cold.worker)) ms   (goal ≤ 30 ms: \(cold.worker <= 30 ? "met" : "MISSED"))"
          + "; baselines: the next call in that worker \(figure(cold.warmWorker, decimals: 3)) ms, a fresh runtime's first call in process \(figure(cold.inProcess, decimals: 3)) ms")
    let crashes = quick ? 5 : 10
    let killed = try BundleWorkerBenchmark.recovery(samples: crashes, signal: SIGKILL)
    let segv = try BundleWorkerBenchmark.recovery(samples: crashes, signal: SIGSEGV)
    print("a busy worker killed → the bundle's next call answered (fresh worker), median of \(crashes): "
          + "SIGKILL \(figure(median(killed.total))) ms (max \(figure(killed.total.max() ?? .nan))), SIGSEGV \(figure(median(segv.total))) ms (max \(figure(segv.total.max() ?? .nan)))")
    print("of which the kill → the killed call's `crashed` outcome: SIGKILL \(figure(median(killed.reported))) ms, SIGSEGV \(figure(median(segv.reported))) ms"
          + " (the rest is a cold start; baseline above)")
    let plugins = quick ? 20 : 100
    let day = try BundleWorkerBenchmark.days(plugins: plugins)
    func line(_ name: String, _ d: BundleWorkerBenchmark.DayFigures) -> String {
        "\(name): \(d.calls) calls in \(figure(d.wallSeconds, decimals: 2)) s wall (adding the \(plugins) widgets \(figure(d.addSeconds, decimals: 2)) s),"
            + " \(figure(d.callsPerSecond, decimals: 0)) calls/s"
            + (d.hostPeakKB.map { ", host peak RSS \(figure(Double($0) / 1024)) MB" } ?? "")
    }
    print("\(plugins) plugins × 24 h (one widget each, reloads after 15–60 min, one VirtualClock, events in time order):")
    let iw = day.inWorkers
    func mb(_ kb: Int) -> String { figure(Double(kb) / 1024) }
    print("  " + line("in workers", iw) + ", \(iw.workersStarted) workers started")
    print("  the \(iw.workersAlive) workers alive at the end: VmRSS \(mb(iw.workersRSSKB)) MB summed (\(mb(iw.workersRSSKB / max(1, iw.workersAlive))) MB each;"
          + " peaks VmHWM \(mb(iw.workersPeakKB)) MB summed), of which private RssAnon \(mb(iw.workersAnonKB)) MB (\(mb(iw.workersAnonKB / max(1, iw.workersAlive))) MB each);"
          + " Pss (shared pages divided among their users) \(mb(iw.workersPssKB)) MB summed; BundleWorkers.stop() of the \(iw.workersAlive) took \(figure(day.stopSeconds, decimals: 2)) s")
    print("  " + line("baseline in process", day.inProcess) + "   (ratio \(figure(day.inWorkers.wallSeconds / day.inProcess.wallSeconds, decimals: 2)))")
}
