import Foundation
import LuaSandbox
import WidgetHost

/// How process isolation scales with the number of plugins (issue 18,
/// point 6, second half): a day of N plugins, each a bundle with one widget,
/// every call in the worker processes of one `BundleWorkers` with its
/// default `maxIdle`, against the same day of the same plugins in process
/// (the baseline, in the same run); above `maxIdle`, also the day with an
/// idle worker kept for every plugin (no eviction), which tells the cold
/// starts of eviction from the rest. The day and the bundles are
/// `BundleWorkerBenchmark`'s (`day`, `makeBundle`): one TimelineEngine per
/// plugin on one VirtualClock, reloads after 15, 30, 45 or 60 min.
enum PluginScalingBenchmark {
    static let defaultMaxIdle = BundleWorkers.defaultMaxIdle

    struct Run {
        var day: BundleWorkerBenchmark.DayFigures
        var maxIdle: Int
        /// Descriptors this process had open at the end of the day, its workers still alive (nil where unreadable).
        var descriptors: Int?
    }

    struct Size {
        var plugins: Int
        var inProcess: BundleWorkerBenchmark.DayFigures
        /// In workers, the default maxIdle; nil when not run.
        var inWorkers: Run?
        /// In workers, a worker kept for every plugin (maxIdle = plugins); nil when not run.
        var kept: Run?
        /// Why a day in workers failed, when one did.
        var failure: String?
        /// µs a timeline call, the calls going round all the plugins and round 10 of them: in process, and in the kept workers.
        var rotation: Rotation?
        var keptRotation: Rotation?
        /// Descriptors a host's store holds with the plugins' app groups open (each stays open: store.sqlite, -wal, -shm).
        var storeDescriptors: Int?
    }

    struct Rotation {
        var all: Double
        var ten: Double
    }

    /// µs a timeline call of `bundles`' widgets, called in turn: round all
    /// of them, then round the first 10 only, as many calls each (after a
    /// warming round). With `workers`, the runtimes have the day's services
    /// (`storeRoot`, a VirtualClock), so they reuse the day's idle workers.
    static func rotation(_ bundles: [ScriptBundle], storeRoot: String, workers: BundleWorkers?) throws -> Rotation {
        let store = SharedStore(root: storeRoot)
        let clock = VirtualClock(BundleWorkerBenchmark.start)
        let runtimes = bundles.map { WidgetRuntime(bundle: $0, services: BundleWorkerBenchmark.services(store, clock, workers)) }
        let widgets = try runtimes.map { try $0.configuration(kind: "Bench") }
        for (runtime, widget) in zip(runtimes, widgets) { try BundleWorkerBenchmark.expectOK(runtime.timeline(widget).outcome, "a warming call") }
        let calls = max(2 * bundles.count, 2000)
        let c = ContinuousClock()
        func round(_ over: Int) throws -> Double {
            let t = c.now
            for k in 0..<calls { try BundleWorkerBenchmark.expectOK(runtimes[k % over].timeline(widgets[k % over]).outcome, "a call") }
            return BundleWorkerBenchmark.microseconds(c.now - t) / Double(calls)
        }
        return Rotation(all: try round(bundles.count), ten: try round(min(10, bundles.count)))
    }

