import CWorkerShims
import Foundation
import LuaSandbox

/// One worker process, seen from the host: started with `executable
/// arguments` (`lunette worker`), it answers requests over its standard
/// input and output (`WorkerChannel`). A call that does not finish within
/// its deadline plus `grace` gets the worker killed (SIGKILL) and ends as
/// `timeout`; a worker that dies during a call ends it as `crashed`, with
/// the signal. Either way the worker is gone, and `isAlive` says so: the
/// next call needs a fresh one (`WorkerPool`). The host never dies with it.
public final class WorkerProcess {
    public let executable: String
    public let arguments: [String]
    private let process = Process()
    private let channel: WorkerChannel
    /// Set when the host killed it (a call past its deadline, or cancelled).
    private var killed = false
    private var cancelled = false
    private let lock = NSLock()
    /// Seconds a call may run past its own deadline before the worker is killed.
    public var grace: Double = 1
    /// Before each exchange, the worker is moved to the processor the
    /// calling thread runs on (Linux): the caller waits while the worker
    /// runs, so one processor serves both, and the two wake-ups of a call
    /// are handoffs on it rather than wake-ups across processors (on this
    /// project's 2-processor machine, a bundle's call took about half the
    /// time; docs/plugins.md). False: the system places the worker.
    public var followsCaller = true
    /// The processor the worker is pinned to (-1: none).
    private var pinned: Int32 = -1

    /// A write to a worker that has died must fail, not end the host with
    /// SIGPIPE: a host with workers ignores SIGPIPE (once, process-wide).
    private static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// Starts the worker.
    public init(executable: String, arguments: [String] = ["worker"]) throws {
        Self.ignoreBrokenPipes
        self.executable = executable
        self.arguments = arguments
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let toWorker = Pipe(), fromWorker = Pipe()
        process.standardInput = toWorker
        process.standardOutput = fromWorker
        process.standardError = FileHandle.standardError
        // A crash is the host's to report, in one line: no Swift backtrace from the worker.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        try process.run()
        channel = WorkerChannel(input: fromWorker.fileHandleForReading, output: toWorker.fileHandleForWriting)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Whether it can take another call.
    public var isAlive: Bool { process.isRunning && !lock.withLock { killed } }

    public var processIdentifier: Int32 { process.processIdentifier }

    /// How a call in the worker ended, when the worker did not answer it.
    public enum Loss: Error, Sendable, Equatable {
        /// Killed by the host at `deadline` (seconds, grace included).
        case killed(deadline: Double)
        /// Killed by the host when it cancelled the call.
        case cancelled
        /// Died on its own: a signal, or an exit status.
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
            case .died(nil, let status):
                return Diagnostic(.crashed, "the worker process exited with status \(status ?? -1) during the call; the call's effects are discarded, and the next call gets a fresh worker")
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

    /// Sends `request` and reads messages until `done`; `onMessage` gets
    /// each other message as it comes (a log line, a question), and what it
    /// returns is sent back as the answer. The worker is killed when no
    /// `done` came within `deadline` seconds.
    public func call(_ request: JSONValue, deadline: Double, onMessage: (JSONValue) -> JSONValue? = { _ in nil }) -> Result<JSONValue, Loss> {
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
    /// of the answer: a binary `done` (`WireTag.done`) or a JSON one (`"op":
    /// "done"`). Other JSON messages go to `onMessage`, whose answer is sent
    /// back. No answer within `deadline` seconds: the worker is killed
    /// (SIGKILL) and the call is `.killed`.
    public func exchange(_ request: [UInt8], deadline: Double, onMessage: (JSONValue) -> JSONValue? = { _ in nil }) -> Result<[UInt8], Loss> {
        let until = ContinuousClock.now + .nanoseconds(Int64(deadline * 1e9))
        if followsCaller { follow() }
        do {
            try channel.send(bytes: request)
            while let message = try channel.receive(until: until) {
                if message.first == WireTag.done.rawValue { return .success(message) }
                let json = try WorkerChannel.json(message)
                if json["op"]?.text == "done" { return .success(message) }
                if let answer = onMessage(json) { try channel.send(answer) }
            }
        } catch is WorkerChannel.TimedOut {
            lock.withLock { killed = true }
            kill(process.processIdentifier, SIGKILL)
            reap()
            return .failure(.killed(deadline: deadline))
        } catch {
            // A write to a dead worker (EPIPE), or a broken message from a live one.
            if !lock.withLock({ killed }) && process.isRunning {
                return .failure(lose(.broken("\(error)")))
            }
        }
        reap()
        let (wasKilled, wasCancelled) = lock.withLock { (killed, cancelled) }
        if wasCancelled { return .failure(.cancelled) }
        if wasKilled { return .failure(.killed(deadline: deadline)) }
        switch process.terminationReason {
        case .uncaughtSignal: return .failure(.died(signal: process.terminationStatus, status: nil))
        default: return .failure(.died(signal: nil, status: process.terminationStatus))
        }
    }

    /// Pins the worker to the caller's processor, when it is not there yet.
    private func follow() {
        let cpu = lunette_current_cpu()
        guard cpu >= 0, cpu != pinned else { return }
        if lunette_pin_to_cpu(process.processIdentifier, cpu) == 0 { pinned = cpu } else { followsCaller = false }
    }

    /// Kills a worker that broke the protocol; returns `loss`.
    private func lose(_ loss: Loss) -> Loss {
        lock.withLock { killed = true }
        kill(process.processIdentifier, SIGKILL)
        reap()
        return loss
    }

    /// Waits until the worker's end is known (its input closed or it was
    /// killed): a short poll, where `Process.waitUntilExit` on Linux looks
    /// only every 50 ms.
    func reap(within seconds: Double = 10) {
        let until = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
        var pause: UInt32 = 50
        while process.isRunning && ContinuousClock.now < until {
            usleep(pause)
            pause = min(pause * 2, 5000)
        }
        if process.isRunning { process.waitUntilExit() }
    }

    /// Kills the worker in its call (the host cancelled it): the call ends
    /// `.cancelled`. True when it was alive.
    @discardableResult
    public func cancel() -> Bool {
        guard process.isRunning else { return false }
        lock.withLock { killed = true; cancelled = true }
        kill(process.processIdentifier, SIGKILL)
        return true
    }

    /// Ends the worker (its input closes; it exits when it reads the end).
    public func stop() {
        close()
        reap()
    }

    /// Closes the worker's input, without waiting for it to exit (`stop`
    /// waits).
    func close() {
        try? channel.output.close()
    }

    /// Stops `workers` together: every input is closed first, so they exit
    /// side by side, then each is waited for.
    public static func stopAll(_ workers: [WorkerProcess]) {
        for worker in workers { worker.close() }
        for worker in workers { worker.reap() }
    }
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
    public func call(_ request: JSONValue, deadline: Double, onMessage: (JSONValue) -> JSONValue? = { _ in nil }) throws -> Result<JSONValue, WorkerProcess.Loss> {
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
