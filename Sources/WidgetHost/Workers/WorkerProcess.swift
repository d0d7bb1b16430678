import CWorkerShims
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import Dispatch
import LunetteSystem
import LuaSandbox

/// One worker process, seen from the host: started with `executable
/// arguments` (`lunette worker`), it answers requests over its standard
/// input and output (`WorkerChannel`). A call that does not finish within
/// the deadline its caller gives (its own, and a grace) gets the worker
/// killed (SIGKILL) and ends as `timeout`; a worker that dies during a call ends it as `crashed`, with
/// the signal. Either way the worker is gone, and `isAlive` says so: the
/// next call needs a fresh one (`WorkerPool`). The host never dies with it.
///
/// The host starts it itself (`lunette_spawn_worker`: two pipes, no other
/// descriptor of the host's, a process group of its own) and is the only
/// one to reap it, so its pid cannot be another process's while the host
/// may still signal it; or a fork server forks it (`WorkerForkServer`),
/// which reaps it only when the host asks, and the host signals it through
/// a pidfd. Every wait is bounded.
public final class WorkerProcess {
    public let executable: String
    public let arguments: [String]
    /// The worker's pid.
    public let processIdentifier: Int32
    private let channel: WorkerChannel
    /// Who reaps it.
    private let origin: Origin
    /// Its wait status, once reaped.
    private var exitStatus: Int32?
    /// Set when it was reaped but how it ended is not known (its fork server is gone).
    private var endUnknown = false
    /// A forked worker that its pidfd said exited, not reaped yet.
    private var exited = false
    /// Set when the host killed it (a call past its deadline, or cancelled).
    private var killed = false
    private var cancelled = false
    private let lock = FastLock()
    /// Before each exchange, the worker is moved to the processor the
    /// calling thread runs on (Linux): the caller waits while the worker
    /// runs, so one processor serves both, and the two wake-ups of a call
    /// are handoffs on it rather than wake-ups across processors (on this
    /// project's 2-processor machine, a bundle's call took about half the
    /// time; docs/plugins.md). False: the system places the worker (and
    /// one that was pinned may run anywhere again). A host that calls
    /// several workers at once sets it false for those calls, so that
    /// workers whose callers share a processor do not share it too.
    public var followsCaller = true
    /// The processor the worker is pinned to (-1: none).
    private var pinned: Int32 = -1
    /// The clock of the worker's CPU time (`cpuSeconds`), found once.
    private var cpuClock: clockid_t?

    /// A write to a worker that has died must fail, not end the host with
    /// SIGPIPE: a host with workers ignores SIGPIPE (once, process-wide).
    private static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// How the worker came to be, which says how it is reaped and signalled.
    private enum Origin {
        /// Spawned by the host, whose child it is: `waitpid`, `kill`.
        case spawned
        /// Forked by `server`, whose child it is: `pidfd` becomes readable
        /// when it exits and signals it; the server reaps it.
        case forked(WorkerForkServer, pidfd: Int32)
    }

    /// Starts the worker.
    public init(executable: String, arguments: [String] = ["worker"]) throws {
        Self.ignoreBrokenPipes
        self.executable = executable
        self.arguments = arguments
        var toWorker: Int32 = -1, fromWorker: Int32 = -1
        let pid = Self.withCStrings([executable] + arguments) { argvPointers in
            Self.withCStrings(Self.environment()) { envPointers in
                lunette_spawn_worker(executable, argvPointers, envPointers, &toWorker, &fromWorker)
            }
        }
        guard pid > 0 else {
            throw WorkerProtocolError("cannot start \(executable): \(String(cString: strerror(errno)))")
        }
        processIdentifier = pid
        origin = .spawned
        channel = Self.channel(toWorker: toWorker, fromWorker: fromWorker)
        cpuClock = Self.cpuClock(of: pid)
    }

