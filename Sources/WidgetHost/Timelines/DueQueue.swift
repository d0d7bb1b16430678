/// The instances' next reload times, earliest first: a binary heap that
/// knows where each instance is in it, so a new time for an instance moves
/// its one entry (a reload makes the reloaded widget's time later: one sift
/// down from the top). Ties go to the instance added first.
struct DueQueue {
    private struct Item {
        var at: Double
        var index: Int
        func before(_ other: Item) -> Bool { at < other.at || (at == other.at && index < other.index) }
    }

    private var heap: [Item] = []
    /// Where each instance's entry is in `heap`; -1 when it has none.
    private var positions: [Int] = []

    /// Sets (or clears, with nil or an infinite time) the due time of instance `index`.
    mutating func set(_ index: Int, at: Double?) {
        if positions.count <= index { positions.append(contentsOf: repeatElement(-1, count: index + 1 - positions.count)) }
        let position = positions[index]
        guard let at, at.isFinite else {
            if position >= 0 { remove(at: position) }
            return
        }
        let item = Item(at: at, index: index)
        if position < 0 {
            heap.append(item)
            siftUp(heap.count - 1)
        } else {
            replace(at: position, with: item)
        }
    }

    /// The earliest entry, without removing it.
    func first() -> (index: Int, at: Double)? {
        guard let top = heap.first else { return nil }
        return (top.index, top.at)
    }

    /// Takes the entry at `position` out.
    private mutating func remove(at position: Int) {
        positions[heap[position].index] = -1
        let last = heap.removeLast()
        // The last entry fills the hole and moves up or down from there.
        if position < heap.count { replace(at: position, with: last) }
    }

    /// Puts `item` where the entry at `position` was and moves it up or
    /// down to its place. (The sifts record every position they write.)
    private mutating func replace(at position: Int, with item: Item) {
        let earlier = item.before(heap[position])
        heap[position] = item
        if earlier { siftUp(position) } else { siftDown(position) }
    }

    // The sifts work on the buffers: one uniqueness check each a sift, not
    // bounds and uniqueness checks at every level (a reload makes one sift).
    private mutating func siftUp(_ i: Int) {
        positions.withUnsafeMutableBufferPointer { place in
            heap.withUnsafeMutableBufferPointer { h in
                let item = h[i]
                var child = i
                while child > 0 {
                    let parent = (child - 1) / 2
                    guard item.before(h[parent]) else { break }
                    h[child] = h[parent]
                    place[h[child].index] = child
                    child = parent
                }
                h[child] = item
                place[item.index] = child
            }
        }
    }

    private mutating func siftDown(_ i: Int) {
        positions.withUnsafeMutableBufferPointer { place in
            heap.withUnsafeMutableBufferPointer { h in
                let count = h.count
                let item = h[i]
                var parent = i
                while true {
                    let left = 2 * parent + 1
                    if left >= count { break }
                    let right = left + 1
                    let child = right < count && h[right].before(h[left]) ? right : left
                    guard h[child].before(item) else { break }
                    h[parent] = h[child]
                    place[h[parent].index] = parent
                    parent = child
                }
                h[parent] = item
                place[item.index] = parent
            }
        }
    }
}
