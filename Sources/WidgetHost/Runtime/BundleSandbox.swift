#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox
import Logging
import SharedStore

/// The sandbox a bundle's calls run in (rule L6: globals do not survive
/// between calls).
///
/// One Lua state holds the host's modules (store, clock, reload, host,
/// log), the declaration functions, a `require` for the bundle's modules,
/// and main.lua compiled once. Each call gets fresh globals: a new
/// environment table that reads through to the libraries, in which main.lua
/// runs (declaring the widget's functions) and the bundle's modules load on
/// `require`; then the host calls one declared function. What a call leaves
/// behind is unreachable from the next one: library tables are read-only,
/// `_G` and `load` see the call's own environment, and store group objects
/// are made per call. A state whose call failed (error, deadline, memory)
/// is not used again.
///
/// main.lua runs once per state when it can: when its first run called
/// nothing of the moment (clock, random, output, host services:
/// `LuaState.effects`), what it built — the call's globals, the modules it
/// loaded, the declared functions and everything they reach — is
/// snapshot (`LuaSnapshot`), and each later call starts by putting it back
/// instead of running main.lua again: every table's entries and metatable
/// and every upvalue as main.lua left them. A call sees the same contents
/// a fresh run would have built (only `pairs` may visit a restored table
/// in another order). A main.lua that reads the clock, logs, or leaves a
/// coroutine, a userdata or more than `snapshotSlots` entries behind runs
/// before every call, as before.
///
/// A call's limits come from its role: the deadline (soft: a warning; hard:
/// the call ends) covers main.lua and the function together; memory is the
/// smaller of the policy's cap and bundle.json's.
final class BundleSandbox {
    let bundle: ScriptBundle
    let services: HostServices
    let role: CallRole
    let state: LuaState
    let recorder: DeclarationRecorder
    let storeBinding: StoreBinding
    /// The services the bundle's scripts get (all, unless the host grants capabilities).
    let capabilities: CapabilityCheck
    /// The glue's per-call entry: new globals, then main.lua.
    private var begin: LuaFunctionRef!
    /// The glue's functions returning what main.lua's work is reached from,
    /// and the glue's own objects (to a snapshot, constants like the globals).
    private var roots: LuaFunctionRef!
    private var glueObjects: LuaFunctionRef!
    /// What main.lua built, put back before each call instead of running it
    /// again; nil before the first call and when it cannot be taken.
    /// (It, `logs`, `reloads`, `budgetUsage`, `started` and `startedCPU`
    /// are read or set by every call, on the sandbox's one thread, and never
    /// passed inout: no run-time exclusivity checks.)
    @exclusivity(unchecked) private var mainSnapshot: LuaSnapshot?
    /// Whether main.lua's work is snapshot, and if not, why.
    private(set) var snapshotState: SnapshotState = .untried
    /// Runs of main.lua in this state (tests: once with a snapshot).
    private(set) var mainRuns = 0
    /// The most table entries and upvalues a snapshot copies (its memory
    /// counts against the role's cap; about 40 bytes each).
    static let snapshotSlots = 16_384

    enum SnapshotState: Equatable {
        case untried, taken
        case refused(String)
    }
    @exclusivity(unchecked) private(set) var logs: [(level: LuaLogLevel, text: String)] = []
    @exclusivity(unchecked) private(set) var reloads: [ReloadRequest] = []
    /// The refresh budget of the instance being called, for `host.usage()`.
    @exclusivity(unchecked) var budgetUsage: (used: Int, remaining: Int)?
    /// False once a call failed: the state is dropped.
    private(set) var isReusable = true
    /// The running call's log metadata (`logMetadata`).
    private var running: Logger.Metadata = [:]

