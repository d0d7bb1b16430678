import LuaSandbox
import SharedStore

/// Where a Live Activity is in its life (rules A3, A4, A5).
public enum ActivityPhase: String, Sendable, CaseIterable, Codable {
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
    /// The updater has run for it (after its delivery).
    public var handled = false
    /// The activity ended before the budget let it through: never delivered.
    public var dropped = false

    public init(arrivedAt: Double, deliveredAt: Double? = nil, priority: Int, counted: Bool, payload: LuaValue,
                handled: Bool = false, dropped: Bool = false) {
        self.arrivedAt = arrivedAt
        self.deliveredAt = deliveredAt
        self.priority = priority
        self.counted = counted
        self.payload = payload
        self.handled = handled
        self.dropped = dropped
    }

    /// Neither delivered nor dropped yet: it waits for the budget.
    public var isWaiting: Bool { deliveredAt == nil && !dropped }

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
    /// The time of the last tick its updater ran for.
    public var lastTick: Double?
    /// The stale date its updater ran the `stale` event for.
    public var staleHandled: Double?

    public init(id: String, type: String, attributes: LuaTable, content: ActivityContent, relevance: Double, startedAt: Double) {
        self.id = id
        self.type = type
        self.attributes = attributes
        self.content = content
        self.relevance = relevance
        self.startedAt = startedAt
    }

    /// Its phase at time `t`.
    public func phase(at t: Double) -> ActivityPhase {
        Self.phase(at: t, staleDate: content.staleDate, endedAt: endedAt, dismissAt: dismissAt)
    }

    /// The phase at `t` of an activity with these dates (an end counts from
    /// its time on).
    static func phase(at t: Double, staleDate: Double?, endedAt: Double?, dismissAt: Double?) -> ActivityPhase {
        if let dismissAt, t >= dismissAt { return .dismissed }
        if let endedAt, t >= endedAt { return .ended }
        if let stale = staleDate, t >= stale { return .stale }
        return .active
    }
}

// MARK: - Stored form

// How records and pushes are kept in the app group's database
// (`StoredActivities`): one map each, with the activity's plain data as
// store values (docs/activities.md).

extension ActivityRecord {
    /// The record's row (its pushes have rows of their own).
    func storedRecord() throws(StoreError) -> StoreValue {
        var fields: [(String, StoreValue)] = [
            ("type", .string(type)), ("attributes", try Self.stored(attributes, "attributes")),
            ("state", try Self.stored(content.state, "state")), ("relevance", .double(relevance)), ("startedAt", .double(startedAt)),
        ]
        for (name, value) in [("staleDate", content.staleDate), ("endedAt", endedAt), ("dismissAt", dismissAt),
                              ("lastTick", lastTick), ("staleHandled", staleHandled)] {
            if let value { fields.append((name, .double(value))) }
        }
        return .map(StoreMap(fields))
    }

    /// The stored form of a table of plain data (an empty table is a map here).
    static func stored(_ table: LuaTable, _ what: String) throws(StoreError) -> StoreValue {
        if table.array.isEmpty && table.fields.isEmpty { return .map(StoreMap()) }
        return try StoreValue(lua: .table(table), path: what) ?? .map(StoreMap())
    }

    /// The record of row `row`, with its pushes; nil when the row is not one.
    init?(id: String, row: StoreValue, pushes: [StoreValue]) {
        guard let type = row["type"]?.stringValue, case .table(let attributes)? = row["attributes"].map(Self.table),
              case .table(let state)? = row["state"].map(Self.table),
              let relevance = row["relevance"]?.doubleValue, let startedAt = row["startedAt"]?.doubleValue else { return nil }
        self.init(id: id, type: type, attributes: attributes,
                  content: ActivityContent(state: state, staleDate: row["staleDate"]?.doubleValue), relevance: relevance, startedAt: startedAt)
        endedAt = row["endedAt"]?.doubleValue
        dismissAt = row["dismissAt"]?.doubleValue
        lastTick = row["lastTick"]?.doubleValue
        staleHandled = row["staleHandled"]?.doubleValue
        var decoded: [PushRecord] = []
        for push in pushes {
            guard let p = PushRecord(row: push) else { return nil }
            decoded.append(p)
        }
        self.pushes = decoded
    }

    private static func table(_ value: StoreValue) -> LuaValue {
        if case .array(let items) = value, items.isEmpty { return .table(LuaTable()) }
        return value.lua
    }
}

extension PushRecord {
    func storedRow() throws(StoreError) -> StoreValue {
        var fields: [(String, StoreValue)] = [("arrivedAt", .double(arrivedAt)), ("priority", .integer(Int64(priority))),
                                              ("counted", .boolean(counted)), ("handled", .boolean(handled))]
        if let deliveredAt { fields.append(("deliveredAt", .double(deliveredAt))) }
        if dropped { fields.append(("dropped", .boolean(true))) }
        if let payload = try StoreValue(lua: payload, path: "payload") { fields.append(("payload", payload)) }
        return .map(StoreMap(fields))
    }

    init?(row: StoreValue) {
        guard let arrivedAt = row["arrivedAt"]?.doubleValue, let priority = row["priority"]?.integerValue,
              let counted = row["counted"]?.boolValue, let handled = row["handled"]?.boolValue else { return nil }
        self.init(arrivedAt: arrivedAt, deliveredAt: row["deliveredAt"]?.doubleValue, priority: Int(priority), counted: counted,
                  payload: row["payload"]?.lua ?? .nil, handled: handled, dropped: row["dropped"]?.boolValue ?? false)
    }
}
