import Foundation
import LuaSandbox
import WidgetHost

/// Live Activities: the cost of one updater call as a host makes it —
/// `updaters.signal` looks for due events and reads the activity (a store
/// transaction each), then runs the updater in a pooled sandbox (fresh
/// globals, main.lua) whose one `activity:update` is checked and committed
/// with the rows of the app group's store — beside an app-side
/// `manager.update` from Swift (one store transaction, no Lua) and the
/// updater's body in a reused trusted state (no store, no checks), so the
/// reader sees what the sandboxed call and the store each cost.
enum ActivityBenchmark {
    static let mainLua = """
        activity { type = "Order", attributes = { n = "string" }, state = { status = "string", count = "int" },
          updater = function(activity, event)
            activity:update({ status = "x", count = (activity.content.state.count or 0) + 1 })
          end }
        """

    struct Figures {
        var updaterMicroseconds: Double
        var appUpdateMicroseconds: Double
        var bareMicroseconds: Double
    }

    /// Median µs per call over `rounds` rounds of `calls` calls each.
    static func measure(calls: Int, rounds: Int) throws -> Figures {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-activities-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try #"{ "id": "com.example.bench", "appGroups": ["group.bench"] }"#.write(toFile: dir + "/bundle.json", atomically: true, encoding: .utf8)
        try mainLua.write(toFile: dir + "/main.lua", atomically: true, encoding: .utf8)
        let bundle = try ScriptBundle.load(dir, calendar: .utc)
        // The virtual clock never moves, so the activity neither ends (A3)
        // nor goes stale; the limit is raised all the same, in case it did.
        var policy = HostPolicy.standard
        policy.activityActiveLimit = 365 * 86_400
        let services = HostServices(store: SharedStore(root: dir + "/store"), clock: VirtualClock(1_795_219_200), calendar: .utc, policy: policy)
        let live = try LiveActivities(bundle: bundle, services: services)
        let id = try live.manager.request(type: "Order", attributes: LuaTable(fields: ["n": "A-1"]),
                                          state: LuaTable(fields: ["status": "placed", "count": 0]), from: .app).get().id
        var count: Int64 = 0, runs: Int64 = 0   // what the store and the updaters must show after each round
        var updater: [Double] = [], app: [Double] = [], bare: [Double] = []
        for _ in 0..<rounds {
            updater.append(try microseconds(calls) {
                try live.updaters.signal(id, name: "tick", payload: ["step": 1])
                if let diagnostic = live.updaters.runs.last?.diagnostic { throw failure("updater: \(diagnostic.summary)") }
            })
            count += Int64(calls)
            runs += Int64(calls)
            try expect(live, id, count: count, runs: runs)
            app.append(try microseconds(calls) {
                count += 1
                try live.manager.update(id, state: LuaTable(fields: ["status": "x", "count": .integer(count)]))
            })
            try expect(live, id, count: count, runs: runs)
            bare.append(try bareMicroseconds(calls: calls))
        }
        return Figures(updaterMicroseconds: median(updater), appUpdateMicroseconds: median(app), bareMicroseconds: median(bare))
    }

    /// Throws unless the store holds `count` and the updater ran `runs` times,
    /// so a benchmark whose calls did nothing prints no figure.
    private static func expect(_ live: LiveActivities, _ id: String, count: Int64, runs: Int64) throws {
        let stored = try live.manager.get(id)?.content.state["count"].integerValue
        guard stored == count, Int64(live.updaters.runs.count) == runs else {
            throw failure("activity count \(stored.map(String.init) ?? "nil") after \(live.updaters.runs.count) updater runs; expected \(count) after \(runs)")
        }
    }

    /// The updater's body in one reused trusted state: no checks, no fresh
    /// globals, the activity a Lua table whose `update` replaces its state.
    private static func bareMicroseconds(calls: Int) throws -> Double {
        let state = try LuaState(profile: .trusted)
        let function = try state.load("""
            local event = ...
            activity = activity or { content = { state = { status = "placed", count = 0 } },
              update = function(self, state) self.content.state = state end }
            activity:update({ status = "x", count = (activity.content.state.count or 0) + 1 })
            """, name: "bare.lua")
        let event = LuaValue.table(LuaTable(fields: ["kind": "event", "name": "tick", "payload": ["step": 1]]))
        return try microseconds(calls) { _ = try state.call(function, [event]) }
    }

    private static func failure(_ message: String) -> NSError {
        NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "activity benchmark: \(message)"])
    }

    private static func microseconds(_ calls: Int, _ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<calls { try body() }
        let elapsed = ContinuousClock.now - start
        return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(calls)
    }
}
