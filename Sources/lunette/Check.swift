import ArgumentParser
import Foundation
import WidgetHost

/// `lunette check BUNDLE [--json]`
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a bundle, run each widget once, and flag what widget reviews flag.",
        discussion: """
            Checks bundle.json and every declaration (file:line for each \
            problem), then calls each widget's placeholder, snapshot and \
            timeline once under the limits, in its first family with its \
            default configuration, and reports: calls that fail; a placeholder \
            that reads the store; calls over their soft deadline; entries out \
            of order, closer than 5 minutes, or too many; and a reload policy \
            that would use up the refresh budget, with the projected reloads \
            per day. --json prints {"bundle","ok","findings":[{"level",\
            "kind","check","message"}]}. The store is the real one \
            (--store-dir, else $LUNETTE_STORE, else ~/.lunette/store).
            Exit status: 0 when there are no errors (warnings allowed), 1 when \
            there are errors, 2 for usage errors.
            """
    )

    @Argument(help: "The bundle directory (bundle.json, main.lua).", completion: .directory)
    var bundle: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var storage: StoreOptions

    @OptionGroup var host: HostOptions

    func run() throws {
        let calendar = host.calendar()
        let out = FileOutput.standardOutput
        var findings: [Finding] = []
        var id = bundle
        do {
            let loaded = try ScriptBundle.load(bundle, calendar: calendar)
            id = loaded.manifest.id
            let runtime = WidgetRuntime(bundle: loaded, services: try host.services(of: loaded, store: storage.store, calendar: calendar))
            findings = BundleChecker(runtime: runtime).check()
        } catch let errors as LocatedErrors {
            findings = errors.errors.map { Finding(level: .error, kind: nil, check: "load", message: $0.locatedMessage) }
        }
        let errors = findings.filter { $0.level == .error }.count
        if json {
            out.write(CheckOutput.json(bundle: id, findings: findings) + "\n")
        } else {
            for finding in findings { out.write(finding.description + "\n") }
            let warnings = findings.count - errors
            out.write(errors == 0 && warnings == 0 ? "\(id): ok\n" : "\(id): \(errors) error(s), \(warnings) warning(s)\n")
        }
        if errors > 0 { throw ExitCode(1) }
    }
}
