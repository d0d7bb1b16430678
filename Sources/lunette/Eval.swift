import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem
import WidgetHost

/// Where each file runs: in this process, or in a worker process.
enum Isolation: String, ExpressibleByArgument, CaseIterable {
    case inprocess, process
}

/// The profiles `--profile` accepts.
enum ProfileName: String, ExpressibleByArgument, CaseIterable {
    case sandbox, trusted

    var profile: SandboxProfile { self == .sandbox ? .sandbox : .trusted }
}

/// `lunette eval FILE... [--json] [--profile P] [--memory-mb N] [--timeout-ms N] [--seed N] [-e CODE]...`
struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eval",
        abstract: "Run Lua files, each in a fresh state, and print what they return.",
        discussion: """
            Files run one after another in one process. Text output: what each \
            script prints, then its returned values (tab-separated, as Lua \
            literals; functions, userdata and threads as <function: file.lua:3>, \
            <function: builtin>, <userdata>, <thread>); errors go to standard \
            error with file:line and a traceback. -e CODE runs CODE in each \
            file's state before the file (e.g. -e '_port = true'). With \
            --json: one JSON object per file and line, {"file", "status", \
            "message", "traceback", "location", "limit", "elapsedMs", \
            "results", "memoryPeakBytes", "output"}, status one of ok, syntax, \
            error, timeout, memory, invalid, crashed.
            --isolation process runs each file in a worker process (`lunette \
            worker`, limited with rlimits) instead of this one: a file whose \
            native code crashes the worker is reported as crashed, with the \
            signal, and the next file gets a fresh worker; a worker that does \
            not answer within --timeout-ms and a second's grace is killed, in \
            either profile (timeout). See docs/plugins.md.
            Each file runs in the sandbox profile by default, with a memory cap, \
            a deadline and a 64 KB output cap; a script cannot catch being ended. \
            The trusted profile opens every standard library and enforces only \
            the memory and output caps. See docs/sandbox.md.
            Scripts reach the store with store.group(id) for each --app-group \
            given; a file's writes are committed when it succeeds and dropped \
            when it fails. See docs/store.md.
            Exit status: 0 when every file succeeded, 1 when one failed, 2 for \
            usage errors (such as a file that does not exist).
            """
    )

    @Argument(help: "Lua source files to run.", completion: .file(extensions: ["lua"]))
    var files: [String]

    @Flag(help: "Print one JSON object per file instead of text.")
    var json = false

    @Option(help: "What scripts get: sandbox (for scripts you did not write) or trusted (every standard library, no deadline).")
    var profile: ProfileName = .sandbox

    @Option(name: .customLong("memory-mb"), help: ArgumentHelp("Memory cap of each file's state, in MB.", valueName: "MB"))
    var memoryMB = 30

    @Option(name: .customLong("timeout-ms"), help: ArgumentHelp("Deadline of each file, in milliseconds (sandbox only).", valueName: "ms"))
    var timeoutMs = 1000

    @Option(help: "Seed of math.random for every file, so runs repeat exactly.")
    var seed: Int64 = 0

    @Option(name: .customLong("app-group"), help: ArgumentHelp("Let scripts open this app group with store.group (repeatable).", valueName: "group"))
    var appGroups: [String] = []

    @Option(name: .customLong("store-dir"), help: ArgumentHelp("Store root (default: $LUNETTE_STORE, else ~/.lunette/store).", valueName: "dir"))
    var storeDir: String?

    @Option(help: "Where each file runs: inprocess (this process) or process (a worker process that a crash cannot take down with it).")
    var isolation: Isolation = .inprocess

    @Option(name: [.customShort("e"), .customLong("execute")],
            help: ArgumentHelp("Lua code run in each file's state before the file, as chunk '(command line)' (repeatable, in order).", valueName: "code"))
    var execute: [String] = []

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one Lua file") }
        if memoryMB < 1 || memoryMB > 1 << 20 { throw ValidationError("--memory-mb must be between 1 and 1048576, not \(memoryMB)") }
        if timeoutMs < 1 { throw ValidationError("--timeout-ms must be at least 1, not \(timeoutMs)") }
        for group in appGroups {
            if let problem = StoreText.groupProblem(group) { throw ValidationError("--app-group \(group): \(problem)") }
        }
        for file in files {
            guard let kind = FileKind(atPath: file) else {
                throw ValidationError("\(file): no such file")
            }
            if kind == .directory { throw ValidationError("\(file): is a directory, not a Lua file") }
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ValidationError("\(file): not readable")
            }
        }
    }

    func run() throws {
        let out = FileOutput.standardOutput
        let err = FileOutput.standardError
        var failed = false
        let store = SharedStore(root: storeDir)
        // A worker locks itself down (no new files, sockets or processes) unless its
        // files need the store, which it opens as they run.
        let pool = isolation == .process
            ? WorkerPool(executable: BundleWorkers.thisExecutable, arguments: ["worker"] + (appGroups.isEmpty ? [] : ["--lockdown", "never"]))
            : nil
        defer { pool?.stop() }
        for file in files {
            if !json && files.count > 1 { out.write("==> \(file) <==\n") }
            if let pool {
                if try !runInWorker(file, pool, out, err) { failed = true }
                continue
            }
            var limits = LuaLimits.sandbox
            limits.memory = memoryMB << 20
            limits.timeout = .milliseconds(timeoutMs)
            var evaluator = ScriptEvaluator(profile: profile.profile, options: LuaCallOptions(limits: limits, randomSeed: seed),
                                            store: store, appGroups: appGroups)
            evaluator.prelude = execute
            if !json {
                evaluator.onLog = { level, line in
                    out.write(bytes: Array(level.linePrefix.utf8) + line.bytes + [0x0A])
                }
            }
            let result = evaluator.evaluate(file: file)
            if result.status != .ok { failed = true }
            if json {
                out.write(result.jsonLine + "\n")
                continue
            }
            if let diagnostic = result.diagnostic {
                err.write(diagnostic.text + "\n")
            } else if !result.results.isEmpty {
                out.write(result.results.map(\.description).joined(separator: "\t") + "\n")
            }
        }
        if failed { throw ExitCode(1) }
    }

    /// Runs `file` in a worker of `pool` and prints its row as in-process
    /// runs do; false when it failed (a crash or a kill included).
    func runInWorker(_ file: String, _ pool: WorkerPool, _ out: FileOutput, _ err: FileOutput) throws -> Bool {
        guard let data = FileManager.default.contents(atPath: file) else { throw CLIFailure("error: \(file): cannot read the file") }
        var request: [(String, JSONValue)] = [
            ("op", .of("eval")), ("name", .of(file)), ("source", .base64([UInt8](data))),
            ("profile", .of(profile.rawValue)), ("memoryMB", .of(memoryMB)), ("timeoutMs", .of(timeoutMs)),
            ("appGroups", .list(appGroups.map { .of($0) })), ("prelude", .list(execute.map { .of($0) })),
            ("seed", .of(Int(seed))),
        ]
        if let storeDir { request.append(("storeDir", .of(storeDir))) }
        let answer = try pool.call(.record(request), deadline: Double(timeoutMs) / 1000 + 1) { message in
            guard !json, let (level, line) = (try? WireLogLine.decode(message)) ?? nil else { return nil }
            out.write(bytes: Array(level.linePrefix.utf8) + line + [0x0A])
            return nil
        }
        switch answer {
        case .success(let done):
            if json { out.write((done["json"]?.text ?? "") + "\n") } else if let text = done["text"]?.text {
                err.write(text + "\n")
            } else if let results = done["results"]?.items, !results.isEmpty {
                out.write(results.compactMap { $0.text }.joined(separator: "\t") + "\n")
            }
            return done["status"]?.text == CallStatus.ok.rawValue
        case .failure(let loss):
            var diagnostic = loss.diagnostic
            diagnostic.file = file
            let result = EvalResult(file: file, diagnostic: diagnostic)
            if json { out.write(result.jsonLine + "\n") } else { err.write(diagnostic.text + "\n") }
            return false
        }
    }
}

