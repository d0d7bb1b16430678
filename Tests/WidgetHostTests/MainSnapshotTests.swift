import Foundation
import Testing
@testable import WidgetHost

/// main.lua runs once per pooled state when it can, and what it built is
/// put back before each call (rule L6 holds either way).
@Suite("main.lua's work, snapshot and put back")
struct MainSnapshotTests {
    /// Calls the timeline of widget `kind` `calls` times, a minute apart;
    /// returns each first entry's content and the pooled timeline sandbox.
    func timelines(_ main: String, kind: String = "S", calls: Int = 3, files: [String: String] = [:]) throws
        -> (entries: [[String: LuaValue]], sandbox: BundleSandbox, logs: [Int]) {
        let fixture = try BundleFixture(main: main, files: files)
        let (runtime, clock) = try fixture.runtime()
        let widget = try runtime.configuration(kind: kind)
        var entries: [[String: LuaValue]] = [], logs: [Int] = []
        for _ in 0..<calls {
            let result = runtime.timeline(widget)
            #expect(result.outcome.status == .ok, "\(result.outcome.message ?? "")")
            let content = try #require(result.value?.entries.first?.content)
            entries.append(Dictionary(uniqueKeysWithValues: content.fields.entries.map { ($0.key.displayText, $0.value) }))
            logs.append(result.outcome.logs.count)
            try clock.advance(by: 60)
        }
        return (entries, try #require(runtime.pool.sandbox(for: .timeline)), logs)
    }

    @Test("L6: a call sees main.lua's locals, tables, metatables and globals as main.lua left them, not as the last call did")
    func everyCallStartsFromWhatMainBuilt() throws {
        let (entries, sandbox, _) = try timelines("""
            local count = 0
            local config = { limit = 1, names = { "a" }, gone = "here" }
            shared = { n = 0 }
            local items = require("items")
            widget { kind = "S", placeholder = function() return {} end,
              timeline = function()
                local seen = { count = count, limit = math.type(config.limit), names = #config.names, gone = config.gone,
                               plain = getmetatable(config) == nil, extra = config.extra == nil, shared = shared.n,
                               scratch = scratch == nil, items = #items.list, date = clock.now() }
                count = count + 1
                config.limit = 1.0
                config.names[#config.names + 1] = "b"
                config.gone = nil
                config.extra = {}
                setmetatable(config, { __index = function() return "meta" end })
                shared.n = shared.n + 1
                scratch = true
                items.list[#items.list + 1] = "x"
                return { entries = { seen } }
              end }
            """, files: ["items.lua": "return { list = {} }"])
        for entry in entries {
            #expect(entry["count"] == 0)
            #expect(entry["limit"] == "integer")
            #expect(entry["names"] == 1)
            #expect(entry["gone"] == "here")
            #expect(entry["plain"] == true)
            #expect(entry["extra"] == true)
            #expect(entry["shared"] == 0)
            #expect(entry["scratch"] == true)
            #expect(entry["items"] == 0)
        }
        #expect(sandbox.snapshotState == .taken)
        #expect(sandbox.mainRuns == 1, "main.lua ran once, for three calls")
    }

    /// Whatever a call does to its ctx, or wherever it stores it, the next
    /// sees a ctx as new: from the third call on, a copy of its template
    /// (`ArgumentTemplates`).
    @Test("L6: every call's ctx is as the host made it, whatever an earlier call did to its own or where it put it",
          arguments: ["", "local started = clock.now()\n"])
    func everyCallsContextIsAsMade(mainPrefix: String) throws {
        let (entries, sandbox, _) = try timelines(mainPrefix + """
            local keep = {}
            widget { kind = "S", families = { "systemSmall" }, placeholder = function() return {} end,
              timeline = function(ctx)
                local n = 0
                for _ in pairs(ctx) do n = n + 1 end
                for _ in pairs(ctx.displaySize) do n = n + 1 end
                local seen = { date = clock.now(), kind = ctx.kind, family = ctx.family, preview = ctx.isPreview,
                               width = ctx.displaySize.width, height = ctx.displaySize.height, n = n,
                               plain = getmetatable(ctx) == nil and getmetatable(ctx.displaySize) == nil,
                               kept = keep.ctx == nil and stored == nil }
                keep.ctx, stored = ctx, ctx.displaySize
                ctx.kind = nil; ctx.family = 1; ctx.extra = { ctx }
                ctx.displaySize.width = "wide"; ctx.displaySize.depth = 3
                setmetatable(ctx.displaySize, { __index = function() return 0 end, __metatable = false })
                ctx.displaySize = { width = 1 }
                setmetatable(ctx, { __newindex = function() error("read-only") end, __metatable = "locked" })
                return { entries = { seen } }
              end }
            """, calls: 5)
        for entry in entries {
            #expect(entry["kind"] == "S")
            #expect(entry["family"] == "systemSmall")
            #expect(entry["preview"] == false)
            #expect(entry["width"] == 170 && entry["height"] == 170)
            #expect(entry["n"] == 6, "four fields, and the size's two")
            #expect(entry["plain"] == true)
            #expect(entry["kept"] == true, "nothing of the last call's ctx is reachable")
        }
        #expect(sandbox.state.argumentTemplateCopies == 3, "calls 3 to 5 were given copies of the template")
    }

    @Test("main.lua that reads the clock at its top level runs before every call")
    func mainOfTheMomentRunsEveryTime() throws {
        let (entries, sandbox, logs) = try timelines("""
            local started = clock.now()
            print("main.lua ran")
            widget { kind = "S", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), started = started } } } end }
            """)
        #expect(Set(entries.map { $0["started"] }).count == 3, "each call's own time: \(entries)")
        #expect(logs == [1, 1, 1], "main.lua's print is in every call's logs")
        #expect(sandbox.mainRuns == 3)
        guard case .refused(let why) = sandbox.snapshotState else {
            Issue.record("expected no snapshot, got \(sandbox.snapshotState)")
            return
        }
        #expect(why.contains("of the moment"))
    }

    @Test("clock.add is no effect: main.lua that only adds to a date it was given is snapshot, days and all")
    func clockAddAtTheTopLevelIsSnapshot() throws {
        let (entries, sandbox, _) = try timelines("""
            local later = clock.add(1795219200, { days = 1, hours = 2 })
            local soon = clock.add(1795219200, { minutes = 15 })
            widget { kind = "S", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), later = later, soon = soon } } } end }
            """)
        #expect(entries.map { $0["later"] } == Array(repeating: .integer(1_795_219_200 + 86_400 + 7_200), count: 3))
        #expect(entries.map { $0["soon"] } == Array(repeating: .integer(1_795_219_200 + 900), count: 3))
        #expect(sandbox.snapshotState == .taken)
        #expect(sandbox.mainRuns == 1)
    }

    @Test("a coroutine main.lua makes is made afresh for every call")
    func aCoroutineIsMadeAfresh() throws {
        let (entries, sandbox, _) = try timelines("""
            local next_n = coroutine.wrap(function() local n = 0 while true do n = n + 1 coroutine.yield(n) end end)
            widget { kind = "S", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), n = next_n() } } } end }
            """)
        #expect(entries.map { $0["n"] } == [1, 1, 1])
        #expect(sandbox.mainRuns == 3)
        #expect(sandbox.snapshotState == .refused(LuaSnapshotRefusal.coroutine.reason))
    }

    @Test("intents, controls and other roles get the same: a snapshot per pooled state")
    func anIntentsCallsStartFromMainToo() throws {
        let fixture = try BundleFixture(main: """
            local performed = 0
            intent { id = "Bump", perform = function() performed = performed + 1; store.group("group.test"):set("seen", performed) end }
            widget { kind = "S", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let intents = IntentRuntime(pool: runtime.pool)
        for _ in 0..<3 {
            let outcome = try intents.perform("Bump").outcome
            #expect(outcome.status == .ok, "\(outcome.message ?? "")")
            #expect(try fixture.store.group("group.test").get("seen") == .integer(1))
        }
        let sandbox = try #require(runtime.pool.sandbox(for: .intent))
        #expect(sandbox.mainRuns == 1)
        #expect(sandbox.snapshotState == .taken)
    }
}
