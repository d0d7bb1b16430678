import Foundation
import LuaSandbox
import WidgetHost

/// Intents: the cost of one `perform` (parameters checked, fresh globals,
/// the store update committed) beside a provider call of the same bundle
/// and the bare function in a reused trusted state.
enum IntentBenchmark {
    static let mainLua = """
        intent { id = "Complete", parameters = { { name = "count", type = "int", default = 1 } },
          perform = function(params, ctx)
            local n = store.group("group.bench"):update("remaining", function(old) return (old or 1000000) - params.count end)
            return { dialog = "Done", remaining = n }
          end }
        widget { kind = "Count", placeholder = function() return { n = 0 } end,
          timeline = function(ctx)
            return { entries = { { date = clock.now(), n = store.group("group.bench"):get("remaining") or 0 } } }
          end }
        """

    struct Figures {
        var performMicroseconds: Double
        var providerMicroseconds: Double
        var bareMicroseconds: Double
    }

    /// Median µs per call over `rounds` rounds of `calls` calls each.
    static func measure(calls: Int, rounds: Int) throws -> Figures {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-intents-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try #"{ "id": "com.example.bench", "appGroups": ["group.bench"] }"#.write(toFile: dir + "/bundle.json", atomically: true, encoding: .utf8)
        try mainLua.write(toFile: dir + "/main.lua", atomically: true, encoding: .utf8)
        let bundle = try ScriptBundle.load(dir, calendar: .utc)
        let services = HostServices(store: SharedStore(root: dir + "/store"), clock: VirtualClock(1_795_219_200), calendar: .utc)
        let runtime = WidgetRuntime(bundle: bundle, services: services)
        let engine = TimelineEngine(runtime: runtime)
        let widget = try runtime.configuration(kind: "Count")
        var perform: [Double] = [], provider: [Double] = [], bare: [Double] = []
        for _ in 0..<rounds {
            perform.append(try microseconds(calls) {
                let performance = try engine.intents.perform("Complete", parameters: ["count": 1])
                guard performance.succeeded else { throw NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(performance.outcome.diagnostic?.text ?? "")"]) }
            })
            provider.append(try microseconds(calls) {
                guard runtime.timeline(widget).value != nil else { throw NSError(domain: "lunette-bench", code: 1) }
            })
            bare.append(try bareMicroseconds(calls: calls))
        }
        return Figures(performMicroseconds: median(perform), providerMicroseconds: median(provider), bareMicroseconds: median(bare))
    }

    /// The perform's body in one reused trusted state: no checks, no fresh
    /// globals, the store replaced by a Lua variable.
    private static func bareMicroseconds(calls: Int) throws -> Double {
        let state = try LuaState(profile: .trusted)
        let function = try state.load("""
            remaining = (remaining or 1000000) - 1
            return { dialog = "Done", remaining = remaining }
            """, name: "bare.lua")
        return try microseconds(calls) { _ = try state.call(function, [.table(LuaTable(fields: ["count": 1]))]) }
    }

    private static func microseconds(_ calls: Int, _ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<calls { try body() }
        let elapsed = ContinuousClock.now - start
        return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(calls)
    }
}