    /// Forks the worker from `server` (`WorkerForkServer`): it runs as
    /// `executable worker --lockdown <lockdown>` would.
    public init(forkedBy server: WorkerForkServer, lockdown: WorkerForkServer.Lockdown) throws {
        Self.ignoreBrokenPipes
        executable = server.executable
        arguments = ["worker", "--lockdown", lockdown.rawValue]
        let (pid, toWorker, fromWorker) = try server.start(lockdown: lockdown)
        let pidfd = lunette_pidfd_open(pid)
        guard pidfd >= 0 else {
            // It cannot be watched: it is not kept. Its pipes close, so it exits.
            let why = String(cString: strerror(errno))
            SystemCall.close(toWorker)
            SystemCall.close(fromWorker)
            _ = kill(pid, SIGKILL)   // still the server's unreaped child: the pid is its own
            // The server reaps without waiting: asked again while the kill lands (briefly).
            var tries = 0
            while server.reap(pid) == nil && server.isUsable && tries < 50 {
                usleep(2000)
                tries += 1
            }
            throw WorkerProtocolError("cannot watch a forked worker (pidfd_open: \(why))")
        }
        processIdentifier = pid
        origin = .forked(server, pidfd: pidfd)
        channel = Self.channel(toWorker: toWorker, fromWorker: fromWorker)
        cpuClock = Self.cpuClock(of: pid)
    }

    /// A worker's environment: the host's, with no Swift backtrace (a crash
    /// is the host's to report, in one line).
    static func environment() -> [String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return environment.map { "\($0.key)=\($0.value)" }
    }

    /// The channel over a new worker's pipes.
    private static func channel(toWorker: Int32, fromWorker: Int32) -> WorkerChannel {
        // The host's writes wait under each call's deadline, never longer.
        _ = fcntl(toWorker, F_SETFL, fcntl(toWorker, F_GETFL) | O_NONBLOCK)
        return WorkerChannel(input: fromWorker, output: toWorker, closesDescriptors: true)
    }

    /// The clock of process `pid`'s CPU time, where the system has one.
    private static func cpuClock(of pid: Int32) -> clockid_t? {
        var clock = clockid_t()
        return clock_getcpuclockid(pid, &clock) == 0 ? clock : nil
    }

