#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import Dispatch
import LunetteSystem
import Logging
import LuaSandbox

/// A `BundleWorkers`' fork server, behind its lock: shared with the thread
/// that starts it, which may finish after its `BundleWorkers` is gone.
private final class ForkServerSlot: @unchecked Sendable {
    let lock = FastLock()
    var server: WorkerForkServer?
    /// One could not be started, or failed before its first worker: not tried again.
    var refused = false
    /// One is being started.
    var starting = false
}

/// Process isolation for bundles' calls (issue 17): a host that sets
/// `HostServices.workers` runs each call of the bundle in a worker process
/// of that bundle's own, which a crash in native code kills instead of the
/// host (docs/plugins.md, "Worker processes").
///
/// - A worker serves one bundle (one version, one set of services): its
///   first request (`open`) sends the bundle's sources, the policy, the
///   grants, the time zone and the store's root. The worker loads the bundle
///   as the host did, opens the bundle's app groups, and then locks down: it
///   cannot open another file, so it cannot reach another plugin's store.
/// - Each call sends the role, the function, its arguments and the host's
///   time; the worker runs it exactly as `SandboxPool` runs it in process
///   (fresh globals, main.lua, the function, store writes and Live Activity
///   changes committed with the call or not at all) and answers its whole
///   outcome. The store is the same SQLite file, so the all-or-nothing rule
///   holds across the processes: a worker that dies mid-call commits nothing.
/// - A call that outlives its hard deadline plus `grace` gets its worker
///   killed (SIGKILL, status `timeout`); a worker that dies ends the call
///   `crashed` with the signal. The next call starts a fresh worker.
/// - The app's own modules (`HostModule`) run in the host: a worker sends
///   each call of one over the channel, and the host answers it from a
///   state of its own.
///
/// Idle workers are kept for the next call (at most `maxIdle` over all
/// bundles; the least recently used one is stopped first).
public final class BundleWorkers: @unchecked Sendable {
    /// The `lunette` executable the workers run (`lunette worker --lockdown open`).
    public let executable: String
    /// Seconds a call may run past its hard deadline before its worker is killed.
    public var grace: Double = 1
    /// Idle workers kept alive, over all bundles.
    public let maxIdle: Int
    /// Whether a worker moves to its caller's processor for its call
    /// (`WorkerProcess.followsCaller`; Linux): when no other call of these
    /// workers is running (callers on one processor would otherwise pin
    /// their workers to it together).
    public var followsCaller = true
    /// The CPU seconds after which a worker is retired at the end of a call
    /// rather than kept: by default half its lifetime limit (`RLIMIT_CPU`),
    /// so that a busy plugin's worker never meets SIGXCPU in a call.
    public var retireAfterCPUSeconds = Double(WorkerServer.Limits().cpuSeconds) / 2
    /// Whether new workers are forked from a fork server (`WorkerForkServer`:
    /// one `lunette worker --fork-server` process, started on first need)
    /// rather than each started from `executable`: a cold start several
    /// times cheaper (docs/plugins.md, "How workers start"). Linux with
    /// pidfds; elsewhere, or false, each worker is spawned.
    public let forksWorkers: Bool
    private let lock = FastLock()
    /// Idle workers by key, with their keys' order of use (IdleWorkers).
    private var idle = IdleWorkers<WorkerProcess>()
    private var started = 0
    /// Workers in a call now: process id → bundle id.
    private var busy: [Int32: String] = [:]
    /// Serves the app modules' calls of workers (one at a time).
    private let modules = FastLock()
    /// The fork server (`forksWorkers`).
    private let forking = ForkServerSlot()
    /// Where a fork server that fails is told (the host's log).
    private static let logger = Logger(label: "lunette.workers")
    private var moduleStates: [String: (state: LuaState, call: LuaFunctionRef)] = [:]

    /// Workers run `executable` (by default this program: a host that is
    /// not `lunette` itself names the `lunette` binary).
    public init(executable: String = BundleWorkers.thisExecutable, maxIdle: Int = BundleWorkers.defaultMaxIdle,
                forksWorkers: Bool = true) {
        self.executable = executable
        self.maxIdle = max(0, maxIdle)
        self.forksWorkers = forksWorkers && WorkerForkServer.isSupported
    }

