import CSQLite
import Foundation
import WidgetHost

/// The store: gets and sets from Lua beside the same work through the raw
/// sqlite3 C API, and how long the app waits to write while a script runs.
enum StoreBenchmark {
    static let count = 10_000

    /// A fresh store root; removed by the caller.
    static func temporaryRoot() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-store-\(UUID().uuidString)").path
    }

    /// Median ops/s of 10,000 sets (one call, one commit) and 10,000 gets
    /// (one call) from Lua, over `rounds` rounds.
    static func lua(rounds: Int) throws -> (sets: Double, gets: Double) {
        let root = temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let state = try LuaState(profile: .sandbox)
        var limits = LuaLimits.sandbox
        limits.timeout = .seconds(30)
        state.options = LuaCallOptions(limits: limits)
        let binding = StoreBinding(store: SharedStore(root: root), grants: ["group.bench"], owner: "lunette-bench")
        try binding.install(in: state)
        let sets = try state.load("local g = store.group('group.bench'); for i = 1, \(count) do g:set('key' .. i, i) end", name: "sets.lua")
        let gets = try state.load("""
            local g, sum = store.group('group.bench'), 0
            for i = 1, \(count) do sum = sum + g:get('key' .. i) end
            assert(sum == \(count * (count + 1) / 2))
            """, name: "gets.lua")
        var setRates: [Double] = [], getRates: [Double] = []
        for _ in 0..<rounds {
            let setNs = try measureNanoseconds { () throws in
                _ = try binding.perform { () throws(LuaError) -> [LuaValue] in try state.call(sets) }
            }
            let getNs = try measureNanoseconds { () throws in
                _ = try binding.perform { () throws(LuaError) -> [LuaValue] in try state.call(gets) }
            }
            setRates.append(Double(count) / (setNs / 1e9))
            getRates.append(Double(count) / (getNs / 1e9))
        }
        return (median(setRates), median(getRates))
    }

    /// The same through the raw C API: WAL, synchronous=NORMAL, a keyed
    /// table, prepared statements; the sets in one transaction (as one
    /// call's commit is), each get a SELECT.
    static func raw(rounds: Int) throws -> (sets: Double, gets: Double) {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var db: OpaquePointer?
        guard sqlite3_open(root + "/raw.sqlite", &db) == SQLITE_OK else { throw BenchError("sqlite3_open failed") }
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE kv (key TEXT PRIMARY KEY NOT NULL, value)", nil, nil, nil)
        var insert: OpaquePointer?, select: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)", -1, &insert, nil)
        sqlite3_prepare_v2(db, "SELECT value FROM kv WHERE key = ?1", -1, &select, nil)
        defer { sqlite3_finalize(insert); sqlite3_finalize(select) }
        var key = [CChar](repeating: 0, count: 32)
        func setKey(_ i: Int) -> Int32 {
            let text = "key\(i)"
            var n: Int32 = 0
            for (j, byte) in text.utf8.enumerated() { key[j] = CChar(bitPattern: byte); n += 1 }
            return n
        }
        var setRates: [Double] = [], getRates: [Double] = []
        for _ in 0..<rounds {
            let setNs = measureNanoseconds {
                sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
                for i in 1...count {
                    let n = setKey(i)
                    sqlite3_bind_text(insert, 1, key, n, nil)
                    sqlite3_bind_int64(insert, 2, Int64(i))
                    sqlite3_step(insert)
                    sqlite3_reset(insert)
                }
                sqlite3_exec(db, "COMMIT", nil, nil, nil)
            }
            var sum: Int64 = 0
            let getNs = measureNanoseconds {
                for i in 1...count {
                    let n = setKey(i)
                    sqlite3_bind_text(select, 1, key, n, nil)
                    if sqlite3_step(select) == SQLITE_ROW { sum += sqlite3_column_int64(select, 0) }
                    sqlite3_reset(select)
                }
            }
            guard sum == Int64(count * (count + 1) / 2) else { throw BenchError("raw gets read \(sum)") }
            setRates.append(Double(count) / (setNs / 1e9))
            getRates.append(Double(count) / (getNs / 1e9))
        }
        return (median(setRates), median(getRates))
    }

    /// App-side `set` latencies (ms) while a script call of `seconds` runs on
    /// another thread (it stages writes, computes, then commits), and the
    /// same loop with no script running.
    static func appLatency(seconds: Double) throws -> (busy: [Double], idle: [Double], callStatus: String) {
        let root = temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let app = try SharedStore(root: root).group("group.bench")
        try app.set("seed", 1)
        let idle = try samples(app, for: seconds / 4)
        let done = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var status = "not run"
        let script = Thread {
            defer { done.signal() }
            do {
                let state = try LuaState(profile: .sandbox)
                var limits = LuaLimits.sandbox
                limits.timeout = .seconds(seconds * 3)
                state.options = LuaCallOptions(limits: limits)
                let binding = StoreBinding(store: SharedStore(root: root), grants: ["group.bench"], owner: "lunette-bench")
                state.register(function: "started") { _ in started.signal(); return [] }
                try binding.install(in: state)
                let chunk = try state.load("""
                    local g = store.group('group.bench')
                    for i = 1, 100 do g:set('script' .. i, i) end
                    g:update('seed', function(n) return n + 1 end)
                    started()
                    local t = os.clock()
                    while os.clock() - t < \(seconds) do end
                    """, name: "long.lua")
                _ = try binding.perform { () throws(LuaError) -> [LuaValue] in try state.call(chunk) }
                status = "ok"
            } catch {
                status = "\(error)"
            }
        }
        script.stackSize = LuaState.minimumStackSize + (64 << 10)
        script.start()
        started.wait()
        let busy = try samples(app, for: seconds * 0.9)
        done.wait()
        return (busy, idle, status)
    }

    /// One app `set` every millisecond for `seconds`; each one's latency in ms.
    private static func samples(_ app: StoreGroup, for seconds: Double) throws -> [Double] {
        var out: [Double] = []
        let clock = ContinuousClock()
        let end = clock.now + .milliseconds(Int(seconds * 1000))
        var i = 0
        while clock.now < end {
            i += 1
            let key = "app\(i)"
            out.append(try measureNanoseconds { try app.set(key, .integer(Int64(i))) } / 1e6)
            usleep(1000)
        }
        return out
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The p-th percentile (0...100) of `samples`.
func percentile(_ samples: [Double], _ p: Double) -> Double {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, Int((p / 100 * Double(sorted.count - 1)).rounded(.up)))
    return sorted[index]
}
