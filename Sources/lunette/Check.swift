import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import SharedStore
import WidgetHost

/// `lunette check BUNDLE [--json]`
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Load a bundle, run each widget once, and flag what widget reviews flag.",
        discussion: """
            Checks bundle.json and every declaration (file:line for each \
            problem), then calls each widget's placeholder, snapshot and \
            timeline once under the limits, in its first family with its \
            default configuration, and reports: calls that fail; a placeholder \
            that reads the store; calls over their soft deadline; entries out \
            of order, closer than 5 minutes, or too many; and a reload policy \
            that would use up the refresh budget, with the projected reloads \
            per day. --json prints {"bundle","ok","lint","findings":[{"level",\
            "kind","check","message","location"?}]}. The clock is virtual, at the start \
            of today unless --at says otherwise, so the figures are the same \
            from run to run; --family and --config choose the configuration \
            checked (for the kinds that support them). The store is a fresh \
            temporary one unless --store-dir names one.
            Exit status: 0 when there are no errors (warnings allowed), 1 when \
            there are errors, 2 for usage errors.
            """
    )

    @Argument(help: "The bundle directory (bundle.json, main.lua).", completion: .directory)
    var bundle: String

    @Flag(help: "Print JSON.")
    var json = false

    @Option(help: ArgumentHelp("When the calls happen, ISO 8601 (default: the start of today).", valueName: "date"))
    var at: String?

    @Option(help: ArgumentHelp("The family to check each kind in, where the kind supports it (default: its first).", valueName: "family"))
    var family: String?

    @Option(help: ArgumentHelp("A configuration value, name=value (repeatable; for the kinds that declare it).", valueName: "name=value"))
    var config: [String] = []

    @Option(name: .customLong("store-dir"), help: ArgumentHelp("Use this store root instead of a fresh temporary one.", valueName: "dir"))
    var storeDir: String?

    @Flag(name: .customLong("no-lint"), help: "Do not run luacheck.")
    var noLint = false

    @OptionGroup var cap: CallCapOption

    @OptionGroup var host: HostOptions

    func run() throws {
        let calendar = host.calendar()
        let out = FileOutput.standardOutput
        var findings: [Finding] = []
        var id = bundle
        try requireDirectory(bundle)
        let requestedFamily = try family.map { name -> WidgetFamily in
            guard let family = WidgetFamily(rawValue: name) else {
                throw ValidationError("--family \(name): not a family (\(WidgetFamily.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            return family
        }
        var start = calendar.startOfDay(SystemClock().now())
        if let at {
            switch ISODate.parse(at, calendar: calendar) {
            case .success(let t): start = t
            case .failure(let error): throw ValidationError("--at: \(error.message)")
            }
        }
        let texts = try parseAssignments(config, flag: "--config")
        var temporary: String?
        let root: String
        if let storeDir { root = storeDir } else {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-check-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
            temporary = root
        }
        defer { if let temporary { try? FileManager.default.removeItem(atPath: temporary) } }
        do {
            let policy = try host.plugins()
            let loaded = try ScriptBundle.load(bundle, calendar: calendar, grantsFor: { policy?.grants(for: $0) })
            id = loaded.manifest.id
            let runtime = WidgetRuntime(bundle: loaded, services: try host.services(of: loaded, store: SharedStore(root: root), calendar: calendar, at: start, cap: cap))
            var values: [String: LuaValue] = [:]
            for widget in loaded.declarations.widgets {
                let mine = texts.filter { name, _ in
                    (try? runtime.parseValues(kind: widget.kind, [name: texts[name]!])) != nil
                }
                if let parsed = try? runtime.parseValues(kind: widget.kind, mine) { values.merge(parsed) { a, _ in a } }
            }
            let unknown = texts.keys.filter { values[$0] == nil }.sorted()
            if !unknown.isEmpty { throw ValidationError("--config \(unknown.joined(separator: ", ")): no widget kind of \(id) declares \(unknown.count == 1 ? "this parameter" : "these parameters") (or the value does not fit)") }
            findings = BundleChecker(runtime: runtime).check(family: requestedFamily, values: values)
        } catch let errors as LocatedErrors {
            findings = errors.errors.map {
                Finding(level: .error, kind: nil, check: "load", message: $0.locatedMessage, file: $0.file, line: $0.line, column: $0.column)
            }
        }
        let lint: CheckOutput.Lint
        if noLint { lint = .off } else if let linter = LuaLint.installed() {
            do {
                let prefix = bundle == "." ? "" : bundle.hasSuffix("/") ? bundle : bundle + "/"
                // A file that does not compile is already a load error: luacheck's syntax error would count it twice.
                let loadFailed = findings.contains { $0.check == "load" }
                findings += try linter.run(bundle: bundle, version: LunetteVersion.current).filter { !(loadFailed && $0.code.hasPrefix("E")) }.map { found in
                    var located = found
                    located.file = prefix + found.file
                    return Finding(level: found.isError ? .error : .warning, kind: nil, check: "lint", message: located.description,
                                   file: located.file, line: located.line, column: located.column)
                }
                lint = .ran
            } catch {
                findings.append(Finding(level: .warning, kind: nil, check: "lint", message: "\(error)"))
                lint = .failed
            }
        } else {
            lint = .notInstalled
            if !json { FileOutput.standardError.write("note: luacheck is not installed (Debian: apt install lua-check), so the lint did not run\n") }
        }
        let errors = findings.filter { $0.level == .error }.count
        if json {
            out.write(CheckOutput.json(bundle: id, findings: findings, lint: lint) + "\n")
        } else {
            for finding in findings { out.write(finding.description + "\n") }
            let warnings = findings.count - errors
            out.write(errors == 0 && warnings == 0 ? "\(id): ok\n" : "\(id): \(errors) error(s), \(warnings) warning(s)\n")
        }
        if errors > 0 { throw ExitCode(1) }
    }
}