/// `lunette worker`: a worker process of a host that isolates calls
/// (docs/plugins.md). Not for people: it speaks the framed protocol on its
/// standard input and output.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Serve a host's calls over standard input and output (process isolation).",
        shouldDisplay: false)

    /// When the worker locks itself down (`WorkerServer.Lockdown`).
    typealias Lockdown = WorkerServer.Lockdown

    @Option(help: "When to lock down (no new files, sockets or processes): start, open (after the bundle's open request), never.")
    var lockdown: Lockdown = .start

    @Flag(help: "Serve as a fork server: fork a worker for each request on standard input (a socket), each locked down as the request says.")
    var forkServer = false

    func run() throws {
        if forkServer { Self.serveForks() }
        Self.serve(lockdown: lockdown)
    }

    /// Serves as the fork server (`--fork-server`): `WorkerForkServer.serve`
    /// returns in each worker it forks, which then serves as `worker
    /// --lockdown MODE` with the mode its request asked for. Also run
    /// without the parser (`Unparsed`).
    static func serveForks() -> Never {
        serve(lockdown: WorkerForkServer.serve())
    }

    /// Serves until the host closes the channel, then exits: 0, or 3 when
    /// the channel failed. Also run without the parser (`Unparsed`).
    static func serve(lockdown: Lockdown) -> Never {
        let refused = WorkerServer.limit(WorkerServer.Limits())
        if !refused.isEmpty { FileOutput.standardError.write("lunette worker: not limited: \(refused.joined(separator: ", "))\n") }
        if lockdown == .start { WorkerServer.lockDownSaying() }
        do {
            try WorkerServer.serve(WorkerChannel(input: STDIN_FILENO, output: STDOUT_FILENO), lockDownAtOpen: lockdown == .open)
        } catch {
            FileOutput.standardError.write("lunette worker: \(error)\n")
            SystemCall.exit(3)
        }
        SystemCall.exit(0)
    }
}

extension WorkerServer.Lockdown: ExpressibleByArgument {}
