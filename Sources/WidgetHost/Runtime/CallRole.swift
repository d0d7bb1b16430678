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
