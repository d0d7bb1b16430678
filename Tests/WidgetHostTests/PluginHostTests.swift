import Foundation
import LuaSandbox
import SharedStore
import Testing
@testable import WidgetHost

/// Issue 17, point 5: the plugin host's Swift API, `WidgetService` with a
/// plugin policy and worker processes: plugins loaded with their grants,
/// in process or in workers of their own, a ledger each, quarantine and
/// release, unload, and the events of each on the service's stream.
@Suite("The plugin host")
struct PluginHostTests {
    let t0 = BundleFixture.midnight

    /// Standard trust: reads the store.
    static let weather = """
        widget { kind = "Temp", placeholder = function() return { t = -1 } end,
          timeline = function()
            local t = store.group("group.weather"):get("t") or 0
            return { entries = { { date = clock.now(), t = t } }, policy = "never" }
          end }
        """

    /// Untrusted (log only): fails from t0 + 1 s until t0 + 3000 s.
    static let flaky = """
        local t0 = 1795219200
        widget { kind = "Clock", placeholder = function() return { n = -1 } end,
          timeline = function()
            local now = clock.now()
            if now > t0 and now < t0 + 3000 then error("no data") end
            log.info("ok at " .. now)
            return { entries = { { date = now, n = now - t0 } }, policy = "never" }
          end }
        """

    /// The policy of these tests: weather is standard, any other plugin
    /// untrusted; three failures in a row quarantine.
    static let policy = PluginPolicy(plugins: ["com.example.weather": .level("standard")], quotas: PluginQuotas(failuresInARow: 3))

    struct Host {
        let service: WidgetService
        let clock: VirtualClock
        let store: SharedStore
        let workers: BundleWorkers
        let weather: BundleFixture
        let flaky: BundleFixture
    }

