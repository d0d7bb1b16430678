import CoreMetrics
import Logging
import SharedStore

/// What the host gives every call: the store, the clock, the time zone, and
/// the rules it plays by.
public struct HostServices {
    /// Where `store.group(id)` opens groups (nil: scripts get no store).
    public var store: SharedStore?
    public var clock: HostClock
    public var calendar: HostCalendar
    public var policy: HostPolicy
    /// The bundle's Live Activities (nil: scripts get no `activities`).
    public var activities: ActivityManager?
    /// Where scripts' `log` and `print` lines go as they happen, with the
    /// bundle, the role, the kind, a widget's family, the function and the call's number as metadata
    /// (nil: they are only kept with each call's outcome).
    public var scriptLogger: Logger?
    /// Lets the host end the running call from another thread (a task's
    /// cancellation); nil: each runtime has its own (`WidgetRuntime.canceller`).
    public var canceller: CallCanceller?
    /// Where the host's figures go (calls, durations, memory peaks,
    /// reloads, pushes; docs/host.md); nil: `MetricsSystem.factory`.
    public var metrics: MetricsFactory?
    /// The app's own modules for scripts, each behind a capability the
    /// bundle must declare (`HostModule`).
    public var modules: [HostModule] = []
    /// The capabilities the host grants the bundle (a plugin host's policy):
    /// its scripts get the services (`ServiceCapability`) and app modules it
    /// asks for in bundle.json and is granted, and no others. nil (the
    /// default): every service, and the modules it asks for.
    public var grants: Set<String>? = nil
    /// The plugin's quotas and quarantine (a plugin host's): every call is
    /// admitted by it first and counted after; nil: no quotas.
    public var ledger: PluginLedger? = nil
    /// Process isolation (a plugin host's): each call runs in a worker
    /// process of the bundle's own (`BundleWorkers`); nil (the default):
    /// in this process.
    public var workers: BundleWorkers? = nil
    /// Calls read their CPU time even without a ledger (a worker's, for
    /// its host's ledger).
    var measuresCPU = false

    public init(store: SharedStore? = nil, clock: HostClock = SystemClock(),
                calendar: HostCalendar = .fromEnvironment(), policy: HostPolicy = .standard,
                activities: ActivityManager? = nil, modules: [HostModule] = []) {
        self.store = store
        self.clock = clock
        self.calendar = calendar
        self.policy = policy
        self.activities = activities
        self.modules = modules
    }

    /// These services with the Live Activities of `bundle` (in its first
    /// app group of `store`) when it declares any and none are set yet, so
    /// that its scripts have `activities`.
    public func withActivities(of bundle: ScriptBundle) throws(ActivityError) -> HostServices {
        guard activities == nil, !bundle.declarations.activities.isEmpty, let store else { return self }
        var services = self
        services.activities = try ActivityManager(bundle: bundle, store: store, policy: policy, clock: clock)
        return services
    }
}