    /// For profilers (`--only-plugin-rotation N`): `calls` timeline calls
    /// going round `plugins` plugins, each its own bundle, app group and
    /// runtime, after a warming round; in process, or with `workers` in
    /// worker processes with one kept for every plugin (maxIdle = plugins).
    /// The calls run in `rotationCalls` alone, so `valgrind
    /// --tool=callgrind --toggle-collect='*rotationCalls*'` counts only
    /// them: instructions and (with `--cache-sim=yes`) cache misses a call
    /// in this process, at 100 plugins against 1,000.
    static func profiledRotation(plugins: Int, calls: Int, workers: Bool) throws -> Double {
        try BundleWorkerBenchmark.withScratch("rotation") { root in
            var bundles: [ScriptBundle] = []
            for i in 0..<plugins {
                bundles.append(try ScriptBundle.load(try BundleWorkerBenchmark.makeBundle(root: root, index: i, minutes: 15 * (1 + i % 4)), calendar: .utc))
            }
            let store = try BundleWorkerBenchmark.store(root + "/store", groups: 0..<plugins)
            let clock = VirtualClock(BundleWorkerBenchmark.start)
            let pool = workers ? BundleWorkers(executable: WorkerBenchmark.lunette, maxIdle: plugins) : nil
            defer { pool?.stop() }
            let runtimes = bundles.map { WidgetRuntime(bundle: $0, services: BundleWorkerBenchmark.services(store, clock, pool)) }
            let widgets = try runtimes.map { try $0.configuration(kind: "Bench") }
            for (runtime, widget) in zip(runtimes, widgets) { try BundleWorkerBenchmark.expectOK(runtime.timeline(widget).outcome, "a warming call") }
            let started = pool?.workersStarted ?? 0
            let c = ContinuousClock()
            let t = c.now
            let failed = rotationCalls(runtimes, widgets, calls: calls)
            let us = BundleWorkerBenchmark.microseconds(c.now - t) / Double(calls)
            guard failed == 0 else { throw WorkerBenchmark.failure("\(failed) of \(calls) calls in turn failed") }
            if let pool, pool.workersStarted != started {
                throw WorkerBenchmark.failure("the calls in turn started \(pool.workersStarted - started) workers")
            }
            return us
        }
    }

    /// The calls of `profiledRotation`; how many failed.
    @inline(never)
    static func rotationCalls(_ runtimes: [WidgetRuntime], _ widgets: [WidgetConfiguration], calls: Int) -> Int {
        var failed = 0
        for k in 0..<calls where runtimes[k % runtimes.count].timeline(widgets[k % runtimes.count]).outcome.status != .ok { failed += 1 }
        return failed
    }

    /// The day of `plugins` plugins in process, then in workers with the
    /// default maxIdle (when `evicting`), then with maxIdle = plugins (when
    /// `kept`); fresh stores, the same bundles.
    static func size(plugins: Int, evicting: Bool, kept: Bool) throws -> Size {
        try BundleWorkerBenchmark.withScratch("plugin-scaling") { root in
            var bundles: [ScriptBundle] = []
            for i in 0..<plugins {
                bundles.append(try ScriptBundle.load(try BundleWorkerBenchmark.makeBundle(root: root, index: i, minutes: 15 * (1 + i % 4)), calendar: .utc))
            }
            // The store's descriptors, in every host of these plugins, before any worker's.
            var storeDescriptors: Int?
            if let before = openDescriptors() {
                let store = try BundleWorkerBenchmark.store(root + "/store-descriptors", groups: 0..<plugins)
                storeDescriptors = withExtendedLifetime(store) { openDescriptors().map { $0 - before } }
            }
            var size = Size(plugins: plugins,
                            inProcess: try BundleWorkerBenchmark.day(bundles: bundles, storeRoot: root + "/store-in-process", workers: nil))
            size.storeDescriptors = storeDescriptors
            size.rotation = try rotation(bundles, storeRoot: root + "/store-in-process", workers: nil)
            func inWorkers(maxIdle: Int, _ name: String, rotate: Bool = false) throws -> Run {
                let workers = BundleWorkers(executable: WorkerBenchmark.lunette, maxIdle: maxIdle)
                defer { workers.stop() }
                let day = try BundleWorkerBenchmark.day(bundles: bundles, storeRoot: root + "/store-" + name, workers: workers)
                let run = Run(day: day, maxIdle: maxIdle, descriptors: openDescriptors())
                if rotate {
                    size.keptRotation = try rotation(bundles, storeRoot: root + "/store-" + name, workers: workers)
                    guard workers.workersStarted == day.workersStarted else {
                        throw WorkerBenchmark.failure("the calls in turn started \(workers.workersStarted - day.workersStarted) workers")
                    }
                }
                return run
            }
            do {
                if evicting { size.inWorkers = try inWorkers(maxIdle: defaultMaxIdle, "workers", rotate: plugins <= defaultMaxIdle) }
                if kept { size.kept = try inWorkers(maxIdle: plugins, "kept", rotate: true) }
            } catch {
                size.failure = "\(error)"
            }
            return size
        }
    }

