import SharedStore

/// What the host gives every call: the store, the clock, the time zone, and
/// the rules it plays by.
public struct HostServices {
    /// Where `store.group(id)` opens groups (nil: scripts get no store).
    public var store: SharedStore?
    public var clock: HostClock
    public var calendar: HostCalendar
    public var policy: HostPolicy

    public init(store: SharedStore? = nil, clock: HostClock = SystemClock(),
                calendar: HostCalendar = .fromEnvironment(), policy: HostPolicy = .standard) {
        self.store = store
        self.clock = clock
        self.calendar = calendar
        self.policy = policy
    }
}

/// What a call is for: each role has its deadline and its grants (rules
/// T1–T3, L1).
public enum CallRole: String, Sendable {
    /// main.lua's first run, to read the declarations.
    case load
    case placeholder
    case snapshot
    case timeline

    func deadline(_ policy: HostPolicy) -> HostPolicy.Deadline {
        switch self {
        case .placeholder: return policy.placeholderDeadline
        case .snapshot: return policy.snapshotDeadline
        case .timeline, .load: return policy.timelineDeadline
        }
    }
}
