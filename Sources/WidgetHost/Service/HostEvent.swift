import LuaSandbox

/// A widget of a `WidgetService`: its bundle and its number there. Stable:
/// numbers are never reused, removed widgets keep theirs.
public struct WidgetID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let bundle: String
    public let number: Int

    public init(bundle: String, number: Int) {
        self.bundle = bundle
        self.number = number
    }

    public var description: String { "\(bundle)#\(number)" }
}

/// Something that happened in a `WidgetService`, in the order it happened:
/// what an app shows or logs, without diffing the engine's state.
public enum HostEvent: Sendable, Codable {
    /// A widget's timeline reloaded (or failed to).
    case reloaded(WidgetID, at: Double, reason: ReloadReason, counted: Bool, deferredFrom: Double?, status: CallStatus)
    /// A widget shows another entry from `at` on (nil: nothing, its placeholder failed).
    case shown(WidgetID, at: Double, entry: TimelineEntry?, isPlaceholder: Bool)
    /// A call of a widget failed; the widget keeps its last good timeline (T10).
    case failed(WidgetID, at: Double, role: CallRole, diagnostic: Diagnostic)
    /// A widget's reload waits for the refresh budget (B3) from `at` until `until`.
    case budgetExhausted(WidgetID, at: Double, until: Double)
    /// A widget's wait for the refresh budget ended at `at`: its deferred
    /// reload ran (or an exempt reload answered the request that waited).
    case budgetFreed(WidgetID, at: Double)
    /// A push made through the service arrived over its activity's budget
    /// (A6): it waits for a slot (its updater runs when it is delivered).
    case pushThrottled(bundle: String, activity: String, at: Double)
    /// An intent ran (from a widget, a control or the app).
    case performed(bundle: String, PerformanceRecord)
    /// A Live Activity started, updated or ended.
    case activity(bundle: String, ActivityChange)
    /// A Live Activity entered a phase from `at` on: active again, stale
    /// (its stale date), ended (by the app, a script or the 8-hour limit), dismissed.
    case activityPhase(bundle: String, activity: String, at: Double, phase: ActivityPhase)
    /// A Control Center control shows `value` from `at` on (`read`: why it
    /// was read; nil for a toggle's optimistic flip).
    case controlValue(bundle: String, kind: String, at: Double, value: LuaValue?, read: ControlReloadReason?)
    /// A Live Activity's updater ran (its diagnostic when it failed).
    case updaterRan(bundle: String, UpdaterRun)
    /// A new version of a bundle was checked and swapped in (`WidgetService.update`).
    case bundleUpdated(bundle: String, version: String, previous: String)
    /// A new version of a bundle failed its check: the running version stays.
    case bundleUpdateFailed(bundle: String, version: String?, diagnostics: [Diagnostic])
    /// A bundle was unloaded (`WidgetService.unload`): its widgets removed.
    case bundleUnloaded(bundle: String, widgets: [WidgetID])
    /// A plugin was loaded (`WidgetService.loadPlugin`): its version, where
    /// its calls run, and the capabilities it was granted (sorted).
    case pluginLoaded(plugin: String, version: String, isolation: PluginIsolation, grants: [String])
    /// A plugin went over a quota: its calls are refused from `quarantine.since`
    /// on (its widgets keep their last good entry), for `quarantine.cause`
    /// and `quarantine.reason`, until the host releases it.
    case pluginQuarantined(plugin: String, Quarantine)
    /// The host released a quarantined plugin at `at` (`WidgetService.release`):
    /// its calls run again.
    case pluginReleased(plugin: String, at: Double, quarantine: Quarantine)
}
