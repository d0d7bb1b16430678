import LuaSandbox

/// Where a Live Activity is in its life (rules A3, A4, A5).
public enum ActivityPhase: String, Sendable, CaseIterable {
    /// Running; updatable.
    case active
    /// Past its stale date: still shown and updatable (A4).
    case stale
    /// Ended: still visible until it is dismissed; no more updates (A8).
    case ended
    /// Gone from the screen.
    case dismissed
}

/// An activity's changing content: its state, and when it goes stale.
public struct ActivityContent: Sendable, Equatable {
    public var state: LuaTable
    public var staleDate: Double?

    public init(state: LuaTable, staleDate: Double? = nil) {
        self.state = state
        self.staleDate = staleDate
    }
}

/// A push update an activity received (A6): when it arrived, when it was
/// delivered (later when the budget throttled it), and whether it counted.
public struct PushRecord: Sendable, Equatable {
    public var arrivedAt: Double
    /// Nil while it waits for a slot of the budget.
    public var deliveredAt: Double?
    /// 5 (low, never counted) or 10 (high).
    public var priority: Int
    /// Counted against the budget (priority 10).
    public var counted: Bool
    public var payload: LuaValue

    /// How long the budget held it back.
    public var delay: Double? { deliveredAt.map { $0 - arrivedAt } }
}

/// One Live Activity, as the manager keeps it.
public struct ActivityRecord: Sendable, Equatable {
    public var id: String
    public var type: String
    /// Fixed at start.
    public var attributes: LuaTable
    public var content: ActivityContent
    /// Higher leads (A9).
    public var relevance: Double
    public var startedAt: Double
    /// When it ended (by `finish`, or by the 8-hour limit), if it did.
    public var endedAt: Double?
    /// When it is (or was) dismissed, once it ended (A5).
    public var dismissAt: Double?
    /// Every push it received, in order of arrival (A6).
    public var pushes: [PushRecord] = []

    /// Its phase at time `t`.
    public func phase(at t: Double) -> ActivityPhase {
        if let dismissAt, t >= dismissAt { return .dismissed }
        if endedAt != nil { return .ended }
        if let stale = content.staleDate, t >= stale { return .stale }
        return .active
    }
}
