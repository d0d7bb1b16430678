import Foundation
import Testing
import LuaSandbox
@testable import WidgetHost

/// The text report: whole content (wrapped or wide), grouped failures with
/// their tracebacks, logs, and times that say their zone; and tracebacks
/// without the host's frames, in every output.
@Suite("Simulation text report and tracebacks")
struct ReportTextTests {
    let t0 = BundleFixture.midnight

    @Test func tableColumnsAlignByCharactersEvenWithEmoji() {
        var table = TextTable(["name", "note"])
        table.add(["🌙🌙", "two moons"])
        table.add(["sun", "one"])
        #expect(table.render(indent: "  ") == "  name  note\n  🌙🌙    two moons\n  sun   one\n")
    }

    /// A widget whose module raises through the store binding's glue
    /// (`[host store]`) from a module the bundle glue required (`[host bundle]`).
    func failingFixture() throws -> BundleFixture {
        try BundleFixture(main: """
            local fmt = require("util.fmt")
            widget { kind = "W", placeholder = function() return { text = "…" } end,
              timeline = function()
                log.info("about to fail")
                fmt.save(store.group("group.test"))
                return { entries = { { date = clock.now(), text = "never" } } }
              end }
            """, files: ["util/fmt.lua": """
            local M = {}
            function M.save(g)
              g:set("k", function() end)
            end
            return M
            """])
    }

    func report(_ fixture: BundleFixture, duration: Double = 3600, zone: String = "UTC") throws -> SimulationReport {
        let (runtime, _) = try fixture.runtime()
        let scenario = Scenario(start: t0, duration: duration, widgets: [try runtime.configuration(kind: "W")], policy: HostPolicy())
        return Simulator(bundle: runtime.bundle, scenario: scenario, store: fixture.store, calendar: HostCalendar(timeZoneNamed: zone)!).run()
    }

    @Test func aTracebackThroughTheHostKeepsOnlyTheScriptsFrames() throws {
        let fixture = try failingFixture()
        let report = try report(fixture)
        let failure = try #require(report.instances.first?.failures.first)
        let traceback = try #require(failure.traceback)
        #expect(traceback.hasPrefix("stack traceback:"))
        #expect(traceback.contains("util/fmt.lua:3: in"), "\(traceback)")
        #expect(traceback.contains("main.lua:5: in"), "\(traceback)")
        #expect(!traceback.contains("[host"), "\(traceback)")
        #expect(!traceback.contains("[C]: in ?"), "\(traceback)")
        #expect(!traceback.contains("[C]: in upvalue"), "the Swift function behind the store's glue: \(traceback)")
        // The JSON report carries the same, trimmed traceback.
        #expect(!report.json.contains("[host") && report.json.contains("util/fmt.lua:3: in"))
    }

    @Test func theTrimmingKeepsNamedLibraryFramesAndDropsTheHostsFrames() {
        let raw = """
            stack traceback:
            \t[C]: in function 'error'
            \tmain.lua:2: in upvalue 'helper'
            \t(...tail calls...)
            \tmain.lua:9: in function <main.lua:7>
            \t[C]: in function 'require'
            \t[host bundle]:44: in function <[host bundle]:40>
            \t[C]: in ?
            """
        #expect(LuaTraceback.scriptFrames(raw) == """
            stack traceback:
            \t[C]: in function 'error'
            \tmain.lua:2: in upvalue 'helper'
            \t(...tail calls...)
            \tmain.lua:9: in function <main.lua:7>
            """)
        #expect(LuaTraceback.scriptFrames("stack traceback:\n\t[host store]:19: in method 'set'\n\t[C]: in ?") == nil)
    }

    @Test func identicalFailuresAreOneLineWithACountAndOneTraceback() throws {
        let report = try report(try failingFixture())
        let instance = try #require(report.instances.first)
        #expect(instance.failures.count == 12)
        let text = report.text(width: nil)
        #expect(text.contains("failures (12, 1 different):"), "\(text)")
        #expect(text.contains("×12, first at 00:00+00:00, last at 00:55+00:00"), "\(text)")
        #expect(text.components(separatedBy: "stack traceback:").count == 2, "one traceback for the group")
        #expect(text.contains("util/fmt.lua:3: in"))
    }

    @Test func logsAreShownPerWidgetWithTimeAndLevel() throws {
        let text = try report(try failingFixture()).text(width: nil)
        #expect(text.contains("logs (the last 12):"), "\(text)")
        #expect(text.contains("00:05+00:00  info   about to fail"), "\(text)")
    }

    @Test func longContentIsWholeWrappedUnderItsColumnOrWide() throws {
        let words = (1...30).map { "word\($0)" }.joined(separator: " ")
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return { text = "p" } end,
              timeline = function() return { entries = { { date = clock.now(), text = "\(words)" } }, policy = "never" } end }
            """)
        let report = try report(fixture)
        let wide = report.text(width: nil)
        #expect(wide.contains(words), "the whole entry on one line")
        let wrapped = report.text(width: 80)
        #expect(!wrapped.contains(words))
        let lines = wrapped.split(separator: "\n")
        #expect(lines.filter { $0.contains("word") }.allSatisfy { $0.count <= 80 }, "\(wrapped)")
        // Nothing is cut: every word is there, continuation lines start under the column.
        for n in 1...30 { #expect(wrapped.contains("word\(n)")) }
        let first = try #require(lines.firstIndex { $0.contains("word1 ") })
        let column = lines[first].range(of: "entry 1")!.lowerBound.utf16Offset(in: lines[first])
        #expect(lines[first + 1].prefix(column).allSatisfy { $0 == " " } && lines[first + 1].dropFirst(column).first != " ")
    }

