import Foundation
import Testing
import WidgetHost

/// What `lunette` does before its parser runs (Sources/lunette/Lunette.swift):
/// `lunette --version` alone is answered without ArgumentParser, and
/// `$LUNETTE_LOG_LEVEL` is read with getenv. Both must behave exactly as
/// before; the start-up time is measured by `lunette-bench --only-cli`.
@Suite("The lunette command line's start")
struct CLIStartTests {
    @Test func theVersionBeforeTheParserPrintsWhatTheParserPrints() throws {
        let fast = try CLI.run(["--version"])
        #expect(fast.status == 0)
        #expect(fast.stdout == LunetteVersion.current + "\n")
        #expect(fast.stderr.isEmpty)
        // Command lines the fast path leaves to the parser, which answers
        // these with the version too: the two answers must be the same bytes.
        for arguments in [["--version", "--"], ["--version", "extra"], ["--version", "--version"], ["eval", "--version"], ["--version="]] {
            let parsed = try CLI.run(arguments)
            #expect(parsed.status == fast.status, "\(arguments)")
            #expect(parsed.stdout == fast.stdout, "\(arguments)")
            #expect(parsed.stderr == fast.stderr, "\(arguments)")
        }
    }

    @Test func theWorkersCommandLinesServeAndTheirNearMissesGetTheParsersAnswers() throws {
        // What hosts start workers with (`Unparsed.worker`): the worker serves
        // its channel, here an empty one, so it ends at once, status 0.
        for arguments in [["worker"], ["worker", "--lockdown", "open"], ["worker", "--lockdown", "never"], ["worker", "--lockdown=never"]] {
            let served = try CLI.run(arguments, nullInput: true)
            #expect(served.status == 0, "\(arguments): \(served.stderr)")
            #expect(served.stdout.isEmpty, "\(arguments)")
        }
        // The fork server's: its input must be the host's socket, or it says so and ends, status 3
        // (the same through the parser).
        for arguments in [["worker", "--fork-server"], ["worker", "--lockdown", "never", "--fork-server"]] {
            let server = try CLI.run(arguments, nullInput: true)
            #expect(server.status == 3 && server.stderr.contains("lunette worker --fork-server: cannot read the host's requests"), "\(arguments): \(server.stderr)")
        }
        // Everything else goes through the parser: its errors and its help.
        let mode = try CLI.run(["worker", "--lockdown", "bogus"], nullInput: true)
        #expect(mode.status == 2)
        #expect(mode.stderr.contains("The value 'bogus' is invalid for '--lockdown <lockdown>'"), "\(mode.stderr)")
        let empty = try CLI.run(["worker", "--lockdown="], nullInput: true)
        #expect(empty.status == 2, "\(empty.stderr)")
        let extra = try CLI.run(["worker", "--lockdown", "never", "extra"], nullInput: true)
        #expect(extra.status == 2)
        #expect(extra.stderr.contains("Unexpected argument 'extra'"), "\(extra.stderr)")
        let help = try CLI.run(["worker", "--help"], nullInput: true)
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: lunette worker [--lockdown <lockdown>]"), "\(help.stdout)")
    }

    @Test func otherCommandLinesWithVersionStillGoThroughTheParser() throws {
        // The parser gives --help precedence over --version; the fast path
        // would have printed the version.
        let help = try CLI.run(["--version", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: Run widget logic written in Lua"), "\(help.stdout)")
        #expect(help.stdout.contains("SUBCOMMANDS:"))
        let completion = try CLI.run(["--version", "--generate-completion-script", "bash"])
        #expect(completion.status == 0)
        #expect(completion.stdout.hasPrefix("#!/bin/bash"), "\(completion.stdout.prefix(80))")
        // Near misses are the parser's usage errors, as before.
        for near in ["--versio", "--VERSION", "-V"] {
            let wrong = try CLI.run([near])
            #expect(wrong.status == 2, "\(near)")
            #expect(wrong.stdout.isEmpty, "\(near)")
            #expect(wrong.stderr.hasPrefix("Error: Unknown option '\(near)'"), "\(near): \(wrong.stderr)")
        }
    }

    /// The host's log level still comes from $LUNETTE_LOG_LEVEL: a store
    /// failure is logged at `error`, shown at the default (warning, also
    /// what an empty or unknown level means) and hidden at `critical`.
    @Test func theLogLevelStillComesFromTheEnvironment() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-start-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let group = directory.appendingPathComponent("store/group.t")
        try FileManager.default.createDirectory(at: group, withIntermediateDirectories: true)
        try (Data("not a database".utf8) + Data(repeating: 7, count: 4000)).write(to: group.appendingPathComponent("store.sqlite"))
        let script = directory.appendingPathComponent("read.lua")
        try "return store.group('group.t'):get('k')\n".write(to: script, atomically: true, encoding: .utf8)
        let arguments = ["eval", script.path, "--app-group", "group.t", "--store-dir", directory.appendingPathComponent("store").path]

        for (level, logged) in [("", true), ("critical", false), ("error", true), ("bogus", true)] {
            let result = try CLI.run(arguments, environment: ["LUNETTE_LOG_LEVEL": level])
            #expect(result.status == 1, "'\(level)'")
            #expect(result.stderr.contains("is unavailable (its database is not a Lunette store)"), "'\(level)': \(result.stderr)")
            #expect(result.stderr.contains("error lunette.store:") == logged, "'\(level)': \(result.stderr)")
        }
    }
}