    /// `strings` as a NULL-terminated array of C strings, for `body`.
    static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) } + [nil]
        defer { for copy in copies { free(copy) } }
        return copies.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    deinit {
        stop(killing: true)
        if case .forked(_, let pidfd) = origin { SystemCall.close(pidfd) }
    }

    /// Whether it can take another call.
    public var isAlive: Bool { !lock.withLock { killed } && isRunning }

    /// Whether it has not exited (a spawned worker is reaped when it has).
    var isRunning: Bool {
        lock.withLock { !hasEnded() }
    }

    /// Whether it has exited: a spawned worker is reaped then (`waitpid`);
    /// a forked one is only seen to have (its pidfd), and reaped by its
    /// server in `collect`, so that nothing that may be called under
    /// another lock of the host's waits for a server. Under `lock`.
    private func hasEnded() -> Bool {
        if exitStatus != nil || exited { return true }
        switch origin {
        case .spawned:
            return waitFor(blocking: false)
        case .forked(_, let pidfd):
            exited = Self.pidfdSaysExited(pidfd, waiting: false)
            return exited
        }
    }

    /// Whether the worker's pid is still its own, for what the host does by
    /// pid (affinity, CPU time). A spawned worker's is until the host reaps
    /// it (no system call); a forked one's only while its pidfd says it
    /// runs: once it has exited, a server that is gone leaves its reaping to
    /// the system, and the pid to reuse. Under `lock`.
    private func pidIsItsOwn() -> Bool {
        if case .spawned = origin { return exitStatus == nil }
        return !hasEnded()
    }

    /// Reaps a spawned worker (`blocking`: once it exits); whether it is
    /// reaped. Under `lock`.
    private func waitFor(blocking: Bool) -> Bool {
        var status: Int32 = 0
        var r: Int32
        repeat { r = waitpid(processIdentifier, &status, blocking ? 0 : WNOHANG) } while r < 0 && errno == EINTR
        if r == processIdentifier { exitStatus = status; return true }
        if r < 0 { exitStatus = 0; return true }   // nothing left to reap (not ours any more)
        return false
    }

    /// Whether `pidfd`'s process has exited (`waiting`: once it has).
    private static func pidfdSaysExited(_ pidfd: Int32, waiting: Bool) -> Bool {
        var ready = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        var r: Int32
        repeat { r = poll(&ready, 1, waiting ? -1 : 0) } while r < 0 && errno == EINTR
        return r > 0 && ready.revents & Int16(POLLIN) != 0
    }

    /// Reaps the worker once it exits (a forked one through its server:
    /// its status, or, with the server gone, none). Under `lock`.
    private func collect() {
        if exitStatus != nil { return }
        switch origin {
        case .spawned:
            _ = waitFor(blocking: true)
        case .forked(let server, let pidfd):
            if !exited { exited = Self.pidfdSaysExited(pidfd, waiting: true) }
            guard exited else { return }   // the pidfd cannot be polled: left unreaped rather than guessed
            if let status = server.reap(processIdentifier) { exitStatus = status } else {
                exitStatus = 0
                endUnknown = true
            }
        }
    }

    /// The CPU time the worker has used, in seconds, read by the host
    /// (`clock_getcpuclockid`), not told by the worker; nil once it is
    /// reaped, or where the system cannot say.
    public func cpuSeconds() -> Double? {
        lock.withLock { () -> Double? in
            guard pidIsItsOwn(), let clock = cpuClock else { return nil }
            var t = timespec()
            guard clock_gettime(clock, &t) == 0 else { return nil }
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
    }

    /// Sends `signal` to the worker unless it is reaped (its pid may then be another's).
    private func send(signal: Int32) {
        lock.withLock { if exitStatus == nil { _ = signalUnlocked(signal) } }
    }

    /// Sends `signal`; under `lock`, with the worker not reaped.
    private func signalUnlocked(_ signal: Int32) -> Bool {
        switch origin {
        case .spawned: return kill(processIdentifier, signal) == 0
        case .forked(_, let pidfd): return lunette_pidfd_send_signal(pidfd, signal) == 0
        }
    }

    /// How a call in the worker ended, when the worker did not answer it.
    public enum Loss: Error, Sendable, Equatable {
        /// Killed by the host at `deadline` (seconds, grace included).
        case killed(deadline: Double)
        /// Killed by the host when it cancelled the call.
        case cancelled
        /// Died on its own: a signal, or an exit status (neither: how is
        /// not known, its fork server being gone).
        case died(signal: Int32?, status: Int32?)
        /// Broke the protocol (then killed).
        case broken(String)

        /// The call's failure.
        public var diagnostic: Diagnostic {
            switch self {
            case .killed(let deadline):
                return Diagnostic(.timeout, "the worker did not answer within \(Int((deadline * 1000).rounded())) ms (the call's deadline and a grace period) and was killed (SIGKILL); the call's effects are discarded")
            case .cancelled:
                return Diagnostic(.timeout, "cancelled by the host, which killed the worker (SIGKILL); the call's effects are discarded")
            case .died(let signal?, _):
                return Diagnostic(.crashed, "the worker process died of signal \(signal) (\(Self.name(of: signal))); the call's effects are discarded, and the next call gets a fresh worker")
            case .died(nil, let status?):
                return Diagnostic(.crashed, "the worker process exited with status \(status) during the call; the call's effects are discarded, and the next call gets a fresh worker")
            case .died(nil, nil):
                return Diagnostic(.crashed, "the worker process ended during the call (how is not known: the fork server that started it is gone); the call's effects are discarded, and the next call gets a fresh worker")
            case .broken(let why):
                return Diagnostic(.crashed, "the worker broke the protocol (\(why)) and was killed; the call's effects are discarded")
            }
        }

        static func name(of signal: Int32) -> String {
            switch signal {
            case SIGABRT: return "SIGABRT"
            case SIGSEGV: return "SIGSEGV"
            case SIGBUS: return "SIGBUS"
            case SIGFPE: return "SIGFPE"
            case SIGILL: return "SIGILL"
            case SIGKILL: return "SIGKILL"
            case SIGXCPU: return "SIGXCPU: its CPU time limit"
            case SIGXFSZ: return "SIGXFSZ: its file size limit"
            case SIGTERM: return "SIGTERM"
            default: return "signal \(signal)"
            }
        }
    }

    /// Sends the JSON `request` and returns the JSON answer; the binary
    /// messages before it (log lines) go to `onMessage` (`exchange`).
    public func call(_ request: JSONValue, deadline: Double, onMessage: ([UInt8]) -> [UInt8]? = { _ in nil }) -> Result<JSONValue, Loss> {
        let writer = JSONWriter()
        request.writeJSON(to: writer)
        switch exchange(Array(writer.text.utf8), deadline: deadline, onMessage: onMessage) {
        case .success(let bytes):
            do { return .success(try WorkerChannel.json(bytes)) } catch {
                return .failure(lose(.broken("\(error)")))
            }
        case .failure(let loss): return .failure(loss)
        }
    }

    /// Sends the message `request` (JSON or binary) and returns the bytes
    /// of its answer. The binary messages that come first (`WireTag.log`,
    /// `.module`) go to `onMessage`, whose answer is sent back; the first
    /// other message is the answer (`.done`, or JSON). No answer within
    /// `deadline` seconds: the worker is killed (SIGKILL) and the call is
    /// `.killed`.
    public func exchange(_ request: [UInt8], deadline: Double, onMessage: ([UInt8]) -> [UInt8]? = { _ in nil }) -> Result<[UInt8], Loss> {
        let until = ContinuousClock.now + .nanoseconds(Int64(deadline * 1e9))
        place()
        do {
            try channel.send(bytes: request, until: until)
            while let message = try channel.receive(until: until) {
                guard let tag = message.first.flatMap(WireTag.init(rawValue:)), tag != .done else { return .success(message) }
                if let answer = onMessage(message) { try channel.send(bytes: answer, until: until) }
            }
        } catch is WorkerChannel.TimedOut {
            lock.withLock { killed = true }
            send(signal: SIGKILL)
            reap()
            return .failure(.killed(deadline: deadline))
        } catch {
            // A write to a dead worker (EPIPE), a stream cut inside a message,
            // or a broken message from a live one: a worker that is exiting
            // is reported by how it died.
            if !lock.withLock({ killed }) && !exited(within: 0.2) {
                return .failure(lose(.broken("\(error)")))
            }
        }
        // Its output ended: it exited, or closed it and lives on (then it is killed).
        if !lock.withLock({ killed }) && !exited(within: 1) {
            return .failure(lose(.broken("it closed its output and did not exit")))
        }
        reap()
        let (wasKilled, wasCancelled, status, unknown) = lock.withLock { (killed, cancelled, exitStatus ?? 0, endUnknown) }
        if wasCancelled { return .failure(.cancelled) }
        if wasKilled { return .failure(.killed(deadline: deadline)) }
        if unknown { return .failure(.died(signal: nil, status: nil)) }
        let termination = status & 0x7F
        if termination != 0 && termination != 0x7F { return .failure(.died(signal: termination, status: nil)) }
        return .failure(.died(signal: nil, status: (status >> 8) & 0xFF))
    }

    /// Pins the worker to the caller's processor when it follows its caller
    /// and is not there yet (no system call when it is: the usual case);
    /// lets a pinned worker run anywhere when it does not follow.
    private func place() {
        let cpu = followsCaller ? lunette_current_cpu() : -1
        guard cpu != pinned else { return }
        let done = lock.withLock { pidIsItsOwn() && lunette_pin_to_cpu(processIdentifier, cpu) == 0 }
        if done { pinned = cpu } else if cpu >= 0 { followsCaller = false }
    }

    /// Kills a worker that broke the protocol; returns `loss`.
    private func lose(_ loss: Loss) -> Loss {
        lock.withLock { killed = true }
        send(signal: SIGKILL)
        reap()
        return loss
    }

    /// Whether the worker exits within `seconds` (a short poll).
    func exited(within seconds: Double) -> Bool {
        let until = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
        var pause: UInt32 = 50
        while isRunning {
            if ContinuousClock.now >= until { return false }
            usleep(pause)
            pause = min(pause * 2, 5000)
        }
        return true
    }

    /// Reaps the worker: it has `seconds` to exit on its own (its input
    /// closed, or it was killed), then it is killed (SIGKILL), which ends
    /// any process at once. Never waits longer.
    func reap(within seconds: Double = 1) {
        if !exited(within: seconds) { send(signal: SIGKILL) }
        lock.withLock { collect() }
    }

    /// Kills the worker in its call (the host cancelled it): the call ends
    /// `.cancelled`. True when it was alive.
    @discardableResult
    public func cancel() -> Bool {
        lock.withLock { () -> Bool in
            guard exitStatus == nil else { return false }
            killed = true
            cancelled = true
            return signalUnlocked(SIGKILL)
        }
    }

    /// Ends the worker (its input closes; it exits when it reads the end,
    /// or is killed a second later). With `killing`, at once.
    public func stop(killing: Bool = false) {
        close()
        if killing {
            lock.withLock { killed = true }
            send(signal: SIGKILL)
        }
        reap()
    }

    /// Closes the worker's input, without waiting for it to exit (`stop`
    /// waits).
    func close() {
        channel.closeOutput()
    }

    /// Stops `workers` together: every input is closed first, so they exit
    /// side by side, then each is waited for.
    public static func stopAll(_ workers: [WorkerProcess]) {
        for worker in workers { worker.close() }
        for worker in workers { worker.reap() }
    }

    /// Stops idle `workers` without waiting for them: their input closes
    /// now, so they begin to exit, and one serial queue reaps them. For
    /// workers nothing else holds any more — a host's evicted or retired
    /// idle workers —, so that the call that evicts one does not wait for
    /// its exit (1–2 ms of `exited(within:)`'s polling, on every call of a
    /// host with more plugins than idle workers). An idle worker has nothing
    /// left to lose (its calls committed or not when they ended), so each
    /// gets `backgroundGrace` to exit and is then killed: a worker that
    /// ignores the end of its input holds the queue that long, not a second.
    /// `waitForBackgroundStops` waits for them.
    static func stopInBackground(_ workers: [WorkerProcess]) {
        guard !workers.isEmpty else { return }
        for worker in workers { worker.close() }
        let handed = Handed(workers: workers)
        reaper.async { for worker in handed.workers { worker.reap(within: backgroundGrace) } }
    }

    /// How long an idle worker stopped in the background has to exit before
    /// SIGKILL (one normally exits within a few milliseconds of its input's end).
    static let backgroundGrace = 0.1

    /// Returns once every worker given to `stopInBackground` so far has
    /// been reaped.
    static func waitForBackgroundStops() {
        reaper.sync {}
    }

    private static let reaper = DispatchQueue(label: "lunette.worker-reaper")

    /// Workers handed to the reaper, which alone holds them from then on
    /// (their lock guards what `reap` reads and writes).
    private struct Handed: @unchecked Sendable { let workers: [WorkerProcess] }
}

/// A pool of worker processes: a call takes an idle one (or starts one),
/// and a worker lost in a call is replaced by a fresh one for the next.
public final class WorkerPool {
    public let executable: String
    public let arguments: [String]
    private var idle: [WorkerProcess] = []
    /// Workers started so far (fresh ones after losses included).
    public private(set) var started = 0

    public init(executable: String, arguments: [String] = ["worker"]) {
        self.executable = executable
        self.arguments = arguments
    }

    /// Runs `request` in a worker (see `WorkerProcess.call`).
    public func call(_ request: JSONValue, deadline: Double, onMessage: ([UInt8]) -> [UInt8]? = { _ in nil }) throws -> Result<JSONValue, WorkerProcess.Loss> {
        let worker: WorkerProcess
        if let ready = idle.popLast(), ready.isAlive { worker = ready } else {
            worker = try WorkerProcess(executable: executable, arguments: arguments)
            started += 1
        }
        let result = worker.call(request, deadline: deadline, onMessage: onMessage)
        if worker.isAlive { idle.append(worker) }
        return result
    }

    /// Ends every idle worker.
    public func stop() {
        WorkerProcess.stopAll(idle)
        idle = []
    }
}
