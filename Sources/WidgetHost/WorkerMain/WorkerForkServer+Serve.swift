import CWorkerShims
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox
import SharedStore

/// The fork server's side (`lunette worker --fork-server`).
extension WorkerForkServer {
    /// The server's loop, its standard input the host's socket: warms up
    /// (`warmUp`), then forks a worker for each request. Returns in each
    /// worker, with the lockdown the host asked for; the server itself
    /// exits when its host closes the socket (status 0), or when it cannot
    /// serve (status 3, with why on standard error).
    public static func serve() -> Lockdown {
        let rehearsed = warmUp()
        let code = lunette_fork_server_serve(0, rehearsed ? 1 : 0)
        if code == -1 { SystemCall.exit(0) }
        guard code >= 0, Int(code) < Lockdown.allCases.count else {
            let why = code >= 0 ? "a request with an unknown lockdown (\(code))" : "cannot read the host's requests: \(String(cString: strerror(errno)))"
            SystemCall.writeToStandardError("lunette worker --fork-server: \(why)\n")
            SystemCall.exit(3)
        }
        return Lockdown.allCases[Int(code)]
    }

    /// Does once, before the first fork, what every worker would otherwise
    /// do first on its own (`rehearse`), and reads what a worker reads
    /// before it locks down (the time zone, the main thread's stack, the
    /// processors). The server must stay single-threaded to fork: it exits
    /// (status 3, with why) when its warm-up left another thread. Returns
    /// whether the rehearsal succeeded (the host learns it: `rehearsed`).
    static func warmUp() -> Bool {
        tzset()
        LuaState.measureStack()   // the main thread's stack, which every worker keeps
        _ = ProcessInfo.processInfo.activeProcessorCount
        var rehearsed = false
        do {
            try LuaState.withoutWatchdogThread { try rehearse() }
            rehearsed = true
        } catch {
            // Workers still start right: each does the rest itself.
            SystemCall.writeToStandardError("lunette worker --fork-server: warm-up incomplete: \(error)\n")
        }
        let threads = lunette_fork_server_threads()
        if threads != 1 {
            SystemCall.writeToStandardError("lunette worker --fork-server: its warm-up left \(threads) threads; a fork server must have one\n")
            SystemCall.exit(3)
        }
        return rehearsed
    }

    /// A worker's first requests, played once in the server: a one-widget
    /// bundle with an app group (in a scratch folder, removed after) is
    /// opened from the `open` request a host would send, and its timeline
    /// is called from a `call` message. What that does first in a process —
    /// the Swift runtime's lookups of the types these paths use, SQLite's
    /// first use, the host's Lua glue compiled
    /// (each worker then loads it from its binary form, `LuaState.runGlue`),
    /// the code's pages mapped — every forked worker then finds done. No
    /// watchdog thread starts (`withoutWatchdogThread`); all of it is freed
    /// before the first fork. Throws what failed (the workers then do the
    /// rest themselves).
    static func rehearse() throws {
        let scratch = scratchFolder(of: getpid())
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let group = "group.lunette.fork-server"
        let manifestBytes = Array(#"{ "id": "lunette.fork-server", "appGroups": ["\#(group)"] }"#.utf8)
        let file = try JSONFile.parse(bytes: manifestBytes, path: scratch + "/bundle.json")
        let main = ScriptBundle.Source(chunkName: "@main.lua", bytes: Array("""
            widget { kind = "W", placeholder = function() return { n = 0 } end,
              timeline = function(context)
                local n = store.group("\(group)"):get("n") or 0
                return { entries = { { date = clock.now(), n = n, family = context.family } }, policy = { after = clock.now() + 900 } }
              end }
            """.utf8))
        let calendar = HostCalendar.utc
        let bundle = try ScriptBundle.load(root: scratch, manifest: BundleManifest.read(file), manifestBytes: manifestBytes,
                                           sources: (main, [:]), grants: nil, calendar: calendar)
        let services = HostServices(store: SharedStore(root: scratch + "/store"), clock: VirtualClock(1_795_000_000), calendar: calendar)
        let request = try BundleWorkers.openRequest(bundle, services)
        let nothing = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard nothing >= 0 else { throw WorkerProtocolError("cannot open /dev/null: \(String(cString: strerror(errno)))") }
        defer { SystemCall.close(nothing) }
        let worker = try WorkerBundle(try WorkerChannel.json(request), channel: WorkerChannel(input: nothing, output: nothing), lockDown: {})
        let context = LuaValue.table(LuaTable(fields: ["family": "systemSmall"]))
        let call = WorkerWire.call(.init(role: .timeline, what: "widget", id: "W", field: "timeline", arguments: [context, .nil],
                                         budget: nil, now: 1_795_000_000, prepared: nil))
        let (outcome, _) = try WorkerWire.outcome(try worker.call(call))
        guard outcome.status == .ok else { throw WorkerProtocolError("the rehearsed call ended \(outcome.status): \(outcome.message ?? "")") }
    }
}
