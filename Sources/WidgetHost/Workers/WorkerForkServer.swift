import CWorkerShims
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem

/// Starts worker processes by forking them from one process that has
/// already started (Linux): `lunette worker --fork-server`, a child of the
/// host's, which forks a worker for each `start` (docs/plugins.md, "How
/// workers start").
///
/// A spawned worker pays for exec, the dynamic loader, the Swift runtime's
/// start and the first use of what opening a bundle needs (most of its cold
/// start; docs/ARCHITECTURE.md). A forked one begins as a copy of the
/// server, which paid for them once, and then limits itself, locks down and
/// serves exactly as a spawned worker does: the same limits, the same
/// seccomp filter, its own process group, only the two pipes of its host
/// open. The server runs no script and holds nothing of any bundle's; it
/// keeps a single thread (a fork copies only the forking one), and refuses
/// to fork otherwise.
///
/// A forked worker is the server's child, not the host's: the server reaps
/// it when the host asks (`reap`), after a pidfd said it exited, so its pid
/// stays its own for as long as the host may signal it, which the host does
/// through the pidfd. The server ends when the host closes its socket (the
/// last `WorkerProcess` it started and its owner are gone); the workers it
/// started go on until their own pipes end.
public final class WorkerForkServer: @unchecked Sendable {
    /// The `lunette` executable the server runs.
    public let executable: String
    /// The server's pid (the host's child).
    public let processIdentifier: Int32
    private let socket: Int32
    private let lock = FastLock()
    /// Set once a request failed in a way that leaves the socket unusable.
    private var broken = false
    private var started = 0

    /// Workers it has started.
    public var workersStarted: Int { lock.withLock { started } }

    /// When a forked worker locks itself down: the worker's own choice.
    public typealias Lockdown = WorkerServer.Lockdown

    /// Whether this system can fork workers from a server (Linux with pidfds).
    public static let isSupported: Bool = {
        #if os(Linux)
        let fd = lunette_pidfd_open(getpid())
        if fd < 0 { return false }
        SystemCall.close(fd)
        return true
        #else
        return false
        #endif
    }()

    /// Seconds the host waits for an answer (a fork, a reap) before it
    /// gives the server up and kills it: a server that stopped answering
    /// (stopped, say) costs one start that long, not the host's thread.
    public let answerTimeout: Double

    /// Starts the server (`executable worker --fork-server`), with the
    /// environment workers get (`WorkerProcess.environment`). Its first
    /// answer comes after its warm-up.
    public init(executable: String, answerTimeout: Double = 5) throws {
        guard Self.isSupported else { throw WorkerProtocolError("cannot fork workers from a server on this system (it needs Linux's pidfd_open)") }
        self.executable = executable
        self.answerTimeout = answerTimeout
        var sock: Int32 = -1
        let pid = WorkerProcess.withCStrings([executable, "worker", "--fork-server"]) { argv in
            WorkerProcess.withCStrings(WorkerProcess.environment()) { envp in
                lunette_fork_server_spawn(executable, argv, envp, &sock)
            }
        }
        guard pid > 0 else { throw WorkerProtocolError("cannot start the fork server \(executable): \(String(cString: strerror(errno)))") }
        processIdentifier = pid
        socket = sock
    }

    deinit {
        SystemCall.close(socket)   // the server reads the end and exits
        var status: Int32 = 0
        // It exits as soon as it reads the end; a server that is stuck is killed.
        var reaped = false
        for _ in 0..<200 {
            let r = waitpid(processIdentifier, &status, WNOHANG)
            if r == processIdentifier || (r < 0 && errno != EINTR) { reaped = true; break }
            usleep(500)
        }
        if !reaped {
            kill(processIdentifier, SIGKILL)
            while waitpid(processIdentifier, &status, 0) < 0 && errno == EINTR {}
        }
        // A server killed in its warm-up (here, or at a timeout) left its scratch folder.
        try? FileManager.default.removeItem(atPath: Self.scratchFolder(of: processIdentifier))
    }

