#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LuaSandbox
import SharedStore

/// The bundle a worker process serves (the worker's side of
/// `BundleWorkers`): loaded from the sources the host sent, with its app
/// groups opened before the worker locks down, and its calls run by a
/// `SandboxPool` exactly as in the host.
final class WorkerBundle {
    let pool: SandboxPool
    /// The host's time, set before each call (nil: the system's clock).
    private let clock: WorkerClock?

    /// Opens the bundle of an `open` request: reads bundle.json, opens the
    /// app groups its granted services need, then calls `lockDown` (the
    /// worker can open no file after), and only then runs main.lua. Errors:
    /// `WorkerOpenError` (the bundle does not load here),
    /// `WorkerProtocolError` (a broken request).
    init(_ request: JSONValue, channel: WorkerChannel, lockDown: () -> Void) throws {
        guard let path = request["path"]?.text, let manifestBytes = request["manifest"]?.decodedBytes,
              let main = request["main"]?.items, main.count == 2, let mainName = main[0].text, let mainBytes = main[1].decodedBytes,
              let policy = try WorkerWire.policy(from: request["policy"]) else {
            throw WorkerProtocolError("open needs a path, a manifest, main.lua and a policy")
        }
        var modules: [String: ScriptBundle.Source] = [:]
        for item in request["modules"]?.items ?? [] {
            guard let parts = item.items, parts.count == 3, let name = parts[0].text, let chunk = parts[1].text,
                  let bytes = parts[2].decodedBytes else { throw WorkerProtocolError("a module that is not [name, chunk, base64]") }
            modules[name] = ScriptBundle.Source(chunkName: chunk, bytes: bytes)
        }
        let grants = request["grants"]?.items.map { Set($0.compactMap(\.text)) }
        let calendar = request["zone"]?.text.flatMap { HostCalendar(timeZoneNamed: $0) } ?? .fromEnvironment()
        func refused(_ error: LocatedErrors) -> WorkerOpenError {
            WorkerOpenError(diagnostic: error.errors.count == 1 ? error.errors[0] : Diagnostic(.error, error.text))
        }
        let manifest: BundleManifest
        do {
            let file = try JSONFile.parse(bytes: manifestBytes, path: path + "/bundle.json")
            manifest = BundleManifest.read(file)
            try file.check()
        } catch { throw refused(error) }
        clock = request["systemClock"]?.kind == .boolean(true) ? nil : WorkerClock()
        var services = HostServices(clock: clock ?? SystemClock(), calendar: calendar, policy: policy)
        services.grants = grants
        services.measuresCPU = request["measureCPU"]?.kind == .boolean(true)
        let capabilities = CapabilityCheck(requested: manifest.capabilities, grants: grants)
        if let root = request["storeDir"]?.text {
            let store = SharedStore(root: root)
            if capabilities.has(.store) || capabilities.has(.activities) {
                // Opened now, and only those a granted service needs: once the
                // worker locks down, it cannot open a file.
                for group in manifest.appGroups { _ = try? store.group(group) }
            }
            services.store = store
        }
        // Nothing of the bundle's has run yet: main.lua runs locked down.
        lockDown()
        let bundle: ScriptBundle
        do {
            bundle = try ScriptBundle.load(root: path, manifest: manifest, manifestBytes: manifestBytes,
                                           sources: (ScriptBundle.Source(chunkName: mainName, bytes: mainBytes), modules),
                                           grants: grants, calendar: calendar)
        } catch { throw refused(error) }
        for item in request["appModules"]?.items ?? [] {
            guard let parts = item.items, parts.count == 3, let name = parts[0].text, let capability = parts[1].text,
                  let functions = parts[2].items?.compactMap(\.text) else { throw WorkerProtocolError("an app module that is not [name, capability, functions]") }
            var module = HostModule(name: name, capability: capability)
            for function in functions {
                module.add(function) { args in try Self.askHost(channel, name, function, args) }
            }
            services.modules.append(module)
        }
        if services.grants.map({ $0.contains(ServiceCapability.activities.rawValue) }) ?? true {
            do { services = try services.withActivities(of: bundle) } catch {
                throw WorkerOpenError(diagnostic: Diagnostic(.error, error.message))
            }
        }
        pool = SandboxPool(bundle: bundle, services: services)
    }

    /// Runs the call of a `call` message; answers its outcome.
    func call(_ request: [UInt8]) throws -> [UInt8] {
        let c = try WorkerWire.call(request)
        if let clock, let now = c.now { clock.set(now) }
        let activities = pool.services.activities
        _ = activities?.takeChanges()   // none is the call's
        if let prepared = c.prepared {
            // An updater's event: marked handled with the call's own changes, as in the host.
            activities?.prepareCall(handling: prepared.mark, source: prepared.source)
        }
        let outcome = pool.call(c.role, c.what, c.id, c.field, c.arguments, budget: c.budget)
        activities?.discardPrepared()
        let changes = activities?.takeChanges() ?? []
        return try WorkerWire.outcome(outcome, activityChanges: changes)
    }

    /// A call of an app module, run by the host: its answer, or its error
    /// as the script's.
    static func askHost(_ channel: WorkerChannel, _ module: String, _ function: String, _ args: LuaArguments) throws -> [LuaValue] {
        var values: [LuaValue] = []
        if args.count > 0 { for n in 1...args.count { values.append(try args.value(n)) } }
        try channel.send(bytes: WorkerWire.module(module, function, values))
        guard let reply = try channel.receive(until: nil) else { throw WorkerProtocolError("the host did not answer a module call") }
        switch try WorkerWire.reply(reply) {
        case .success(let values): return values
        case .failure(let error): throw LuaFunctionError(error.message)
        }
    }
}
