import Foundation
import LuaSandbox
import SharedStore
import WidgetHost

/// Memory per loaded bundle (issue 18, point 5): a host with many small
/// bundles loaded in process, each with the sandbox its first call made.
enum MemoryBenchmark {
    struct Figures {
        var bundles: Int
        /// This process's resident memory before and after, kB (/proc/self/status VmRSS).
        var beforeKB: Int, afterKB: Int
        /// Of it, anonymous (RssAnon): the heap, not the pages of the binary and libraries.
        var anonBeforeKB: Int, anonAfterKB: Int
        var perBundleKB: Double { Double(afterKB - beforeKB) / Double(bundles) }
        var anonPerBundleKB: Double { Double(anonAfterKB - anonBeforeKB) / Double(bundles) }
    }

    /// Loads `count` small bundles (a widget that reads the store and
    /// returns one entry), makes one timeline call in each, keeps them all.
    static func perBundle(count: Int) throws -> Figures {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-memory-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for i in 0..<count {
            let dir = "\(root)/b\(i)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try #"{ "id": "com.example.b\#(i)", "appGroups": ["group.memory"] }"#.write(toFile: dir + "/bundle.json", atomically: true, encoding: .utf8)
            try """
                widget { kind = "W", placeholder = function() return { n = 0 } end,
                  timeline = function()
                    local n = store.group("group.memory"):get("n") or 0
                    return { entries = { { date = clock.now(), n = n } }, policy = { after = clock.now() + 900 } }
                  end }
                """.write(toFile: dir + "/main.lua", atomically: true, encoding: .utf8)
        }
        let store = SharedStore(root: root + "/store")
        try store.group("group.memory").set("n", .integer(1))
        let clock = VirtualClock(1_795_219_200)
        // Warm what every bundle shares (the store's group, the runtime's code paths) before the first figure.
        var kept: [WidgetRuntime] = []
        func load(_ i: Int) throws {
            let bundle = try ScriptBundle.load("\(root)/b\(i)", calendar: .utc)
            let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: store, clock: clock, calendar: .utc))
            let outcome = runtime.timeline(try runtime.configuration(kind: "W")).outcome
            guard outcome.succeeded else { throw WorkerBenchmark.failure("bundle b\(i): \(outcome.message ?? "")") }
            kept.append(runtime)
        }
        try load(0)
        let before = (BundleWorkerBenchmark.status(getpid(), "VmRSS") ?? 0, BundleWorkerBenchmark.status(getpid(), "RssAnon") ?? 0)
        for i in 1..<count { try load(i) }
        let after = (BundleWorkerBenchmark.status(getpid(), "VmRSS") ?? 0, BundleWorkerBenchmark.status(getpid(), "RssAnon") ?? 0)
        withExtendedLifetime(kept) {}
        return Figures(bundles: count - 1, beforeKB: before.0, afterKB: after.0, anonBeforeKB: before.1, anonAfterKB: after.1)
    }
}

/// The memory figures, printed by the full run and `--only-memory`.
func memoryFigures() throws {
    let count = quick ? 200 : 1000
    let m = try MemoryBenchmark.perBundle(count: count)
    print("\nMemory per loaded bundle (in process; each with the sandbox of one timeline call)")
    print("\(m.bundles) small bundles loaded: resident memory \(m.beforeKB / 1024) → \(m.afterKB / 1024) MB, \(figure(m.perBundleKB, decimals: 0)) KB a bundle"
          + " (of it anonymous, the heap: \(figure(m.anonPerBundleKB, decimals: 0)) KB)   (issue 18 goal ≤ 150 KB: \(m.perBundleKB <= 150 ? "met" : "MISSED"))")
}

/// The memory figures measured by a process of its own (`--only-memory`):
/// in the full run, the parts before leave freed memory in the heap, which
/// the bundles reuse without growing the resident set (after the plugin
/// day, the figure read 0 KB a bundle).
func memoryFiguresInFreshProcess() throws {
    print(try output(of: thisExecutable, ["--only-memory"] + (quick ? ["--quick"] : [])), terminator: "")
}
