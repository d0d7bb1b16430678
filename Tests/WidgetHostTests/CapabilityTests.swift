import Foundation
import LuaSandbox
import Testing
@testable import WidgetHost

/// Issue 17, point 1: a plugin gets the services it asks for in bundle.json
/// and the host grants it, and no others.
@Suite("Capabilities and grants")
struct CapabilityTests {
    static let probe = """
        widget { kind = "W", placeholder = function() return {} end,
          timeline = function()
            local seen = {}
            for _, name in ipairs({ "store", "activities", "reload", "log", "print", "warn", "clock", "host" }) do
              seen[name] = type(_G[name]) ~= "nil"
            end
            return { entries = { { date = clock.now(), seen = seen } } }
          end }
        widget { kind = "Reload", placeholder = function() return {} end,
          timeline = function() reload.all(); return { entries = {} } end }
        widget { kind = "Require", placeholder = function() return {} end,
          timeline = function() require("reload"); return { entries = {} } end }
        widget { kind = "Print", placeholder = function() return {} end,
          timeline = function() print("hello"); return { entries = {} } end }
        """

    func fixture(capabilities: [String], main: String = probe) throws -> BundleFixture {
        let list = capabilities.map { "\"\($0)\"" }.joined(separator: ", ")
        return try BundleFixture(main: main, manifest: #"{ "id": "com.example.plugin", "appGroups": ["group.test"], "capabilities": [\#(list)] }"#)
    }

    func runtime(_ fixture: BundleFixture, grants: Set<String>?) throws -> WidgetRuntime {
        var services = HostServices(store: fixture.store, clock: VirtualClock(BundleFixture.midnight), calendar: .utc)
        services.grants = grants
        return WidgetRuntime(bundle: try ScriptBundle.load(fixture.path, calendar: .utc, grants: grants), services: services)
    }

    func seen(_ runtime: WidgetRuntime) throws -> [String: Bool] {
        let result = runtime.timeline(try runtime.configuration(kind: "W"))
        guard case .table(let seen)? = result.value?.entries.first?.content["seen"] else {
            Issue.record("no result: \(String(describing: result.outcome.diagnostic?.text))")
            return [:]
        }
        return Dictionary(uniqueKeysWithValues: seen.fields.compactMap { field in field.key.string.map { ($0, field.value == .boolean(true)) } })
    }

    @Test func withoutGrantsEveryServiceIsThere() throws {
        let runtime = try runtime(try fixture(capabilities: []), grants: nil)
        #expect(try seen(runtime) == ["store": true, "activities": false, "reload": true, "log": true, "print": true, "warn": true,
                                      "clock": true, "host": true])
    }

    @Test func aPluginGetsWhatItAsksForAndIsGrantedAndNothingElse() throws {
        let runtime = try runtime(try fixture(capabilities: ["store"]), grants: ["store", "log", "reload"])
        #expect(try seen(runtime) == ["store": true, "activities": false, "reload": false, "log": false, "print": false, "warn": false,
                                      "clock": true, "host": true])
        let reload = runtime.timeline(try runtime.configuration(kind: "Reload")).outcome
        #expect(reload.status == .error)
        #expect(reload.message?.contains("attempt to index a nil value (global 'reload') ('reload' needs the capability 'reload', which bundle com.example.plugin does not ask for; list it in \"capabilities\" of bundle.json)") == true,
                "\(reload.message ?? "")")
        let required = runtime.timeline(try runtime.configuration(kind: "Require")).outcome
        #expect(required.message?.contains("module 'reload' is not available: 'reload' needs the capability 'reload'") == true, "\(required.message ?? "")")
        let printed = runtime.timeline(try runtime.configuration(kind: "Print")).outcome
        #expect(printed.message?.contains("(global 'print') ('print' needs the capability 'log'") == true, "\(printed.message ?? "")")
    }

    @Test func aPluginThatAsksForMoreThanItIsGrantedIsRefusedAtLoad() throws {
        let asking = try fixture(capabilities: ["store", "reload", "weather"])
        #expect(throws: LocatedErrors.self) { try ScriptBundle.load(asking.path, calendar: .utc, grants: ["store", "log"]) }
        do {
            _ = try ScriptBundle.load(asking.path, calendar: .utc, grants: ["store", "log"])
        } catch {
            #expect(error.errors.map(\.locatedMessage) == [
                "\(asking.path)/bundle.json: bundle com.example.plugin asks for the capabilities 'reload', 'weather', which this host does not grant it (granted: log, store); nothing of it was loaded",
            ])
        }
        let activity = try fixture(capabilities: ["store"], main: Self.probe + """

            activity { type = "A", updater = function() end }
            """)
        do {
            _ = try ScriptBundle.load(activity.path, calendar: .utc, grants: ["store", "activities"])
            Issue.record("a bundle declaring activities without asking for them loaded")
        } catch {
            #expect(error.errors.map(\.locatedMessage) == [
                "\(activity.path)/main.lua:15: activity 'A': Live Activities need the capability 'activities'; list it in \"capabilities\" of bundle.json",
            ])
        }
        #expect(throws: Never.self) { try ScriptBundle.load(activity.path, calendar: .utc) }   // without grants: as before
        // main.lua's own top level meets an absent service at load: the error says why.
        let topLevel = try fixture(capabilities: [], main: "print('loading')\n" + Self.probe)
        do {
            _ = try ScriptBundle.load(topLevel.path, calendar: .utc, grants: ["log"])
            Issue.record("main.lua calling print without the log capability loaded")
        } catch {
            #expect(error.errors.first?.locatedMessage.hasSuffix("attempt to call a nil value (global 'print') ('print' needs the capability 'log', which bundle com.example.plugin does not ask for; list it in \"capabilities\" of bundle.json)") == true,
                    "\(error.errors.map(\.locatedMessage))")
        }
    }

    @Test func anAppModuleNeedsItsCapabilityGrantedToo() throws {
        var weather = HostModule(name: "app.weather", capability: "weather")
        weather.add("today") { _ in [.integer(21)] }
        let main = """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), high = require("app.weather").today() } } } end }
            """
        let asking = try fixture(capabilities: ["weather"], main: main)
        func high(grants: Set<String>?) throws -> CallOutcome {
            var services = HostServices(store: asking.store, clock: VirtualClock(BundleFixture.midnight), calendar: .utc, modules: [weather])
            services.grants = grants
            let runtime = WidgetRuntime(bundle: try asking.load(), services: services)
            return runtime.timeline(try runtime.configuration(kind: "W")).outcome
        }
        #expect(try high(grants: ["weather"]).status == .ok)
        let withheld = try high(grants: [])
        #expect(withheld.message?.contains("app.weather.today: bundle com.example.plugin does not have the capability 'weather'") == true, "\(withheld.message ?? "")")
    }

    @Test func aPluginPolicyGrantsByTrustLevelOrByPlugin() throws {
        let manifest = BundleManifest(id: "com.example.a", capabilities: ["store", "weather"])
        var policy = PluginPolicy()
        #expect(policy.grants(for: manifest) == ["log"], "untrusted by default")
        policy.plugins["com.example.a"] = .level("trusted")
        #expect(policy.grants(for: manifest) == ["store", "weather"], "trusted: whatever it asks for")
        policy.plugins["com.example.a"] = .level("standard")
        #expect(policy.grants(for: manifest) == ["store", "activities", "reload", "log"])
        policy.plugins["com.example.a"] = .capabilities(["store"])
        #expect(policy.grants(for: manifest) == ["store"])
        #expect(policy.level(of: "com.example.a") == nil && policy.level(of: "com.other") == "untrusted")
    }

    @Test func aPluginPolicyFileReportsEveryProblem() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-plugins-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let good = dir + "/good.json"
        try """
            { "default": "standard",
              "levels": { "partner": ["store", "log", "weather"] },
              "plugins": { "com.example.a": "partner", "com.example.b": ["log"] } }
            """.write(toFile: good, atomically: true, encoding: .utf8)
        let policy = try PluginPolicy.load(good)
        #expect(policy.defaultLevel == "standard")
        #expect(policy.grants(for: BundleManifest(id: "com.example.a", capabilities: ["weather"])) == ["store", "log", "weather"])
        #expect(policy.grants(for: BundleManifest(id: "com.example.b")) == ["log"])
        let bad = dir + "/bad.json"
        try """
            { "default": "trustd",
              "plugins": { "com.example.a": "untrsted", "com.example.b": 3 },
              "grants": {} }
            """.write(toFile: bad, atomically: true, encoding: .utf8)
        do {
            _ = try PluginPolicy.load(bad)
            Issue.record("a bad policy file loaded")
        } catch {
            #expect(error.errors.map(\.locatedMessage) == [
                "\(bad):1:14: 'default': \"trustd\" is not a trust level (did you mean 'trusted'? levels: standard, trusted, untrusted)",
                "\(bad):2:33: 'plugins.com.example.a': \"untrsted\" is not a trust level (did you mean 'untrusted'? levels: standard, trusted, untrusted)",
                "\(bad):2:62: 'plugins.com.example.b' must be a trust level (standard, trusted, untrusted) or an array of capabilities, got integer",
                "\(bad):3:3: unknown key 'grants' (known: default, levels, plugins, quotas)",
            ], "\(error.errors.map(\.locatedMessage))")
        }
    }
}

