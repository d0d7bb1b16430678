import Testing
@testable import WidgetHost

/// `IdleWorkers` keeps `BundleWorkers`' idle workers with O(1) bookkeeping a
/// call; these tests hold it to the simple model it replaced (a dictionary
/// of lists and an array of keys, least recently used first), operation by
/// operation.
@Suite("Idle workers and their eviction order")
struct IdleWorkersTests {
    /// The former bookkeeping, kept here as the reference.
    struct Model {
        var idle: [String: [Int]] = [:]
        var order: [String] = []

        var count: Int { idle.values.reduce(0) { $0 + $1.count } }

        mutating func takeLatest(_ key: String) -> Int? {
            guard let worker = idle[key]?.popLast() else { return nil }
            if idle[key]?.isEmpty == true { idle[key] = nil; order.removeAll { $0 == key } }
            return worker
        }

        mutating func add(_ worker: Int, _ key: String) {
            idle[key, default: []].append(worker)
            order.removeAll { $0 == key }
            order.append(key)
        }

        mutating func takeOldest() -> Int? {
            while let oldest = order.first {
                if let first = idle[oldest]?.first {
                    idle[oldest]?.removeFirst()
                    if idle[oldest]?.isEmpty ?? true { idle[oldest] = nil; order.removeFirst() }
                    return first
                }
                idle[oldest] = nil
                order.removeFirst()
            }
            return nil
        }

        mutating func removeAll(keys matching: (String) -> Bool) -> [Int] {
            let keys = idle.keys.filter(matching)
            order.removeAll(where: matching)
            return keys.flatMap { idle.removeValue(forKey: $0) ?? [] }
        }
    }

    @Test func evictsLeastRecentlyUsedKeysFirstAndTakesEachKeysLatestWorker() {
        var idle = IdleWorkers<Int>()
        idle.add(1, "a"); idle.add(2, "b"); idle.add(3, "a")   // a is now the latest key
        #expect(idle.count == 3)
        #expect(idle.takeOldest() == 2, "b was checked in longest ago")
        #expect(idle.takeLatest("a") == 3)
        #expect(idle.takeOldest() == 1)
        #expect(idle.takeOldest() == nil)
        #expect(idle.count == 0)
    }

    @Test func agreesWithTheSimpleModelOverManyRandomOperations() {
        var generator = SplitMix(seed: 18)
        for round in 0..<20 {
            var idle = IdleWorkers<Int>(), model = Model()
            let keys = (0..<(1 + round * 7)).map { "plugin\($0)@1/x" }
            var next = 0
            for step in 0..<3_000 {
                let key = keys[Int(generator.next() % UInt64(keys.count))]
                switch generator.next() % 10 {
                case 0...3:
                    next += 1
                    idle.add(next, key)
                    model.add(next, key)
                case 4...6:
                    #expect(idle.takeLatest(key) == model.takeLatest(key), "round \(round) step \(step)")
                case 7, 8:
                    #expect(idle.takeOldest() == model.takeOldest(), "round \(round) step \(step)")
                default:
                    let prefix = String(key.prefix(7))
                    #expect(idle.removeAll(keys: { $0.hasPrefix(prefix) }).sorted() == model.removeAll(keys: { $0.hasPrefix(prefix) }).sorted(),
                            "round \(round) step \(step)")
                }
                #expect(idle.count == model.count, "round \(round) step \(step)")
            }
            #expect(idle.all.sorted() == model.idle.values.flatMap { $0 }.sorted())
            #expect(idle.count(keys: { $0.hasPrefix("plugin1") }) == model.idle.filter { $0.key.hasPrefix("plugin1") }.values.reduce(0) { $0 + $1.count })
            // Drained oldest first, the two agree to the end.
            while let oldest = model.takeOldest() { #expect(idle.takeOldest() == oldest) }
            #expect(idle.takeOldest() == nil)
        }
    }

    /// A small deterministic generator (SplitMix64), so a failure replays.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
