import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHost

/// `lunette test BUNDLE`: runs the bundle's script tests.
struct TestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run a bundle's tests (tests/*.lua and *_test.lua).",
        discussion: """
            A test file declares tests with test("name", function(t) … end); each test gets a \
            fresh temporary store, a virtual clock at 2026-01-01T00:00:00Z (t.at moves it) and \
            a fresh host. See docs/testing.md for the t API. Prints one line per test, each \
            failure with its file:line and traceback, then "N passed, N failed". Exit status: \
            0 when every test passed, 1 when one failed (or a file did not load), 2 for usage \
            errors (no such bundle, no test files, a --filter that matches no test).
            """)

    @Argument(help: ArgumentHelp("The bundle directory.", valueName: "bundle"))
    var bundle: String

    @Option(help: ArgumentHelp("Run only the tests whose name contains this text.", valueName: "name"))
    var filter: String?

    @Flag(help: #"One JSON object: {"tests": [{file, name, line, failure, elapsed}], "passed", "failed"}."#)
    var json = false

    func run() throws {
        let loaded: ScriptBundle
        loaded = try loadBundle(bundle, calendar: .fromEnvironment())
        guard !ScriptTestRunner.testFiles(in: loaded.path).isEmpty else {
            throw ValidationError("\(bundle) has no test files (tests/*.lua or *_test.lua)")
        }
        let filter = self.filter.flatMap { $0.isEmpty ? nil : $0 }   // an empty filter runs everything
        let results = ScriptTestRunner(bundle: loaded, filter: filter).run()
        if let filter, results.isEmpty {
            // A mistyped filter must not look like a green run.
            throw CLIUsageFailure("error: --filter \(filter): no test's name contains it (without --filter, every test runs and is listed)")
        }
        let failed = results.filter { !$0.passed }.count
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            struct Report: Encodable { var tests: [ScriptTestResult]; var passed: Int; var failed: Int }
            let data = try encoder.encode(Report(tests: results, passed: results.count - failed, failed: failed))
            print(String(decoding: data, as: UTF8.self))
        } else {
            for result in results {
                let place = "\(result.file)\(result.line.map { ":\($0)" } ?? "")"
                print("\(result.passed ? "✓" : "✗") \(place) \(result.name) (\(fixedText(result.elapsed * 1000, decimals: 1)) ms)")
                if let failure = result.failure {
                    print(failure.text.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
                }
            }
            print("\(results.count - failed) passed, \(failed) failed")
        }
        if failed > 0 { throw ExitCode.failure }
    }
}