/// `--plugin-policy`: an author runs a bundle as the plugin host would.
@Suite("Plugins from the command line")
struct PluginCLITests {
    @Test func aBundleRunsUnderThePluginPolicysGrants() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() reload.all(); return { entries = { { date = clock.now() } } } end }
            """, manifest: #"{ "id": "com.example.plugin", "appGroups": ["group.test"], "capabilities": ["store", "log"] }"#)
        let policy = fixture.path + "/plugins.json"
        try #"{ "plugins": { "com.example.plugin": ["store", "log"] } }"#.write(toFile: policy, atomically: true, encoding: .utf8)
        let plain = try CLI.run(["timeline", fixture.path, "--kind", "W", "--store-dir", fixture.storeRoot])
        #expect(plain.status == 0, "without a plugin policy, every service: \(plain.stderr)")
        let plugin = try CLI.run(["timeline", fixture.path, "--kind", "W", "--store-dir", fixture.storeRoot, "--plugin-policy", policy])
        #expect(plugin.status == 1)
        #expect((plugin.stdout + plugin.stderr).contains("('reload' needs the capability 'reload', which bundle com.example.plugin does not ask for"), "\(plugin.stdout)\(plugin.stderr)")
        // The default level, untrusted, grants log only: the bundle asks for more, and is refused at load.
        let strict = fixture.path + "/strict.json"
        try "{}".write(toFile: strict, atomically: true, encoding: .utf8)
        let check = try CLI.run(["check", fixture.path, "--plugin-policy", strict, "--no-lint"])
        #expect(check.status == 1)
        #expect(check.stdout.contains("bundle com.example.plugin asks for the capability 'store', which this host does not grant it (granted: log)"), "\(check.stdout)")
        let missing = try CLI.run(["check", fixture.path, "--plugin-policy", fixture.path + "/nope.json"])
        #expect(missing.status == 2 && missing.stderr.contains("no such plugin policy file"), "\(missing.stderr)")
    }
}

extension PluginCLITests {
    @Test func aSimulationUnderAPluginPolicyQuarantinesAFailingPluginAndSaysSo() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end, timeline = function() error("no data") end }
            """, manifest: #"{ "id": "com.example.plugin", "capabilities": ["log"] }"#)
        let policy = fixture.path + "/plugins.json"
        try #"{ "quotas": { "failuresInARow": 3, "window": 3600 } }"#.write(toFile: policy, atomically: true, encoding: .utf8)
        let run = try CLI.run(["simulate", fixture.path, "--duration", "2h", "--json", "--plugin-policy", policy, "--allow-failures"])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let notes = (report["notes"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        #expect(notes.contains { $0.hasPrefix("plugin com.example.plugin quarantined (failures): 3 calls failed in a row (the last: ") }, "\(notes)")
        let failures = ((report["instances"] as? [[String: Any]])?.first?["failures"] as? [[String: Any]]) ?? []
        #expect(failures.prefix(3).allSatisfy { $0["status"] as? String == "error" } && failures.dropFirst(3).allSatisfy { $0["status"] as? String == "refused" },
                "\(failures.map { $0["status"] ?? "" })")
        #expect(failures.count > 3)
        let bad = fixture.path + "/bad.json"
        try #"{ "quotas": { "calls": 0, "cpu": 1 } }"#.write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try CLI.run(["simulate", fixture.path, "--plugin-policy", bad])
        #expect(refused.status == 1 && refused.stderr.contains("'quotas.calls' must be positive, got 0.0") && refused.stderr.contains("unknown key 'quotas.cpu'"), "\(refused.stderr)")
    }
}

