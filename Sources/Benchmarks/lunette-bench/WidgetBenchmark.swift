import Foundation
import LuaSandbox
import WidgetHost

/// The widget runtime: a simulated day of many widgets, and one
/// `lunette timeline` process.
enum WidgetBenchmark {
    /// The benchmark bundle: the provider reads the store and returns four
    /// entries, policy after 15 minutes.
    static let mainLua = """
        widget {
          kind = "Bench", families = { "systemSmall" },
          placeholder = function(ctx) return { n = 0 } end,
          timeline = function(ctx)
        \(provider(count: storeRead))
          end,
        }
        """

    /// The provider's body, the same in the bundle and in the baselines:
    /// only how it reads "count" differs.
    static func provider(count: String) -> String {
        """
        local now = clock.now()
        local n = \(count)
        local entries = {}
        for i = 0, 3 do
          entries[#entries + 1] = { date = clock.add(now, { minutes = 15 * i }), n = n + i, label = "entry " .. i }
        end
        return { entries = entries, policy = { after = clock.add(now, { minutes = 15 }) } }
        """
    }
    static let storeRead = #"store.group("group.bench"):get("count") or 0"#

    static func makeBundle() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-bundle-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try #"{ "id": "com.example.bench", "appGroups": ["group.bench"] }"#.write(toFile: dir + "/bundle.json", atomically: true, encoding: .utf8)
        try mainLua.write(toFile: dir + "/main.lua", atomically: true, encoding: .utf8)
        return dir
    }

    struct DayFigures {
        var wallSeconds: Double
        var providerCalls: Int
        /// Pages the process faulted in while the simulator ran (fresh
        /// memory: the report keeps every instance's history; nothing else
        /// runs then); nil when getrusage failed.
        var minorFaults: Int?
        var callsPerSecond: Double { Double(providerCalls) / wallSeconds }
        var microsecondsPerCall: Double { wallSeconds / Double(providerCalls) * 1e6 }
        /// Fresh pages a provider call; nil when getrusage failed.
        var faultsPerCall: Double? { minorFaults.map { Double($0) / Double(providerCalls) } }
    }

    /// The process's minor page faults so far (getrusage); nil when it fails.
    static func minorFaults() -> Int? {
        var usage = rusage()
        #if canImport(Glibc)
        let who = __rusage_who_t(RUSAGE_SELF.rawValue)
        #else
        let who = RUSAGE_SELF
        #endif
        return getrusage(who, &usage) == 0 ? Int(usage.ru_minflt) : nil
    }

    /// Pages faulted in between two readings of `minorFaults()`.
    static func faulted(_ before: Int?, _ after: Int?) -> Int? {
        guard let before, let after else { return nil }
        return after - before
    }

    /// `instances` widgets over 24 h, on a fresh store holding "count".
    static func simulateDay(bundlePath: String, instances: Int) throws -> DayFigures {
        try simulateDayKeepingReport(bundlePath: bundlePath, instances: instances).figures
    }

    /// The same, with the day's report (which holds every instance's
    /// history: freeing it is work the day's wall time does not count).
    static func simulateDayKeepingReport(bundlePath: String, instances: Int) throws -> (figures: DayFigures, report: SimulationReport) {
        let storeRoot = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-store-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        defer { try? FileManager.default.removeItem(atPath: storeRoot) }
        let store = SharedStore(root: storeRoot)
        try store.group("group.bench").set("count", .integer(7))
        let bundle = try ScriptBundle.load(bundlePath, calendar: .utc)
        let start = 1_795_219_200.0   // 2026-11-21T00:00:00Z
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: .utc))
        let widget = try runtime.configuration(kind: "Bench")
        let scenario = Scenario(start: start, duration: 86_400, widgets: Array(repeating: widget, count: instances))
        let faultsBefore = minorFaults()
        let report = Simulator(bundle: bundle, scenario: scenario, store: store).run()
        let faults = faulted(faultsBefore, minorFaults())
        let failures = report.instances.reduce(0) { $0 + $1.failures.count }
        if failures > 0 {
            throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(failures) provider calls failed: \(report.instances[0].failures.first!.message)"])
        }
        return (DayFigures(wallSeconds: report.wallSeconds, providerCalls: report.providerCalls, minorFaults: faults), report)
    }

    /// Instructions a provider call costs, a widget call's against the bare
    /// provider's, as callgrind counts them: the machine's load moves wall
    /// times by more than the gap being measured, and never moves these.
    /// Each side runs at two sizes (`--only-day N`, `--only-bare-provider
    /// N`), and the difference of the two counts over the difference of the
    /// two call counts is what one more call costs: the process's start,
    /// the bundle's load and the store's making cancel out (what grows with
    /// the widgets, adding each and its placeholder call, stays in, as it
    /// does in the day's wall time: ≈ 2 k a call of the 42 a widget). The day keeps
    /// its report to the end (`--only-day`), so freeing the history is not
    /// counted either, as the wall time does not count it. Lua seeds its
    /// string hashes from the time and addresses, so tables lay out
    /// differently from run to run and a count moves by up to ≈ 2%: each
    /// side's figure is the median of `repeats` such differences.
    static func callInstructions(of bench: String, repeats: Int) throws -> Result<(widget: Double, bare: Double), InstructionsUnavailable> {
        let sizes = [50, 150]
        // The day's provider calls at each size (the same every run); the
        // bare loop makes as many.
        let bundle = try makeBundle()
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        let calls = try sizes.map { try simulateDay(bundlePath: bundle, instances: $0).providerCalls }
        let loops = [(["--only-day", "\(sizes[0])"], ["--only-day", "\(sizes[1])"]),
                     (["--only-bare-provider", "\(calls[0])"], ["--only-bare-provider", "\(calls[1])"])]
        return try perCallInstructions(of: bench, loops: loops, calls: Double(calls[1] - calls[0]), repeats: repeats).map { ($0[0], $0[1]) }
    }

    /// One more call's instructions in each of `loops`, as callgrind counts
    /// them: each loop runs at two sizes (its arguments for the smaller and
    /// for the larger), and the difference of the two counts over `calls`,
    /// the calls between the sizes, is one call's cost (start-up and
    /// teardown cancel out); the median of `repeats` such differences.
    ///
    /// Lua seeds its string hashes from `time(NULL)` and addresses, and a
    /// seed moves a 10-field call by up to ≈ 10% (where a table's keys
    /// collide). Run as they came, the two sizes of a difference had two
    /// seeds, and the difference (2 × one seed's cost − the other's) moved
    /// by twice as much: the same binary counted 10,610 to 11,866 a call.
    /// So the two sizes of one repeat run with the same fixed clock (a
    /// preloaded `time`, `fixedClockLibrary`), under valgrind, whose
    /// addresses are the same from run to run, hence the same seed; each
    /// repeat has a clock of its own, so the median is over `repeats`
    /// seeds. (Seven seeds of the same binary: 11,108 to 11,324.)
    ///
    /// The seed also takes in an address on the main thread's stack, which
    /// sits below the arguments and the environment: so the two sizes'
    /// arguments are made the same length (numbers padded with zeros,
    /// "05" and "10"), or a pair would have two seeds in one environment
    /// in sixteen.
    static func perCallInstructions(of executable: String, loops: [(small: [String], large: [String])], calls: Double,
                                    repeats: Int) throws -> Result<[Double], InstructionsUnavailable> {
        try perCallInstructionsBySeed(of: executable, loops: loops, calls: calls, repeats: repeats).map { $0.map(median) }
    }

    /// The same, each loop's `repeats` differences (one a seed) instead of
    /// their median.
    static func perCallInstructionsBySeed(of executable: String, loops: [(small: [String], large: [String])], calls: Double,
                                          repeats: Int) throws -> Result<[[Double]], InstructionsUnavailable> {
        let padded = loops.map { loop in (small: zip(loop.small, loop.large).map { small, large in
            small.allSatisfy(\.isNumber) && small.count < large.count ? String(repeating: "0", count: large.count - small.count) + small : small
        }, large: loop.large) }
        for loop in padded where loop.small.map(\.utf8.count) != loop.large.map(\.utf8.count) {
            throw BenchError("the two sizes' arguments must be as long as each other (Lua's hash seed takes in a stack address): \(loop.small) and \(loop.large)")
        }
        let runs = Array(repeatElement(padded.flatMap { [$0.small, $0.large] }, count: repeats).joined())
        let perRepeat = 2 * loops.count
        let clocks = runs.indices.map { 1_790_000_000 + 86_413 * ($0 / perRepeat) }
        return try processInstructions(of: executable, runs: runs, strippingDebugInfo: true, fixedClocks: clocks).map { counts in
            loops.indices.map { k in
                (0..<repeats).map { r in
                    let at = 2 * (r * loops.count + k)
                    return (counts[at + 1] - counts[at]) / calls
                }
            }
        }
    }

    /// Baseline: the same provider, called `calls` times in one reused
    /// trusted state (no fresh sandbox, no engine, no checks), with the
    /// store read replaced by a constant.
    static func bareCallsPerSecond(calls: Int) throws -> Double {
        try bareCalls(calls).perSecond
    }

    /// The same, with the pages the calls faulted in (none expected: each
    /// result is dropped before the next call).
    static func bareCalls(_ calls: Int) throws -> (perSecond: Double, minorFaults: Int?) {
        let state = try LuaState(profile: .trusted)
        try state.run("""
            clock = { now = function() return 1795219200 end, add = function(t, d) return t + (d.minutes or 0) * 60 end }
            """)
        let provider = try state.load(Self.provider(count: "7"), name: "bare.lua")
        let faultsBefore = minorFaults()
        let ns = try measureNanoseconds { for _ in 0..<calls { _ = try state.call(provider) } }
        return (Double(calls) / (ns / 1e9), faulted(faultsBefore, minorFaults()))
    }

    /// The middle rung between the bare provider and a widget call: the
    /// same provider in one reused trusted state, but calling the host's
    /// real services (the `clock` and `store` modules, a store read in a
    /// `StoreBinding.perform`) and with its result read into Swift values
    /// — what any host must do for the call — with no sandbox limits, no
    /// fresh globals, no engine and no checks of the result. The calls run
    /// in one `SharedStore.reusingReadTransactions` scope, as the engine
    /// runs an instant's reloads, so they share read transactions as widget
    /// calls do (before 2026-11-26, seventh stop, each call began its own:
    /// two `fcntl` calls a widget call does not make).
    static func servicesCallsPerSecond(calls: Int) throws -> Double {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-services-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = SharedStore(root: root)
        try store.group("group.bench").set("count", .integer(7))
        let state = try LuaState(profile: .trusted)
        try ClockBinding(clock: VirtualClock(1_795_219_200), calendar: .utc).install(in: state)
        let binding = StoreBinding(store: store, grants: ["group.bench"], owner: "lunette-bench")
        try binding.install(in: state)
        let provider = try state.load(Self.provider(count: Self.storeRead), name: "services.lua")
        var entries = 0
        let ns = try measureNanoseconds {
            try store.reusingReadTransactions { () throws in
                for _ in 0..<calls {
                    entries &+= try binding.perform { () throws(LuaError) -> [LuaValue] in try state.call(provider) }.count
                }
            }
        }
        precondition(entries == calls)
        return Double(calls) / (ns / 1e9)
    }

    /// Instructions each run of `executable` with one of `runs` (its
    /// arguments) executes, as callgrind counts them (`valgrind
    /// --tool=callgrind`: the same count for the same binary and inputs,
    /// whatever else the machine does); why not, when valgrind (or `strip`)
    /// is not installed. valgrind 3.19 cannot read the DWARF 5 of Swift's
    /// release builds: with `strippingDebugInfo`, one copy without it
    /// (`strip -g`, as `scripts/install` installs it) is made and run.
    /// `--fair-sched=yes`: valgrind runs one thread at a time, and by
    /// default may hand the lock back to the thread that had it, so the
    /// deadline watchdog, which publishes the clock that watched calls take
    /// as their start, could go unscheduled for a whole run and the calls
    /// read a clock each instead (10 instructions more than when run natively).
    ///
    /// With `fixedClocks` (one for each run), each run's `time` returns its
    /// clock (`fixedClockLibrary`, preloaded): see `perCallInstructions`.
    static func processInstructions(of executable: String, runs: [[String]], strippingDebugInfo: Bool,
                                    fixedClocks: [Int]? = nil) throws -> Result<[Double], InstructionsUnavailable> {
        guard let valgrind = executableOnPath("valgrind") else { return .failure(InstructionsUnavailable(reason: "valgrind not installed")) }
        var program = executable
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        if strippingDebugInfo {
            guard let strip = executableOnPath("strip") else { return .failure(InstructionsUnavailable(reason: "strip not installed")) }
            program = folder.appendingPathComponent((executable as NSString).lastPathComponent).path
            try FileManager.default.copyItem(atPath: executable, toPath: program)
            _ = try output(of: URL(fileURLWithPath: strip), ["-g", program])
        }
        var preload: String?
        if fixedClocks != nil {
            switch try fixedClockLibrary(in: folder) {
            case .success(let path): preload = path
            case .failure(let why): return .failure(why)
            }
        }
        return .success(try runs.indices.map { i in
            let arguments = runs[i]
            // valgrind hands LD_PRELOAD on to the program it runs, after its own.
            let environment = preload.map { ["LD_PRELOAD": $0, "LUNETTE_BENCH_CLOCK": "\(fixedClocks![i])"] } ?? [:]
            let report = try output(of: URL(fileURLWithPath: valgrind), ["--tool=callgrind", "--fair-sched=yes", "--callgrind-out-file=/dev/null", program] + arguments,
                                    standardError: true, environment: environment)
            // "==PID== I   refs:      26,152,791"
            guard let line = report.split(separator: "\n").last(where: { $0.contains("I   refs:") }),
                  let count = Double(line.split(separator: " ").last.map { $0.filter(\.isNumber) } ?? "") else {
                throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "no instruction count in callgrind's report for \(executable): \(report.suffix(400))"])
            }
            return count
        })
    }

    struct InstructionsUnavailable: Error { let reason: String }

    /// A library whose `time` returns `LUNETTE_BENCH_CLOCK` (seconds), built
    /// in `folder` with the C compiler on PATH (`cc`, else `clang`, as the
    /// tests build their probe; scripts/bootstrap puts one there). Only
    /// `time`: the programs time themselves with `clock_gettime`, and Lua
    /// reads `time(NULL)` for its seed alone.
    static func fixedClockLibrary(in folder: URL) throws -> Result<String, InstructionsUnavailable> {
        guard let compiler = executableOnPath("cc") ?? executableOnPath("clang") else {
            return .failure(InstructionsUnavailable(reason: "no C compiler (cc or clang) to build the fixed clock"))
        }
        let source = folder.appendingPathComponent("fixed_clock.c")
        let library = folder.appendingPathComponent("fixed_clock.so").path
        try """
            #include <stdlib.h>
            #include <time.h>
            time_t time(time_t *out) {
                const char *clock = getenv("LUNETTE_BENCH_CLOCK");
                time_t now = clock ? (time_t)strtoll(clock, NULL, 10) : 0;
                if (out) *out = now;
                return now;
            }

            """.write(to: source, atomically: true, encoding: .utf8)
        _ = try output(of: URL(fileURLWithPath: compiler), ["-shared", "-fPIC", "-O2", "-o", library, source.path], standardError: true)
        return .success(library)
    }

    /// Median wall milliseconds of running `executable arguments` `runs`
    /// times, its output to /dev/null: started with `posix_spawn` and
    /// waited for with a blocking `waitpid`, so the figure is the process's
    /// own time (Foundation's `Process.waitUntilExit` looks every 50 ms,
    /// which added ~40 ms to every figure before).
    static func processMilliseconds(of executable: String, _ arguments: [String], runs: Int) throws -> Double {
        var samples: [Double] = []
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for e in envp { free(e) } }
        for _ in 0..<runs {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            var pid: pid_t = 0
            let start = ContinuousClock.now
            let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
            guard spawned == 0 else {
                throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable): \(String(cString: strerror(spawned)))"])
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let elapsed = ContinuousClock.now - start
            guard status == 0 else {
                throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(executable) \(arguments.joined(separator: " ")) ended with wait status \(status)"])
            }
            samples.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
        }
        return median(samples)
    }
}
