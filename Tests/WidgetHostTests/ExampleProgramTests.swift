import Foundation
import Testing

/// The programs in examples/ that embed the host as users do (issue 14):
/// built by the test command, run here as a user would, twice on one
/// store, to check that they continue where they were.
@Suite("Example programs that embed the host")
struct ExampleProgramTests {
    /// The repository's root (examples/ is under it).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    let store = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-example-\(UUID().uuidString)").path

    @Test func theAppContinuesWithItsWidgetAndItsSpentBudget() throws {
        let bundle = Self.root + "/examples/tasks"
        let first = try CLI.run(["--store", store, "--bundle", bundle, "--seconds", "4", "--budget", "2"], program: "lunette-example-app")
        #expect(first.status == 0, "\(first.stderr)")
        let out1 = first.stdout.split(separator: "\n").map(String.init)
        #expect(out1.first == "added com.example.tasks#1", "\(first.stdout)")
        #expect(out1.contains("event: performed CompleteTask: ok"))
        #expect(out1.filter { $0.contains("reloaded (request, counted): ok") }.count == 2, "\(first.stdout)")
        #expect(out1.contains("widget com.example.tasks#1: budget 2 used, 0 left"), "\(first.stdout)")
        #expect(out1.contains { $0.hasPrefix("next reload: request in ") && $0.hasSuffix("(waiting for the budget)") }, "\(first.stdout)")
        // Logs go through swift-log, to standard error.
        #expect(first.stderr.contains("info example.app: ") && first.stderr.contains("tapped Complete"), "\(first.stderr)")

        let second = try CLI.run(["--store", store, "--bundle", bundle, "--seconds", "0.5", "--budget", "2"], program: "lunette-example-app")
        #expect(second.status == 0, "\(second.stderr)")
        let out2 = second.stdout.split(separator: "\n").map(String.init)
        #expect(out2.first == "continuing with com.example.tasks#1: budget 2 used, 0 left", "\(second.stdout)")
        #expect(!out2.contains { $0.contains("counted): ok") }, "a counted reload over the kept budget: \(second.stdout)")
        #expect(out2.contains { $0.contains("shows") && $0.contains("\"remaining\":1") }, "the app's data and the widget's tap carried on: \(second.stdout)")
    }

    @Test func theServerRunsTwoBundlesAtOnceAndContinuesTheNextDay() throws {
        let args = ["--store", store, "--examples", Self.root + "/examples", "--devices", "4", "--hours", "24"]
        let first = try CLI.run(args, program: "lunette-example-server")
        #expect(first.status == 0, "\(first.stderr)")
        let lines = first.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("overlap: one after the other ") && $0.contains(" s, together ") && $0.contains("speed-up") }, "\(first.stdout)")
        #expect(lines.contains { $0.hasPrefix("com.example.tasks after: 4 widgets (#1–#4), 160 counted reloads in their budgets' windows, 4 waiting for budget") }, "\(first.stdout)")
        #expect(lines.contains { $0.hasPrefix("com.example.weather after: 4 widgets (#1–#4), 96 counted reloads") }, "\(first.stdout)")
        #expect(first.stderr.contains("example.server: ") && first.stderr.contains("playing 2026-11-24T00:00:00Z → 2026-11-25T00:00:00Z"), "\(first.stderr)")

        let second = try CLI.run(args + ["--no-measure"], program: "lunette-example-server")
        #expect(second.status == 0, "\(second.stderr)")
        let next = second.stdout.split(separator: "\n").map(String.init)
        #expect(!next.contains { $0.hasPrefix("overlap") })
        #expect(second.stderr.contains("playing 2026-11-25T00:00:00Z → 2026-11-26T00:00:00Z"), "\(second.stderr)")
        // The same widgets, with the budgets they had spent.
        #expect(next.contains { $0.hasPrefix("com.example.tasks before: 4 widgets (#1–#4), 160 counted reloads in their budgets' windows, 4 waiting for budget") }, "\(second.stdout)")
        #expect(next.contains { $0.hasPrefix("com.example.weather before: 4 widgets (#1–#4), 96 counted reloads") }, "\(second.stdout)")
        #expect(next.contains { $0.hasPrefix("com.example.tasks after: 4 widgets (#1–#4), 160 counted reloads in their budgets' windows") }, "\(second.stdout)")
    }
}
