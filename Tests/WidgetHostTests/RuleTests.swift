import Foundation
import Testing
@testable import WidgetHost

/// The rules of docs/rules.md that no other suite proves on its own. Each
/// test's name starts with its rule's id; small limits and a virtual clock
/// keep them fast and deterministic.
@Suite("The widget rules")
struct RuleTests {
    let t0 = BundleFixture.midnight

    func engine(_ main: String, policy: HostPolicy = .standard) throws -> (TimelineEngine, VirtualClock) {
        let fixture = try BundleFixture(main: main)
        let (runtime, clock) = try fixture.runtime(policy: policy)
        return (TimelineEngine(runtime: runtime), clock)
    }

    /// Deadlines small enough for a test, with a timeline deadline far
    /// above the placeholder's and the snapshot's: a role that took the
    /// timeline's deadline would run for two seconds.
    static var roleDeadlines: HostPolicy {
        var policy = HostPolicy()
        policy.placeholderDeadline = .init(soft: 0.001, hard: 0.05)
        policy.snapshotDeadline = .init(soft: 0.001, hard: 0.05)
        policy.timelineDeadline = .init(soft: 1, hard: 2)
        return policy
    }

    /// A widget whose `role` function spins 5 ms of CPU, or loops for ever
    /// once the clock is past 100.
    static func slowWidget(_ role: String) -> String {
        """
        local function slow()
          if clock.now() > 100 then while true do end end
          local t = os.clock() while os.clock() - t < 0.005 do end
          return { text = "slow" }
        end
        widget { kind = "S", placeholder = \(role == "placeholder" ? "slow" : "function() return {} end"),
          \(role == "snapshot" ? "snapshot = slow," : "")
          timeline = function() return { entries = {} } end }
        """
    }

    // MARK: Timelines

    @Test("T1: a placeholder ends at its own hard deadline, and one over its soft deadline draws a warning")
    func placeholderDeadline() throws {
        let fixture = try BundleFixture(main: Self.slowWidget("placeholder"))
        let (runtime, clock) = try fixture.runtime(at: 0, policy: Self.roleDeadlines)
        let widget = try runtime.configuration(kind: "S")
        let slow = runtime.placeholder(widget).outcome
        #expect(slow.status == .ok)
        #expect(slow.warnings.contains { $0.contains("placeholder took") && $0.contains("over its soft deadline of 1.0 ms") }, "\(slow.warnings)")
        try clock.advance(to: 200)
        let stuck = runtime.placeholder(widget).outcome
        #expect(stuck.status == .timeout)
        #expect(stuck.elapsed < 1, "the placeholder ran \(stuck.elapsed) s: it did not get its own 50 ms deadline")
    }

    @Test("T2: a snapshot ends at its own hard deadline, and one over its soft deadline draws a warning")
    func snapshotDeadline() throws {
        let fixture = try BundleFixture(main: Self.slowWidget("snapshot"))
        let (runtime, clock) = try fixture.runtime(at: 0, policy: Self.roleDeadlines)
        let widget = try runtime.configuration(kind: "S")
        let slow = runtime.snapshot(widget).outcome
        #expect(slow.status == .ok)
        #expect(slow.warnings.contains { $0.contains("snapshot took") && $0.contains("over its soft deadline of 1.0 ms") }, "\(slow.warnings)")
        try clock.advance(to: 200)
        let stuck = runtime.snapshot(widget).outcome
        #expect(stuck.status == .timeout)
        #expect(stuck.elapsed < 1, "the snapshot ran \(stuck.elapsed) s: it did not get its own 50 ms deadline")
    }

