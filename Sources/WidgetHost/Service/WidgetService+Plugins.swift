#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox

/// The plugin host (issue 17, docs/plugins.md): bundles written by other
/// people, loaded with the capabilities the service's `pluginPolicy`
/// grants them, a `PluginLedger` of their own under the policy's quotas,
/// and in process or in worker processes of their own. Once loaded, a
/// plugin is a bundle like any other: every call of the service (widgets,
/// timelines, intents, controls, activities, `runDue`, `run`) works on it,
/// and its events come on the same stream.
extension WidgetService {
    /// Loads the bundle at `path` as a plugin: with the capabilities the
    /// plugin policy grants it (a bundle that asks for more is refused,
    /// with `LocatedErrors` naming what it asked for and what is granted;
    /// nothing of it is loaded), a ledger with the policy's quotas, and
    /// its calls in process or, with `.process`, in worker processes of
    /// its own (main.lua first runs in one, so a bundle that crashes a
    /// worker at load is refused). Sends `.pluginLoaded`. Returns its id.
    @discardableResult
    public func loadPlugin(_ path: String, isolation: PluginIsolation = .inProcess) throws -> String {
        guard let policy = pluginPolicy else {
            throw ServiceError("cannot load plugin \(path): this service has no plugin policy (WidgetService(pluginPolicy:))")
        }
        let bundle = try ScriptBundle.load(path, calendar: calendar, grantsFor: { policy.grants(for: $0) },
                                           workers: try workers(for: isolation, path))
        let id = bundle.manifest.id
        guard loaded[id] == nil else { throw ServiceError("cannot load plugin \(path): bundle \(id) is already loaded") }
        let ledger = PluginLedger(plugin: id, quotas: policy.quotas)
        let pending = pluginEvents
        ledger.onQuarantine = { quarantine in pending.add(.pluginQuarantined(plugin: id, quarantine), for: id) }
        pluginRecords[id] = PluginRecord(isolation: isolation, ledger: ledger)
        let grants = (bundle.grants ?? []).sorted()
        do {
            return try insert(bundle, announcing: .pluginLoaded(plugin: id, version: bundle.version, isolation: isolation, grants: grants))
        } catch {
            pluginRecords[id] = nil
            throw error
        }
    }

    /// Unloads bundle `id` (a plugin or not): its widgets are removed (their
    /// numbers are not given again; with persistence, a later load does not
    /// bring them back), its calls end, and a plugin's idle worker
    /// processes are stopped. Sends `.bundleUnloaded` with the widgets
    /// removed, and returns them.
    @discardableResult
    public func unload(_ id: String) throws -> [WidgetID] {
        let b = try bundle(id)
        let removed = try widgets(bundle: id)
        for widget in removed { b.engine.removeWidget(widget.number) }
        publish()   // keeps the removals, sends the bundle's last events
        loaded[id] = nil
        if pluginRecords.removeValue(forKey: id)?.isolation == .process { workers?.stop(bundle: id) }
        _ = pluginEvents.take(plugin: id)
        continuation.yield(.bundleUnloaded(bundle: id, widgets: removed))
        waker.wake()   // run() stops watching its store
        return removed
    }

    /// The ids of the bundles loaded as plugins, sorted.
    public var plugins: [String] { pluginRecords.keys.sorted() }

    /// Plugin `id` as the host sees it: isolation, trust level, grants,
    /// quotas, quarantine.
    public func plugin(_ id: String) throws -> HostedPlugin {
        let record = try pluginRecord(id)
        let bundle = try bundle(id).bundle
        return HostedPlugin(id: id, path: bundle.path, version: bundle.version, isolation: record.isolation,
                            trustLevel: pluginPolicy?.level(of: id), grants: bundle.grants ?? [],
                            quotas: record.ledger.quotas, quarantine: record.ledger.quarantine)
    }

    /// The capabilities plugin `id` was granted.
    public func grants(of id: String) throws -> Set<String> { try plugin(id).grants }

    /// Where plugin `id`'s calls run.
    public func isolation(of id: String) throws -> PluginIsolation { try pluginRecord(id).isolation }

