import ArgumentParser
import Foundation
import WidgetHost

/// The profiles `--profile` accepts.
enum ProfileName: String, ExpressibleByArgument, CaseIterable {
    case sandbox, trusted

    var profile: SandboxProfile { self == .sandbox ? .sandbox : .trusted }
}

/// `lunette eval FILE... [--json] [--profile P] [--memory-mb N] [--timeout-ms N] [--seed N] [-e CODE]...`
struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
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
            error, timeout, memory, invalid.
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
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                throw ValidationError("\(file): no such file")
            }
            if isDirectory.boolValue { throw ValidationError("\(file): is a directory, not a Lua file") }
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
        for file in files {
            if !json && files.count > 1 { out.write("==> \(file) <==\n") }
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
}