    /// Idle workers kept when the host does not say (an idle worker holds
    /// about 2.4 MB of its own and two descriptors).
    public static let defaultMaxIdle = 64

    /// This process's executable, its path with symbolic links resolved.
    /// On Linux, what `/proc/self/exe` names, as Foundation's
    /// `Bundle.main.executablePath` reads it there too — but `Bundle.main`
    /// also lists the executable's whole folder to make the bundle (19 M
    /// instructions, 58% of `lunette timeline --isolation process`'s own
    /// start, with `lunette` in a busy folder), so it is the fallback only.
    public static let thisExecutable: String = {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        return CommandLine.arguments[0]
        #else
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
        #endif
    }()

    /// Workers started so far (fresh ones after losses included).
    public var workersStarted: Int { lock.withLock { started } }

    /// The workers in a call now, with the bundle each serves.
    public var busyWorkers: [(pid: Int32, bundle: String)] {
        lock.withLock { busy.map { ($0.key, $0.value) }.sorted { $0.pid < $1.pid } }
    }

    /// The process ids of the workers alive now, idle or in a call (not
    /// those evicted or retired and still stopping in the background).
    public var processIdentifiers: [Int32] {
        lock.withLock { (idle.all.map(\.processIdentifier) + busy.keys).sorted() }
    }

    /// The fork server's pid, while there is one (`forksWorkers`; it may
    /// still be warming up).
    public var forkServerProcessIdentifier: Int32? {
        forking.lock.withLock { forking.server?.processIdentifier }
    }

    /// Whether the fork server has warmed up: the next new worker is forked.
    public var forkServerIsReady: Bool {
        forking.lock.withLock { forking.server }?.isReady ?? false
    }

    /// Workers alive and idle now.
    public var idleWorkers: Int { lock.withLock { idle.count } }

    /// Stops every idle worker, and returns once they and the workers
    /// evicted or retired before (stopped in the background) have exited.
    /// The fork server is let go too: it ends once the workers it started
    /// are gone (a later call starts a new one).
    public func stop() {
        let all = lock.withLock { () -> [WorkerProcess] in
            idle.removeAll(keys: { _ in true })
        }
        WorkerProcess.stopAll(all)
        WorkerProcess.waitForBackgroundStops()
        // A server still starting (its spawn takes a millisecond or so) is
        // waited for, then let go too: released here, after the lock, since
        // its deinit waits for it to exit.
        var released: WorkerForkServer?
        while !forking.lock.withLock({ () -> Bool in
            if forking.starting { return false }
            released = forking.server
            forking.server = nil
            return true
        }) { usleep(200) }
        withExtendedLifetime(released) {}
    }

    /// Stops the idle workers of bundle `id`, of every version (a plugin
    /// host unloads it), and returns once they and the workers stopping in
    /// the background have exited.
    public func stop(bundle id: String) {
        let stopped = lock.withLock { () -> [WorkerProcess] in
            idle.removeAll(keys: { Self.bundle(ofKey: $0) == id })
        }
        WorkerProcess.stopAll(stopped)
        // Its evicted or retired workers too: none holds its store after this.
        WorkerProcess.waitForBackgroundStops()
    }

    /// Idle workers of bundle `id` alive now.
    public func idleWorkers(of id: String) -> Int {
        lock.withLock { idle.count(keys: { Self.bundle(ofKey: $0) == id }) }
    }

    /// The bundle id of a worker key ("<id>@<version>/<digest>", `link`).
    private static func bundle(ofKey key: String) -> Substring {
        key[..<(key.lastIndex(of: "@") ?? key.endIndex)]
    }

    deinit { stop() }

    // MARK: Calls

    /// What a `SandboxPool` keeps for its bundle: the key of its workers and
    /// the request that opens one.
    struct Link {
        let bundle: String
        /// The app modules' functions the bundle may call ("module.function"):
        /// those of the capabilities it asks for and is granted. A worker's
        /// request for any other is refused, whatever runs in the worker.
        let modules: Set<String>
        let key: String
        /// The `open` request, as it is sent.
        let open: [UInt8]
        let openDeadline: Double
    }