    /// The folder a server's warm-up works in (removed when it is done).
    static func scratchFolder(of pid: Int32) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lunette-fork-server-\(pid)").path
    }

    /// Whether a request's failure with `why` leaves the server unusable:
    /// the socket failed or is out of step (the server is gone, broke the
    /// protocol, did not answer in time). Anything else (EAGAIN, ENOMEM,
    /// EMFILE…) fails that request only.
    private static func breaks(_ why: Int32) -> Bool {
        [EPIPE, ECONNRESET, ENOTCONN, EPROTO, ETIMEDOUT, EBADF, ENOTSOCK].contains(why)
    }

    private var timeoutMs: Int32 { Int32(clamping: Int((answerTimeout * 1000).rounded(.up))) }

    /// Marks the server unusable after `why`; one that did not answer in
    /// time is killed (its late answer must never be read as another's).
    /// Under `lock`.
    private func giveUp(_ why: Int32) {
        broken = true
        if why == ETIMEDOUT { kill(processIdentifier, SIGKILL) }
    }

    /// Whether it can still start workers.
    public var isUsable: Bool { lock.withLock { !broken } }

    private var ready = false
    private var rehearsedFirst = false

    /// Whether it has finished its warm-up and serves, without waiting (a
    /// host spawns a worker rather than wait for it). A server that ended
    /// before it was ready is unusable.
    public var isReady: Bool { lock.withLock { checkReady(waiting: 0) } }

    /// Whether, ready, it had rehearsed a worker's first requests in its
    /// warm-up (`rehearse`): false while it is not ready, and when the
    /// rehearsal failed (its workers then do that work each).
    public var rehearsed: Bool { lock.withLock { checkReady(waiting: 0) && rehearsedFirst } }

    /// Whether it is ready, waiting up to `waiting` ms for its word. Under `lock`.
    private func checkReady(waiting ms: Int32) -> Bool {
        if ready || broken { return ready && !broken }
        var word: Int32 = 0
        switch lunette_fork_server_ready(socket, ms, &word) {
        case 1:
            ready = true
            rehearsedFirst = word != 0
        case 0: break
        default: giveUp(errno)
        }
        return ready
    }

    /// A new worker: its pid and the host's ends of its pipes (its input,
    /// its output). Throws when the server cannot fork one: when it is gone
    /// or out of step, it is then unusable.
    func start(lockdown: Lockdown) throws -> (pid: Int32, toWorker: Int32, fromWorker: Int32) {
        try lock.withLock {
            guard !broken else { throw WorkerProtocolError("the fork server is gone") }
            guard checkReady(waiting: timeoutMs) else {
                if !broken { giveUp(ETIMEDOUT) }
                throw WorkerProtocolError("the fork server did not finish its warm-up within \(answerTimeout) s")
            }
            var toWorker: Int32 = -1, fromWorker: Int32 = -1
            let code = Int32(Lockdown.allCases.firstIndex(of: lockdown)!)   // the request's byte
            let pid = lunette_fork_server_start(socket, code, timeoutMs, &toWorker, &fromWorker)
            guard pid > 0 else {
                let why = errno
                if Self.breaks(why) { giveUp(why) }
                throw WorkerProtocolError("the fork server could not start a worker: \(String(cString: strerror(why)))")
            }
            started += 1
            return (pid, toWorker, fromWorker)
        }
    }

    /// Has the server reap worker `pid`, which has exited: its wait status,
    /// or nil when the server is gone (its workers were reaped by the
    /// system, how they ended unknown).
    func reap(_ pid: Int32) -> Int32? {
        lock.withLock {
            guard !broken else { return nil }
            var status: Int32 = 0
            if lunette_fork_server_reap(socket, pid, timeoutMs, &status) == 0 { return status }
            let why = errno
            if Self.breaks(why) { giveUp(why) }
            return nil
        }
    }

}