    func host() throws -> Host {
        let clock = VirtualClock(t0)
        let store = BundleFixture.temporaryStore()
        try store.group("group.weather").set("t", .integer(21))
        let workers = BundleWorkers(executable: CLI.binary.path)
        let service = WidgetService(store: store, clock: clock, calendar: .utc, persistence: .none,
                                    pluginPolicy: Self.policy, workers: workers)
        let weather = try BundleFixture(main: Self.weather,
                                        manifest: #"{ "id": "com.example.weather", "appGroups": ["group.weather"], "capabilities": ["store", "log"] }"#)
        let flaky = try BundleFixture(main: Self.flaky, manifest: #"{ "id": "com.example.flaky", "capabilities": ["log"] }"#)
        return Host(service: service, clock: clock, store: store, workers: workers, weather: weather, flaky: flaky)
    }

    /// The events up to and including the first that `last` accepts; gives
    /// up after 10 s with what came (the test then fails on what is missing).
    func events(_ service: WidgetService, until last: @escaping @Sendable (HostEvent) -> Bool) async -> [HostEvent] {
        let collector = Task {
            var out: [HostEvent] = []
            for await event in service.events {
                out.append(event)
                if last(event) { break }
            }
            return out
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(10))
            collector.cancel()
        }
        defer { timer.cancel() }
        return await collector.value
    }

    /// Plugin events, and the reloads of `plugin`'s widgets, in words.
    func describe(_ events: [HostEvent], reloadsOf plugin: String) -> [String] {
        events.compactMap { event in
            switch event {
            case .pluginLoaded(let id, _, let isolation, let grants): "loaded \(id) \(isolation.rawValue) \(grants.joined(separator: ","))"
            case .pluginQuarantined(let id, let q): "quarantined \(id) \(q.cause.rawValue) since +\(Int(q.since - t0))"
            case .pluginReleased(let id, let at, let q): "released \(id) at +\(Int(at - t0)) (\(q.cause.rawValue))"
            case .bundleUnloaded(let id, let widgets): "unloaded \(id) \(widgets.map(\.number))"
            case .reloaded(let widget, _, _, _, _, let status) where widget.bundle == plugin: "reloaded \(status.rawValue)"
            default: nil
            }
        }
    }

    @Test func twoPluginsLoadWithTheirTrustLevelsGrantsAndIsolation() async throws {
        let h = try host()
        defer { h.workers.stop() }
        let weather = try await h.service.loadPlugin(h.weather.path, isolation: .process)
        let flaky = try await h.service.loadPlugin(h.flaky.path)
        #expect(weather == "com.example.weather" && flaky == "com.example.flaky")
        #expect(await h.service.plugins == [flaky, weather])

        let w = try await h.service.plugin(weather)
        #expect(w.isolation == .process && w.trustLevel == "standard" && w.quotas.failuresInARow == 3 && w.quarantine == nil)
        #expect(w.grants == ["store", "activities", "reload", "log"], "standard: the host's services")
        #expect(try await h.service.isolation(of: flaky) == .inProcess)
        #expect(try await h.service.plugin(flaky).trustLevel == "untrusted")
        #expect(try await h.service.grants(of: flaky) == ["log"])

        // Each runs: the weather plugin in a worker of its own, with the store it was granted.
        let temp = try await h.service.addWidget(bundle: weather, kind: "Temp")
        let clock = try await h.service.addWidget(bundle: flaky, kind: "Clock")
        #expect(try await h.service.shown(temp)?.content["t"] == 21)
        #expect(try await h.service.shown(clock)?.content["n"] == 0)
        #expect(h.workers.idleWorkers(of: weather) == 1 && h.workers.idleWorkers(of: flaky) == 0)
        #expect(try await h.service.usage(of: flaky).calls == 2, "its placeholder and its timeline")
        #expect(try await h.service.usage(of: weather).calls == 2)

        let seen = await events(h.service) { if case .pluginLoaded(let id, _, _, _) = $0 { id == flaky } else { false } }
        #expect(describe(seen, reloadsOf: flaky) == [
            "loaded com.example.weather process activities,log,reload,store",
            "loaded com.example.flaky inProcess log",
        ])
    }

    @Test func aPluginThatFailsInARowIsQuarantinedKeepsItsLastGoodEntryAndIsReleased() async throws {
        let h = try host()
        defer { h.workers.stop() }
        let weather = try await h.service.loadPlugin(h.weather.path, isolation: .process)
        let flaky = try await h.service.loadPlugin(h.flaky.path)
        let temp = try await h.service.addWidget(bundle: weather, kind: "Temp")
        let widget = try await h.service.addWidget(bundle: flaky, kind: "Clock")
        #expect(try await h.service.shown(widget)?.content["n"] == 0)

        for step in 1...3 {   // fails three times in a row: quarantined at the third
            try h.clock.advance(to: t0 + Double(step) * 600)
            try await h.service.reloadNow(bundle: flaky, kind: nil, reason: .appForeground)
        }
        let q = try #require(try await h.service.quarantine(of: flaky))
        #expect(q.cause == .failures && q.since == t0 + 1800)
        #expect(q.reason.hasPrefix("3 calls failed in a row (the last: ") && q.reason.contains("no data"), "\(q.reason)")
        #expect(try await h.service.plugin(flaky).quarantine == q)
        #expect(try await h.service.usage(of: flaky).failuresInARow == 3)

        // Its calls are refused, saying why and since when; its widget keeps its last good entry (T10).
        try h.clock.advance(to: t0 + 2400)
        try await h.service.reloadNow(bundle: flaky, kind: nil, reason: .appForeground)
        let refusal = "plugin com.example.flaky is quarantined since 2026-11-21T00:30:00Z: \(q.reason); the host can release it"
        #expect(try await h.service.widget(widget).reloads.last?.status == .refused)
        #expect(try await h.service.widget(widget).failures.last?.diagnostic.message == refusal)
        #expect(try await h.service.shown(widget)?.content["n"] == 0, "the last good entry stays")
        let direct = try await h.service.timeline(bundle: flaky, kind: "Clock")
        #expect(direct.value == nil && direct.outcome.status == .refused && direct.outcome.message == refusal)
        #expect(try await h.service.usage(of: flaky).calls == 5, "refused calls are not counted")

        // The other plugin keeps working.
        try h.store.group("group.weather").set("t", .integer(23))
        try await h.service.reloadNow(bundle: weather, kind: "Temp", reason: .appForeground)
        #expect(try await h.service.shown(temp)?.content["t"] == 23)
        #expect(try await h.service.quarantine(of: weather) == nil)

        // Released, it runs again, with a fresh window.
        #expect(try await h.service.release(flaky) == q)
        #expect(try await h.service.quarantine(of: flaky) == nil)
        #expect(try await h.service.usage(of: flaky) == PluginUsage(calls: 0, cpuSeconds: 0, logBytes: 0, failuresInARow: 0))
        #expect(try await h.service.release(flaky) == nil, "nothing to lift: no second event")
        try h.clock.advance(to: t0 + 3000)
        try await h.service.reloadNow(bundle: flaky, kind: nil, reason: .appForeground)
        #expect(try await h.service.widget(widget).reloads.last?.status == .ok)
        #expect(try await h.service.shown(widget)?.content["n"] == 3000)

        try await h.service.unload(weather)   // the last event to wait for
        let seen = await events(h.service) { if case .bundleUnloaded = $0 { true } else { false } }
        #expect(describe(seen, reloadsOf: flaky) == [
            "loaded com.example.weather process activities,log,reload,store",
            "loaded com.example.flaky inProcess log",
            "reloaded ok",
            "reloaded error", "reloaded error", "reloaded error",
            "quarantined com.example.flaky failures since +1800",
            "reloaded refused",
            "released com.example.flaky at +2400 (failures)",
            "reloaded ok",
            "unloaded com.example.weather [1]",
        ])
        let quarantined = seen.compactMap { if case .pluginQuarantined(_, let q) = $0 { q } else { nil } }
        #expect(quarantined == [q], "the event carries the cause, the reason and since when")
    }

    @Test func unloadRemovesThePluginsWidgetsAndStopsItsWorkers() async throws {
        let h = try host()
        defer { h.workers.stop() }
        let weather = try await h.service.loadPlugin(h.weather.path, isolation: .process)
        let flaky = try await h.service.loadPlugin(h.flaky.path)
        let first = try await h.service.addWidget(bundle: weather, kind: "Temp")
        let second = try await h.service.addWidget(bundle: weather, kind: "Temp")
        _ = try await h.service.addWidget(bundle: flaky, kind: "Clock")
        #expect(h.workers.idleWorkers(of: weather) == 1)

        #expect(try await h.service.unload(weather) == [first, second])
        #expect(h.workers.idleWorkers(of: weather) == 0, "its worker was stopped")
        #expect(await h.service.bundles == [flaky])
        #expect(await h.service.plugins == [flaky])
        await #expect(throws: ServiceError("no bundle com.example.weather in this service (bundles: com.example.flaky)")) {
            try await h.service.widgets(bundle: weather)
        }
        await #expect(throws: ServiceError("no plugin com.example.weather in this service (plugins: com.example.flaky)")) {
            try await h.service.quarantine(of: weather)
        }
        // The other goes on; the unloaded one can be loaded again, afresh.
        #expect(try await h.service.widgets(bundle: flaky).count == 1)
        try await h.service.loadPlugin(h.weather.path, isolation: .inProcess)
        #expect(try await h.service.widgets(bundle: weather) == [])
        #expect(try await h.service.isolation(of: weather) == .inProcess)
    }

    @Test func aPluginThatAsksForMoreThanItIsGrantedIsRefusedAtLoad() async throws {
        let h = try host()
        defer { h.workers.stop() }
        let greedy = try BundleFixture(main: Self.weather, manifest: #"{ "id": "com.example.greedy", "appGroups": ["group.weather"], "capabilities": ["store", "log"] }"#)
        for isolation in PluginIsolation.allCases {
            do {
                try await h.service.loadPlugin(greedy.path, isolation: isolation)
                Issue.record("com.example.greedy was loaded (\(isolation))")
            } catch let error as LocatedErrors {
                #expect(error.text.contains("bundle com.example.greedy asks for the capability 'store', which this host does not grant it (granted: log); nothing of it was loaded"),
                        "\(error.text)")
            }
        }
        #expect(await h.service.bundles == [])
        #expect(await h.service.plugins == [])
        #expect(h.workers.idleWorkers == 0)
    }

    @Test func aPluginsNewVersionLoadsUnderTheSameGrantsAndLedger() async throws {
        let h = try host()
        defer { h.workers.stop() }
        let flaky = try await h.service.loadPlugin(h.flaky.path)
        _ = try await h.service.addWidget(bundle: flaky, kind: "Clock")
        try #"{ "id": "com.example.flaky", "capabilities": ["log", "reload"] }"#.write(toFile: h.flaky.path + "/bundle.json", atomically: true, encoding: .utf8)
        do {
            try await h.service.update(bundle: flaky)
            Issue.record("a version asking for more than it is granted was swapped in")
        } catch let error as BundleUpdateError {
            #expect(error.description.contains("bundle com.example.flaky asks for the capability 'reload', which this host does not grant it (granted: log)"), "\(error)")
        }
        try #"{ "id": "com.example.flaky", "capabilities": [ "log" ] }"#.write(toFile: h.flaky.path + "/bundle.json", atomically: true, encoding: .utf8)
        try await h.service.update(bundle: flaky)
        #expect(try await h.service.grants(of: flaky) == ["log"])
        #expect(try await h.service.usage(of: flaky).calls == 5, "the same ledger: 2 calls of addWidget, 2 of the check, 1 reload (newVersion)")
    }

    @Test func mistakesSayWhatIsMissing() async throws {
        let h = try host()
        let plain = WidgetService(store: h.store, clock: h.clock, calendar: .utc, persistence: .none)
        await #expect(throws: ServiceError("cannot load plugin \(h.flaky.path): this service has no plugin policy (WidgetService(pluginPolicy:))")) {
            try await plain.loadPlugin(h.flaky.path)
        }
        let noWorkers = WidgetService(store: h.store, clock: h.clock, calendar: .utc, persistence: .none, pluginPolicy: Self.policy)
        await #expect(throws: ServiceError("cannot load plugin \(h.flaky.path) with isolation .process: this service has no worker processes (WidgetService(workers: BundleWorkers(executable: the lunette executable)))")) {
            try await noWorkers.loadPlugin(h.flaky.path, isolation: .process)
        }
        let bundle = try await noWorkers.load(h.weather.path)
        await #expect(throws: ServiceError("bundle com.example.weather was loaded with load(), not loadPlugin(): it has no grants, quotas or isolation")) {
            try await noWorkers.release(bundle)
        }
        try await noWorkers.loadPlugin(h.flaky.path)
        await #expect(throws: ServiceError("cannot load plugin \(h.flaky.path): bundle com.example.flaky is already loaded")) {
            try await noWorkers.loadPlugin(h.flaky.path)
        }
    }

    @Test func pluginEventsAreCodable() throws {
        let q = Quarantine(cause: .failures, since: t0 + 1800, reason: "3 calls failed in a row (the last: main.lua:5: no data)")
        let events: [HostEvent] = [
            .pluginLoaded(plugin: "com.example.flaky", version: "0123456789abcdef", isolation: .process, grants: ["log", "store"]),
            .pluginQuarantined(plugin: "com.example.flaky", q),
            .pluginReleased(plugin: "com.example.flaky", at: t0 + 2400, quarantine: q),
            .bundleUnloaded(bundle: "com.example.flaky", widgets: [WidgetID(bundle: "com.example.flaky", number: 1)]),
        ]
        let data = try JSONEncoder().encode(events)
        let back = try JSONDecoder().decode([HostEvent].self, from: data)
        #expect(describe(back, reloadsOf: "") == describe(events, reloadsOf: ""))
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#""cause":"failures""#) && text.contains(#""isolation":"process""#), "\(text)")
    }
}

