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
                "\(bad):3:3: unknown key 'grants' (known: default, levels, plugins)",
            ], "\(error.errors.map(\.locatedMessage))")
        }
    }
}
