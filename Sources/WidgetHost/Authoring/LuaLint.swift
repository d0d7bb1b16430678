import Foundation

/// The lint: luacheck (Debian's `lua-check`) over a bundle's Lua files,
/// with the globals of `ScriptAPI` (`LuacheckConfig`): the bundle's own
/// `.luacheckrc` when it has one (as `lunette types` writes it), else the
/// one `lunette types` would write. `lunette check` reports its findings
/// with the rest when luacheck is installed.
public struct LuaLint: Sendable {
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case couldNotRun(String)
        public var description: String {
            switch self { case .couldNotRun(let why): return "luacheck could not run: \(why)" }
        }
    }

    /// The luacheck to run.
    public let executable: String

    public init(executable: String) { self.executable = executable }

    /// `luacheck` on `$PATH`, or nil when it is not installed.
    public static func installed(environment: [String: String] = ProcessInfo.processInfo.environment) -> LuaLint? {
        for folder in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(folder)/luacheck"
            if FileManager.default.isExecutableFile(atPath: candidate) { return LuaLint(executable: candidate) }
        }
        return nil
    }

    /// Lints every Lua file of `bundle` (but `.lunette/`), in file and line order.
    public func run(bundle: String, api: ScriptAPI = .lunette, version: String) throws(Failure) -> [LintFinding] {
        let temporary = FileManager.default.temporaryDirectory
            .appendingPathComponent("lunette-luacheck-\(getpid())-\(UInt32.random(in: 0 ... .max)).lua").path
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        var arguments = ["--codes", "--no-color", "--formatter", "plain", "--no-cache"]
        if FileManager.default.fileExists(atPath: bundle + "/.luacheckrc") {
            arguments += ["--config", ".luacheckrc"]
        } else {
            do { try Data(LuacheckConfig.text(api, version: version).utf8).write(to: URL(fileURLWithPath: temporary)) } catch {
                throw .couldNotRun("cannot write its configuration: \(error.localizedDescription)")
            }
            arguments += ["--config", temporary]
        }
        arguments += ["--exclude-files", "\(EditorFiles.definitionsFolder)/*", "--", "."]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: bundle)
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { throw .couldNotRun(error.localizedDescription) }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // 0: nothing found, 1: warnings, 2: errors; 3 and up: luacheck itself failed.
        guard process.terminationReason == .exit, process.terminationStatus <= 2 else {
            let said = (problem + text).trimmingCharacters(in: .whitespacesAndNewlines)
            throw .couldNotRun("exit status \(process.terminationStatus)" + (said.isEmpty ? "" : ": \(said)"))
        }
        return Self.parse(text)
    }

    /// Reads luacheck's plain format: `./main.lua:3:7: (W211) unused variable 'x'`.
    static func parse(_ text: String) -> [LintFinding] {
        var findings: [LintFinding] = []
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4, let number = Int(parts[1]), let column = Int(parts[2]) else { continue }
            var rest = parts[3].drop { $0 == " " }
            var code = ""
            if rest.hasPrefix("("), let close = rest.firstIndex(of: ")") {
                code = String(rest[rest.index(after: rest.startIndex) ..< close])
                rest = rest[rest.index(after: close)...].drop { $0 == " " }
            }
            var file = String(parts[0])
            if file.hasPrefix("./") { file.removeFirst(2) }
            findings.append(LintFinding(file: file, line: number, column: column, code: code, message: String(rest)))
        }
        return findings
    }
}

/// One thing luacheck found.
public struct LintFinding: Sendable, Equatable, CustomStringConvertible {
    /// The file as luacheck names it, inside the bundle (`main.lua`, `tests/a_test.lua`).
    public var file: String
    public var line: Int
    public var column: Int
    /// luacheck's code: `W211` (unused variable), `W111` (setting a
    /// global), `W113` (reading an undefined global), `E011` (syntax).
    public var code: String
    public var message: String

    /// An error: a syntax error, or a read of a global or a library
    /// field that does not exist in the sandbox (`io`, `string.fromat`:
    /// it fails when the line runs). Everything else is a warning.
    public var isError: Bool { code.hasPrefix("E") || code == "W113" || code == "W143" }

    /// What it means for a Lunette script, when luacheck's words do not say it.
    public var hint: String? {
        switch code {
        case "W111", "W112":
            return "globals do not outlive a call (rule L6): make it local, or keep it in the store"
        case "W113":
            return "no such global in Lunette's sandbox (docs/script-api.md lists them)"
        case "W143":
            return "no such field in the sandbox's library"
        default:
            return nil
        }
    }

    public var description: String {
        "\(file):\(line):\(column): (\(code)) \(message)" + (hint.map { " — \($0)" } ?? "")
    }
}