    /// The link of `bundle` with `services`.
    func link(_ bundle: ScriptBundle, _ services: HostServices) throws -> Link {
        let request = try Self.openRequest(bundle, services)
        var digest = ScriptBundle.VersionDigest()
        digest.add("open", request)
        let capabilities = CapabilityCheck(bundle: bundle, grants: services.grants)
        var allowed: Set<String> = []
        for module in services.modules where bundle.manifest.capabilities.contains(module.capability) && capabilities.has(module.capability) {
            for function in module.functions { allowed.insert(module.name + "." + function.name) }
        }
        return Link(bundle: bundle.manifest.id, modules: allowed, key: "\(bundle.manifest.id)@\(bundle.version)/\(digest.hex)", open: request,
                    openDeadline: CallRole.load.deadline(services.policy).hard + grace)
    }

    /// The `open` request of `bundle` with `services`, as it is sent.
    static func openRequest(_ bundle: ScriptBundle, _ services: HostServices) throws -> [UInt8] {
        var sources: [JSONValue] = []
        for name in bundle.modules.keys.sorted() {
            let source = bundle.modules[name]!
            sources.append(.list([.of(name), .of(source.chunkName), .base64(source.bytes)]))
        }
        let modules = services.modules.map { module in
            JSONValue.list([.of(module.name), .of(module.capability), .list(module.functions.map { .of($0.name) })])
        }
        let policy = WorkerWire.policy(services.policy)
        let storeDir: JSONValue = services.store.map { .of($0.root) } ?? .null
        let grants: JSONValue = services.grants.map { .list($0.sorted().map { .of($0) }) } ?? .null
        let zone = services.calendar.identifier
        let open = JSONValue.record([
            ("op", .of("open")), ("path", .of(bundle.path)), ("manifest", .base64(bundle.manifestBytes)),
            ("main", .list([.of(bundle.main.chunkName), .base64(bundle.main.bytes)])), ("modules", .list(sources)),
            ("policy", policy), ("grants", grants), ("zone", .of(zone)), ("storeDir", storeDir),
            ("appModules", .list(modules)), ("systemClock", .of(services.clock is SystemClock)),
            ("measureCPU", .of(services.ledger != nil)),
        ])
        // One worker serves one bundle version with one set of services.
        let writer = JSONWriter()
        open.writeJSON(to: writer)
        return Array(writer.text.utf8)
    }

    /// Runs one call of the bundle of `link` in a worker; `canceller` (the
    /// runtime's) kills the worker to end the call.
    func call(_ link: Link, services: HostServices, canceller: CallCanceller?, role: CallRole, _ what: String, _ id: String,
              _ field: String, _ arguments: [LuaValue], budget: (used: Int, remaining: Int)?) -> CallOutcome {
        let began = ContinuousClock.now
        func failed(_ diagnostic: Diagnostic) -> CallOutcome {
            var outcome = CallOutcome(diagnostic)
            outcome.elapsed = BundleSandbox.seconds(ContinuousClock.now - began)
            return outcome
        }
        let request = WorkerWire.call(.init(role: role, what: what, id: id, field: field, arguments: arguments, budget: budget,
                                            now: services.clock is SystemClock ? nil : services.clock.now(),
                                            prepared: services.activities?.prepared))
        var deadline = role.deadline(services.policy).hard
        if let cap = services.policy.callCap { deadline = min(deadline, cap) }
        // The worker commits at the end of the call, after waiting for
        // other writers' locks as long as the store lets it: it is killed
        // only after that too, so a call it ends was not committed.
        let hostDeadline = deadline + grace + (services.store == nil ? 0 : SharedStore.lockWaitSeconds)
        let worker: WorkerProcess
        do { worker = try checkOut(link) } catch let refused as WorkerOpenError {
            return failed(refused.diagnostic)
        } catch {
            return failed(Diagnostic(.crashed, "could not start a worker process (\(executable)): \(error)"))
        }
        let pid = worker.processIdentifier
        let alone = lock.withLock { () -> Bool in
            busy[pid] = link.bundle
            return busy.count == 1
        }
        worker.followsCaller = followsCaller && alone
        // CPU time as the host reads it: a worker cannot under-report it to its ledger.
        let cpuBefore = services.ledger == nil ? nil : worker.cpuSeconds()
        canceller?.running(cancel: { worker.cancel() })
        let result = worker.exchange(request, deadline: hostDeadline) { message in self.serve(message, link, services) }
        canceller?.running(nil)
        let cpuAfter = cpuBefore == nil ? nil : worker.cpuSeconds()
        lock.withLock { busy[pid] = nil }
        switch result {
        case .success(let answer):
            let decoded: (CallOutcome, [ActivityChange])
            do { decoded = try WorkerWire.outcome(answer) } catch {
                worker.stop(killing: true)
                return failed(Diagnostic(.crashed, "the worker's answer could not be read (\(error)); the worker was killed"))
            }
            checkIn(worker, link.key, cpu: cpuAfter)
            var (outcome, changes) = decoded
            if let cpuBefore, let cpuAfter { outcome.cpuTime = max(0, cpuAfter - cpuBefore) }
            if !changes.isEmpty { services.activities?.adopt(changes) }
            return outcome
        case .failure(let loss):
            return failed(loss.diagnostic)
        }
    }