    /// Why and since when plugin `id`'s calls are refused, or nil when they run.
    public func quarantine(of id: String) throws -> Quarantine? { try pluginRecord(id).ledger.quarantine }

    /// What plugin `id` used in its quotas' window, now.
    public func usage(of id: String) throws -> PluginUsage { try pluginRecord(id).ledger.usage(at: clock.now()) }

    /// Lets plugin `id`'s calls run again, with a fresh window and no
    /// failures counted. When it was quarantined, sends `.pluginReleased`
    /// and returns the quarantine lifted. Its widgets reload when they are
    /// next due (or at once with `reloadNow`).
    @discardableResult
    public func release(_ id: String) throws -> Quarantine? {
        let ledger = try pluginRecord(id).ledger
        let lifted = ledger.quarantine
        ledger.release()
        guard let lifted else { return nil }
        for event in pluginEvents.take(plugin: id) { continuation.yield(event) }   // its quarantine first
        continuation.yield(.pluginReleased(plugin: id, at: clock.now(), quarantine: lifted))
        waker.wake()
        return lifted
    }

    // MARK: Internals

    /// The workers a plugin of `isolation` loads and runs in.
    private func workers(for isolation: PluginIsolation, _ path: String) throws -> BundleWorkers? {
        guard isolation == .process else { return nil }
        guard let workers else {
            throw ServiceError("cannot load plugin \(path) with isolation .process: this service has no worker processes "
                + "(WidgetService(workers: BundleWorkers(executable: the lunette executable)))")
        }
        return workers
    }

    /// A new version of bundle `id` from `path`: under the same grants and
    /// isolation when it is a plugin.
    func reloadBundle(_ path: String, id: String) throws -> ScriptBundle {
        guard let record = pluginRecords[id], let policy = pluginPolicy else { return try ScriptBundle.load(path, calendar: calendar) }
        return try ScriptBundle.load(path, calendar: calendar, grantsFor: { policy.grants(for: $0) },
                                     workers: try workers(for: record.isolation, path))
    }

    private func pluginRecord(_ id: String) throws -> PluginRecord {
        if let record = pluginRecords[id] { return record }
        if loaded[id] != nil { throw ServiceError("bundle \(id) was loaded with load(), not loadPlugin(): it has no grants, quotas or isolation") }
        throw ServiceError("no plugin \(id) in this service (plugins: \(plugins.isEmpty ? "none" : plugins.joined(separator: ", ")))")
    }
}

/// Where a plugin's calls run.
public enum PluginIsolation: String, Sendable, Codable, CaseIterable {
    /// In the host's process, each call in a sandbox of its own (microseconds).
    case inProcess
    /// In worker processes of the plugin's own (`BundleWorkers`), which a
    /// crash in native code kills instead of the host.
    case process
}

/// A plugin of a `WidgetService`, as the host sees it (for the app's own UI).
public struct HostedPlugin: Sendable, Equatable {
    public var id: String
    /// The directory it was loaded from.
    public var path: String
    /// The version running (`ScriptBundle.version`).
    public var version: String
    public var isolation: PluginIsolation
    /// Its trust level in the policy; nil when the policy gives it capabilities of its own.
    public var trustLevel: String?
    /// The capabilities it was granted (those it asks for, within its level's).
    public var grants: Set<String>
    public var quotas: PluginQuotas
    /// Why and since when its calls are refused; nil when they run.
    public var quarantine: Quarantine?
}

/// What the service keeps of a plugin besides its bundle.
struct PluginRecord {
    let isolation: PluginIsolation
    let ledger: PluginLedger
}

/// Events plugins' ledgers tell during calls (on the service's thread),
/// kept until the service publishes.
final class PendingPluginEvents: @unchecked Sendable {
    private let lock = FastLock()
    private var events: [String: [HostEvent]] = [:]

    func add(_ event: HostEvent, for plugin: String) {
        lock.withLock { events[plugin, default: []].append(event) }
    }

    func take(plugin: String) -> [HostEvent] {
        lock.withLock { events.removeValue(forKey: plugin) ?? [] }
    }
}
