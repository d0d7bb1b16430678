/// What a call is for: each role has its deadline, its memory cap and its
/// grants (rules T1–T3, L1, L3, L4, C1).
public enum CallRole: String, Sendable, CaseIterable, Codable {
    /// main.lua's first run, to read the declarations.
    case load
    case placeholder
    case snapshot
    case timeline
    /// An intent's `perform` (L3).
    case intent
    /// A query's `suggested` or `entities` (I4), under the intent limits.
    case query
    /// A control's `value` (C2, L4).
    case controlValue
    /// A control's `preview` (C1): synchronous and cheap, like a placeholder.
    case controlPreview
    /// A Live Activity's `updater`, once per event (L2: its own memory cap).
    case activityUpdater

    /// The role's place in `allCases`: an index for per-role arrays.
    var position: Int {
        switch self {
        case .load: return 0
        case .placeholder: return 1
        case .snapshot: return 2
        case .timeline: return 3
        case .intent: return 4
        case .query: return 5
        case .controlValue: return 6
        case .controlPreview: return 7
        case .activityUpdater: return 8
        }
    }

    func deadline(_ policy: HostPolicy) -> HostPolicy.Deadline {
        switch self {
        case .placeholder, .controlPreview: return policy.placeholderDeadline
        case .snapshot: return policy.snapshotDeadline
        case .timeline, .load, .activityUpdater: return policy.timelineDeadline
        case .intent, .query: return HostPolicy.Deadline(soft: policy.intentDeadline, hard: policy.intentDeadline)
        case .controlValue: return policy.controlDeadline
        }
    }

    /// Whether the role's calls may open the store: not main.lua's top
    /// level, not a placeholder (T1), not a control's preview (C1).
    var opensStore: Bool {
        switch self {
        case .load, .placeholder, .controlPreview: return false
        case .snapshot, .timeline, .intent, .query, .controlValue, .activityUpdater: return true
        }
    }

    /// The memory cap of the role's calls, in MB: L2 for updaters, L1 for the rest.
    func memoryMB(_ policy: HostPolicy) -> Int {
        self == .activityUpdater ? policy.activityMemoryMB : policy.widgetMemoryMB
    }
}
