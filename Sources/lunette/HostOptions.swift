import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem
import WidgetHost

/// Options shared by the commands that run a bundle: the rules the host
/// plays by, the time zone and the store.
struct HostOptions: ParsableArguments {
    @Option(help: ArgumentHelp("A JSON file of host-policy fields to change (see docs/rules.md).", valueName: "file"))
    var policy: String?

    @Option(help: ArgumentHelp("Counted reloads allowed per rolling 24 h (default 40).", valueName: "n"))
    var budget: Int?

    @Option(name: .customLong("budget-scope"), help: ArgumentHelp("What shares a budget: instance, kind or app (default instance).", valueName: "scope"))
    var budgetScope: String?

    @Flag(name: .customLong("dev"), help: "Developer mode: no refresh budget and no 5-minute floor (rule B5).")
    var developerMode = false

    @Option(help: ArgumentHelp("Time zone (IANA name, e.g. Europe/Paris) for days and local times; default $TZ, else the system's.", valueName: "zone"))
    var tz: String?

    @Option(name: .customLong("plugin-policy"), help: ArgumentHelp("Run the bundle as a plugin under this plugin policy (docs/plugins.md): it gets only the capabilities the policy grants it.", valueName: "file"))
    var pluginPolicy: String?

    @Option(help: ArgumentHelp("Where the bundle's calls run: inprocess (this process) or process (worker processes of its own, which a crash cannot take down with it; docs/plugins.md).", valueName: "mode"))
    var isolation: Isolation = .inprocess

    func validate() throws {
        if let budget, budget < 0 { throw ValidationError("--budget must not be negative, not \(budget)") }
        if let budgetScope, BudgetScope(rawValue: budgetScope) == nil {
            throw ValidationError("--budget-scope must be instance, kind or app, not '\(budgetScope)'")
        }
        if let tz, HostCalendar(timeZoneNamed: tz) == nil { throw ValidationError("--tz \(tz): not a known IANA time zone") }
    }

    /// The policy: defaults, then --policy, then the flags.
    func hostPolicy(over base: HostPolicy = .standard) throws -> HostPolicy {
        var policy = base
        if let path = self.policy {
            do { policy = try HostPolicy.load(path, over: policy) } catch { throw CLIFailure(error.description) }
        }
        applyFlags(to: &policy)
        return policy
    }

    /// The flags win over policy files and scenarios.
    func applyFlags(to policy: inout HostPolicy) {
        if let budget { policy.budget = budget }
        if let budgetScope, let scope = BudgetScope(rawValue: budgetScope) { policy.budgetScope = scope }
        if developerMode { policy.developerMode = true }
    }

    /// The host's calendar. With --tz, TZ is set too, so os.date agrees with clock.
    func calendar() -> HostCalendar {
        guard let tz, let calendar = HostCalendar(timeZoneNamed: tz) else { return .fromEnvironment() }
        useForLocalTime(calendar)
        return calendar
    }
}

/// Makes `calendar`'s zone the process's local time (`TZ`: the zone's name,
/// or a POSIX rule for a fixed offset, which libc would read with the
/// opposite sign), so that Lua's `os.date`, libc's, agrees with `clock`.
func useForLocalTime(_ calendar: HostCalendar) {
    setenv("TZ", calendar.posixTZ, 1)
    tzset()
}

/// `--call-cap`: the wall time any call may take in a simulation or a
/// check (a hung provider costs seconds, not the device's 30 s per reload).
struct CallCapOption: ParsableArguments {
    @Option(name: .customLong("call-cap"), help: ArgumentHelp("The most wall time any call may take, in seconds (default 2; 0: the device's deadlines). A call it ends is a timeout that says so.", valueName: "seconds"))
    var callCap: Double = 2

    func validate() throws {
        guard callCap.isFinite, callCap >= 0 else { throw ValidationError("--call-cap must be 0 or more seconds, not \(callCap)") }
    }

    /// Applies the cap to `policy`.
    func apply(to policy: inout HostPolicy) {
        policy.callCap = callCap > 0 ? callCap : nil
    }
}

