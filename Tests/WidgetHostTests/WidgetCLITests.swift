import Foundation
import Testing

@Suite("lunette timeline, simulate and check")
struct WidgetCLITests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples").path
    let store = FileManager.default.temporaryDirectory.appendingPathComponent("cli-store-\(UUID().uuidString)").path

    @Test func timelinePrintsTheDocumentedJSON() throws {
        let result = try CLI.run(["timeline", Self.examples + "/tasks", "--kind", "TaskCount", "--at", "2026-11-21T09:00:00Z",
                                  "--config", "filter=week", "--json", "--store-dir", store])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["kind"] as? String == "TaskCount")
        #expect(json["family"] as? String == "systemSmall")
        #expect((json["config"] as? [String: Any])?["filter"] as? String == "week")
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.first?["date"] as? Int == 1_795_251_600)
        #expect((json["policy"] as? [String: Any])?["after"] as? Int == 1_795_253_400)
        #expect(json["diagnostics"] is [Any])
    }

    @Test func timelineRefusesBadOptionsWithUsageErrors() throws {
        let family = try CLI.run(["timeline", Self.examples + "/tasks", "--kind", "TaskCount", "--family", "systemHuge"])
        #expect(family.status == 2)
        #expect(family.stderr.contains("--family systemHuge: not a widget family"))
        let kind = try CLI.run(["timeline", Self.examples + "/tasks", "--kind", "Nope", "--store-dir", store])
        #expect(kind.status == 2)
        #expect(kind.stderr.contains("no widget kind 'Nope' (kinds: TaskCount)"), "\(kind.stderr)")
        let config = try CLI.run(["timeline", Self.examples + "/tasks", "--kind", "TaskCount", "--config", "filter=month", "--store-dir", store])
        #expect(config.status == 2)
        #expect(config.stderr.contains("\"month\" is not one of today, week, all"), "\(config.stderr)")
    }

    @Test func checkPassesTheExamplesAndFlagsABadBundle() throws {
        for example in ["tasks", "wallpaper", "weather", "delivery"] {
            let result = try CLI.run(["check", Self.examples + "/" + example, "--store-dir", store])
            #expect(result.status == 0, "\(example): \(result.stdout)\(result.stderr)")
        }
        let bad = FileManager.default.temporaryDirectory.appendingPathComponent("bad-bundle-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: bad, withIntermediateDirectories: true)
        try #"{ "id": "com.example.bad", "appGroups": ["group.bad"] }"#.write(toFile: bad + "/bundle.json", atomically: true, encoding: .utf8)
        try """
            widget { kind = "Busy", families = { "systemSmall" },
              placeholder = function() return { n = store.group("group.bad"):get("n") } end,
              timeline = function()
                local now = clock.now()
                return { entries = { { date = now + 60 }, { date = now } }, policy = { after = now + 60 } }
              end }
            """.write(toFile: bad + "/main.lua", atomically: true, encoding: .utf8)
        let result = try CLI.run(["check", bad, "--json", "--store-dir", store])
        #expect(result.status == 1)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["ok"] as? Bool == false)
        let findings = try #require(json["findings"] as? [[String: Any]])
        let text = findings.map { "\($0["level"]!) \($0["check"]!) \($0["message"]!)" }.joined(separator: "\n")
        #expect(text.contains("error placeholder the placeholder reads the store"), "\(text)")
        #expect(text.contains("warning timeline entries were not in date order"), "\(text)")
        #expect(text.contains("closer than 300 s"), "\(text)")
        #expect(text.contains("error budget"), "\(text)")
        #expect(text.contains("about 288 reloads per day, over the budget of 40"), "\(text)")
    }

    @Test func simulateWritesTextJSONAndAPage() throws {
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID().uuidString).html").path
        let text = try CLI.run(["simulate", Self.examples + "/wallpaper", "--scenario", Self.examples + "/wallpaper/scenario-15min.json", "--html", page])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("#1 Clock · systemSmall"))
        #expect(text.stdout.contains("deferred by the budget from 2026-11-21 16:15"), "\(text.stdout.prefix(600))")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.components(separatedBy: "aria-label=\"timeline of widget").count == 4, "one chart per widget")
        #expect(html.components(separatedBy: "<title>reload wanted, waiting for the budget</title>").count == 4,
                "each widget's chart shows its reload waiting for the budget")
        let json = try CLI.run(["simulate", Self.examples + "/weather", "--start", "2026-11-21T00:00:00Z", "--duration", "6h", "--json", "--budget", "3"])
        #expect(json.status == 0, "\(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((report["policy"] as? [String: Any])?["budget"] as? Int == 3)
        #expect((report["instances"] as? [Any])?.count == 1)
        let badDuration = try CLI.run(["simulate", Self.examples + "/weather", "--duration", "soon"])
        #expect(badDuration.status == 2)
    }
}
