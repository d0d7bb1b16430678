import ArgumentParser
import Testing
@testable import lunette

/// `QuickCommandLine` reads the plain command lines of `timeline`, `check`
/// and `test` without ArgumentParser. Wherever it reads one, ArgumentParser
/// must read the same command from it (every property, option groups
/// included, compared through their descriptions, which name a property
/// left unset as "*definition*"); everything else it must leave to the
/// parser.
@Suite("Command lines read without the parser")
struct QuickCommandLineTests {
    /// The command both read, described, or nil when the quick reader
    /// leaves the line to the parser; a line the quick reader takes and the
    /// parser refuses fails the test.
    private func agreement(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        guard let quick = QuickCommandLine.command(["lunette"] + arguments) else { return nil }
        let described = String(reflecting: quick)
        #expect(!described.contains("*definition*"), "\(arguments): a property left unset: \(described)", sourceLocation: sourceLocation)
        do {
            let parsed = try Lunette.parseAsRoot(arguments)
            #expect(String(reflecting: parsed) == described, "\(arguments)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(arguments): read without the parser, but the parser refuses it: \(Lunette.fullMessage(for: error))", sourceLocation: sourceLocation)
        }
        return described
    }

    @Test func theFormsEditorsAndHooksUseAreReadAsTheParserReadsThem() throws {
        let lines: [[String]] = [
            ["timeline", "examples/tasks", "--kind", "TaskCount"],
            ["timeline", "--kind", "TaskCount", "examples/tasks", "--json"],
            ["timeline", "b", "--kind", "K", "--family", "systemMedium", "--at", "2026-11-27T08:00:00Z", "--config", "a=1", "--config", "b=x y",
             "--store-dir", "/tmp/s", "--json", "--policy", "p.json", "--budget", "12", "--budget-scope", "app", "--dev", "--tz", "Europe/Paris",
             "--plugin-policy", "plugins.json", "--isolation", "process"],
            ["timeline", "b", "--kind", "K", "--budget", "+7", "--isolation", "inprocess"],
            ["check", "examples/tasks"],
            ["check", "examples/tasks", "--json", "--no-lint"],
            ["check", "--at", "2026-11-27T08:00:00Z", "b", "--family", "systemLarge", "--config", "n=v", "--store-dir", "s", "--call-cap", "0.5",
             "--tz", "UTC", "--budget", "3", "--dev", "--isolation", "process"],
            ["check", "b", "--call-cap", "0"],
            ["test", "examples/tasks"],
            ["test", "--json", "examples/tasks", "--filter", "counts"],
            // Matching is by place, not by text: a bundle named as a value
            // or a subcommand, a value named as a subcommand.
            ["timeline", "K", "--kind", "K", "--store-dir", "K"],
            ["timeline", "help", "--kind", "timeline"],
            // Begins with the byte of "-" but not with the character.
            ["check", "-\u{301}", "--config", "é=ü"],
        ]
        for line in lines {
            #expect(agreement(line) != nil, "\(line) was left to the parser")
        }
        // What the lines set arrives: one property of each kind.
        let full = try #require(QuickCommandLine.command(["lunette"] + lines[2]) as? TimelineCommand)
        #expect(full.bundle == "b" && full.kind == "K" && full.family == "systemMedium" && full.config == ["a=1", "b=x y"] && full.json)
        #expect(full.storage.storeDir == "/tmp/s" && full.host.budget == 12 && full.host.developerMode && full.host.isolation == .process)
        let plain = try #require(QuickCommandLine.command(["lunette"] + lines[4]) as? Check)
        #expect(plain.bundle == "examples/tasks" && !plain.json && plain.cap.callCap == 2 && plain.host.isolation == .inprocess && plain.config.isEmpty)
    }

