import Foundation
import LuaSandbox
import WidgetHost

/// Process isolation's costs (issue 17): a call in a worker against the
/// same call in this process, a worker's cold start, and a crash until the
/// next call is served. The worker is the release `lunette` built beside
/// this executable (`lunette worker`).
enum WorkerBenchmark {
    static let source = Array("local t = {} for i = 1, 10 do t[i] = i end return #t".utf8)

    static var lunette: String {
        thisExecutable.deletingLastPathComponent().appendingPathComponent("lunette").path
    }

    static func request(_ source: [UInt8], profile: String = "sandbox") -> JSONValue {
        .record([("op", .of("eval")), ("name", .of("bench.lua")), ("source", .base64(source)), ("profile", .of(profile)),
                 ("memoryMB", .of(30)), ("timeoutMs", .of(1000)), ("seed", .of(0))])
    }

    static func microseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
    }

    /// Median µs per call, in a worker and in this process (alternating batches).
    static func call(samples: Int) throws -> (worker: Double, inProcess: Double) {
        let pool = WorkerPool(executable: lunette)
        defer { pool.stop() }
        guard case .success = try pool.call(request(source), deadline: 10) else { throw failure("the worker did not answer") }
        let evaluator = ScriptEvaluator()
        var worker: [Double] = [], local: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<samples {
            var start = clock.now
            guard case .success = try pool.call(request(source), deadline: 10) else { throw failure("the worker did not answer") }
            worker.append(microseconds(clock.now - start))
            start = clock.now
            _ = evaluator.evaluate(source: source, name: "bench.lua")
            local.append(microseconds(clock.now - start))
        }
        return (median(worker), median(local))
    }

    /// Median µs of a ping: a message there and back, with nothing to do.
    static func roundTrip(samples: Int) throws -> Double {
        let worker = try WorkerProcess(executable: lunette)
        defer { worker.stop() }
        let ping = JSONValue.record([("op", .of("ping"))])
        var times: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<samples {
            let start = clock.now
            guard case .success = worker.call(ping, deadline: 10) else { throw failure("the worker did not answer") }
            times.append(microseconds(clock.now - start))
        }
        return median(times)
    }

    /// Median ms from starting a worker to its first answer.
    static func coldStart(samples: Int) throws -> Double {
        var times: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<samples {
            let start = clock.now
            let worker = try WorkerProcess(executable: lunette)
            guard case .success = worker.call(request(source), deadline: 10) else { throw failure("the worker did not answer") }
            times.append(microseconds(clock.now - start) / 1000)
            worker.stop()
        }
        return median(times)
    }

    /// Median ms from a crash reported to the next call answered (a fresh worker).
    static func recovery(samples: Int) throws -> Double {
        let pool = WorkerPool(executable: lunette)
        defer { pool.stop() }
        let abort = Array(#"package.loadlib("libc.so.6", "abort")()"#.utf8)
        var times: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<samples {
            guard case .failure(.died) = try pool.call(request(abort, profile: "trusted"), deadline: 10) else { throw failure("abort did not crash the worker") }
            let start = clock.now
            guard case .success = try pool.call(request(source), deadline: 10) else { throw failure("no answer after the crash") }
            times.append(microseconds(clock.now - start) / 1000)
        }
        return median(times)
    }

    static func failure(_ message: String) -> NSError {
        NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: message])
    }
}

/// The figures, as printed by `lunette-bench` (and `--only-workers`).
func workerFigures() throws {
    let samples = quick ? 50 : 300
    print("\nProcess isolation (lunette eval's call; median of \(samples) alternating samples; lower is better)")
    let call = try WorkerBenchmark.call(samples: samples)
    let goal = 2 * call.inProcess + 30
    print("a 10-item table call".padding(toLength: 44, withPad: " ", startingAt: 0)
          + " in process \(figure(call.inProcess)) µs   in a worker \(figure(call.worker)) µs   ratio \(figure(call.worker / call.inProcess, decimals: 2))"
          + "   (goal ≤ 2× + 30 µs = \(figure(goal)) µs: \(call.worker <= goal ? "met" : "MISSED"))")
    let ping = try WorkerBenchmark.roundTrip(samples: samples)
    print("of which a round trip with nothing to do (ping): \(figure(ping)) µs")
    let cold = try WorkerBenchmark.coldStart(samples: quick ? 5 : 20)
    print("a worker's cold start, to its first answer: \(figure(cold)) ms   (goal ≤ 30 ms: \(cold <= 30 ? "met" : "MISSED"))")
    let recovery = try WorkerBenchmark.recovery(samples: quick ? 5 : 20)
    print("a crash (abort) → the next call answered by a fresh worker: \(figure(recovery)) ms")
    try bundleWorkerFigures()
}