/// Issue 17, point 2: quotas over a rolling window, and quarantine.
@Suite("Plugin quotas and quarantine")
struct PluginLedgerTests {
    static let main = """
        widget { kind = "W", placeholder = function() return { n = -1 } end,
          timeline = function()
            local mode = store.group("group.test"):get("mode") or "ok"
            if mode == "fail" then error("no data") end
            if mode == "spin" then local x = 0; for i = 1, 3000000 do x = x + i end end
            if mode == "chatty" then for i = 1, 20 do print(string.rep("x", 99)) end end
            return { entries = { { date = clock.now(), n = 1 } }, policy = "never" }
          end }
        """

    func engine(_ quotas: PluginQuotas) throws -> (TimelineEngine, PluginLedger, VirtualClock, BundleFixture) {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(BundleFixture.midnight)
        let ledger = PluginLedger(plugin: "com.example.test", quotas: quotas)
        var services = HostServices(store: fixture.store, clock: clock, calendar: .utc)
        services.ledger = ledger
        return (TimelineEngine(runtime: WidgetRuntime(bundle: try fixture.load(), services: services)), ledger, clock, fixture)
    }

    func mode(_ fixture: BundleFixture, _ mode: String) throws {
        try fixture.store.group("group.test").set("mode", .string(mode))
    }

