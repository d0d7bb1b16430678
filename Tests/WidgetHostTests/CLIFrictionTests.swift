import Foundation
import Testing
@testable import WidgetHost

/// Frictions a new author met with the command line (issue 16, point 4),
/// each gone.
@Suite("Command-line frictions")
struct CLIFrictionTests {
    @Test func aMissingBundleOrScenarioIsAUsageErrorWithoutTheUsageLine() throws {
        for arguments in [["simulate", "/no/such/bundle"], ["timeline", "/no/such/bundle", "--kind", "W"], ["test", "/no/such/bundle"]] {
            let run = try CLI.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr == "error: /no/such/bundle: no such bundle directory\n", "\(arguments): \(run.stderr)")
        }
        let scenario = try CLI.run(["simulate", WidgetCLITests.examples + "/tasks", "--scenario", "/no/such.json"])
        #expect(scenario.status == 2 && scenario.stderr == "error: /no/such.json: no such scenario file\n", "\(scenario.stderr)")
    }

    @Test func storeSetTakesANegativeNumberWithoutDashes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-friction-\(UUID().uuidString)").path
        let set = try CLI.run(["store", "set", "n", "-5", "--group", "group.a", "--store-dir", root])
        #expect(set.status == 0, "\(set.stderr)")
        let get = try CLI.run(["store", "get", "n", "--group", "group.a", "--store-dir", root])
        #expect(get.stdout == "-5\n", "\(get.stdout)")
        let none = try CLI.run(["store", "set", "n", "--group", "group.a", "--store-dir", root])
        #expect(none.status == 2 && none.stderr.contains("store set needs a VALUE after the key"), "\(none.stderr)")
    }

    @Test func simulateExitsOneWhenACallFailedUnlessFailuresAreExpected() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end, timeline = function() error("no data") end }
            """)
        let failing = try CLI.run(["simulate", fixture.path, "--duration", "1h"])
        #expect(failing.status == 1, "\(failing.stderr)")
        #expect(failing.stderr.contains("provider call") && failing.stderr.contains("failed"), "\(failing.stderr)")
        #expect(failing.stdout.contains("no data"), "the report is still printed")
        let allowed = try CLI.run(["simulate", fixture.path, "--duration", "1h", "--allow-failures"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    @Test func scenarioEventsOutsideTheRunAreWarnedAboutWithTheirLine() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-friction-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("s.json").path
        try """
            { "start": "2026-11-21T07:00:00Z", "duration": "2h", "widgets": [ { "kind": "TaskCount" } ],
              "events": [ { "at": "2026-11-21T06:00:00Z", "type": "appForeground" },
                          { "at": "+1h", "type": "appForeground" },
                          { "at": "+3h", "type": "appForeground" } ] }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLI.run(["simulate", WidgetCLITests.examples + "/tasks", "--scenario", path])
        #expect(run.status == 0, "\(run.stderr)")
        let warnings = run.stderr.split(separator: "\n").filter { $0.hasPrefix("warning: ") }
        #expect(warnings.count == 2, "\(run.stderr)")
        #expect(warnings.first?.hasPrefix("warning: \(path):2:") == true && warnings.first?.contains("is before the start") == true, "\(run.stderr)")
        #expect(warnings.last?.hasPrefix("warning: \(path):4:") == true && warnings.last?.contains("it does not happen") == true, "\(run.stderr)")
    }

    @Test func everyProblemOfAScenarioOrBundleJSONIsPrintedOnItsOwnLine() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-friction-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("s.json").path
        try """
            { "duraton": "2h", "widgets": [ { "kind": "TaskCount" } ],
              "events": [ { "at": "+1h", "type": "appForegrund" } ] }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLI.run(["simulate", WidgetCLITests.examples + "/tasks", "--scenario", path])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n") == [
            "invalid: \(path):1:3: unknown key 'duraton' (did you mean 'duration'?)",
            "invalid: \(path):2:38: 'events[1].type' is not an event type: \"appForegrund\" (did you mean 'appForeground'? types: \(ScenarioEvent.typeNames))",
        ], "\(run.stderr)")
        let bundle = try BundleFixture(main: "widget { kind = 'W', placeholder = function() end, timeline = function() end }",
                                       manifest: "{ \"id\": \"a b\",\n  \"limit\": {} }")
        let timeline = try CLI.run(["timeline", bundle.path, "--kind", "W"])
        #expect(timeline.status == 1, "\(timeline.stderr)")
        #expect(timeline.stderr.split(separator: "\n").count == 2 && timeline.stderr.contains(":2:3: unknown key 'limit' (did you mean 'limits'?)"), "\(timeline.stderr)")
    }

    @Test func checkRunsAtAChosenTimeFamilyAndConfigurationOnATemporaryStore() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-home-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let tasks = WidgetCLITests.examples + "/tasks"
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["check", tasks, "--at", "2026-11-21T09:00:00Z", "--family", "systemMedium", "--config", "filter=all", "--json"]
        process.environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("after 2026-11-21T09:30:00Z"), "the --at time was not used: \(text)")
        #expect(!FileManager.default.fileExists(atPath: home + "/.lunette"), "check wrote into the home directory")
        // Two runs give the same findings.
        let again = try CLI.run(["check", tasks, "--at", "2026-11-21T09:00:00Z", "--json"])
        let third = try CLI.run(["check", tasks, "--at", "2026-11-21T09:00:00Z", "--json"])
        #expect(again.stdout == third.stdout)
        // A configuration value no kind declares is a usage error without the usage line.
        let unknown = try CLI.run(["check", tasks, "--config", "nope=1"])
        #expect(unknown.status == 2 && unknown.stderr.hasPrefix("error: --config nope: ") && !unknown.stderr.contains("Usage:"), "\(unknown.stderr)")
    }

    @Test func aHungProviderCostsTheRunsCapNotTheDevicesDeadlineAndSaysWhichLine() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function()
                local x = 0
                while true do x = x + 1 end
              end }
            """)
        let started = Date()
        let run = try CLI.run(["simulate", fixture.path, "--duration", "10m", "--call-cap", "0.2", "--allow-failures", "--wide"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 20, "each reload took the device's 30 s")
        #expect(run.stdout.contains("timeline timeout: \(fixture.path)/main.lua:4: deadline exceeded: limit 200 ms"), "\(run.stdout)")
        #expect(run.stdout.contains("(this run caps every call at 200 ms; a device would let it run up to 30000 ms)"), "\(run.stdout)")
        let check = try CLI.run(["check", fixture.path, "--call-cap", "0.2"])
        #expect(check.status == 1 && check.stdout.contains("main.lua:4: deadline exceeded"), "\(check.stdout)")
    }

    @Test func osDateFollowsTheScenariosZone() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), hour = os.date("%H"), clock = clock.components(clock.now()).hour } } } end }
            """)
        // A fixed offset too, which libc would read with the opposite sign unless given as a POSIX rule.
        for zone in ["GMT+0200", "UTC-5"] {
            let zoned = fixture.path + "/zoned.json"
            try #"{ "start": "2026-11-21T09:00:00", "duration": "10m", "timezone": "\#(zone)", "widgets": [ { "kind": "W" } ] }"#
                .write(toFile: zoned, atomically: true, encoding: .utf8)
            let run = try CLI.run(["simulate", fixture.path, "--scenario", zoned, "--json"], environment: ["TZ": "UTC"])
            #expect(run.status == 0, "\(zone): \(run.stderr)")
            #expect(run.stdout.contains(#""clock":9,"#) && run.stdout.contains(#""hour":"09""#), "\(zone): \(run.stdout.prefix(600))")
        }
        let path = fixture.path + "/s.json"
        try #"{ "start": "2026-11-21T09:00:00", "duration": "10m", "timezone": "Asia/Tokyo", "widgets": [ { "kind": "W" } ] }"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLI.run(["simulate", fixture.path, "--scenario", path, "--json"], environment: ["TZ": "UTC"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(#""clock":9,"#) && run.stdout.contains(#""hour":"09""#), "\(run.stdout.prefix(600))")
        let flagged = try CLI.run(["simulate", fixture.path, "--scenario", path, "--json", "--tz", "America/New_York"])
        #expect(flagged.stdout.contains(#""clock":9,"#) && flagged.stdout.contains(#""hour":"09""#), "the scenario's zone wins over --tz, for os.date too: \(flagged.stdout.prefix(600))")
    }

    @Test func theJSONReportCarriesTheScenariosEvents() throws {
        let examples = WidgetCLITests.examples + "/tasks"
        let run = try CLI.run(["simulate", examples, "--scenario", examples + "/scenario.json", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let events = object?["events"] as? [[String: Any]] ?? []
        #expect(events.contains { $0["type"] as? String == "storeSet" && ($0["label"] as? String)?.isEmpty == false }, "\(events)")
        #expect(events.allSatisfy { $0["at"] is Double || $0["at"] is Int })
    }
}
