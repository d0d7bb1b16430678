import LuaSandbox

/// One entry of a timeline: shown from its date on (rule T4).
public struct TimelineEntry: Sendable, Equatable {
    public var date: Double
    /// The whole entry as the script returned it (date included).
    public var content: LuaTable
    /// Rule T12: a score (> 0 is relevant) and how long, in seconds from the date.
    public var relevance: (score: Double, duration: Double)?

    public static func == (a: TimelineEntry, b: TimelineEntry) -> Bool {
        a.date == b.date && a.content == b.content && a.relevance?.score == b.relevance?.score
            && a.relevance?.duration == b.relevance?.duration
    }
}

/// When a widget becomes eligible for its next reload (rule T6).
public enum ReloadPolicy: Sendable, Equatable, CustomStringConvertible {
    /// Once the last entry's date has passed.
    case atEnd
    /// Only reload requests and exempt events reload it.
    case never
    /// From this date on.
    case after(Double)

    public var description: String {
        switch self {
        case .atEnd: return "atEnd"
        case .never: return "never"
        case .after(let t): return "after \(ISODate.format(t))"
        }
    }
}

/// A provider's answer, checked and sorted.
public struct Timeline: Sendable, Equatable, Codable {
    public var entries: [TimelineEntry]
    public var policy: ReloadPolicy

    public init(entries: [TimelineEntry], policy: ReloadPolicy) {
        self.entries = entries
        self.policy = policy
    }

    /// Rule T4: the latest entry dated at or before `t`; the first entry
    /// when all are later; nil when there are none.
    public func entryIndex(at t: Double) -> Int? {
        guard !entries.isEmpty else { return nil }
        var low = 0, high = entries.count   // first entry with date > t
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].date <= t { low = mid + 1 } else { high = mid }
        }
        return max(0, low - 1)
    }

    /// Rule T6 (and T7): when this timeline makes its widget eligible for a
    /// reload; nil for never. A time in the past means now.
    public var eligibleAt: Double? {
        switch policy {
        case .never: return nil
        case .after(let t): return t
        case .atEnd: return entries.last?.date ?? -.infinity
        }
    }
}