    /// A log line's metadata: bundle, role, kind (the widget, control,
    /// intent or activity), family (a widget's), function, the call's number
    /// in this process. A call in a worker process logs with the same
    /// (`SandboxPool`), numbered in the host.
    static func logMetadata(bundle: String, role: CallRole, _ what: String, _ id: String, _ field: String,
                            _ arguments: [LuaValue]) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["bundle": "\(bundle)", "role": "\(role.rawValue)", "kind": "\(id)",
                                         "function": "\(what) \(id).\(field)", "call": "\(calls.next())"]
        if what == "widget", case .table(let context)? = arguments.first, let family = context["family"].stringValue {
            metadata["family"] = "\(family)"
        }
        return metadata
    }
    /// Calls made in this process, to number them in logs.
    private static let calls = CallCounter()
    private let memoryLimit: Int
    private let deadline: HostPolicy.Deadline
    /// The role's deadline on a device, when the policy's `callCap` is shorter.
    private var deviceDeadline: Double?
    /// When the call began (`MonotonicClock` nanoseconds).
    @exclusivity(unchecked) private var started = MonotonicClock.nanoseconds()
    @exclusivity(unchecked) private var startedCPU = 0.0
    /// CPU time is read (a system call each side of the call) only for a
    /// host that keeps a plugin's ledger. (Set once: `services` is too.)
    private let measuresCPU: Bool

    init(bundle: ScriptBundle, services: HostServices, role: CallRole) throws(LuaError) {
        self.bundle = bundle
        self.services = services
        self.role = role
        measuresCPU = services.ledger != nil || services.measuresCPU
        let policy = services.policy
        memoryLimit = min(role.memoryMB(policy), bundle.manifest.memoryMB ?? Int.max) << 20
        var deadline = role.deadline(policy)
        if let cap = policy.callCap, cap < deadline.hard {
            deviceDeadline = deadline.hard
            deadline = HostPolicy.Deadline(soft: min(deadline.soft, cap), hard: cap)
        }
        self.deadline = deadline
        capabilities = CapabilityCheck(bundle: bundle, grants: services.grants)
        recorder = DeclarationRecorder(validating: role == .load)
        state = try LuaState(profile: .sandbox)
        let grants = role.opensStore ? bundle.manifest.appGroups : []
        let hint = role == .placeholder ? "a placeholder must not need the store (rule T1): return sample data"
            : role == .controlPreview ? "a control's preview must be instant (rule C1): return a sample value"
            : role == .load ? "main.lua's top level only declares; open groups inside the widget's functions"
            : services.store == nil ? "this host gives scripts no store" : "list it in appGroups of bundle.json"
        storeBinding = StoreBinding(store: services.store ?? SharedStore(root: "/nonexistent/lunette-no-store"),
                                    grants: services.store == nil ? [] : grants,
                                    owner: "bundle \(bundle.manifest.id)" + (role == .placeholder ? "'s placeholder" : role == .controlPreview ? "'s control preview" : ""),
                                    grantHint: hint)
        state.logHandler = { [unowned self] level, line in
            let text = String(decoding: line.bytes, as: UTF8.self)
            self.logs.append((level, text))
            if let logger = self.services.scriptLogger {
                logger.log(level: Self.loggerLevel(level), "\(text)", metadata: self.running)
            }
        }
        try ClockBinding(clock: services.clock, calendar: services.calendar).install(in: state)
        if capabilities.has(.store) { try storeBinding.install(in: state) }
        if !capabilities.has(.activities) {
            // Absent (issue 17): the bundle did not ask for it, or the host does not grant it.
        } else if let activities = services.activities, role != .load {
            let origin: ActivityOrigin = role == .intent ? .intent : role == .activityUpdater ? .updater : .widget
            try ActivityBinding(manager: activities, origin: origin).install(in: state)
        } else if role != .load && !bundle.declarations.activities.isEmpty {
            try ActivityBinding.installUnavailable(in: state, bundleID: bundle.manifest.id)
        }
        if role != .load {
            for module in services.modules {
                try module.install(in: state, bundle: bundle.manifest.id, capabilities: bundle.manifest.capabilities.filter { capabilities.has($0) })
            }
        }
        let declared = bundle.declarations
        if capabilities.has(.reload) {
            try ReloadBinding(widgetKinds: role == .load ? nil : declared.widgets.map(\.kind),
                              controlKinds: role == .load ? nil : declared.controls.map(\.kind))
                .install(in: state) { [unowned self] request in self.reloads.append(request) }
        }
        if !capabilities.has(.log) {
            for name in ServiceCapability.log.globals { try state.setGlobal(name, .nil) }
        }
        try installHost()
        if role == .load {
            // Compile main.lua on the host's side first, for a syntax error
            // with its line (the glue then loads what this compiled).
            _ = try state.loadReusingCompiled(bytes: bundle.main.bytes, name: bundle.main.chunkName)
        }
        try installBundle()
    }

    /// The call's options: the remaining hard deadline, the memory cap, the
    /// clock for os.time, a seed from the clock (a simulation replays exactly).
    private func options() -> LuaCallOptions {
        let remaining = max(1_000_000, Int64(deadline.hard * 1000) * 1_000_000 - elapsedNanoseconds)
        let now = services.clock.now()
        return LuaCallOptions(limits: LuaLimits(memory: memoryLimit, timeoutNanoseconds: remaining, output: services.policy.outputBytes),
                              randomSeed: Int64(bitPattern: UInt64(now.bitPattern) &* 0x9E37_79B9_7F4A_7C15),
                              now: services.clock is SystemClock ? nil : now)
    }

    /// Starts a call: fresh globals, then main.lua (the declarations), or
    /// what main.lua built put back from its snapshot.
    func runMain() throws(LuaError) {
        started = MonotonicClock.nanoseconds()
        if measuresCPU { startedCPU = Self.threadCPUTime() }
        // Emptied only when the last call left some: most leave none, and
        // an assignment releases the array the last outcome shares.
        if !logs.isEmpty { logs = [] }
        if !reloads.isEmpty { reloads = [] }
        storeBinding.beginCall()
        state.resetPeak()
        if let mainSnapshot {
            try state.restore(mainSnapshot)
            return
        }
        try runMainScript()
    }

    /// main.lua run in full (no snapshot of it yet, or none can be taken),
    /// and its snapshot taken when it can be: out of line, since most calls
    /// restore the snapshot instead.
    @inline(never)
    private func runMainScript() throws(LuaError) {
        recorder.reset()
        let effects = state.effects
        mainRuns += 1
        try state.call(begin, [], options: options())
        guard snapshotState == .untried, role != .load else { return }
        if state.effects != effects {
            snapshotState = .refused("main.lua's top level called a function of the moment (clock, random, output or a host service)")
        } else {
            switch try state.snapshot(rootsFrom: roots, hostObjects: glueObjects, functions: recorder.allFunctions, maxSlots: Self.snapshotSlots) {
            case .success(let snapshot):
                mainSnapshot = snapshot
                snapshotState = .taken
            case .failure(let refusal):
                snapshotState = .refused(refusal.reason)
            }
        }
    }

    /// Runs main.lua, then the function `field` of the declaration `what`
    /// `id` with `arguments`; store writes commit only if it succeeds. Its
    /// results are read in place by `reader` (nil when the call failed);
    /// the outcome's `values` stay empty.
    func call<Reader: CallResultReader>(_ what: String, _ id: String, _ field: String, _ arguments: [LuaValue],
                                        reader: Reader) -> (CallOutcome, Reader.Output?) {
        if services.scriptLogger != nil {
            running = Self.logMetadata(bundle: bundle.manifest.id, role: role, what, id, field, arguments)
        }
        // The outcome is made in place (`attempt`, `finish`): returned in a
        // tuple from `attempt`, it was copied and the copy destroyed
        // (≈ 350 instructions a call, and a retain and release of each part).
        var outcome = CallOutcome()
        let read = attempt(what, id, field, arguments, reader, outcome: &outcome)
        finish(&outcome)
        return (outcome, read)
    }

    /// The call itself: what `reader` made of its results, or nil and
    /// `outcome` says why it failed.
    private func attempt<Reader: CallResultReader>(_ what: String, _ id: String, _ field: String, _ arguments: [LuaValue],
                                                   _ reader: Reader, outcome: inout CallOutcome) -> Reader.Output? {
        do throws(LuaError) {
            try runMain()
            guard let function = recorder.function(what, id, field) else {
                outcome = Self.noFunction(what, id, field)
                return nil
            }
            // The call's activity changes commit with its store writes, or
            // not at all: a failed call changes no activity.
            let activities = services.activities
            if let activities { beginActivities(activities, id) }
            let read: Reader.Output
            do throws(LuaError) {
                // The results are read while they are on the stack, before
                // the commit (which keeps them whatever is read).
                read = try storeBinding.perform(attaching: activities) { () throws(LuaError) in
                    try state.call(function, arguments, options: options()) { results in reader.read(results) }
                }
                activities?.endCall(committed: true)
            } catch {
                activities?.endCall(committed: false)
                throw error
            }
            if !reloads.isEmpty { outcome.reloadRequests = reloads }
            return read
        } catch {
            failed(error, outcome: &outcome)
            return nil
        }
    }

    // The paths `attempt` rarely takes, out of line: its common path is
    // then a few cache lines, not the whole function's.

    @inline(never)
    private static func noFunction(_ what: String, _ id: String, _ field: String) -> CallOutcome {
        CallOutcome(Diagnostic(.invalid, "\(what) '\(id)' has no function '\(field)'"))
    }

    @inline(never)
    private func beginActivities(_ activities: ActivityManager, _ id: String) {
        activities.beginCall(source: role == .intent ? "intent \(id)" : "\(role.rawValue) \(id)")
    }

    /// The outcome of a call that failed with `error`; the sandbox is not used again.
    @inline(never)
    private func failed(_ error: LuaError, outcome: inout CallOutcome) {
        outcome = CallOutcome(Self.whole(error, deadline: deadline.hard, elapsed: .nanoseconds(elapsedNanoseconds)))
        if var diagnostic = outcome.diagnostic, let why = capabilities.whyAbsent(inMessage: diagnostic.message, bundle: bundle.manifest.id) {
            diagnostic.message += " (\(why))"
            outcome.diagnostic = diagnostic
        }
        if let device = deviceDeadline, outcome.status == .timeout, var diagnostic = outcome.diagnostic {
            diagnostic.message += " (this run caps every call at \(Self.milliseconds(deadline.hard)) ms; a device would let it run up to \(Self.milliseconds(device)) ms)"
            outcome.diagnostic = diagnostic
        }
        isReusable = false
    }

    /// A deadline is the role's for main.lua and the function together, so
    /// a timeout reports that deadline and the whole call's time, not what
    /// was left of it when the function began.
    static func whole(_ error: LuaError, deadline: Double, elapsed: Duration) -> LuaError {
        guard case .timeout(let timeout) = error, timeout.instructionLimit == nil else { return error }
        return .timeout(LuaTimeoutError(limit: .milliseconds(Int64((deadline * 1000).rounded())), elapsed: elapsed,
                                        cancelled: timeout.cancelled, chunk: timeout.chunk, line: timeout.line))
    }

    /// Completes `outcome` with what every call reports (in place: a
    /// `CallOutcome` is large, and each copy retains all its parts).
    private func finish(_ outcome: inout CallOutcome) {
        outcome.elapsed = Double(elapsedNanoseconds) / 1e9
        if measuresCPU { outcome.cpuTime = max(0, Self.threadCPUTime() - startedCPU) }
        outcome.memoryPeak = state.memoryPeak
        // (An outcome's lists start empty: copied only when not, each copy a retain.)
        if !logs.isEmpty { outcome.logs = logs }
        if !storeBinding.deniedGroups.isEmpty { outcome.deniedGroups = storeBinding.deniedGroups }
        outcome.storeConflict = outcome.status != .ok && storeBinding.lastCommitFailure == .conflict
        outcome.bundleVersion = bundle.version
        if outcome.elapsed > deadline.soft && outcome.status != .timeout { warnSoftDeadline(&outcome) }
    }

    @inline(never)
    private func warnSoftDeadline(_ outcome: inout CallOutcome) {
        outcome.warnings.append("\(role.rawValue) took \(Self.milliseconds(outcome.elapsed)) ms, over its soft deadline of \(Self.milliseconds(deadline.soft)) ms")
    }

    static func loggerLevel(_ level: LuaLogLevel) -> Logger.Level {
        switch level {
        case .debug: return .debug
        case .info: return .info
        case .warn: return .warning
        case .error: return .error
        }
    }

    /// The CPU time the calling thread has used, in seconds.
    static func threadCPUTime() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    static func seconds(_ d: Duration) -> Double {
        let (seconds, attoseconds) = d.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Nanoseconds since the call began.
    private var elapsedNanoseconds: Int64 { MonotonicClock.nanoseconds() - started }

    static func milliseconds(_ seconds: Double) -> String {
        let ms = seconds * 1000
        return ms < 10 ? fixedText(ms, decimals: 1) : String(Int(ms.rounded()))
    }

    // MARK: host

    /// `host.usage()`: memory, time and budget of the running call.
    private func installHost() throws(LuaError) {
        var module = LuaModule(name: "host")
        module.add("usage") { [unowned self] _ in
            var fields: LuaFields = [
                "memory": .table(LuaTable(fields: ["used": .integer(Int64(self.state.memoryUsed)), "limit": .integer(Int64(self.memoryLimit))])),
                "time": .table(LuaTable(fields: [
                    "elapsed": .number(Double(self.elapsedNanoseconds) / 1e9),
                    "limit": .number(self.deadline.hard),
                ])),
            ]
            if let budget = self.budgetUsage {
                fields["budget"] = .table(LuaTable(fields: ["used": .integer(Int64(budget.used)), "remaining": .integer(Int64(budget.remaining))]))
            }
            return [.table(LuaTable(fields: fields))]
        }
        try state.register(module)
    }

    // MARK: The bundle's glue

    /// Declarations, `require`, `load` and the per-call entry point.
    private func installBundle() throws(LuaError) {
        let modules = bundle.modules
        let main = bundle.main
        var declare = LuaModule(name: "declarations")
        recorder.add(to: &declare)
        try state.runGlue(DeclarationRecorder.glue, name: "declarations", functions: declare)
        var module = LuaModule(name: "bundle")
        // compile(into, key, name): main.lua (name nil) or the module `name`,
        // compiled into into[key]: true; false when the bundle has no such
        // module; nil and the message on a syntax error. Each text is
        // compiled once a process: states after the first load its binary
        // form (`loadReusingCompiled`).
        module.add("compile", replayable: true) { args in
            let source: ScriptBundle.Source
            if args.isNil(3) {
                source = main
            } else {
                guard let found = modules[try args.text(3)] else { return [.boolean(false)] }
                source = found
            }
            let function: LuaFunctionRef
            do {
                // Charged to the running call (its memory cap, as Lua's
                // `load` would be): a module's, when a script requires it.
                // main.lua loads as the glue is installed, when no call runs.
                function = try args.state.loadReusingCompiled(bytes: source.bytes, name: source.chunkName, chargedToScript: true)
            } catch LuaError.syntax(let error) {
                return [.nil, .string(LuaString(error.description))]
            }
            try args.set(function, as: try args.text(2), inTable: 1)
            return [.boolean(true)]
        }
        let capabilities = self.capabilities, id = bundle.manifest.id
        module.add("absent", replayable: true) { args in
            guard let why = capabilities.whyAbsent(try args.text(1), bundle: id) else { return [] }
            return [.string(LuaString(why))]
        }
        module.add("setenv", replayable: true) { args in
            try args.setEnvironment(ofFunction: 1, to: 2)
            return []
        }
        let entries = try state.runGlue(Self.glue, name: "bundle", functions: module)
        begin = entries[0]
        roots = entries[1]
        glueObjects = entries[2]
    }

    /// require, load and the per-call entry point (Runtime/bundle.lua).
    static let glue = HostGlue.source(PackageResources.bundle_lua, name: "bundle")

}

/// Numbers calls across threads.
private final class CallCounter: @unchecked Sendable {
    private let lock = FastLock()
    private var count = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count
    }
}
