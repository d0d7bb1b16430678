/// The idle workers of a `BundleWorkers` (`Worker` is `WorkerProcess`; a
/// test uses numbers), by key, with the order in which their keys were last
/// checked in (least recently used first), for eviction.
///
/// What a call does — take a worker of its key, give it back, evict the
/// least recently used above `maxIdle` — costs the same whatever the number
/// of keys (amortised): a host with 1,000 plugins pays no more bookkeeping
/// a call than one with 10. (Before, the order was an array searched and
/// shifted on every check-in, and the count summed over every key: at 1,000
/// plugins with a worker kept for each, ≈ 530 k instructions a call in the
/// host instead of ≈ 145 k at 100.)
///
/// The order is a queue of (key, stamp) entries, one pushed at each
/// check-in; an entry is current while its stamp is its key's last one, and
/// older entries are skipped when they reach the front. The queue is
/// compacted when stale entries outnumber current ones.
struct IdleWorkers<Worker> {
    /// An idle key: its workers (oldest first) and its last check-in.
    private struct Key {
        var workers: [Worker]
        var stamp: UInt64
    }
    /// Only keys with idle workers.
    private var keys: [String: Key] = [:]
    private var queue: [(key: String, stamp: UInt64)] = []
    private var head = 0
    private var clock: UInt64 = 0
    /// Idle workers, over every key.
    private(set) var count = 0

    /// The worker of `key` checked in last, if any.
    mutating func takeLatest(_ key: String) -> Worker? {
        guard var entry = keys.removeValue(forKey: key), let worker = entry.workers.popLast() else { return nil }
        count -= 1
        // A key left without workers is gone, so its queue entries are stale.
        if !entry.workers.isEmpty { keys[key] = entry }
        return worker
    }

    /// Keeps `worker` for `key`, which becomes the most recently used key.
    mutating func add(_ worker: Worker, _ key: String) {
        clock += 1
        Self.check(in: worker, at: clock, &keys[key, default: Key(workers: [], stamp: 0)])
        count += 1
        queue.append((key, clock))
        compactIfStale()
    }

    /// The first idle worker of the least recently used key.
    mutating func takeOldest() -> Worker? {
        while head < queue.count {
            let (key, stamp) = queue[head]
            guard keys[key]?.stamp == stamp, var entry = keys.removeValue(forKey: key) else {
                head += 1   // stale: the key was checked in again since, or has no workers left
                continue
            }
            let worker = entry.workers.removeFirst()
            count -= 1
            if entry.workers.isEmpty {
                head += 1
            } else {
                keys[key] = entry
            }
            compactIfStale()
            return worker
        }
        return nil
    }

    /// Removes and returns the workers of the keys `matching` says.
    mutating func removeAll(keys matching: (String) -> Bool) -> [Worker] {
        var removed: [Worker] = []
        for key in keys.keys.filter(matching) {
            removed += keys.removeValue(forKey: key)?.workers ?? []
        }
        count -= removed.count
        if keys.isEmpty {
            queue = []
            head = 0
        } else {
            compactIfStale()
        }
        return removed
    }

    /// Every idle worker, grouped by key.
    var all: [Worker] { keys.values.flatMap(\.workers) }

    /// Idle workers of the keys `matching` says.
    func count(keys matching: (String) -> Bool) -> Int {
        keys.reduce(0) { $0 + (matching($1.key) ? $1.value.workers.count : 0) }
    }

    /// `worker` joins its key's entry (in place), stamped `stamp`.
    private static func check(in worker: Worker, at stamp: UInt64, _ entry: inout Key) {
        entry.workers.append(worker)
        entry.stamp = stamp
    }

    /// Drops the queue's stale entries once they are the larger part, and
    /// the entries already passed once they outnumber the rest.
    private mutating func compactIfStale() {
        let entries = queue.count - head
        if entries > 64, entries > 2 * keys.count {
            queue = queue[head...].filter { keys[$0.key]?.stamp == $0.stamp }
            head = 0
        } else if head > 64, head > entries {
            queue.removeFirst(head)
            head = 0
        }
    }
}
