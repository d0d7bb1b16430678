#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem

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
    /// How long luacheck may take before it is stopped.
    static let timeout: Double = 60

    public init(executable: String) { self.executable = executable }

    /// `luacheck` on `$PATH`, or nil when it is not installed.
    public static func installed(environment: [String: String] = ProcessInfo.processInfo.environment) -> LuaLint? {
        executableOnPath("luacheck", environment: environment).map(LuaLint.init(executable:))
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
                throw .couldNotRun("cannot write its configuration: \(errorText(error))")
            }
            arguments += ["--config", temporary]
        }
        arguments += ["--exclude-files", "\(EditorFiles.definitionsFolder)/*", "--", "."]
        let errorsPath = temporary + ".stderr"
        // Standard error to a file: a pipe left unread could fill and stall luacheck.
        let errors = open(errorsPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard errors >= 0 else {
            throw .couldNotRun("cannot make a file for its standard error in \(FileManager.default.temporaryDirectory.path): \(String(cString: strerror(errno)))")
        }
        defer { try? FileManager.default.removeItem(atPath: errorsPath) }
        // luacheck takes tens of milliseconds on a bundle; one that hangs is ended.
        let run: (ending: ToolProcess.Ending, output: [UInt8])
        do {
            defer { SystemCall.close(errors) }
            run = try ToolProcess.run(executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                      directory: bundle, errorDescriptor: errors, timeout: Self.timeout)
        } catch { throw .couldNotRun(error.description) }
        let text = String(decoding: run.output, as: UTF8.self)
        let problem = fileBytes(atPath: errorsPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let said = (problem + text).trimmingWhitespace()
        switch run.ending {
        case .timedOut: throw .couldNotRun("it did not finish within \(Int(Self.timeout)) s and was stopped")
        case .killed(let signal): throw .couldNotRun("it was ended by signal \(signal)" + (said.isEmpty ? "" : ": \(said)"))
        case .lost(let error): throw .couldNotRun("how it ended could not be read: \(String(cString: strerror(error)))")
        // 0: nothing found, 1: warnings, 2: errors; 3 and up: luacheck itself failed.
        case .exited(let status) where status > 2: throw .couldNotRun("exit status \(status)" + (said.isEmpty ? "" : ": \(said)"))
        case .exited: break
        }
        return Self.explain(Self.parse(text), api: api)
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

/// One thing luacheck found, with what it means for a Lunette script.
public struct LintFinding: Sendable, Equatable, CustomStringConvertible {
    /// The file as luacheck names it, inside the bundle (`main.lua`, `tests/a_test.lua`).
    public var file: String
    public var line: Int
    public var column: Int
    /// luacheck's code: `W211` (unused variable), `W111` (setting a
    /// global), `W113` (reading an undefined global), `E011` (syntax).
    public var code: String
    public var message: String
    /// An error: a syntax error, or a read of a global or a library field
    /// that does not exist in the sandbox (`io`, `string.fromat`: it fails
    /// when the line runs). Everything else is a warning, and so is the
    /// read of a global the same file sets (the set is the mistake).
    public var isError: Bool
    /// What it means here, when luacheck's words do not say it.
    public var hint: String?

    public init(file: String, line: Int, column: Int, code: String, message: String, isError: Bool? = nil, hint: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.code = code
        self.message = message
        self.isError = isError ?? (code.hasPrefix("E") || code == "W113" || code == "W143")
        self.hint = hint
    }

    /// The name luacheck quotes: `'x'` in "unused variable 'x'".
    var quotedName: String? {
        message.split(separator: "'", omittingEmptySubsequences: false).dropFirst().first.map(String.init)
    }

    public var description: String {
        "\(file):\(line):\(column): (\(code)) \(message)" + (hint.map { " — \($0)" } ?? "")
    }
}

extension LuaLint {
    /// Adds what each finding means for a Lunette script: globals do not
    /// outlive a call; the read of a global the file sets is that mistake
    /// again (a warning, pointing at the set), not a missing global; a
    /// misspelt global or library field names the one it meant.
    static func explain(_ findings: [LintFinding], api: ScriptAPI) -> [LintFinding] {
        // Globals set anywhere in the bundle: main.lua runs again at the start
        // of every call, so its top-level globals are there in every call.
        var setAt: [String: (file: String, line: Int)] = [:]
        for f in findings where f.code == "W111" || f.code == "W112" {
            if let name = f.quotedName, setAt[name] == nil { setAt[name] = (f.file, f.line) }
        }
        let globals = api.globals(.tests)
        return findings.map { found in
            var f = found
            switch f.code {
            case "W111", "W112":
                f.hint = "a global lasts one call (rule L6): what a function stores in it is gone at the next call; prefer a local, or the store"
            case "W113":
                if let name = f.quotedName, let set = setAt[name] {
                    f.isError = false
                    f.hint = "'\(name)' is a global set at \(set.file):\(set.line) (it lasts one call, rule L6): prefer a local, or a module"
                } else {
                    let near = f.quotedName.flatMap { NearestName.of($0, in: globals) }
                    f.hint = "no such global in Lunette's sandbox" + (near.map { " (did you mean '\($0)'?)" } ?? " (docs/script-api.md lists them)")
                }
            case "W143":
                // "accessing undefined field 'nwo' of global 'clock'"
                let parts = f.message.split(separator: "'", omittingEmptySubsequences: false)
                let field = parts.count > 1 ? String(parts[1]) : ""
                let table = parts.count > 3 ? String(parts[3]) : ""
                if api.compatibilityFields.first(where: { $0.name == table })?.fields.contains(field) == true {
                    f.isError = false
                    f.hint = "a Lua 5.3 leftover that only some builds of Lua keep: use x ^ y, math.atan(y, x), math.log(x, 10) or math.exp/log instead"
                    break
                }
                let names = api.module(table)?.functions.map(\.name) ?? api.libraries.first { $0.name == table }?.fields ?? []
                let near = NearestName.of(field, in: names)
                f.hint = "no such field of '\(table)' in the sandbox" + (near.map { " (did you mean '\($0)'?)" } ?? "")
            default:
                break
            }
            return f
        }
    }
}

/// The program `name` in the first folder of `$PATH` that has it (without
/// `PATH`, /usr/bin then /bin), or nil: how the host finds luacheck, and
/// the benchmarks their tools.
package func executableOnPath(_ name: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
    for folder in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let candidate = "\(folder)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}
