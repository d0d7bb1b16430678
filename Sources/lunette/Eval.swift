import ArgumentParser
import Foundation
import WidgetHost

/// `lunette eval FILE... [--json]`
struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run Lua files, each in a fresh state, and print what they return.",
        discussion: """
            Files run one after another in one process. Text output: what each \
            script prints, then its returned values (tab-separated, as Lua \
            literals); errors go to standard error with file:line and a \
            traceback. With --json: one JSON object per file and line, \
            {"file", "status", "message", "traceback", "elapsedMs", "results", \
            "output"}, status one of ok, syntax, error, timeout, memory.
            Exit status: 0 when every file succeeded, 1 when one failed, 2 for \
            usage errors (such as a file that does not exist).
            """
    )

    @Argument(help: "Lua source files to run.", completion: .file(extensions: ["lua"]))
    var files: [String]

    @Flag(help: "Print one JSON object per file instead of text.")
    var json = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one Lua file") }
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
        for file in files {
            if !json && files.count > 1 { out.write("==> \(file) <==\n") }
            var evaluator = ScriptEvaluator()
            if !json {
                evaluator.onPrint = { line in out.write(bytes: line.bytes + [0x0A]) }
            }
            let result = evaluator.evaluate(file: file)
            if result.status != .ok { failed = true }
            if json {
                out.write(result.jsonLine + "\n")
                continue
            }
            if result.status == .ok {
                if !result.results.isEmpty {
                    out.write(result.results.map(\.description).joined(separator: "\t") + "\n")
                }
            } else {
                var text = "\(result.status.rawValue): \(result.message ?? "failed")\n"
                if let traceback = result.traceback { text += traceback + "\n" }
                err.write(text)
            }
        }
        if failed { throw ExitCode(1) }
    }
}