    /// Loads `bundle` in a fresh worker, which is stopped after: nil when
    /// it loads there, else why not (its load error, or the worker's loss:
    /// `crashed`, `timeout`).
    func tryLoad(_ bundle: ScriptBundle, calendar: HostCalendar) -> Diagnostic? {
        var services = HostServices(clock: SystemClock(), calendar: calendar)
        services.grants = bundle.grants
        do {
            let worker = try checkOut(try link(bundle, services))
            worker.stop()
            return nil
        } catch let refused as WorkerOpenError {
            var diagnostic = refused.diagnostic
            if diagnostic.kind == .crashed || diagnostic.kind == .timeout {
                diagnostic.file = diagnostic.file ?? bundle.main.chunkName
                diagnostic.message = "bundle \(bundle.manifest.id) " + diagnostic.message
            }
            return diagnostic
        } catch {
            return Diagnostic(.crashed, "could not start a worker process (\(executable)): \(error)", file: bundle.main.chunkName)
        }
    }

    /// An idle worker of `link`, or a fresh one that has opened its bundle.
    private func checkOut(_ link: Link) throws -> WorkerProcess {
        var ended: [WorkerProcess] = []
        let reused = lock.withLock { () -> WorkerProcess? in
            while let worker = idle.takeLatest(link.key) {
                if worker.isAlive { return worker }
                ended.append(worker)
            }
            return nil
        }
        // Reaped off the lock (a forked worker is reaped by its server).
        WorkerProcess.stopInBackground(ended)
        if let reused { return reused }
        let worker = try startWorker()
        worker.followsCaller = followsCaller
        lock.withLock { started += 1 }
        switch worker.exchange(link.open, deadline: link.openDeadline) {
        case .success(let answer):
            if let refused = try WorkerWire.decoded(Diagnostic.self, try WorkerChannel.json(answer)["error"]) {
                worker.stop()
                throw WorkerOpenError(diagnostic: refused)
            }
            return worker
        case .failure(let loss):
            var diagnostic = loss.diagnostic
            diagnostic.message = "while the worker loaded the bundle: " + diagnostic.message
            throw WorkerOpenError(diagnostic: diagnostic)
        }
    }

    /// A new worker that locks down at its bundle's open: forked by the fork
    /// server when `forksWorkers`, else spawned. The first start spawns its
    /// worker and starts the server, which warms up in its own process
    /// meanwhile (a host that starts one worker pays nothing for it); a
    /// server that died is replaced the same way. Spawned too when the
    /// server cannot start one (this system has no pidfds, say).
    private func startWorker() throws -> WorkerProcess {
        if forksWorkers, let server = forkServer() {
            do { return try WorkerProcess(forkedBy: server, lockdown: .open) } catch {
                Self.logger.warning("worker fork server \(server.processIdentifier): \(error); spawning the worker instead")
                // Gone (killed, say): its replacement starts now, for the next start.
                if !server.isUsable { _ = forkServer() }
            }
        }
        return try WorkerProcess(executable: executable, arguments: ["worker", "--lockdown", "open"])
    }

