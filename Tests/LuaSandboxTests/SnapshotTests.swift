import LuaSandbox
import Testing

/// A state where a setup script ran in globals of its own (a table that
/// reads through to the state's globals, as a bundle's main.lua does), and
/// a snapshot of what those globals reach. `run` runs code in those
/// globals. The state's own globals, and the table `Glue` (returned as a
/// host object, reachable from nothing else), are the host's.
private struct Snapshotted {
    let state: LuaState
    let taken: Result<LuaSnapshot, LuaSnapshotRefusal>
    private let inSetup: LuaFunctionRef

    /// `padding` tables more are made beside what `setup` builds: with 100, a
    /// snapshot's records no longer fit in a C closure's upvalues and it is
    /// restored from its record tables (the two ways `lunette_snapshot_restore`
    /// has; see snapshot.c).
    init(_ setup: String, profile: SandboxProfile = .sandbox, maxSlots: Int = 4096, padding: Int = 0) throws {
        state = try LuaState(profile: profile)
        state.logHandler = { _, _ in }
        try state.run("""
            Host = { x = 1 }
            local glue = { x = 1 }
            local env = setmetatable({}, { __index = _G })
            function inSetup(code) return load(code, "setup.lua", "t", env)() end
            function roots() return env end
            function glueObjects() return glue end
            function glueX() return glue.x end
            """, name: "host.lua")
        inSetup = try #require(try state.globalFunction("inSetup"))
        let pad = padding > 0 ? "Padding = {} for i = 1, \(padding) do Padding[i] = { i } end\n" : ""
        try state.call(inSetup, [.string(LuaString(pad + setup))])
        taken = try state.snapshot(rootsFrom: try #require(try state.globalFunction("roots")),
                                   hostObjects: try #require(try state.globalFunction("glueObjects")), maxSlots: maxSlots)
    }

    @discardableResult
    func run(_ code: String) throws -> [LuaValue] { try state.call(inSetup, [.string(LuaString(code))]) }
}

@Suite("A snapshot puts back what a setup script built")
struct SnapshotTests {
    /// Each test runs with a snapshot small enough to restore from a C
    /// closure's upvalues, and with one too large for that (three upvalues
    /// a table, at most 254).
    static let paddings = [0, 100]

    @Test(arguments: paddings) func entriesThatChangedWentOrCameAreRestored(padding: Int) throws {
        let s = try Snapshotted("""
            T = { a = 1, b = "two", gone = true, list = { 1, 2, 3 }, [4.5] = "float key" }
            T.self = T
            """, padding: padding)
        let snapshot = try s.taken.get()
        try s.run("""
            T.a = 99; T.b = nil; T.gone = nil; T.extra = {}; T.list[4] = 4; T.list[1] = nil; T[4.5] = nil
            T.self = {}
            """)
        try s.state.restore(snapshot)
        let seen = try s.run("""
            local keys = 0
            for _ in pairs(T) do keys = keys + 1 end
            return T.a, T.b, T.gone, T.extra, #T.list, T.list[1], T[4.5], T.self == T, keys
            """)
        #expect(seen == [1, "two", true, .nil, 3, 1, "float key", true, 6])
    }

    /// The largest snapshot the closure form takes, and the smallest it does
    /// not: 254 records (three a table: the setup's globals, their
    /// metatable, `T`, `Padding` and its 80 tables; `F` and its upvalue),
    /// with the counts 255 upvalues, Lua's most; and 257.
    @Test(arguments: [80, 81]) func bothFormsRestoreAtTheirBoundary(padding: Int) throws {
        let s = try Snapshotted("T = { 1 }; local u = 1; function F() return u end", padding: padding)
        let snapshot = try s.taken.get()
        try s.run("T[1] = 2; T.x = true; Padding[80][1] = 0; setmetatable(T, {})")
        try s.run("F = nil")
        try s.state.restore(snapshot)
        #expect(try s.run("return T[1], T.x, Padding[80][1], getmetatable(T) == nil, F()") == [1, .nil, 80, true, 1])
    }

    @Test(arguments: paddings) func anIntegerComesBackAnIntegerAndAFloatAFloat(padding: Int) throws {
        // 1 and 1.0 are raw-equal in Lua 5.4; math.type tells them apart.
        let s = try Snapshotted("T = { i = 1, f = 2.0 }", padding: padding)
        let snapshot = try s.taken.get()
        try s.run("T.i = 1.0; T.f = 2")
        try s.state.restore(snapshot)
        #expect(try s.run("return math.type(T.i), math.type(T.f)") == ["integer", "float"])
    }