    /// Every line built from a command's options, in several orders, with
    /// some tokens dropped or doubled: each the quick reader takes, the
    /// parser reads alike.
    @Test func everyLineTheQuickReaderTakesTheParserReadsAlike() {
        let timeline: [[String]] = [["--kind", "K"], ["--family", "systemSmall"], ["--at", "2026-01-02T03:04:05Z"], ["--config", "a=b"], ["--config", "c=d"],
                                    ["--store-dir", "d"], ["--json"], ["--policy", "p"], ["--budget", "5"], ["--budget-scope", "kind"], ["--dev"],
                                    ["--tz", "Asia/Tokyo"], ["--plugin-policy", "q"], ["--isolation", "process"]]
        let check: [[String]] = [["--json"], ["--at", "2026-01-02T03:04:05Z"], ["--family", "systemSmall"], ["--config", "a=b"], ["--store-dir", "d"],
                                 ["--no-lint"], ["--call-cap", "1.5"], ["--budget", "5"], ["--dev"], ["--tz", "UTC"], ["--isolation", "process"]]
        var taken = 0, lines = 0
        let test: [[String]] = [["--filter", "a b"], ["--json"]]
        for (command, options) in [("timeline", timeline), ("check", check), ("test", test)] {
            for mask in 0..<(1 << 6) {
                // A varied subset of the options, each at a rotated place,
                // the bundle first, last or in the middle.
                let subset = options.enumerated().filter { (mask >> ($0.offset % 6)) & 1 == 1 || $0.offset == 0 }.map(\.element)
                let turn = mask % subset.count
                let chosen = Array(subset[turn...] + subset[..<turn])
                let place = mask % (chosen.count + 1)
                let before = Array(chosen[..<place].joined()), after = Array(chosen[place...].joined())
                var line = [command] + before + ["bundle"] + after
                if mask % 7 == 3 { line += ["--json"] }   // a flag given twice
                if mask % 11 == 5 { line.removeLast() }   // a value or the bundle missing
                lines += 1
                if agreement(line) != nil { taken += 1 }
            }
        }
        // Most lines are plain: a test that took none would prove nothing.
        #expect(taken > lines / 2, "\(taken) of \(lines)")
    }

    @Test func everythingElseIsLeftToTheParser() {
        let refused: [[String]] = [
            ["timeline", "b", "--kind=K"],                     // a joined value
            ["timeline", "b", "--kind", "K", "-h"],             // a short name
            ["timeline", "b", "--kind", "K", "--help"],
            ["timeline", "b", "--kind", "K", "--version"],
            ["timeline", "b", "--kind", "K", "--generate-completion-script", "bash"],
            ["timeline", "--", "b", "--kind", "K"],
            ["timeline", "b", "--kind", "K", "--kind", "L"],   // given twice
            ["timeline", "b", "--kind", "K", "--json", "--json"],
            ["timeline", "b", "--kind"],                       // no value
            ["timeline", "b", "--kind", ""],                   // an empty value
            ["test", "--help"],                                // the one token left is an option
            ["timeline", "--kind", "K", "--version"],
            ["timeline", "b", "--kind", "--json"],             // an option's value that is an option
            ["timeline", "b", "--kind", "K", "--family", "--at", "x"],
            ["timeline", "b", "--kind", "K", "--budget", "-1"],
            ["timeline", "b", "--kind", "K", "--budget", "many"],
            ["timeline", "b", "--kind", "K", "--isolation", "thread"],
            ["timeline", "b", "--kind", "K", "--family", "systemHuge"],   // fails validate()
            ["timeline", "b", "--kind", "K", "--tz", "Not/AZone"],
            ["timeline", "b", "--kind", "K", "--budget-scope", "world"],
            ["timeline", "b", "--kind", "K", "--config", "novalue"],
            ["timeline", "--kind", "K"],                       // no bundle
            ["timeline", "b", "c", "--kind", "K"],             // two
            ["timeline", "b"],                                 // no kind
            ["timeline", "b", "--kind", "K", "--unknown", "x"],
            ["check", "b", "--call-cap", "-1"],
            ["check", "b", "--call-cap", "nan"],
            ["check", "b", "--kind", "K"],                     // not check's
            ["test", "b", "--filter", ""],
            ["test", "b", "--filter", "x", "--filter", "y"],
            ["test", "b", "--dev"],                            // not test's
            ["simulate", "b"],                                 // not a quick command
            ["--json", "timeline", "b", "--kind", "K"],
            [],
        ]
        for line in refused {
            #expect(QuickCommandLine.command(["lunette"] + line) == nil, "\(line)")
            // Had it taken one, the parser would have to read it alike.
            _ = agreement(line)
        }
    }
}