    /// The fork server; nil when there was none or it stopped working (one
    /// is started now, for the next start) or when one cannot be started
    /// (then it is not tried again).
    private func forkServer() -> WorkerForkServer? {
        let slot = forking
        // A server let go is released after the lock (its deinit waits for it to exit).
        var released: WorkerForkServer?
        defer { withExtendedLifetime(released) {} }
        return slot.lock.withLock { () -> WorkerForkServer? in
            if let server = slot.server, server.isUsable {
                // Still warming up: this start spawns its worker rather than wait.
                return server.isReady ? server : nil
            }
            if let server = slot.server, server.workersStarted == 0 {
                // It failed before its first worker (its warm-up, say): the next would too.
                slot.refused = true
                Self.logger.warning("the worker fork server \(server.processIdentifier) failed before it started a worker; workers are spawned instead")
            }
            released = slot.server
            slot.server = nil
            guard !slot.refused, !slot.starting else { return nil }
            // Started off the caller's thread: its spawn (the exec) is not
            // the calling start's.
            slot.starting = true
            let executable = executable
            DispatchQueue.global(qos: .utility).async {
                let started = Result { try WorkerForkServer(executable: executable) }
                slot.lock.withLock {
                    slot.starting = false
                    switch started {
                    case .success(let server): slot.server = server
                    case .failure(let error):
                        slot.refused = true
                        Self.logger.warning("\(error); workers are spawned instead")
                    }
                }
            }
            return nil
        }
    }

    /// Keeps `worker` for the next call of `key`, unless it is gone or has
    /// used `retireAfterCPUSeconds` (`cpu`: its CPU time, when the call read it).
    private func checkIn(_ worker: WorkerProcess, _ key: String, cpu: Double? = nil) {
        guard worker.isAlive else { return }
        if let cpu = cpu ?? worker.cpuSeconds(), cpu > retireAfterCPUSeconds {
            WorkerProcess.stopInBackground([worker])
            return
        }
        let surplus = lock.withLock { () -> [WorkerProcess] in
            idle.add(worker, key)
            var surplus: [WorkerProcess] = []
            while idle.count > maxIdle, let oldest = idle.takeOldest() { surplus.append(oldest) }
            return surplus
        }
        WorkerProcess.stopInBackground(surplus)
    }

    // MARK: App modules, served to workers

    /// Answers a worker's message during a call: a call of an app module
    /// (nil for anything else: the exchange goes on).
    func serve(_ message: [UInt8], _ link: Link, _ services: HostServices) -> [UInt8]? {
        guard let call = try? WorkerWire.module(message) else { return nil }
        guard link.modules.contains(call.name + "." + call.function) else {
            // The names are the worker's: a few of their characters, not all, go back.
            let asked = String((call.name + "." + call.function).prefix(120))
            return WorkerWire.reply(.failure(.init(message: "\(asked): bundle \(link.bundle) may not call it (not one of the app's functions, or its capability is not granted)")))
        }
        do {
            return WorkerWire.reply(.success(try runModule(call.name, call.function, call.arguments, services.modules, link)))
        } catch let error as LuaError {
            return WorkerWire.reply(.failure(.init(message: ScriptBundle.strip(error.diagnostic.message))))
        } catch {
            return WorkerWire.reply(.failure(.init(message: "\(error)")))
        }
    }

    /// Runs the app module function `name.function` in the host's own state
    /// for the modules of `link`'s services (one per link and module: hosts
    /// that share these workers may have modules of the same name).
    private func runModule(_ name: String, _ function: String, _ arguments: [LuaValue], _ all: [HostModule], _ link: Link) throws -> [LuaValue] {
        let key = link.key + " " + name
        return try modules.withLock {
            let entry: (state: LuaState, call: LuaFunctionRef)
            if let ready = moduleStates[key] { entry = ready } else {
                guard let module = all.first(where: { $0.name == name }) else {
                    throw WorkerProtocolError("the worker called module '\(name)', which this host does not have")
                }
                let state = try LuaState(profile: .sandbox)
                try module.install(in: state, bundle: "", capabilities: [module.capability])
                let call = try state.load("local f = ...; return require(\(Self.quoted(name)))[f](select(2, ...))", name: "=module")
                entry = (state, call)
                moduleStates[key] = entry
            }
            return try entry.state.call(entry.call, [.string(LuaString(function))] + arguments)
        }
    }

    static func quoted(_ s: String) -> String {
        "\"" + s.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }
}

/// A worker that could not open its bundle (the bundle failed to load there).
struct WorkerOpenError: Error {
    var diagnostic: Diagnostic
}
