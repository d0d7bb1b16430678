import Foundation
import Testing
@testable import WidgetHost

/// The HTML report: events as labelled marks, the zone on the axis, whole
/// entries in tables, grouped failures with their tracebacks, and the
/// budget line only while the widget exists. (Tests/browser/report_test.py
/// checks the same page in Chromium.)
@Suite("Simulation HTML page")
struct SimulationPageTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path + "/Fixtures/report"

    func page() throws -> String {
        let bundle = try ScriptBundle.load(Self.fixture, calendar: .utc)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: .utc))
        let scenario = try Scenario.load(Self.fixture + "/scenario.json", runtime: runtime, start: 0)
        let report = Simulator(bundle: bundle, scenario: scenario, store: BundleFixture.temporaryStore(), calendar: .utc).run()
        #expect(report.events.count == 11)
        return SimulationPage(report: report).html
    }

    @Test func eventsAreLabelledMarksAndEachReloadNamesItsCause() throws {
        let html = try page()
        #expect(html.components(separatedBy: "class=\"evmark\"").count - 1 == 11 + 6, "11 events on widget 1, 6 while widget 2 exists")
        #expect(html.contains(">tap Ticker: Refresh</text>"))
        #expect(html.contains("11:30+01:00 reload: intent (tap Ticker: Refresh), exempt, ok</title>"))
        #expect(html.contains("<td>app asks reload of Ticker</td>"))
    }

    @Test func theAxisSaysItsZoneAndTheTablesHoldWholeEntriesAndTracebacks() throws {
        let html = try page()
        #expect(html.contains(">times in Europe/Paris, UTC+01:00</text>"))
        #expect(html.contains("<code>{&quot;note&quot;:&quot;quote 3 of 12 for ACME, one every five minutes from the app's feed&quot;,&quot;price&quot;:105.4,&quot;symbol&quot;:&quot;ACME&quot;}</code>"))
        #expect(html.contains("(×9, first at 13:00+01:00, last at 13:55+01:00)"))
        #expect(html.contains("<pre class=\"traceback\">stack traceback:\n\t[C]: in function 'error'"))
        #expect(!html.contains("[host "))
        #expect(!html.contains("src=\"http") && !html.contains("href=\"http"), "self-contained")
    }

    @Test func aWidgetAddedLaterHasItsBudgetLineOnlyWhileItExists() throws {
        let html = try page()
        let card = try #require(html.components(separatedBy: "<div class=\"card widget\" id=\"widget-2\">").last)
        #expect(card.contains(">added 12:00+01:00</text>") && card.contains(">removed 15:30+01:00</text>"))
        // 12:00 and 15:30 of a 09:00–17:00 run on 960 px after a 70 px margin.
        let points = try #require(card.firstMatch(of: /class="budget" points="([^"]*)"/)?.1)
        let xs = points.split(separator: " ").map { Double($0.split(separator: ",")[0])! }
        #expect(xs.first == 430 && xs.last == 850, "\(xs)")
    }
}
