import Foundation
import LuaSandbox

/// The cost of the sandbox: the same CPU-bound Lua in the sandbox profile
/// with every limit on, beside the trusted profile with none; and how far
/// past their deadline hostile scripts run.
enum SandboxBenchmark {
    static let fib = """
        local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
        return fib(27)
        """

    /// find, gsub and format over generated lines.
    static let strings = """
        local words = { "alpha", "beta", "gamma", "delta", "epsilon" }
        local total = 0
        for i = 1, 20000 do
          local line = string.format("%05d %s=%d; %s", i, words[i % 5 + 1], i * 7, words[(i * 3) % 5 + 1])
          local s, e, key, value = line:find("(%a+)=(%d+)")
          local cleaned, n = line:gsub("%s+", "_")
          total = total + e + #key + tonumber(value) % 10 + #cleaned + n
        end
        return total
        """

    /// Median ms of `source` run `rounds` times, each call in the given state.
    static func milliseconds(_ source: String, profile: SandboxProfile, limits: LuaLimits, rounds: Int) throws -> (Double, LuaValue) {
        let state = try LuaState(profile: profile)
        state.options = LuaCallOptions(limits: limits)
        let chunk = try state.load(source, name: "bench.lua")
        var samples: [Double] = []
        var result: LuaValue = .nil
        for round in -1..<rounds {
            let ns = try measureNanoseconds { result = try state.call(chunk).first ?? .nil }
            if round >= 0 { samples.append(ns / 1e6) }
        }
        return (median(samples), result)
    }

    /// Sandbox (deadline, memory cap, output cap; plus an instruction budget
    /// when `budget`) against trusted (no limits), alternating rounds.
    static func compare(_ source: String, rounds: Int, budget: Bool = false) throws -> (sandbox: Double, trusted: Double) {
        let limits = LuaLimits(memory: 30 << 20, timeout: .seconds(60), instructions: budget ? 1 << 40 : nil, output: 64 << 10)
        var sandbox: [Double] = [], trusted: [Double] = []
        for _ in 0..<3 {
            let (s, a) = try milliseconds(source, profile: .sandbox, limits: limits, rounds: rounds)
            let (t, b) = try milliseconds(source, profile: .trusted, limits: .none, rounds: rounds)
            precondition(a == b, "sandbox and trusted disagree: \(a) vs \(b)")
            sandbox.append(s)
            trusted.append(t)
        }
        return (median(sandbox), median(trusted))
    }

    /// Hostile scripts of our own (one per kind) plus ../shared/attacks when
    /// present: the worst time past the deadline, in ms, and which script.
    static func worstOvershoot(deadline: Duration) throws -> (ms: Double, script: String, count: Int) {
        var scripts: [(String, String)] = [
            ("lua loop", "while true do end"),
            ("pcall retry", "while true do pcall(function() while true do end end) end"),
            ("xpcall handler", "while true do xpcall(error, function() while true do end end) end"),
            ("coroutines", "while true do coroutine.resume(coroutine.create(function() while true do end end)) end"),
            ("__close", "do local x <close> = setmetatable({}, { __close = function() while true do end end }); error('x') end"),
            ("pattern", "string.find(string.rep('a', 30), string.rep('.-', 12) .. 'b')"),
            ("plain find", "local s = string.rep('a', 1e6); while true do s:find(string.rep('a', 1000) .. 'b', 1, true) end"),
            ("table.move", "table.move({}, 1, 1e15, 2)"),
            ("table.sort", "table.sort(setmetatable({}, { __len = function() return 2^31 - 2 end, __index = function() return 1 end, __newindex = rawequal }), rawequal)"),
            ("memory retry", "while true do pcall(function() local t = {}; for i = 1, math.maxinteger do t[i] = i end end) end"),
        ]
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let shared = root.deletingLastPathComponent().appendingPathComponent("shared/attacks")
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: shared.path)) ?? []).sorted() where name.hasSuffix(".lua") {
            if let source = try? String(contentsOf: shared.appendingPathComponent(name), encoding: .utf8) {
                scripts.append((name, source))
            }
        }
        var worst = -Double.infinity, worstName = ""
        for (name, source) in scripts {
            let state = try LuaState(profile: .sandbox)
            state.logHandler = { _, _ in }
            state.options = LuaCallOptions(limits: LuaLimits(memory: 30 << 20, timeout: deadline, output: 64 << 10))
            let clock = ContinuousClock()
            let start = clock.now
            _ = try? state.run(source, name: name)
            let (s, atto) = (clock.now - start - deadline).components
            let over = Double(s) * 1000 + Double(atto) / 1e15
            if over > worst { (worst, worstName) = (over, name) }
        }
        return (worst, worstName, scripts.count)
    }
}