    /// Descriptors open in this process now (/proc/self/fd, less the one that lists it).
    static func openDescriptors() -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map { $0.count - 1 }
    }

    /// RLIMIT_NOFILE's soft limit.
    static func descriptorLimit() -> String? {
        var limit = rlimit()
        #if os(Linux)
        guard getrlimit(__rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)), &limit) == 0 else { return nil }
        #else
        guard getrlimit(RLIMIT_NOFILE, &limit) == 0 else { return nil }
        #endif
        return limit.rlim_cur == rlim_t.max ? "unlimited" : String(limit.rlim_cur)
    }

    /// Median ms of a timeline call with no idle worker kept (maxIdle 0):
    /// what a call pays after its worker was evicted (start, open, the call;
    /// the worker is stopped at its check-in, in the background). With
    /// `forking`, each worker is forked from the fork server (the default);
    /// without, spawned from the executable (the baseline).
    static func callWithoutIdleWorker(samples: Int, forking: Bool = true) throws -> Double {
        try BundleWorkerBenchmark.withScratch("no-idle") { root in
            let (bundle, store) = try BundleWorkerBenchmark.firstBundle(root)
            let workers = BundleWorkers(executable: WorkerBenchmark.lunette, maxIdle: 0, forksWorkers: forking)
            defer { workers.stop() }
            let runtime = WidgetRuntime(bundle: bundle, services: BundleWorkerBenchmark.services(store, SystemClock(), workers))
            let widget = try runtime.configuration(kind: "Bench")
            try BundleWorkerBenchmark.expectOK(runtime.timeline(widget).outcome, "the first call")
            var times: [Double] = []
            let c = ContinuousClock()
            for _ in 0..<samples {
                let t = c.now
                try BundleWorkerBenchmark.expectOK(runtime.timeline(widget).outcome, "a call without an idle worker")
                times.append(BundleWorkerBenchmark.microseconds(c.now - t) / 1000)
            }
            guard workers.workersStarted == samples + 1 else { throw WorkerBenchmark.failure("\(workers.workersStarted) workers for \(samples + 1) calls with maxIdle 0") }
            return median(times)
        }
    }
}

