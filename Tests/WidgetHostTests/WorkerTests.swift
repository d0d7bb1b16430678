import Foundation
import Testing
@testable import WidgetHost

/// Issue 17, points 3 and 4 (first step): worker processes that contain
/// crashes, behind `lunette eval --isolation process`.
@Suite("Worker processes")
struct WorkerTests {
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-worker-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    @Test("a worker stopped in the background is not waited for, and is killed after its grace if it does not exit")
    func aWorkerStoppedInTheBackgroundIsNotWaitedFor() throws {
        // sleep ignores the end of its input, as a worker that will not exit would.
        let worker = try WorkerProcess(executable: "/bin/sleep", arguments: ["30"])
        let pid = worker.processIdentifier
        WorkerProcess.stopInBackground([worker])
        // A stop that waited would have killed and reaped it before returning
        // (it would only go within the grace, 0.1 s, by being killed).
        let alive = kill(pid, 0)
        #expect(alive == 0, "still there when stopInBackground returned")
        WorkerProcess.waitForBackgroundStops()
        let gone = kill(pid, 0), error = errno
        #expect(gone != 0 && error == ESRCH, "killed after its grace and reaped")
    }

    func file(_ name: String, _ source: String) throws -> String {
        let path = directory + "/" + name
        try source.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func rows(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    @Test func nativeCodeThatAbortsIsReportedCrashedAndTheNextFileRunsNormally() throws {
        let ok = try file("ok.lua", "print('hi')\nreturn 1, { a = 2 }")
        let abort = try file("abort.lua", #"package.loadlib("libc.so.6", "abort")()"#)
        let run = try CLI.run(["eval", "--isolation", "process", "--profile", "trusted", "--json", ok, abort, ok])
        #expect(run.status == 1, "\(run.stderr)")
        let rows = try rows(run.stdout)
        try #require(rows.map { $0["status"] as? String } == ["ok", "crashed", "ok"], "\(run.stdout)\(run.stderr)")
        #expect(rows[1]["message"] as? String == "\(abort): the worker process died of signal 6 (SIGABRT); the call's effects are discarded, and the next call gets a fresh worker")
        #expect(rows[2]["output"] as? String == "hi\n" && (rows[2]["results"] as? [Any])?.count == 2)
        #expect(!run.stderr.contains("Backtrac"), "no Swift crash report from the worker: \(run.stderr)")
        let text = try CLI.run(["eval", "--isolation", "process", "--profile", "trusted", abort, ok])
        #expect(text.stderr.contains("crashed: \(abort): the worker process died of signal 6 (SIGABRT); the call's effects are discarded, and the next call gets a fresh worker\n"), "\(text.stderr)")
        #expect(text.stdout.hasSuffix("hi\n1\t{a = 2}\n"), "\(text.stdout)")
    }

    #if os(Linux)
    /// seccomp and no_new_privs are Linux's; a sanitizer build's workers keep their files.
    @Test(.enabled(if: !WorkerServer.isSanitizerBuild, "a sanitizer build does not lock workers down"))
    func aReadyWorkerCannotOpenFilesOrStartProcesses() throws {
        let escape = try file("escape.lua", """
            local f, err = io.open("/etc/hostname")
            local ok, how = os.execute("true")
            return f == nil, err, ok == nil, how
            """)
        let inProcess = try CLI.run(["eval", "--profile", "trusted", "--json", escape])
        #expect((try #require(try rows(inProcess.stdout).first)["results"] as? [Any])?.first as? Bool == false, "in process the file opens: \(inProcess.stdout)")
        let locked = try CLI.run(["eval", "--isolation", "process", "--profile", "trusted", "--json", escape])
        let results = try #require(try rows(locked.stdout).first, "\(locked.stderr)")["results"] as? [Any]
        #expect(results?[0] as? Bool == true && results?[1] as? String == "/etc/hostname: Operation not permitted", "\(locked.stdout)\(locked.stderr)")
        #expect(results?[2] as? Bool == true && results?[3] as? String == "Operation not permitted", "no process can be started: \(locked.stdout)")
        #expect(!locked.stderr.contains("not locked down"), "\(locked.stderr)")
    }
    #endif

    #if os(Linux)
    /// Native code taken over in a worker cannot reach the host: no signal to
    /// another process (the host, -1, its group), no ptrace, no pidfd. No Lua
    /// script can call kill, so a probe is compiled at test time from
    /// lockdown.c and a main that locks down the same way, then tries each
    /// (signal 0: the kernel checks the permission and delivers nothing).
    @Test(.enabled(if: !WorkerServer.isSanitizerBuild, "a sanitizer build does not lock workers down"))
    func aLockedDownWorkerCannotSignalOrReachAnotherProcess() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shims = root.appendingPathComponent("Sources/CWorkerShims")
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        let compiler = ["cc", "clang"].lazy.compactMap { name in
            path.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }.first
        let cc = try #require(compiler, "no C compiler to build the probe: neither cc nor clang is on PATH; install gcc (scripts/bootstrap does)")
        let main = try file("probe.c", #"""
            #define _GNU_SOURCE
            #include <errno.h>
            #include <fcntl.h>
            #include <signal.h>
            #include <stdio.h>
            #include <sys/ptrace.h>
            #include <sys/resource.h>
            #include <sys/syscall.h>
            #include <unistd.h>
            #include "CWorkerShims.h"

            static void say(const char *what, long result) {
                printf("%s %ld %d\n", what, result, result < 0 ? errno : 0);
            }

            int main(void) {
                say("before:kill-parent", kill(getppid(), 0));
                if (lunette_worker_no_new_privs() != 0 || lunette_worker_seccomp() != 0) { perror("lockdown"); return 1; }
                say("kill-parent", kill(getppid(), 0));
                say("kill-all", kill(-1, 0));
                say("kill-group", kill(0, 0));
                say("kill-parent-group", kill(-getpgid(getppid()), 0));
                say("kill-self", kill(getpid(), 0));
                say("kill-self-high-bits", syscall(SYS_kill, (long)getpid() | (1L << 32), 0));
                say("tgkill-self", syscall(SYS_tgkill, getpid(), gettid(), 0));
                say("tgkill-parent", syscall(SYS_tgkill, getppid(), getppid(), 0));
                say("tkill-self", syscall(SYS_tkill, gettid(), 0));
                union sigval value = { 0 };
                say("sigqueue-parent", sigqueue(getppid(), 0, value));
                say("sigqueue-self", sigqueue(getpid(), 0, value));
                struct rlimit limit;
                say("prlimit-self", prlimit(0, RLIMIT_NOFILE, NULL, &limit));
                say("prlimit-parent", prlimit(getppid(), RLIMIT_NOFILE, NULL, &limit));
                say("ptrace", ptrace(PTRACE_TRACEME, 0, 0, 0));
                say("pidfd_open", syscall(SYS_pidfd_open, getppid(), 0));
                say("open", open("/etc/hostname", O_RDONLY));
                return 0;
            }
            """#)
        func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = out
            try process.run()
            let output = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
        let probe = directory + "/probe"
        let built = try run(cc, ["-o", probe, "-I", shims.appendingPathComponent("include").path, main, shims.appendingPathComponent("lockdown.c").path])
        try #require(built.status == 0, "\(cc) could not build the probe: \(built.output)")
        let ran = try run(probe, [])
        try #require(ran.status == 0, "\(ran.output)")
        var outcome: [String: (result: Int, errno: Int32)] = [:]
        for line in ran.output.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let result = Int(fields[1]), let error = Int32(fields[2]) else { Issue.record("not a probe line: \(line)"); continue }
            outcome[String(fields[0])] = (result, error)
        }
        func check(_ name: String, allowed: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
            guard let got = outcome[name] else { Issue.record("no line for \(name): \(ran.output)", sourceLocation: sourceLocation); return }
            if allowed {
                #expect(got.result >= 0, "\(name) should succeed: \(ran.output)", sourceLocation: sourceLocation)
            } else {
                #expect(got.result == -1 && got.errno == EPERM, "\(name) should fail with EPERM: \(ran.output)", sourceLocation: sourceLocation)
            }
        }
        check("before:kill-parent", allowed: true)   // so the EPERMs below are the filter's
        for name in ["kill-parent", "kill-all", "kill-group", "kill-parent-group", "kill-self-high-bits", "tgkill-parent", "tkill-self",
                     "sigqueue-parent", "prlimit-parent", "ptrace", "pidfd_open", "open"] {
            check(name, allowed: false)
        }
        for name in ["kill-self", "tgkill-self", "sigqueue-self", "prlimit-self"] {
            check(name, allowed: true)
        }
    }
    #endif

    #if os(Linux)
    /// The worker's own limits, read from inside it (a worker that opens the
    /// store is not locked down, so it can read /proc).
    @Test func aWorkerRunsUnderItsLimits() throws {
        let limits = try file("limits.lua", #"local f = io.open("/proc/self/limits"); return f and f:read("a") or "none""#)
        let run = try CLI.run(["eval", "--isolation", "process", "--profile", "trusted", "--json",
                               "--app-group", "group.w", "--store-dir", directory + "/store", limits])
        let text = try #require((try rows(run.stdout).first?["results"] as? [Any])?.first as? String, "\(run.stdout)\(run.stderr)")
        func limit(_ name: String) -> [Substring] {
            text.split(separator: "\n").first { $0.hasPrefix(name) }.map { $0.dropFirst(name.count).split(separator: " ") } ?? []
        }
        #expect(limit("Max core file size").prefix(2) == ["0", "0"], "\(text)")
        #expect(limit("Max open files").prefix(2) == ["64", "64"])
        #expect(limit("Max processes").prefix(2) == ["0", "0"])
        #expect(limit("Max cpu time").prefix(2) == ["600", "600"])
        #expect(limit("Max file size").prefix(2) == ["1073741824", "1073741824"])
        if !WorkerServer.isSanitizerBuild { #expect(limit("Max address space").prefix(2) == ["4294967296", "4294967296"]) }
    }
    #endif

    @Test func aWorkerPastItsDeadlineIsKilledEvenInTheTrustedProfile() throws {
        let spin = try file("spin.lua", "while true do end")
        let ok = try file("ok.lua", "return 'after'")
        let run = try CLI.run(["eval", "--isolation", "process", "--profile", "trusted", "--timeout-ms", "200", "--json", spin, ok])
        let rows = try rows(run.stdout)
        try #require(rows.map { $0["status"] as? String } == ["timeout", "ok"], "\(run.stdout)\(run.stderr)")
        #expect((rows[0]["message"] as? String)?.contains("did not answer within 1200 ms (the call's deadline and a grace period) and was killed (SIGKILL)") == true)
    }

    @Test func aRowIsTheSameInAWorkerAsInProcess() throws {
        let files = [
            try file("ok.lua", "log.warn('careful'); print('hi', 2)\nreturn 1, 2.5, { a = { true } }, 'x'"),
            try file("err.lua", "local t = nil\nreturn t.x"),
            try file("syntax.lua", "return {"),
            try file("memory.lua", "local t = {} for i = 1, 1e7 do t[i] = i end"),
            try file("store.lua", "local g = store.group('group.w'); g:set('k', 1); return g:get('k')"),
        ]
        let store = directory + "/store"
        let common = ["--json", "--memory-mb", "8", "--app-group", "group.w", "--store-dir", store, "--seed", "7"]
        let inProcess = try rows(try CLI.run(["eval"] + common + files).stdout)
        let inWorker = try rows(try CLI.run(["eval", "--isolation", "process"] + common + files).stdout)
        func comparable(_ row: [String: Any]) -> String {
            var row = row
            for key in ["elapsedMs", "memoryPeakBytes"] { row[key] = nil }
            if var limit = row["limit"] as? [String: Any] { limit["elapsedMs"] = nil; limit["peakBytes"] = nil; row["limit"] = limit }
            return String(decoding: try! JSONSerialization.data(withJSONObject: row, options: [.sortedKeys]), as: UTF8.self)
        }
        try #require(inWorker.count == files.count, "\(inWorker)")
        #expect(inProcess.map(comparable) == inWorker.map(comparable))
        #expect(inWorker.map { $0["status"] as? String } == ["ok", "error", "syntax", "memory", "ok"])
    }

    @Test func theChannelFramesMessagesAndRefusesAnOversizedOne() throws {
        let pipe = Pipe()
        let channel = WorkerChannel(input: pipe.fileHandleForReading.fileDescriptor, output: pipe.fileHandleForWriting.fileDescriptor)
        let message = JSONValue.record([("op", .of("log")), ("line", .base64([0xFF, 0x00, 0x41]))])
        try channel.send(message)
        let back = try #require(try channel.receive())
        #expect(back["op"]?.text == "log" && back["line"]?.decodedBytes == [0xFF, 0x00, 0x41])
        try pipe.fileHandleForWriting.write(contentsOf: Data([0x7F, 0xFF, 0xFF, 0xFF]))
        #expect(throws: WorkerProtocolError.self) { try channel.receive() }
        try pipe.fileHandleForWriting.close()
        let ended = Pipe()
        try ended.fileHandleForWriting.close()
        #expect(try WorkerChannel(input: ended.fileHandleForReading.fileDescriptor, output: ended.fileHandleForReading.fileDescriptor).receive() == nil, "the end of the stream")
    }

    /// The watchdog sleeps after 4 ms without a call, and the next call
    /// wakes it (a handshake with a barrier on the watchdog's side only: see
    /// watchdog.c). A worker is a process whose only calls are these, so
    /// between them it does sleep: each spin must still end at its own
    /// deadline, not at the host's kill a second later.
    @Test func aCallAfterTheWatchdogSleptEndsAtItsDeadline() throws {
        let worker = try WorkerProcess(executable: CLI.binary.path)
        defer { worker.stop() }
        func eval(_ source: String, timeoutMs: Int) -> JSONValue? {
            let request = JSONValue.record([("op", .of("eval")), ("name", .of("spin.lua")), ("source", .base64(Array(source.utf8))),
                                            ("profile", .of("sandbox")), ("memoryMB", .of(30)), ("timeoutMs", .of(timeoutMs))])
            guard case .success(let done) = worker.call(request, deadline: 3) else { return nil }
            return done
        }
        #expect(eval("return 1", timeoutMs: 1000)?["status"]?.text == "ok")
        for round in 0..<3 {
            usleep(300_000)   // far past the watchdog's idle time
            let start = ContinuousClock.now
            let done = try #require(eval("while true do end", timeoutMs: 100), "round \(round)")
            let elapsed = ContinuousClock.now - start
            #expect(done["status"]?.text == "timeout", "round \(round): \(done)")
            #expect(done["text"]?.text?.contains("did not answer") == false, "round \(round): ended by the host, not the sandbox: \(done)")
            #expect(elapsed < .milliseconds(800), "round \(round): \(elapsed)")
        }
    }

    @Test func aWorkerThatDiedBetweenCallsIsALossNotTheHostsDeath() throws {
        let worker = try WorkerProcess(executable: CLI.binary.path)
        kill(worker.processIdentifier, SIGKILL)
        usleep(100_000)
        let request = JSONValue.record([("op", .of("eval")), ("name", .of("x.lua")), ("source", .base64(Array("return 1".utf8)))])
        let result = worker.call(request, deadline: 5)
        #expect(result == .failure(.died(signal: SIGKILL, status: nil)), "\(result)")
        #expect(!worker.isAlive)
        let pool = WorkerPool(executable: CLI.binary.path)
        for _ in 0..<2 {
            guard case .success(let done) = try pool.call(request, deadline: 5) else { Issue.record("no answer"); return }
            #expect(done["status"]?.text == "ok")
        }
        #expect(pool.started == 1, "one worker serves call after call")
        guard case .success(let pong) = try pool.call(.record([("op", .of("ping"))]), deadline: 5) else { Issue.record("no answer to ping"); return }
        #expect(pong["op"]?.text == "done")
        pool.stop()
    }
}
