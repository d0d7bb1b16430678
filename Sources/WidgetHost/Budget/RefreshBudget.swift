/// Refresh budgets (rules B1, B3): counted reloads per key (an instance, a
/// kind or the whole app, by the policy's scope) over a rolling window.
///
/// Each key has a slot, made the first time the key is seen and kept until
/// `release(slot:)` (a key whose window empties keeps its slot, empty): an
/// engine looks a widget's slot up once and then counts by the slot on
/// every reload, with no hashing of the key, and releases it when it
/// forgets the widget.
public struct RefreshBudget: Sendable {
    public let limit: Int
    public let window: Double
    /// Each key's slot.
    private var slots: [String: Int] = [:]
    /// The key of each slot (nil: released, in `free`).
    private var keys: [String?] = []
    /// Times of each slot's counted reloads, oldest first.
    private var stamps: [[Double]] = []
    /// Released slots, made again for new keys.
    private var free: [Int] = []

    public init(limit: Int, window: Double) {
        self.limit = limit
        self.window = window
    }

    /// Keys with a slot (tests).
    var keyCount: Int { slots.count }

    /// `key`'s slot, made when the key is new.
    mutating func slot(_ key: String) -> Int {
        if let slot = slots[key] { return slot }
        if let slot = free.popLast() {
            slots[key] = slot
            keys[slot] = key
            return slot
        }
        slots[key] = keys.count
        keys.append(key)
        stamps.append([])
        return keys.count - 1
    }

    /// Forgets the key of `slot` and its reloads; the slot may then stand
    /// for another key. Only for a slot nothing counts by any more (a
    /// widget's own, once the widget is forgotten).
    mutating func release(slot: Int) {
        guard let key = keys[slot] else { return }
        slots[key] = nil
        keys[slot] = nil
        stamps[slot] = []
        free.append(slot)
    }

    /// Counted reloads of `key` in the window that ends at `t`.
    public func used(_ key: String, at t: Double) -> Int {
        guard let slot = slots[key] else { return 0 }
        return used(slot: slot, at: t)
    }

    /// Counted reloads of slot `slot` in the window that ends at `t`.
    func used(slot: Int, at t: Double) -> Int {
        stamps.withUnsafeBufferPointer { used($0[slot], at: t) }
    }

    /// Of `times` (sorted), those after `t - window`.
    private func used(_ times: [Double], at t: Double) -> Int {
        times.count - Self.expired(times, by: t - window)
    }

    /// How many of `times` (sorted) are at or before `cutoff`.
    private static func expired(_ times: [Double], by cutoff: Double) -> Int {
        var low = 0, high = times.count
        while low < high {
            let mid = (low + high) / 2
            if times[mid] <= cutoff { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The first time at or after `t` when `key` has a free slot.
    public func nextFree(_ key: String, at t: Double) -> Double {
        guard let slot = slots[key] else { return limit > 0 ? t : .infinity }
        return nextFree(slot: slot, at: t)
    }

    /// The first time at or after `t` when slot `slot` has room for a reload.
    func nextFree(slot: Int, at t: Double) -> Double {
        guard limit > 0 else { return .infinity }
        return stamps.withUnsafeBufferPointer { all in
            let times = all[slot]
            guard used(times, at: t) >= limit else { return t }
            // Room comes when the oldest of the last `limit` reloads leaves the window.
            return times[times.count - limit] + window
        }
    }

    /// Records a counted reload of `key` at `t` (times must not go back);
    /// returns `used(key, at: t)` after it.
    @discardableResult
    public mutating func record(_ key: String, at t: Double) -> Int {
        record(slot: slot(key), at: t)
    }

    /// `record(_:at:)` by slot.
    @discardableResult
    mutating func record(slot: Int, at t: Double) -> Int {
        let (limit, window) = (self.limit, self.window)
        return Self.append(t, to: &stamps[slot], limit: limit, window: window)
    }

    /// Appends `t` to `times` in place, forgets what can no longer matter,
    /// and counts what is in the window.
    private static func append(_ t: Double, to times: inout [Double], limit: Int, window: Double) -> Int {
        times.append(t)
        let old = expired(times, by: t - window)
        if times.count > 2 * max(limit, 1), old > 0 {
            times.removeFirst(old)
            return times.count
        }
        return times.count - old
    }

    /// The reloads of `key` still in the window at `t`, oldest first.
    public func window(_ key: String, at t: Double) -> [Double] {
        guard let slot = slots[key] else { return [] }
        return stamps[slot].filter { $0 > t - window }
    }

    /// Every key's reloads still in the window at `t` (keys with none left out).
    public func windows(at t: Double) -> [String: [Double]] {
        var out: [String: [Double]] = [:]
        for (slot, key) in keys.enumerated() {
            guard let key else { continue }
            let times = stamps[slot].filter { $0 > t - window }
            if !times.isEmpty { out[key] = times }
        }
        return out
    }

    /// Replaces `key`'s reloads with `times` (oldest first; empty: none).
    public mutating func restore(_ key: String, _ times: [Double]) {
        if times.isEmpty, slots[key] == nil { return }
        stamps[slot(key)] = times
    }
}