/// `--store-dir`: the real store, for the commands that run a bundle's
/// calls once (`timeline`, `check`, `intent`, `query`, `control`).
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("store-dir"), help: ArgumentHelp("Store root (default: $LUNETTE_STORE, else ~/.lunette/store).", valueName: "dir"))
    var storeDir: String?

    var store: SharedStore { SharedStore(root: storeDir) }
}

extension HostOptions {
    /// What a one-off run of `bundle` gives its calls: `store`, a virtual
    /// clock at `start` (default: now, to the second), the calendar, the
    /// policy, and the bundle's Live Activities when it declares any.
    func services(of bundle: ScriptBundle, store: SharedStore, calendar: HostCalendar,
                  at start: Double = SystemClock().now().rounded(.down), cap: CallCapOption? = nil) throws -> HostServices {
        var policy = try hostPolicy()
        cap?.apply(to: &policy)
        var services = HostServices(store: store, clock: VirtualClock(start), calendar: calendar, policy: policy)
        services.grants = bundle.grants
        if isolation == .process { services.workers = commandWorkers }
        do { return try services.withActivities(of: bundle) } catch { throw CLIFailure("error: \(error.message)") }
    }
}

extension HostOptions {
    /// The plugin policy of --plugin-policy, read once; nil without it.
    func plugins() throws -> PluginPolicy? {
        guard let pluginPolicy else { return nil }
        try requireFile(pluginPolicy, what: "plugin policy file")
        do { return try PluginPolicy.load(pluginPolicy) } catch { throw CLIFailure(error.description) }
    }

    /// Loads the bundle at `path`, as a plugin when --plugin-policy is
    /// given, and first in a worker with --isolation process.
    func load(_ path: String, calendar: HostCalendar) throws -> ScriptBundle {
        try loadBundle(path, calendar: calendar, policy: try plugins(), workers: isolation == .process ? commandWorkers : nil)
    }
}

/// The workers of a command run with --isolation process (they exit when
/// it does: their input closes). Spawned: such a command starts a worker
/// or two, which a fork server warming up beside them would only slow.
let commandWorkers = BundleWorkers(forksWorkers: false)

/// The workers of several bundles run as plugins of one host (`lunette
/// simulate DIR1 DIR2 … --isolation process`): forked from a fork server
/// (plugins.md, "How workers start"), as a plugin host's are.
let pluginWorkers = BundleWorkers()

/// A failure to report on standard error with exit status 1.
struct CLIFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A usage error found after parsing (a path that does not exist): its
/// message, and exit status 2, without the usage line.
struct CLIUsageFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Fails with a usage error (2) unless `path` is a directory.
func requireDirectory(_ path: String, what: String = "bundle directory") throws {
    guard let kind = FileKind(atPath: path) else { throw CLIUsageFailure("error: \(path): no such \(what)") }
    guard kind == .directory else { throw CLIUsageFailure("error: \(path): not a directory (a bundle is a directory with bundle.json and main.lua)") }
}

/// Fails with a usage error (2) unless `path` is a file.
func requireFile(_ path: String, what: String) throws {
    guard FileManager.default.fileExists(atPath: path) else { throw CLIUsageFailure("error: \(path): no such \(what)") }
}

/// Loads a bundle, or reports every problem and exits 1 (2 when there is no such directory).
func loadBundle(_ path: String, calendar: HostCalendar, policy: PluginPolicy? = nil, workers: BundleWorkers? = nil) throws -> ScriptBundle {
    try requireDirectory(path)
    do { return try ScriptBundle.load(path, calendar: calendar, grantsFor: { policy?.grants(for: $0) }, workers: workers) } catch {
        throw CLIFailure(error.description)
    }
}

/// Reads "name=value" options.
func parseAssignments(_ items: [String], flag: String) throws -> [String: String] {
    var out: [String: String] = [:]
    for item in items {
        guard let eq = item.firstIndex(of: "="), eq != item.startIndex else {
            throw ValidationError("\(flag) \(item): expected name=value")
        }
        out[String(item[..<eq])] = String(item[item.index(after: eq)...])
    }
    return out
}
