/// Refresh budgets (rules B1, B3): counted reloads per key (an instance, a
/// kind or the whole app, by the policy's scope) over a rolling window.
public struct RefreshBudget: Sendable {
    public let limit: Int
    public let window: Double
    /// Times of counted reloads by key, oldest first.
    private var stamps: [String: [Double]] = [:]

    public init(limit: Int, window: Double) {
        self.limit = limit
        self.window = window
    }

    /// Counted reloads of `key` in the window that ends at `t`.
    public func used(_ key: String, at t: Double) -> Int {
        guard let times = stamps[key] else { return 0 }
        return used(times, at: t)
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
        guard limit > 0 else { return .infinity }
        // One lookup of the key (this runs on every reload).
        guard let times = stamps[key], used(times, at: t) >= limit else { return t }
        // The slot frees when the oldest of the last `limit` reloads leaves the window.
        return times[times.count - limit] + window
    }

    /// Records a counted reload of `key` at `t` (times must not go back);
    /// returns `used(key, at: t)` after it.
    @discardableResult
    public mutating func record(_ key: String, at t: Double) -> Int {
        let (limit, window) = (self.limit, self.window)
        return Self.append(t, to: &stamps[key, default: []], limit: limit, window: window)
    }

    /// Appends `t` to `times` in place (one lookup of the key in `record`),
    /// forgets what can no longer matter, and counts what is in the window.
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
        (stamps[key] ?? []).filter { $0 > t - window }
    }

    /// Every key's reloads still in the window at `t` (keys with none left out).
    public func windows(at t: Double) -> [String: [Double]] {
        var out: [String: [Double]] = [:]
        for key in stamps.keys {
            let times = window(key, at: t)
            if !times.isEmpty { out[key] = times }
        }
        return out
    }

    /// Replaces `key`'s reloads with `times` (oldest first; empty: none).
    public mutating func restore(_ key: String, _ times: [Double]) {
        stamps[key] = times.isEmpty ? nil : times
    }
}
