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
    private var workers: [String: [Worker]] = [:]
    /// Each idle key's last check-in.
    private var stamps: [String: UInt64] = [:]
    private var queue: [(key: String, stamp: UInt64)] = []
    private var head = 0
    private var clock: UInt64 = 0
    /// Idle workers, over every key.
    private(set) var count = 0

    /// The worker of `key` checked in last, if any.
    mutating func takeLatest(_ key: String) -> Worker? {
        guard var list = workers.removeValue(forKey: key), let worker = list.popLast() else { return nil }
        count -= 1
        if list.isEmpty {
            stamps[key] = nil   // its queue entries are stale now
        } else {
            workers[key] = list
        }
        return worker
    }

    /// Keeps `worker` for `key`, which becomes the most recently used key.
    mutating func add(_ worker: Worker, _ key: String) {
        workers[key, default: []].append(worker)
        count += 1
        clock += 1
        stamps[key] = clock
        queue.append((key, clock))
        compactIfStale()
    }

    /// The first idle worker of the least recently used key.
    mutating func takeOldest() -> Worker? {
        while head < queue.count {
            let (key, stamp) = queue[head]
            guard stamps[key] == stamp, var list = workers.removeValue(forKey: key), !list.isEmpty else {
                head += 1
                continue
            }
            let worker = list.removeFirst()
            count -= 1
            if list.isEmpty {
                stamps[key] = nil
                head += 1
            } else {
                workers[key] = list
            }
            compactIfStale()
            return worker
        }
        return nil
    }

    /// Removes and returns the workers of the keys `matching` says.
    mutating func removeAll(keys matching: (String) -> Bool) -> [Worker] {
        var removed: [Worker] = []
        for key in workers.keys.filter(matching) {
            removed += workers.removeValue(forKey: key) ?? []
            stamps[key] = nil
        }
        count -= removed.count
        if workers.isEmpty {
            queue = []
            head = 0
        } else {
            compactIfStale()
        }
        return removed
    }

    /// Every idle worker, grouped by key.
    var all: [Worker] { workers.values.flatMap { $0 } }

    /// Idle workers of the keys `matching` says.
    func count(keys matching: (String) -> Bool) -> Int {
        workers.reduce(0) { $0 + (matching($1.key) ? $1.value.count : 0) }
    }

    /// Drops the queue's stale entries once they are the larger part, and
    /// the entries already passed once they outnumber the rest.
    private mutating func compactIfStale() {
        let entries = queue.count - head
        if entries > 64, entries > 2 * stamps.count {
            queue = queue[head...].filter { stamps[$0.key] == $0.stamp }
            head = 0
        } else if head > 64, head > entries {
            queue.removeFirst(head)
            head = 0
        }
    }
}