    @Test func wrappingBreaksAfterACommaThenASpaceAndLosesNothing() {
        let json = #"{"button":"CompleteTask","focus":false,"label":"All done","remaining":0,"title":"Today"}"#
        let lines = TextWrap.lines(json, width: 50)
        #expect(lines == [#"{"button":"CompleteTask","focus":false,"#, #""label":"All done","remaining":0,"title":"Today"}"#])
        let words = TextWrap.lines("one two three four five six seven eight nine ten", width: 20)
        #expect(words == ["one two three four", "five six seven eight", "nine ten"])
        let hard = TextWrap.lines(String(repeating: "x", count: 45), width: 20)
        #expect(hard.map(\.count) == [20, 20, 5])
    }

    @Test func everyTimeInTheTextReportSaysItsZone() throws {
        let fixture = try BundleFixture(main: policyWidget("{ after = clock.add(now, { minutes = 30 }) }"))
        let text = try report(fixture, duration: 2 * 86_400, zone: "Europe/Paris").text(width: nil)
        #expect(text.hasPrefix("Simulation of com.example.test: 2026-11-21 01:00+01:00 → 2026-11-23 01:00+01:00 (2d, Europe/Paris)"), "\(text)")
        #expect(text.contains("\n  01:30+01:00 "), "\(text)")
        #expect(text.contains("01:30+01:00 +1d"), "later days are marked")
        // No bare hh:mm anywhere: every clock time is followed by its offset.
        let bare = try NSRegularExpression(pattern: #"(?<![+\-:\d])\d\d:\d\d(:\d\d)?(?![+\-:\d])"#)
        let hits = bare.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { (text as NSString).substring(with: $0.range) }
        #expect(hits.isEmpty, "times without a zone: \(hits)")
    }

    @Test func aWidgetAddedAndRemovedSaysWhenItWasOnScreen() throws {
        let bundle = try ScriptBundle.load(SimulationPageTests.fixture, calendar: .utc)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: .utc))
        let scenario = try Scenario.load(SimulationPageTests.fixture + "/scenario.json", runtime: runtime, start: 0)
        let text = Simulator(bundle: bundle, scenario: scenario, store: BundleFixture.temporaryStore(), calendar: .utc).run().text(width: nil)
        #expect(text.contains("#2 Ticker · systemMedium\n  on screen from 12:00+01:00 to 15:30+01:00 (removed)\n"), "\(text)")
        #expect(!text.contains("#1 Ticker · systemSmall\n  on screen"), "widget 1 was there the whole run")
        #expect(text.contains("Events\n  at           event\n  10:00+01:00  store: set symbol\n"), "\(text)")
    }

    @Test func theTimelineCommandsLocalTimesSayTheirOffset() throws {
        let fixture = try BundleFixture(main: policyWidget("\"never\""))
        let (runtime, _) = try fixture.runtime()
        let widget = try runtime.configuration(kind: "W")
        let result = runtime.timeline(widget)
        let text = TimelineOutput.text(result, widget: widget, at: t0, calendar: HostCalendar(timeZoneNamed: "America/New_York")!)
        #expect(text.contains("2026-11-20 19:00-05:00  2026-11-21T00:00:00Z"), "\(text)")
    }
}