    @Test("T2: a gallery snapshot sees ctx.isPreview and the configuration; without a snapshot function the placeholder stands in")
    func snapshotPreview() throws {
        let fixture = try BundleFixture(main: """
            intent { id = "Cfg", configuration = true, parameters = {
              { name = "filter", type = "enum", values = { "today", "all" }, default = "today" } } }
            widget { kind = "S", configuration = "Cfg",
              placeholder = function(ctx) return { text = "placeholder" } end,
              snapshot = function(ctx, config) return { preview = ctx.isPreview, filter = config.filter } end,
              timeline = function() return { entries = {} } end }
            widget { kind = "P", placeholder = function(ctx) return { text = "placeholder", preview = ctx.isPreview } end,
              timeline = function() return { entries = {} } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let widget = try runtime.configuration(kind: "S", values: ["filter": "all"])
        let gallery = try #require(runtime.snapshot(widget).value)
        #expect(gallery.content["preview"] == true)
        #expect(gallery.content["filter"] == "all")
        #expect(gallery.date == t0, "a snapshot without a date is dated now")
        #expect(runtime.snapshot(widget, isPreview: false).value?.content["preview"] == false)
        let standIn = try #require(runtime.snapshot(try runtime.configuration(kind: "P")).value)
        #expect(standIn.content["text"] == "placeholder")
        #expect(standIn.content["preview"] == true)
    }

    @Test("T9: a timeline over the byte limits draws a warning, then is refused")
    func timelineBytes() throws {
        var policy = HostPolicy()
        policy.timelineBytesWarning = 100
        policy.timelineBytesLimit = 1000
        let fixture = try BundleFixture(main: """
            widget { kind = "B", placeholder = function() return {} end,
              timeline = function(ctx)
                local size = clock.now() == 0 and 200 or 2000
                return { entries = { { date = clock.now(), text = ("x"):rep(size) } } }
              end }
            """)
        let (runtime, clock) = try fixture.runtime(at: 0, policy: policy)
        let widget = try runtime.configuration(kind: "B")
        let large = runtime.timeline(widget)
        #expect(large.outcome.status == .ok)
        #expect(large.outcome.warnings.contains { $0.contains("bytes encoded, over 100 (rule T9)") }, "\(large.outcome.warnings)")
        try clock.advance(to: 1)
        let tooLarge = runtime.timeline(widget)
        #expect(tooLarge.outcome.status == .invalid)
        #expect(tooLarge.outcome.message?.contains("bytes encoded, over the limit of 1000 (rule T9)") == true, "\(tooLarge.outcome.message ?? "")")
        #expect(tooLarge.value == nil)
    }

    @Test("T10: a widget whose timeline has never succeeded keeps showing its placeholder, and each failure is recorded")
    func failedFirstTimeline() throws {
        let (engine, clock) = try engine("""
            widget { kind = "F", placeholder = function() return { text = "placeholder" } end,
              timeline = function() error("no data yet") end }
            """)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "F"))
        try advance(engine, clock, to: t0 + 600)
        let instance = engine.instance(id)!
        #expect(instance.reloads.map { $0.at - t0 } == [0, 300, 600], "retried after the floor")
        #expect(instance.reloads.allSatisfy { $0.status == .error })
        #expect(instance.failures.count == 3)
        #expect(instance.failures.first?.message.contains("no data yet") == true)
        #expect(instance.shown(at: clock.time)?.content["text"] == "placeholder")
    }

    @Test("T11: each instance (kind, family and configuration) has its own timeline and its own schedule")
    func instancesHaveTheirOwnTimelines() throws {
        let (engine, clock) = try engine("""
            intent { id = "Cfg", configuration = true, parameters = {
              { name = "every", type = "int", default = 10 } } }
            widget { kind = "W", families = { "systemSmall", "systemMedium" }, configuration = "Cfg",
              placeholder = function() return {} end,
              timeline = function(ctx, config)
                local now = clock.now()
                return { entries = { { date = now, family = ctx.family, every = config.every } },
                         policy = { after = clock.add(now, { minutes = config.every }) } }
              end }
            """)
        let runtime = engine.runtime
        let a = engine.addWidget(try runtime.configuration(kind: "W", family: .systemSmall, values: ["every": 10]))
        let b = engine.addWidget(try runtime.configuration(kind: "W", family: .systemSmall, values: ["every": 20]))
        let c = engine.addWidget(try runtime.configuration(kind: "W", family: .systemMedium, values: ["every": 10]))
        try advance(engine, clock, to: t0 + 3600)
        func shown(_ id: Int) -> (String?, Int64?) {
            let entry = engine.instance(id)!.shown(at: clock.time)?.content
            return (entry?["family"].stringValue, entry?["every"].integerValue)
        }
        #expect(shown(a) == ("systemSmall", 10))
        #expect(shown(b) == ("systemSmall", 20))
        #expect(shown(c) == ("systemMedium", 10))
        #expect(engine.instance(a)!.reloads.map { $0.at - t0 } == [0, 600, 1200, 1800, 2400, 3000, 3600])
        #expect(engine.instance(b)!.reloads.map { $0.at - t0 } == [0, 1200, 2400, 3600])
        #expect(engine.instance(c)!.reloads.count == 7)
    }

    @Test("T12: an entry's relevance is kept: its score, and its duration in seconds from the entry's date")
    func relevanceIsKept() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "R", placeholder = function() return {} end,
              timeline = function()
                local now = clock.now()
                if now > 0 then return { entries = { { date = now, relevance = { score = 1, duration = -5 } } } } end
                return { entries = {
                  { date = now, relevance = { score = 2.5, duration = 600 } },
                  { date = now + 600, relevance = { score = 0 } },
                  { date = now + 1200 } } }
              end }
            """)
        let (runtime, clock) = try fixture.runtime(at: 0)
        let widget = try runtime.configuration(kind: "R")
        let entries = try #require(runtime.timeline(widget).value?.entries)
        #expect(entries[0].relevance?.score == 2.5 && entries[0].relevance?.duration == 600)
        #expect(entries[1].relevance?.score == 0 && entries[1].relevance?.duration == 0, "no duration: 0 s")
        #expect(entries[2].relevance == nil)
        try clock.advance(to: 1)
        let negative = runtime.timeline(widget).outcome
        #expect(negative.status == .invalid)
        #expect(negative.message?.contains("entries[1].relevance.duration must not be negative") == true, "\(negative.message ?? "")")
    }

