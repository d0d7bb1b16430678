import DevPage
import Foundation
import LuaSandbox
import SharedStore
import Testing
@testable import WidgetHost

/// The hot-reload loop (issue 15, point 1): the watcher sees what editors
/// do, and the session swaps good versions in and keeps the last good one
/// when a save is broken.
@Suite("The dev loop")
struct DevLoopTests {
    /// Collects what a watcher reports.
    final class Batches: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [[String]] = []
        var all: [[String]] { lock.withLock { seen } }
        func add(_ paths: [String]) { lock.withLock { seen.append(paths) } }

        /// Waits up to 5 s until a batch names `path`.
        func wait(for path: String) -> Bool {
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline {
                if all.contains(where: { $0.contains(path) }) { return true }
                Thread.sleep(forTimeInterval: 0.005)
            }
            return false
        }
    }

    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-watch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path + "/util", withIntermediateDirectories: true)
        try "return 1".write(toFile: path + "/main.lua", atomically: false, encoding: .utf8)
        try "return 2".write(toFile: path + "/util/fmt.lua", atomically: false, encoding: .utf8)
        return path
    }

    @Test(arguments: [false, true])
    func theWatcherSeesWritesRenamesDeletesAndNewFolders(polling: Bool) throws {
        let root = try folder()
        let batches = Batches()
        let watcher = FileWatcher(root: root, forcePolling: polling, relevant: { $0.hasSuffix(".lua") }) { batches.add($0) }
        defer { watcher.stop() }
        #expect(watcher.mechanism == (polling ? "polling" : "inotify"))
        Thread.sleep(forTimeInterval: 0.1)   // the poller's first look
        // In place.
        try "return 10".write(toFile: root + "/main.lua", atomically: false, encoding: .utf8)
        #expect(batches.wait(for: "main.lua"))
        // A temporary file renamed over the old one (how many editors save).
        try "return 20".write(toFile: root + "/util/.fmt.lua.tmp", atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: root + "/util/fmt.lua")
        try FileManager.default.moveItem(atPath: root + "/util/.fmt.lua.tmp", toPath: root + "/util/fmt.lua")
        #expect(batches.wait(for: "util/fmt.lua"))
        // A new folder and a file in it.
        try FileManager.default.createDirectory(atPath: root + "/more", withIntermediateDirectories: true)
        Thread.sleep(forTimeInterval: 0.1)
        try "return 3".write(toFile: root + "/more/x.lua", atomically: false, encoding: .utf8)
        #expect(batches.wait(for: "more/x.lua"))
        // A folder moved in with files already in it.
        let outside = root + "-outside"
        try FileManager.default.createDirectory(atPath: outside + "/lib", withIntermediateDirectories: true)
        try "return 4".write(toFile: outside + "/lib/y.lua", atomically: false, encoding: .utf8)
        try FileManager.default.moveItem(atPath: outside + "/lib", toPath: root + "/lib")
        #expect(batches.wait(for: "lib/y.lua"))
        // Files that are not relevant are not reported.
        try "x".write(toFile: root + "/notes.txt", atomically: false, encoding: .utf8)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(!batches.all.joined().contains("notes.txt"))
    }

    @Test func aBrokenSaveIsReportedAndTheLastGoodVersionGoesOn() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), n = 1 } }, policy = "never" } end }
            """)
        let lines = Batches()
        let session = DevSession(path: fixture.path, store: fixture.store) { lines.add([$0]) }
        await session.start()
        let widget = try #require(await session.widgetIDs.first)
        #expect(try await session.service.shown(widget)?.content["n"] == 1)
        #expect(lines.all.joined().contains { $0.hasPrefix("✓ version ") })

        // A syntax error: reported with its line; the widget still shows the old entry.
        try "widget { kind = \"W\",\n  timeline = = 1 }".write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        #expect(await session.failure?.first?.line == 2)
        #expect(lines.all.joined().contains { $0.contains("main.lua:2:") }, "\(lines.all)")
        #expect(try await session.service.shown(widget)?.content["n"] == 1)
        // A runtime error in the provider: the same.
        try """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() local t = nil; return t.x end }
            """.write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        #expect(await session.failure?.first?.message.hasPrefix("widget W.timeline: ") == true)
        #expect(try await session.service.shown(widget)?.content["n"] == 1)
        // Fixed: swapped in, the widget reloads at once (no floor, no budget), and the diff says what changed.
        try """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), n = 2 }, { date = clock.now() + 60, n = 3 } }, policy = "atEnd" } end }
            """.write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        let (failure, swaps) = (await session.failure, await session.swaps)
        #expect(failure == nil && swaps == 1)
        #expect(try await session.service.shown(widget)?.content["n"] == 2)
        #expect(lines.all.joined().contains { $0.contains("2 entries (+2 −1 ~0), policy never → atEnd") }, "\(lines.all)")
    }

    @Test func aBundleThatDoesNotLoadYetIsTriedAgainOnTheNextSave() async throws {
        let fixture = try BundleFixture(main: "widget {")
        let lines = Batches()
        let session = DevSession(path: fixture.path, store: fixture.store) { lines.add([$0]) }
        await session.start()
        let (bundle, failure) = (await session.bundle, await session.failure)
        #expect(bundle == nil && failure?.first?.kind == .syntax)
        try """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } } } end }
            """.write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        let (loaded, widgets) = (await session.bundle, await session.widgetIDs)
        #expect(loaded == "com.example.test" && widgets.count == 1)
    }

    @Test func everyProblemOfTheScenarioIsKeptAndShownOnItsOwnLine() async throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } } } end }
            """)
        let scenario = fixture.path + "-scenario.json"
        try #"{ "widgets": [ { "kind": "W", "famly": "systemSmall" } ], "duraton": "1h" }"#.write(toFile: scenario, atomically: true, encoding: .utf8)
        let lines = Batches()
        let session = DevSession(path: fixture.path, store: fixture.store, scenario: scenario) { lines.add([$0]) }
        await session.start()
        let failure = await session.failure
        #expect(failure?.map(\.message) == ["unknown key 'widgets[1].famly' (did you mean 'family'?)", "unknown key 'duraton' (did you mean 'duration'?)"],
                "\(String(describing: failure))")
        let shown = lines.all.joined()
        #expect(shown.contains("✗ the scenario does not load"), "\(shown)")
        #expect(shown.filter { $0.contains("invalid: \(scenario):1:") }.count == 2, "\(shown)")
    }

    @Test func lunetteDevReloadsOnSaveAndStopsCleanlyOnCtrlC() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), n = 1 } }, policy = "never" } end }
            """)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["dev", fixture.path, "--store-dir", fixture.storeRoot, "--port", "0"]
        let output = Batches()
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            if !text.isEmpty { output.add([text]) }
        }
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var text: String { output.all.joined().joined() }
        func wait(for needle: String) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if text.contains(needle) { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return false
        }
        #expect(wait(for: "watching \(fixture.path) (inotify); Ctrl-C to stop"), "\(text)")
        #expect(text.contains("dev store: \(fixture.storeRoot)"))
        #expect(wait(for: "page: http://127.0.0.1:"), "\(text)")
        try "widget { kind = \"W\"\n".write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        #expect(wait(for: "✗ not swapped in"), "\(text)")
        #expect(text.contains("main.lua:2:"), "\(text)")
        try """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), n = 2 } }, policy = "never" } end }
            """.write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        #expect(wait(for: "#1 W · systemSmall: 1 entry (+1 −1 ~0)\n"), "\(text)")
        process.interrupt()   // Ctrl-C
        process.waitUntilExit()
        pipe.fileHandleForReading.readabilityHandler = nil
        #expect(process.terminationStatus == 0)
        #expect(wait(for: "stopped"), "\(text)")
    }

    /// `lunette dev` becomes `lunette-dev`, found beside lunette's own
    /// executable; a copy of lunette alone says what is missing and where.
    @Test func lunetteDevWithoutLunetteDevBesideItSaysWhatIsMissing() throws {
        let fixture = try BundleFixture(main: "widget { kind = \"W\", placeholder = function() return {} end, timeline = function() return { entries = {} } end }")
        let alone = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: alone) }
        let copy = alone.appendingPathComponent("lunette")
        try FileManager.default.copyItem(at: CLI.binary, to: copy)
        let process = Process()
        process.executableURL = copy
        process.arguments = ["dev", fixture.path, "--store-dir", fixture.storeRoot, "--no-page", "--seconds", "1"]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = Pipe()
        try process.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(message == "lunette dev: cannot start \(alone.path)/lunette-dev: No such file or directory"
                + " (lunette-dev is built and installed beside lunette: swift build, scripts/install)\n", "\(message)")
    }

    @Test func aKindASaveAddsComesOnScreenAndOneItDropsLeavesIt() async throws {
        let one = """
            widget { kind = "A", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now() } }, policy = "never" } end }
            """
        let fixture = try BundleFixture(main: one)
        let session = DevSession(path: fixture.path, store: fixture.store) { _ in }
        await session.start()
        try (one.replacingOccurrences(of: "kind = \"A\"", with: "kind = \"B\"") + "\n" + one)
            .write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        var kinds = await session.snapshot().widgets.map(\.kind)
        #expect(kinds == ["A", "B"])
        try one.replacingOccurrences(of: "kind = \"A\"", with: "kind = \"B\"").write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        kinds = await session.snapshot().widgets.map(\.kind)
        #expect(kinds == ["B"], "a dropped kind stayed on the page")
    }

    @Test func thePageShowsNumbersJSONCannotHold() {
        var snapshot = DevSnapshot(bundle: "b", path: "/b", version: "v", now: 0, ahead: 0, swaps: 0, failure: nil,
                                   lastReloadMilliseconds: nil, widgets: [], controls: [], activities: [], logs: [])
        snapshot.widgets = [DevSnapshot.Widget(id: 1, name: "#1 W", kind: "W", family: "systemSmall",
                                               entries: [DevSnapshot.Entry(date: 0, content: LuaTable(fields: ["p": .number(.nan), "q": .number(.infinity)]))],
                                               shown: 0, placeholder: nil, policy: "never", lastReload: nil, nextReload: nil,
                                               failure: nil, wouldHaveUsed: 0, budget: 40)]
        let json = DevPageServer.encode(snapshot)
        #expect(json.contains(#""p":"NaN""#) && json.contains(#""q":"Infinity""#), "\(json)")
    }

    @Test func anActiveActivityRunsThroughTheNewUpdaterAfterASwap() async throws {
        func main(_ label: String) -> String {
            """
            activity { type = "Order", attributes = { id = "string" }, state = { s = "string" },
              updater = function(a, e) if e.kind == "event" and e.name == "lunette.reload" then a:update({ s = "\(label)" }) end end }
            """
        }
        let fixture = try BundleFixture(main: main("one"))
        let session = DevSession(path: fixture.path, store: fixture.store) { _ in }
        await session.start()
        let bundle = try #require(await session.bundle)
        let order = try await session.service.startActivity(bundle: bundle, type: "Order", attributes: LuaTable(fields: ["id": "A"]),
                                                            state: LuaTable(fields: ["s": "placed"]))
        try main("two").write(toFile: fixture.path + "/main.lua", atomically: true, encoding: .utf8)
        await session.filesChanged(["main.lua"])
        let state = try await session.service.activities(bundle: bundle).first { $0.id == order.id }?.content.state
        #expect(state?["s"] == "two")
    }
}
