import Foundation
import Logging
import SharedStore
import Testing
@testable import WidgetHost

/// Version swaps for apps that update their scripts (issue 15, point 3):
/// a new version is loaded beside the running one, checked, and swapped in
/// between calls, or refused with the running version kept.
@Suite("Bundle versions swapped in a running service")
struct WidgetServiceUpdateTests {
    let t0 = BundleFixture.midnight
    let events = WidgetServiceTests()

    static func main(label: String, extra: String = "") -> String {
        """
        widget { kind = "W", families = { "systemSmall" },
          placeholder = function() return { label = "…" } end,
          timeline = function() return { entries = { { date = clock.now(), label = "\(label)" } }, policy = "never" } end }
        widget { kind = "Gone", placeholder = function() return {} end,
          timeline = function() return { entries = { { date = clock.now() } }, policy = "never" } end }
        intent { id = "Ping", perform = function() return "\(label)" end }
        control { kind = "C", type = "button", value = function() return "\(label)" end }
        \(extra)
        """
    }

    func write(_ fixture: BundleFixture, _ text: String) throws {
        try text.write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
    }

    @Test func aNewVersionIsCheckedAndSwappedInAndTheWidgetsGoOn() async throws {
        let fixture = try BundleFixture(main: Self.main(label: "one"))
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let widget = try await service.addWidget(bundle: bundle, kind: "W")
        try await service.addControl(bundle: bundle, kind: "C")
        let v1 = try await service.version(of: bundle)
        let before = try await service.perform(bundle: bundle, intent: "Ping")
        #expect(before.outcome.bundleVersion == v1 && before.result == "one")
        _ = await events.drain(service, count: 4)

        try write(fixture, Self.main(label: "two"))
        let v2 = try await service.update(bundle: bundle)
        #expect(v2 != v1 && v2.count == 16)
        #expect(try await service.version(of: bundle) == v2)
        let swapped = await events.drain(service, count: 4)
        #expect(swapped.map(describe) == ["updated \(v1) → \(v2)", "reloaded 1 newVersion exempt ok", "shown 1 entry two", "control C two"],
                "\(swapped.map(describe))")
        // The same widget (id, history) on the new version; calls name the version they ran.
        #expect(try await service.widgets(bundle: bundle) == [widget])
        #expect(try await service.widget(widget).reloads.count == 2)
        let after = try await service.perform(bundle: bundle, intent: "Ping")
        #expect(after.outcome.bundleVersion == v2 && after.result == "two")
        #expect(try await service.budget(widget) == (0, 40))
        // Loading the same files again gives the same version.
        #expect(try ScriptBundle.load(fixture.path, calendar: .utc).version == v2)
    }

    @Test func aVersionThatFailsItsCheckIsRefusedAndTheRunningOneStays() async throws {
        let fixture = try BundleFixture(main: Self.main(label: "one"))
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let widget = try await service.addWidget(bundle: bundle, kind: "W")
        let v1 = try await service.version(of: bundle)
        _ = await events.drain(service, count: 2)

        // A syntax error: refused with its file and line.
        let broken = Self.main(label: "two") + "\nlocal x = = 1\n"
        let brokenLine = broken.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains("= =") }! + 1
        try write(fixture, broken)
        do {
            try await service.update(bundle: bundle)
            Issue.record("a version with a syntax error was swapped in")
        } catch let error as BundleUpdateError {
            #expect(error.diagnostics.first?.file == fixture.path + "/main.lua" && error.diagnostics.first?.line == brokenLine, "\(error)")
            #expect(error.diagnostics.first?.kind == .syntax)
        }
        // A provider that fails at run time: refused, naming it, with its line and traceback.
        try write(fixture, Self.main(label: "two").replacingOccurrences(of: "timeline = function() return { entries = { { date = clock.now(), label = \"two\" } }, policy = \"never\" } end }",
                                                                         with: "timeline = function() error(\"no data\") end }"))
        do {
            try await service.update(bundle: bundle)
            Issue.record("a version whose timeline fails was swapped in")
        } catch let error as BundleUpdateError {
            #expect(error.diagnostics.count == 1 && error.diagnostics[0].message.hasPrefix("widget W.timeline: ") && error.diagnostics[0].message.contains("no data"), "\(error)")
            #expect(error.diagnostics[0].line == 3, "\(error)")
            #expect(error.description.hasPrefix("the new version of com.example.test was not swapped in (the running version stays):"))
        }
        let failed = await events.drain(service, count: 2)
        #expect(failed.map(describe).allSatisfy { $0.hasPrefix("update failed") }, "\(failed.map(describe))")
        // Still the first version, showing what it showed.
        #expect(try await service.version(of: bundle) == v1)
        #expect(try await service.shown(widget)?.content["label"] == "one")
        #expect(try await service.perform(bundle: bundle, intent: "Ping").result == "one")
    }

    @Test func aWidgetWhoseKindIsGoneIsRemovedAndIdsGoOn() async throws {
        let fixture = try BundleFixture(main: Self.main(label: "one"))
        let log = CollectedLog()
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc,
                                    logger: Logger(label: "test.service", factory: log.handler))
        let bundle = try await service.load(fixture.path)
        let kept = try await service.addWidget(bundle: bundle, kind: "W")
        _ = try await service.addWidget(bundle: bundle, kind: "Gone")
        let start = Self.main(label: "two").range(of: "widget { kind = \"Gone\"")!.lowerBound
        let end = Self.main(label: "two").range(of: "intent {")!.lowerBound
        var text = Self.main(label: "two")
        text.removeSubrange(start..<end)
        try write(fixture, text)
        try await service.update(bundle: bundle)
        #expect(try await service.widgets(bundle: bundle) == [kept])
        #expect(log.all.contains { $0.contains("widget #2 (Gone) was dropped: the bundle no longer declares that kind") }, "\(log.all)")
        #expect(try await service.addWidget(bundle: bundle, kind: "W").number == 3)
        // The kept state follows the new version: a restart has the same widgets.
        let again = WidgetService(store: SharedStore(root: fixture.storeRoot), clock: VirtualClock(t0), calendar: .utc)
        _ = try await again.load(fixture.path)
        #expect(try await again.widgets(bundle: bundle).map(\.number) == [1, 3])
    }

    func describe(_ event: HostEvent) -> String {
        switch event {
        case .bundleUpdated(_, let version, let previous): return "updated \(previous) → \(version)"
        case .bundleUpdateFailed(_, _, let diagnostics): return "update failed: \(diagnostics.map(\.text))"
        case .controlValue(_, let kind, _, let value, _): return "control \(kind) \(value?.stringValue ?? "nil")"
        case .shown(let id, _, let entry, let placeholder):
            return "shown \(id.number) \(placeholder ? "placeholder" : "entry") \(entry?.content["label"].stringValue ?? "nil")"
        default: return events.describe(event)
        }
    }

    @Test func aParameterANewVersionAddsTakesItsDefaultInWidgetsOnScreen() async throws {
        let config = """
            intent { id = "Config", configuration = true, parameters = { { name = "city", type = "string", default = "Lyon" } } }
            widget { kind = "W", configuration = "Config", placeholder = function() return {} end,
              timeline = function(ctx, config) return { entries = { { date = clock.now(), city = config.city, unit = config.unit } }, policy = "never" } end }
            """
        let fixture = try BundleFixture(main: config)
        let service = WidgetService(store: fixture.store, clock: VirtualClock(t0), calendar: .utc)
        let bundle = try await service.load(fixture.path)
        let widget = try await service.addWidget(bundle: bundle, kind: "W", values: ["city": "Paris"])
        try config.replacingOccurrences(of: "default = \"Lyon\" } }", with: "default = \"Lyon\" }, { name = \"unit\", type = \"string\", default = \"C\" } }")
            .write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        try await service.update(bundle: bundle)
        let entry = try #require(try await service.shown(widget))
        #expect(entry.content["city"] == "Paris" && entry.content["unit"] == "C", "\(entry.content)")
    }
}