    // MARK: Refresh budget

    @Test("B1: by default each widget instance has its own budget of 40 counted reloads in a rolling 24 hours")
    func defaultBudget() throws {
        #expect(HostPolicy.standard.budget == 40 && HostPolicy.standard.budgetWindow == 86_400)
        #expect(HostPolicy.standard.budgetScope == .instance)
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 10 }) }"))
        let widget = try engine.runtime.configuration(kind: "W")
        let a = engine.addWidget(widget)
        let b = engine.addWidget(widget)
        try advance(engine, clock, to: t0 + 86_400)
        for id in [a, b] {
            let counted = engine.instance(id)!.reloads.filter(\.counted)
            #expect(counted.count == 40, "instance \(id) counted \(counted.count)")
            // The 41st waits until the first counted reload (at 10 min) leaves the window.
            let firstCountedLeaves: Double = 600 + 86_400
            #expect(engine.nextReload(of: id).map { $0.at - t0 } == firstCountedLeaves)
        }
    }

    @Test("B1: under the app scope every widget of the bundle shares one budget")
    func appScope() throws {
        var policy = HostPolicy()
        policy.budget = 3
        policy.budgetScope = .app
        let (engine, clock) = try engine(policyWidget("{ after = clock.add(now, { minutes = 10 }) }", kind: "A")
                                         + policyWidget("{ after = clock.add(now, { minutes = 10 }) }", kind: "B"), policy: policy)
        _ = engine.addWidget(try engine.runtime.configuration(kind: "A"))
        _ = engine.addWidget(try engine.runtime.configuration(kind: "B"))
        try advance(engine, clock, to: t0 + 3 * 3600)
        #expect(engine.instances.flatMap(\.reloads).filter(\.counted).count == 3)
    }

    @Test("B2: every exempt event reloads at once, outside floor and budget; only policy and request reloads count")
    func everyExemptReason() throws {
        #expect(ReloadReason.allCases.filter { !$0.isExempt } == [.policy, .request])
        var policy = HostPolicy()
        policy.budget = 1
        let (engine, clock) = try engine(policyWidget("\"never\""), policy: policy)
        let id = engine.addWidget(try engine.runtime.configuration(kind: "W"))
        let events: [ReloadReason] = [.appForeground, .intent, .localeChange, .timeZoneChange, .significantTimeChange, .newVersion]
        #expect(Set(events + [.widgetAdded]) == Set(ReloadReason.allCases.filter(\.isExempt)))
        for (i, reason) in events.enumerated() {
            try clock.advance(to: t0 + Double(10 * (i + 1)))
            try engine.reloadNow(kind: "W", reason: reason)
        }
        let reloads = engine.instance(id)!.reloads
        #expect(reloads.map { $0.at - t0 } == [0, 10, 20, 30, 40, 50, 60])
        #expect(reloads.map(\.reason) == [.widgetAdded] + events)
        #expect(reloads.allSatisfy { !$0.counted })
        #expect(engine.budgetUsage(of: id).used == 0)
    }

    // MARK: Extension limits

    @Test("L1: a widget call ends at its memory cap, and bundle.json may ask for a smaller one")
    func memoryCap() throws {
        var policy = HostPolicy()
        policy.widgetMemoryMB = 8
        let provider = """
            widget { kind = "M", placeholder = function() return {} end,
              timeline = function()
                local held, megabytes = {}, clock.now() == 0 and 5 or 12
                for i = 1, megabytes do held[i] = ("x"):rep(1 << 20) end
                return { entries = { { date = clock.now(), n = #held } } }
              end }
            """
        let fixture = try BundleFixture(main: provider)
        let (runtime, clock) = try fixture.runtime(at: 0, policy: policy)
        let widget = try runtime.configuration(kind: "M")
        #expect(runtime.timeline(widget).outcome.status == .ok, "5 MB fit under the policy's 8 MB")
        try clock.advance(to: 1)
        let over = runtime.timeline(widget).outcome
        #expect(over.status == .memory)
        #expect(over.message?.contains("memory cap exceeded: 8388608 bytes allowed") == true, "\(over.message ?? "")")
        #expect(over.memoryPeak <= 8 << 20)

        let smaller = try BundleFixture(main: provider, manifest: #"{ "id": "com.example.test", "limits": { "memoryMB": 4 } }"#)
        let (small, _) = try smaller.runtime(at: 0, policy: policy)
        let capped = small.timeline(try small.configuration(kind: "M")).outcome
        #expect(capped.status == .memory)
        #expect(capped.message?.contains("4194304 bytes allowed") == true, "\(capped.message ?? "")")
    }

    @Test("L5: a widget's scripts reach no files, processes or native code")
    func noEscapes() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "E", placeholder = function() return {} end,
              timeline = function()
                local reachable = {}
                for name, value in pairs { io = io, debug = debug, package = package, dofile = dofile, loadfile = loadfile,
                    collectgarbage = collectgarbage, execute = os.execute, getenv = os.getenv, remove = os.remove,
                    rename = os.rename, exit = os.exit, tmpname = os.tmpname, popen = io and io.popen, dump = string.dump } do
                  reachable[#reachable + 1] = name
                end
                for _, module in ipairs { "io", "os.execute", "socket", "ffi", "package" } do
                  if pcall(require, module) then reachable[#reachable + 1] = "require " .. module end
                end
                if load("\\27Lua") then reachable[#reachable + 1] = "bytecode" end
                table.sort(reachable)
                return { entries = { { date = clock.now(), reachable = table.concat(reachable, ",") } } }
              end }
            """)
        let (runtime, _) = try fixture.runtime()
        let entry = try #require(runtime.timeline(try runtime.configuration(kind: "E")).value?.entries.first)
        #expect(entry.content["reachable"] == "")
    }
}