/// docs/plugins.md's plugin host snippet, compiled and run; the page holds the same code.
@Suite("docs/plugins.md snippets")
struct PluginHostDocTests {
    @Test func thePluginHostSnippetRuns() async throws {
        let groupRoot = BundleFixture.temporaryStore().root
        let lunettePath = CLI.binary.path
        let notesFixture = try BundleFixture(main: """
            widget { kind = "Notes", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), n = store.group("group.notes"):get("n") or 0 } } } end }
            """, manifest: #"{ "id": "com.example.notes", "appGroups": ["group.notes"], "capabilities": ["store", "log"] }"#)
        let clockFixture = try BundleFixture(main: """
            widget { kind = "Clock", placeholder = function() error("no data") end, timeline = function() error("no data") end }
            """, manifest: #"{ "id": "com.example.clock", "capabilities": ["log"] }"#)
        let notesPath = notesFixture.path, clockPath = clockFixture.path
        let policyPath = notesFixture.path + "-plugins.json"
        try #"{ "plugins": { "com.example.clock": "trusted", "com.example.notes": ["store", "log"] }, "quotas": { "failuresInARow": 2 } }"#
            .write(toFile: policyPath, atomically: true, encoding: .utf8)

        // snippet: host
        let service = WidgetService(store: SharedStore(root: groupRoot), clock: SystemClock(),
                                    pluginPolicy: try PluginPolicy.load(policyPath),   // trust levels, grants, quotas
                                    workers: BundleWorkers(executable: lunettePath))    // for isolation .process
        let notes = try await service.loadPlugin(notesPath)                      // refused if it asks for more than granted
        let clock = try await service.loadPlugin(clockPath, isolation: .process) // its calls in worker processes of its own
        print(try await service.grants(of: notes), try await service.isolation(of: clock))
        let widget = try await service.addWidget(bundle: clock, kind: "Clock")    // from here on, a bundle like any other

        let watcher = Task {
            for await event in service.events {
                switch event {
                case .pluginQuarantined(let plugin, let quarantine): print(plugin, quarantine.cause, quarantine.reason, "since", quarantine.since)
                case .pluginReleased(let plugin, _, _): print(plugin, "runs again")
                case .bundleUnloaded(let plugin, let widgets): print(plugin, "unloaded; widgets removed:", widgets)
                default: break
                }
            }
        }
        if let quarantine = try await service.quarantine(of: clock) {   // its calls are refused, its widgets keep their last good entry
            print(quarantine.reason, try await service.usage(of: clock))
            try await service.release(clock)                              // when the app's user says so
        }
        try await service.unload(notes)                                   // its widgets go, its workers stop
        watcher.cancel()
        // end snippet
        #expect(try await service.widget(widget).failures.count == 2)
        #expect(try await service.quarantine(of: clock) == nil, "quarantined by the two failures of addWidget, then released")
        #expect(await service.bundles == [clock])
        service.workers?.stop()
    }

    @Test func thePageAndTheTestHoldTheSameSnippet() throws {
        let here = URL(fileURLWithPath: #filePath)
        let page = try String(contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/plugins.md"), encoding: .utf8)
        let test = try String(contentsOf: here, encoding: .utf8)
        let inPage = EmbeddingDocTests.snippets(in: page, end: "```")
        let inTest = EmbeddingDocTests.snippets(in: test, end: "// end snippet")
        #expect(inPage.keys.sorted() == ["host"], "\(inPage.keys.sorted())")
        #expect(inPage["host"] != nil && inTest["host"] == inPage["host"], "the snippet differs between docs/plugins.md and this test")
    }
}
