import CWorkerShims
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem
import Dispatch
import LuaSandbox

/// The worker's side (`lunette worker`): limits itself, then answers the
/// host's requests one at a time until its input ends.
///
/// Requests and answers (one JSON object per frame, `WorkerChannel`):
/// - `{"op": "eval", "name", "source": base64, "profile": "sandbox" | "trusted",
///   "memoryMB", "timeoutMs", "seed"?, "appGroups": [...], "storeDir"?, "prelude": [...]}`
///   → any number of `{"op": "log", "level", "line": base64}` as the script
///   writes them, then `{"op": "done", "status", "text"?, "results": [...], "json"}`:
///   the file's row as `lunette eval` prints it (text: the failure; results:
///   what it returned, shown; json: its `--json` line).
/// - `{"op": "open", …}` → `{"op": "done", "version"}` or `{"op": "done",
///   "error"}`: the bundle this worker serves (`BundleWorkers.link`); then
///   `{"op": "call", …}` → its outcome (`WorkerBundle`, `WorkerWire`).
/// - `{"op": "ping"}` → `{"op": "done"}`: the worker is there (and what a
///   round trip costs).
public enum WorkerServer {
    /// When a worker locks itself down (`lunette worker --lockdown`).
    public enum Lockdown: String, Sendable, CaseIterable {
        /// Before its first request (`lunette eval`'s workers).
        case start
        /// Once its bundle is open, with its app groups (a bundle's worker).
        case open
        /// Never (a worker whose calls open the store as they run).
        case never
    }

    /// The limits a worker sets on itself before it reads a request.
    public struct Limits: Sendable, Equatable {
        /// Address space, bytes: the largest memory cap plus the runtime's own.
        public var addressSpace: UInt64 = 4 << 30
        /// CPU seconds over the worker's whole life (the host starts a fresh one after).
        public var cpuSeconds: UInt64 = 600
        /// Open files: its pipes, the store's databases, a few more.
        public var openFiles: UInt64 = 64
        /// Bytes one file may grow to (the store's databases).
        public var fileSize: UInt64 = 1 << 30
        public init() {}
    }

    /// Sets `limits` on this process: RLIMIT_AS, RLIMIT_CPU, RLIMIT_NOFILE,
    /// RLIMIT_FSIZE, RLIMIT_NPROC 0 (no new processes; root is exempt) and
    /// RLIMIT_CORE 0 (a crash leaves no core file behind). What does not
    /// hold (the system refused it, or a sanitizer build skips it) is
    /// returned, by name; the others hold.
    public static func limit(_ limits: Limits) -> [String] {
        var refused: [String] = []
        func set(_ name: String, _ resource: Int32, _ value: UInt64) {
            var l = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(value))
            #if os(Linux)
            let status = setrlimit(__rlimit_resource_t(UInt32(resource)), &l)
            #else
            let status = setrlimit(resource, &l)
            #endif
            if status != 0 { refused.append(name) }
        }
        #if os(Linux)
        let ids = (core: Int32(RLIMIT_CORE.rawValue), addressSpace: Int32(RLIMIT_AS.rawValue), cpu: Int32(RLIMIT_CPU.rawValue),
                   files: Int32(RLIMIT_NOFILE.rawValue), fileSize: Int32(RLIMIT_FSIZE.rawValue), processes: Int32(6))   // RLIMIT_NPROC
        #else
        let ids = (core: RLIMIT_CORE, addressSpace: RLIMIT_AS, cpu: RLIMIT_CPU, files: RLIMIT_NOFILE, fileSize: RLIMIT_FSIZE,
                   processes: RLIMIT_NPROC)
        #endif
        set("RLIMIT_CORE", ids.core, 0)
        if isSanitizerBuild { refused.append("RLIMIT_AS (a sanitizer build needs its shadow memory)") } else {
            set("RLIMIT_AS", ids.addressSpace, limits.addressSpace)
        }
        set("RLIMIT_CPU", ids.cpu, limits.cpuSeconds)
        set("RLIMIT_NOFILE", ids.files, limits.openFiles)
        set("RLIMIT_FSIZE", ids.fileSize, limits.fileSize)
        set("RLIMIT_NPROC", ids.processes, 0)
        return refused
    }

    /// A build with AddressSanitizer or ThreadSanitizer (scripts/sanitize):
    /// its workers keep their address space and the right to open files,
    /// which the sanitizer's runtime needs, and say so.
    public static var isSanitizerBuild: Bool { lunette_worker_sanitized() != 0 }

    /// Drops what a ready worker must never do: gains privileges
    /// (no_new_privs), opens files or sockets, runs programs, starts
    /// processes, signals any process but itself or reaches another's
    /// memory or descriptors (a seccomp filter: each fails with EPERM;
    /// `lunette_worker_seccomp` in CWorkerShims lists them). Linux only;
    /// returns what could not be applied, with why. Call it after
    /// everything the worker needs is open.
    public static func lockDown() -> [String] {
        tzset()   // the zone file is read now: os.date needs it later, and cannot open it then
        LuaState.measureStack()   // the serving thread's stack, measured now (before the lockdown)
        _ = ProcessInfo.processInfo.activeProcessorCount   // read from /sys and /proc now
        DispatchQueue.global().sync {}                     // Dispatch sizes its pool from them too
        var missing: [String] = []
        func apply(_ name: String, _ status: Int32) {
            switch status {
            case 0: break
            case -2: missing.append("\(name) (not on this system)")
            default: missing.append("\(name) (\(String(cString: strerror(errno))))")
            }
        }
        apply("no_new_privs", lunette_worker_no_new_privs())
        if isSanitizerBuild {
            missing.append("seccomp (a sanitizer build: its reports need to open files)")
        } else {
            apply("seccomp", lunette_worker_seccomp())
        }
        return missing
    }

    /// Locks down (`lockDown`), saying on standard error what could not be applied.
    public static func lockDownSaying() {
        let missing = lockDown()
        if !missing.isEmpty {
            SystemCall.writeToStandardError("lunette worker: not locked down: \(missing.joined(separator: ", "))\n")
        }
    }
}
