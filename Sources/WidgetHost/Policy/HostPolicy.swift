/// Every number of the widget-system rules the host emulates
/// (docs/rules.md), with its default. Times are in
/// seconds, sizes in bytes unless the name says otherwise.
public struct HostPolicy: Sendable, Equatable, Codable {
    /// A soft deadline (over it, the call draws a warning) and a hard one
    /// (at it, the call is ended).
    public struct Deadline: Sendable, Equatable, Codable {
        public var soft: Double
        public var hard: Double
        public init(soft: Double, hard: Double) {
            self.soft = soft
            self.hard = hard
        }
    }

    /// T1: placeholder — soft 50 ms, hard 1 s.
    public var placeholderDeadline = Deadline(soft: 0.05, hard: 1)
    /// T2: snapshot — soft 1 s, hard 5 s.
    public var snapshotDeadline = Deadline(soft: 1, hard: 5)
    /// T3: timeline — soft 5 s, hard 30 s (our choice; Apple gives no number).
    public var timelineDeadline = Deadline(soft: 5, hard: 30)
    /// T8: reloads of one widget are at least this far apart; entries closer draw a warning.
    public var minimumReloadInterval: Double = 300
    /// T9: a timeline with more entries than this draws a warning…
    public var entriesWarning = 100
    /// …and one with more than this is rejected.
    public var entriesLimit = 400
    /// T9: encoded bytes of a timeline that draw a warning…
    public var timelineBytesWarning = 1 << 20
    /// …and that are rejected.
    public var timelineBytesLimit = 10 << 20
    /// B1: counted reloads per window.
    public var budget = 40
    /// B1: the rolling window of the budget.
    public var budgetWindow: Double = 86_400
    /// B1: what shares one budget.
    public var budgetScope: BudgetScope = .instance
    /// B5: developer mode: no budget, no 5-minute floor.
    public var developerMode = false
    /// Not a device rule: the most wall time any call may take, in seconds,
    /// whatever its role's deadline (nil: none). Simulations and checks set
    /// it (2 s by default) so that a hung provider costs seconds, not the
    /// device's 30 s per reload; a call it ends is a timeout whose message
    /// says so and names the device's limit.
    public var callCap: Double?
    /// L1: memory cap of a widget, intent or control call, in MB.
    public var widgetMemoryMB = 30
    /// L2: memory cap of a Live Activity updater, in MB.
    public var activityMemoryMB = 50
    /// L3: intent perform deadline.
    public var intentDeadline: Double = 30
    /// L4: control value deadline.
    public var controlDeadline = Deadline(soft: 1, hard: 5)
    /// A6: counted push updates per activity per hour (priority-5 pushes do not count).
    public var activityPushBudget = 10
    /// A6: the same for a bundle whose bundle.json asks for frequent
    /// updates (`"activities": { "frequentUpdates": true }`, as an app's
    /// NSSupportsLiveActivitiesFrequentUpdates). Apple gives no number;
    /// one a minute is our choice.
    public var activityFrequentPushBudget = 60
    /// A1: attributes and content state, encoded together, in bytes.
    public var activityPayloadBytes = 4096
    /// A2: concurrent active (or stale) activities per bundle.
    public var maxActiveActivities = 5
    /// A3: an activity is active at most this long, then the host ends it.
    public var activityActiveLimit: Double = 8 * 3600
    /// A3, A5: an ended activity stays visible at most this long, then it is dismissed.
    public var activityDismissLimit: Double = 4 * 3600
    /// How long the store keeps a dismissed activity (then `get` no longer
    /// finds it and its rows are deleted). Ours: ActivityKit forgets them.
    public var activityRetention: Double = 7 * 86_400
    /// Bytes of print and log output per call (the sandbox's cap).
    public var outputBytes = 64 << 10

    public init() {}

    /// The defaults.
    public static let standard = HostPolicy()
}

/// What one refresh budget covers (rule B1).
public enum BudgetScope: String, Sendable, CaseIterable, Codable {
    /// Each configured widget instance has its own budget (the default).
    case instance
    /// All instances of a widget kind share one.
    case kind
    /// Every widget of the bundle shares one.
    case app
}
