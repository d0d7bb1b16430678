/// The instances' next reload times, earliest first: a binary heap with
/// lazy deletion (a newer time for an instance makes its older entries
/// stale; they are skipped when they surface). Ties go to the instance
/// added first.
struct DueQueue {
    private struct Item {
        var at: Double
        var index: Int
        var version: Int
        func before(_ other: Item) -> Bool { at < other.at || (at == other.at && index < other.index) }
    }

    private var heap: [Item] = []
    /// The current version of each instance's entry; others are stale.
    private var versions: [Int] = []

    /// Sets (or clears, with nil or an infinite time) the due time of instance `index`.
    mutating func set(_ index: Int, at: Double?) {
        while versions.count <= index { versions.append(0) }
        versions[index] += 1
        guard let at, at.isFinite else { return }
        heap.append(Item(at: at, index: index, version: versions[index]))
        siftUp(heap.count - 1)
        if heap.count > 4 * versions.count + 64 { compact() }
    }

    /// The earliest live entry, without removing it.
    mutating func first() -> (index: Int, at: Double)? {
        while let top = heap.first {
            if top.version == versions[top.index] { return (top.index, top.at) }
            removeFirst()
        }
        return nil
    }

    private mutating func removeFirst() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    /// Drops stale entries (they pile up when times change often).
    private mutating func compact() {
        heap = heap.filter { $0.version == versions[$0.index] }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    // The sifts work on the heap's buffer: one uniqueness check a sift, not
    // bounds and uniqueness checks at every level (a reload makes one of each).
    private mutating func siftUp(_ i: Int) {
        heap.withUnsafeMutableBufferPointer { h in
            var child = i
            while child > 0 {
                let parent = (child - 1) / 2
                guard h[child].before(h[parent]) else { return }
                h.swapAt(child, parent)
                child = parent
            }
        }
    }

    private mutating func siftDown(_ i: Int) {
        heap.withUnsafeMutableBufferPointer { h in
            let count = h.count
            var parent = i
            while true {
                let left = 2 * parent + 1, right = left + 1
                var best = parent
                if left < count, h[left].before(h[best]) { best = left }
                if right < count, h[right].before(h[best]) { best = right }
                if best == parent { return }
                h.swapAt(parent, best)
                parent = best
            }
        }
    }
}
