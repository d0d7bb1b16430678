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

    /// Median ops/s of 10,000 sets and 10,000 gets, from Lua and through the
    /// raw C API, over `rounds` rounds that alternate the two so both see
    /// the same machine load.
    static func compare(rounds: Int) throws -> (raw: (sets: Double, gets: Double), lua: (sets: Double, gets: Double)) {
        let raw = try RawSQLite()
        let lua = try LuaStore()
        var rawSets: [Double] = [], rawGets: [Double] = [], luaSets: [Double] = [], luaGets: [Double] = []
        for _ in 0..<rounds {
            let r = try raw.round()
            let l = try lua.round()
            rawSets.append(r.sets); rawGets.append(r.gets)
            luaSets.append(l.sets); luaGets.append(l.gets)
        }
        return ((median(rawSets), median(rawGets)), (median(luaSets), median(luaGets)))
    }

    /// 10,000 sets (one call, one commit) and 10,000 gets (one call) from Lua.
    final class LuaStore {
        let root = StoreBenchmark.temporaryRoot()
        let state: LuaState
        let binding: StoreBinding
        let sets: LuaFunctionRef
        let gets: LuaFunctionRef

        init() throws {
            state = try LuaState(profile: .sandbox)
            var limits = LuaLimits.sandbox
            limits.timeout = .seconds(30)
            state.options = LuaCallOptions(limits: limits)
            binding = StoreBinding(store: SharedStore(root: root), grants: ["group.bench"], owner: "lunette-bench")
            try binding.install(in: state)
            sets = try state.load("local g = store.group('group.bench'); for i = 1, \(count) do g:set('key' .. i, i) end", name: "sets.lua")
            gets = try state.load("""
                local g, sum = store.group('group.bench'), 0
                for i = 1, \(count) do sum = sum + g:get('key' .. i) end
                assert(sum == \(count * (count + 1) / 2))
                """, name: "gets.lua")
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        func round() throws -> (sets: Double, gets: Double) {
            let setNs = try measureNanoseconds { () throws in
                _ = try binding.perform { () throws(LuaError) -> [LuaValue] in try state.call(sets) }
            }
            let getNs = try measureNanoseconds { () throws in
                _ = try binding.perform { () throws(LuaError) -> [LuaValue] in try state.call(gets) }
            }
            return (Double(count) / (setNs / 1e9), Double(count) / (getNs / 1e9))
        }
    }

    /// The same through the raw C API: WAL, synchronous=NORMAL, a keyed
    /// table, prepared statements; the sets in one transaction (as one
    /// call's commit is), each get a SELECT.
    final class RawSQLite {
        let root = StoreBenchmark.temporaryRoot()
        var db: OpaquePointer?
        var insert: OpaquePointer?
        var select: OpaquePointer?
        var key = [CChar](repeating: 0, count: 32)

        init() throws {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            guard sqlite3_open(root + "/raw.sqlite", &db) == SQLITE_OK else { throw BenchError("sqlite3_open failed") }
            sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE kv (key TEXT PRIMARY KEY NOT NULL, value)", nil, nil, nil)
            sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)", -1, &insert, nil)
            sqlite3_prepare_v2(db, "SELECT value FROM kv WHERE key = ?1", -1, &select, nil)
        }

        deinit {
            sqlite3_finalize(insert)
            sqlite3_finalize(select)
            sqlite3_close(db)
            try? FileManager.default.removeItem(atPath: root)
        }

        private func setKey(_ i: Int) -> Int32 {
            var n: Int32 = 0
            for (j, byte) in "key\(i)".utf8.enumerated() { key[j] = CChar(bitPattern: byte); n += 1 }
            return n
        }

        func round() throws -> (sets: Double, gets: Double) {
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
            return (Double(count) / (setNs / 1e9), Double(count) / (getNs / 1e9))
        }
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
                try state.register(function: "started") { _ in started.signal(); return [] }
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

    /// Milliseconds from another connection's commit returning to an
    /// observer hearing of it (the path another process's writes take).
    static func noticeLatency(samples: Int) throws -> [Double] {
        let root = temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let observed = try SharedStore(root: root).group("group.bench")
        let writer = try SharedStore(root: root).group("group.bench")
        let heard = DispatchSemaphore(value: 0)
        let token = try observed.observe { change in if !change.isLocal { heard.signal() } }
        defer { token.cancel() }
        var out: [Double] = []
        let clock = ContinuousClock()
        for i in 0..<samples {
            try writer.set("k", .integer(Int64(i)))
            let start = clock.now
            heard.wait()
            let (seconds, attoseconds) = (clock.now - start).components
            out.append(Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
            usleep(UInt32.random(in: 1000..<15000))
        }
        return out
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