    @Test(arguments: paddings) func metatablesComeBackAndGo(padding: Int) throws {
        let s = try Snapshotted("""
            local mt = { __index = function(_, k) return "from meta " .. k end }
            T = setmetatable({}, mt)
            U = {}
            """, padding: padding)
        let snapshot = try s.taken.get()
        try s.run("setmetatable(T, nil); setmetatable(U, { __index = { x = 1 } })")
        try s.state.restore(snapshot)
        #expect(try s.run("return T.x, U.x, getmetatable(U) == nil") == ["from meta x", .nil, true])
    }

    @Test(arguments: paddings) func upvaluesSharedOrNilComeBack(padding: Int) throws {
        let s = try Snapshotted("""
            local count, missing, inner = 0, nil, { n = 0 }
            f = function() count = count + 1; inner.n = inner.n + 1; missing = "set"; return count, inner.n, missing end
            U = function() return count end
            """, padding: padding)
        let snapshot = try s.taken.get()
        #expect(try s.run("return f()") == [1, 1, "set"])
        #expect(try s.run("return U()") == [1], "count is one upvalue shared by both functions")
        try s.state.restore(snapshot)
        #expect(try s.run("return U()") == [0])
        #expect(try s.run("return f()") == [1, 1, "set"])
        try s.state.restore(snapshot)
        try s.state.restore(snapshot)
        #expect(try s.run("return f()") == [1, 1, "set"], "restoring twice is restoring once")
    }

    @Test(arguments: paddings) func theHostsObjectsAreLeftAlone(padding: Int) throws {
        // The state's globals (and Host, which they hold) and the glue's
        // table are the host's: the snapshot neither copies nor restores them.
        let s = try Snapshotted("T = { x = 1 } U = { glue = glueObjects() }", padding: padding)
        let snapshot = try s.taken.get()
        try s.run("NEW = true; T.x = 2; Host.x = 2; U.glue.x = 2")
        try s.state.restore(snapshot)
        #expect(try s.run("return NEW, T.x, Host.x, glueX()") == [.nil, 1, 2, 2])
    }

    @Test(arguments: paddings) func everyTableOfALargeSnapshotComesBack(padding: Int) throws {
        let s = try Snapshotted("T = { 1 }", padding: padding)
        let snapshot = try s.taken.get()
        try s.run("T[1] = 2; if Padding then for i = 1, #Padding do Padding[i][1] = -i; Padding[i].x = true end; Padding[71] = {} end")
        try s.state.restore(snapshot)
        #expect(try s.run("""
            local wrong = 0
            for i, t in ipairs(Padding or {}) do if t[1] ~= i or t.x ~= nil then wrong = wrong + 1 end end
            return T[1], wrong, Padding and #Padding or 0
            """) == [1, 0, .integer(Int64(padding))])
    }

    @Test func whatCannotBeCopiedIsRefused() throws {
        let coroutine = try Snapshotted("f = coroutine.wrap(function() coroutine.yield(1) end)")
        #expect(throws: LuaSnapshotRefusal.coroutine) { try coroutine.taken.get() }
        let iterator = try Snapshotted("f = string.gmatch('a b', '%a')", profile: .trusted(.all))
        #expect(throws: LuaSnapshotRefusal.userdata) { try iterator.taken.get() }
        let large = try Snapshotted("T = {} for i = 1, 100 do T[i] = i end", maxSlots: 50)
        #expect(throws: LuaSnapshotRefusal.tooLarge(limit: 50)) { try large.taken.get() }
    }

    @Test func effectsCountCallsOfTheMomentOnly() throws {
        let state = try LuaState(profile: .sandbox)
        state.logHandler = { _, _ in }
        var module = LuaModule(name: "m")
        module.add("pure", replayable: true) { _ in [1] }
        module.add("service") { _ in [2] }
        try state.register(module)
        let before = state.effects
        try state.run("local t = {} table.insert(t, 1) string.format('%d', 2) m.pure() os.time({ year = 2026, month = 1, day = 1 })")
        #expect(state.effects == before, "library functions, a replayable function and os.time of a given date are not effects")
        for (source, n) in [("os.time()", 1), ("os.date('%H')", 1), ("os.clock()", 1), ("math.random()", 1), ("print('x')", 1),
                            ("log.info('x')", 1), ("m.service()", 1)] {
            let start = state.effects
            try state.run(source)
            #expect(state.effects - start >= UInt64(n), "\(source)")
        }
    }
}