/// Plugins' scaling under process isolation, printed by `scalingFigures()`
/// after the widgets' sizes (and by `--only-plugin-scaling`).
func pluginScalingFigures() throws {
    let maxIdle = PluginScalingBenchmark.defaultMaxIdle
    let sizes = [10, 100, 1000]
    print("\nScaling: plugins × 24 h under process isolation (each plugin a bundle with one widget: store read, 4 entries, after 15–60 min;"
          + " every call in worker processes of one BundleWorkers, maxIdle \(maxIdle); baseline: the same plugins' day in process, in this run)")
    let colds = 5
    let cold = try BundleWorkerBenchmark.coldStart(samples: colds)
    let restart = try PluginScalingBenchmark.callWithoutIdleWorker(samples: colds)
    let spawnedRestart = try PluginScalingBenchmark.callWithoutIdleWorker(samples: colds, forking: false)
    print("a bundle worker's cold start to its first call answered, median of \(colds): \(figure(cold.worker)) ms;"
          + " a call with no idle worker kept (maxIdle 0: start, open, the call; the worker stops in the background at check-in):"
          + " \(figure(restart)) ms with the worker forked from the fork server (baseline: spawned from the executable, \(figure(spawnedRestart)) ms, \(figure(spawnedRestart / restart, decimals: 1))× as long);"
          + " a warm call \(figure(cold.warmWorker, decimals: 3)) ms;"
          + " RLIMIT_NOFILE soft \(PluginScalingBenchmark.descriptorLimit() ?? "unknown") (each live worker holds two pipe descriptors, and a forked one its pidfd too; the fork server one socket)")
    func us(_ d: BundleWorkerBenchmark.DayFigures) -> Double { d.wallSeconds / Double(d.calls) * 1e6 }
    /// µs a call after the adds (the day's reloads only: no first call, no first cold start).
    func reloadUs(_ d: BundleWorkerBenchmark.DayFigures, _ n: Int) -> Double { (d.wallSeconds - d.addSeconds) / Double(d.calls - n) * 1e6 }
    func day(_ d: BundleWorkerBenchmark.DayFigures, _ n: Int) -> String {
        "\(d.calls) calls in \(figure(d.wallSeconds, decimals: 2)) s wall, \(figure(d.callsPerSecond, decimals: 0)) calls/s, \(figure(us(d))) µs a call"
            + " (the \(d.calls - n) reloads after the adds: \(figure(reloadUs(d, n))) µs a call)"
    }
    func run(_ r: PluginScalingBenchmark.Run, _ n: Int) -> String {
        let d = r.day
        return day(d, n) + ", \(d.workersStarted) workers started (\(d.workersStarted - n) after the first \(n))"
            + " [adding the \(n) widgets, their first calls and cold starts: \(figure(d.addSeconds, decimals: 2)) s;"
            + " at the end \(d.workersAlive) workers alive, \(r.descriptors.map { "\($0)" } ?? "?") descriptors open"
            + (d.workersAlive > 0 ? ", VmRSS \(figure(Double(d.workersRSSKB) / 1024)) MB summed, Pss \(figure(Double(d.workersPssKB) / 1024)) MB" : "") + "]"
    }
    var measured: [PluginScalingBenchmark.Size] = []
    for n in sizes {
        // Above maxIdle, nearly every call of the default run starts a worker:
        // at 1,000 plugins that is many minutes, so --quick leaves it out.
        let evicting = !(quick && n > 100)
        let name = "\(n) plugins".padding(toLength: 12, withPad: " ", startingAt: 0)
        let size: PluginScalingBenchmark.Size
        do { size = try PluginScalingBenchmark.size(plugins: n, evicting: evicting, kept: n > maxIdle) } catch {
            print("\(name) FAILED, in process too: \(error) (RLIMIT_NOFILE soft \(PluginScalingBenchmark.descriptorLimit() ?? "unknown"):"
                  + " the host's store keeps every app group it opened open, 3 descriptors each)")
            continue
        }
        measured.append(size)
        if let w = size.inWorkers {
            print("\(name) in workers (maxIdle \(w.maxIdle)): " + run(w, n) + "   ratio to in process \(figure(w.day.wallSeconds / size.inProcess.wallSeconds, decimals: 1))")
        } else if size.failure == nil {
            let expected = Double(size.inProcess.calls) * restart / 1000 / 60
            print("\(name) in workers (maxIdle \(maxIdle)): not run with --quick (above maxIdle nearly every call starts a worker again:"
                  + " \(size.inProcess.calls) calls × \(figure(restart)) ms ≈ \(figure(expected)) min); run without --quick to measure it")
        }
        if let k = size.kept {
            print("\("".padding(toLength: 12, withPad: " ", startingAt: 0)) in workers, one kept for every plugin (maxIdle \(k.maxIdle), no eviction): " + run(k, n)
                  + "   ratio to in process \(figure(k.day.wallSeconds / size.inProcess.wallSeconds, decimals: 1))")
        }
        if let failure = size.failure {
            print("\("".padding(toLength: 12, withPad: " ", startingAt: 0)) in workers FAILED: \(failure)")
        }
        print("\("".padding(toLength: 12, withPad: " ", startingAt: 0)) baseline in process: " + day(size.inProcess, n)
              + (size.storeDescriptors.map { "; the host's store with the \(n) plugins' app groups open holds \($0) descriptors" } ?? ""))
    }
    // Flat: the cost per call at the largest size measured against the one before (≤ 1.25×, as for the widgets).
    func flat(_ title: String, _ pick: (PluginScalingBenchmark.Size) -> BundleWorkerBenchmark.DayFigures?, why: (PluginScalingBenchmark.Size) -> String?) {
        let have = measured.compactMap { s in pick(s).map { (s, $0) } }
        guard have.count >= 2 else { return }
        let (small, large) = (have[have.count - 2], have[have.count - 1])
        let growth = us(large.1) / us(small.1)
        let (a, b) = (reloadUs(small.1, small.0.plugins), reloadUs(large.1, large.0.plugins))
        var line = "cost per call \(title) at \(large.0.plugins) plugins against \(small.0.plugins): \(figure(growth, decimals: 2))×"
            + " (\(figure(us(small.1))) → \(figure(us(large.1))) µs; the reloads after the adds \(figure(a)) → \(figure(b)) µs, \(figure(b / a, decimals: 2))×;"
            + " flat is ≤ 1.25×: \(growth <= 1.25 ? "flat" : "NOT FLAT")"
        if growth > 1.25, let why = why(large.0) { line += ": " + why }
        print(line + ")")
    }
    flat("in workers (maxIdle \(maxIdle))", { $0.inWorkers?.day }) { s in
        guard let d = s.inWorkers?.day else { return nil }
        let again = d.workersStarted - s.plugins
        guard again > 0 else { return nil }
        var why = "\(s.plugins) plugins > maxIdle \(maxIdle), so idle workers are evicted (least recently used first, stopped in the background)"
            + " and \(again) of the \(d.calls) calls (\(figure(Double(again) / Double(d.calls) * 100))%) started a worker again;"
            + " at \(figure(restart)) ms each (a call with no idle worker, above) that is ≈ \(figure(Double(again) * restart / 1000, decimals: 1)) s of the \(figure(d.wallSeconds, decimals: 1)) s wall"
        if let k = s.kept?.day {
            let each = (d.wallSeconds - k.wallSeconds) / Double(d.workersStarted - k.workersStarted) * 1000
            why += "; with a worker kept for every plugin the same day costs \(figure(us(k))) µs a call,"
                + " so each of the day's \(d.workersStarted - k.workersStarted) extra starts cost \(figure(each)) ms"
        }
        return why
    }
    // Not flat without eviction: whether a call costs more when the calls go round more plugins.
    func rotating(_ s: PluginScalingBenchmark.Size, _ pick: (PluginScalingBenchmark.Size) -> PluginScalingBenchmark.Rotation?, _ cause: String) -> String? {
        guard let large = pick(s) else { return nil }
        let smaller = measured.last { $0.plugins < s.plugins && pick($0) != nil }
        return "a call costs more the more plugins run between two calls of one: timeline calls in turn round all \(s.plugins) plugins \(figure(large.all)) µs,"
            + " round 10 of them \(figure(large.ten)) µs"
            + (smaller.map { " (at \($0.plugins) plugins: \(figure(pick($0)!.all)) and \(figure(pick($0)!.ten)) µs)" } ?? "")
            + "; so it is not the day's loop but the calls: \(cause)"
    }
    flat("in workers, one kept for every plugin", { $0.kept?.day ?? ($0.plugins <= maxIdle ? $0.inWorkers?.day : nil) }) {
        rotating($0, { $0.keptRotation }, "most likely the worker processes' memory no longer in the processor's caches")
    }
    flat("in process (baseline)", { $0.inProcess }) {
        rotating($0, { $0.rotation }, "the plugins' states no longer in the processor's caches (cachegrind, a call round 10 plugins against round 1,000,"
                 + " 32 MB last-level cache: the same instructions and first-level misses, 0 against 132 last-level misses; docs/ARCHITECTURE.md)")
    }
}