    @Test func failingCallAfterCallQuarantinesAndTheWidgetKeepsItsLastGoodEntry() throws {
        let (engine, ledger, clock, fixture) = try engine(PluginQuotas(failuresInARow: 3))
        final class Told: @unchecked Sendable {
            let lock = NSLock()
            var items: [Quarantine] = []
        }
        let told = Told()
        ledger.onQuarantine = { q in told.lock.withLock { told.items.append(q) } }
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        #expect(engine.instance(id)?.shown(at: clock.now())?.content["n"] == 1)
        try mode(fixture, "fail")
        for minute in 1...4 {
            try clock.advance(to: BundleFixture.midnight + Double(minute) * 600)
            try engine.reloadNow(kind: "W", reason: .appForeground)
        }
        let statuses = engine.instance(id)!.reloads.map(\.status)
        #expect(statuses == [.ok, .error, .error, .error, .refused], "\(statuses)")
        let q = try #require(ledger.quarantine)
        #expect(q.cause == .failures && q.since == BundleFixture.midnight + 1800)
        #expect(q.reason.hasPrefix("3 calls failed in a row (the last: ") && q.reason.contains("no data"), "\(q.reason)")
        #expect(told.lock.withLock { told.items } == [q], "told once")
        let refused = engine.instance(id)!.failures.last!.diagnostic
        #expect(refused.kind == .refused)
        #expect(refused.message == "plugin com.example.test is quarantined since 2026-11-21T00:30:00Z: \(q.reason); the host can release it")
        #expect(engine.instance(id)?.shown(at: clock.now())?.content["n"] == 1, "the last good entry stays (T10)")
        // Released, it runs again.
        try mode(fixture, "ok")
        ledger.release()
        try clock.advance(to: BundleFixture.midnight + 3000)
        try engine.reloadNow(kind: "W", reason: .appForeground)
        #expect(engine.instance(id)!.reloads.last?.status == .ok)
        #expect(ledger.quarantine == nil && ledger.usage(at: clock.now()).failuresInARow == 0)
    }

    @Test func callsCPUAndLogsCountOverARollingWindow() throws {
        let (calls, callsLedger, clock, _) = try engine(PluginQuotas(window: 3600, cpuSeconds: nil, calls: 3, logBytes: nil, failuresInARow: nil))
        let id = calls.addWidget(try calls.runtime.configuration(kind: "W"))   // calls 1 and 2: placeholder, timeline
        for step in 1...3 {
            try clock.advance(to: BundleFixture.midnight + Double(step) * 600)
            try calls.reloadNow(kind: "W", reason: .appForeground)
        }
        #expect(calls.instance(id)!.reloads.map(\.status) == [.ok, .ok, .refused, .refused])
        #expect(callsLedger.quarantine?.reason == "it made 3 calls in the last 1 h, its quota")
        #expect(callsLedger.usage(at: clock.now()).calls == 3)
        #expect(callsLedger.usage(at: clock.now() + 3600).calls == 0, "an hour later the window is empty")

        let (cpu, cpuLedger, _, cpuFixture) = try engine(PluginQuotas(cpuSeconds: 0.001, calls: nil, logBytes: nil, failuresInARow: nil))
        try mode(cpuFixture, "spin")
        _ = cpu.addWidget(try cpu.runtime.configuration(kind: "W"))
        #expect(cpuLedger.quarantine?.cause == .cpu, "\(String(describing: cpuLedger.quarantine))")
        #expect(cpuLedger.quarantine?.reason.contains("s of CPU in the last 1 h, over its quota of 0.001 s") == true)

        let (logs, logLedger, _, logFixture) = try engine(PluginQuotas(cpuSeconds: nil, calls: nil, logBytes: 1000, failuresInARow: nil))
        try mode(logFixture, "chatty")
        _ = logs.addWidget(try logs.runtime.configuration(kind: "W"))
        #expect(logLedger.quarantine?.cause == .logBytes)
        #expect(logLedger.quarantine?.reason == "it logged 2000 bytes in the last 1 h, over its quota of 1000")
        #expect(logLedger.usage(at: BundleFixture.midnight).logBytes == 2000)
        #expect(logLedger.usage(at: BundleFixture.midnight + 3600).logBytes == 0 && logLedger.usage(at: BundleFixture.midnight + 3600).cpuSeconds == 0,
                "the window's totals go down as calls leave it")
    }
}
