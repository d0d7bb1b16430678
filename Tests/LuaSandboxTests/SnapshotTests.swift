import LuaSandbox
import Testing

/// A state whose setup script left `T`, `U` and `f` behind, and a snapshot
/// of what they reach (the roots function returns them).
private func snapshotted(_ setup: String, profile: SandboxProfile = .sandbox, maxSlots: Int = 4096) throws
    -> (LuaState, Result<LuaSnapshot, LuaSnapshotRefusal>) {
    let state = try LuaState(profile: profile)
    state.logHandler = { _, _ in }
    try state.markHostObjects()
    try state.run(setup, name: "setup.lua")
    let roots = try state.load("return T, U, f", name: "roots.lua")
    return (state, try state.snapshot(rootsFrom: roots, maxSlots: maxSlots))
}

@Suite("A snapshot puts back what a setup script built")
struct SnapshotTests {
    @Test func entriesThatChangedWentOrCameAreRestored() throws {
        let (state, taken) = try snapshotted("""
            T = { a = 1, b = "two", gone = true, list = { 1, 2, 3 }, [4.5] = "float key" }
            T.self = T
            """)
        let snapshot = try taken.get()
        try state.run("""
            T.a = 99; T.b = nil; T.gone = nil; T.extra = {}; T.list[4] = 4; T.list[1] = nil; T[4.5] = nil
            T.self = {}
            """)
        try state.restore(snapshot)
        let seen = try state.run("""
            local keys = 0
            for _ in pairs(T) do keys = keys + 1 end
            return T.a, T.b, T.gone, T.extra, #T.list, T.list[1], T[4.5], T.self == T, keys
            """)
        #expect(seen == [1, "two", true, .nil, 3, 1, "float key", true, 6])
    }

    @Test func anIntegerComesBackAnIntegerAndAFloatAFloat() throws {
        // 1 and 1.0 are raw-equal in Lua 5.4; math.type tells them apart.
        let (state, taken) = try snapshotted("T = { i = 1, f = 2.0 }")
        let snapshot = try taken.get()
        try state.run("T.i = 1.0; T.f = 2")
        try state.restore(snapshot)
        #expect(try state.run("return math.type(T.i), math.type(T.f)") == ["integer", "float"])
    }

    @Test func metatablesComeBackAndGo() throws {
        let (state, taken) = try snapshotted("""
            local mt = { __index = function(_, k) return "from meta " .. k end }
            T = setmetatable({}, mt)
            U = {}
            """)
        let snapshot = try taken.get()
        try state.run("setmetatable(T, nil); setmetatable(U, { __index = { x = 1 } })")
        try state.restore(snapshot)
        #expect(try state.run("return T.x, U.x, getmetatable(U) == nil") == ["from meta x", .nil, true])
    }

    @Test func upvaluesSharedOrNilComeBack() throws {
        let (state, taken) = try snapshotted("""
            local count, missing, inner = 0, nil, { n = 0 }
            f = function() count = count + 1; inner.n = inner.n + 1; missing = "set"; return count, inner.n, missing end
            U = function() return count end
            """)
        let snapshot = try taken.get()
        #expect(try state.run("return f()") == [1, 1, "set"])
        #expect(try state.run("return U()") == [1], "count is one upvalue shared by both functions")
        try state.restore(snapshot)
        #expect(try state.run("return U()") == [0])
        #expect(try state.run("return f()") == [1, 1, "set"])
        try state.restore(snapshot)
        try state.restore(snapshot)
        #expect(try state.run("return f()") == [1, 1, "set"], "restoring twice is restoring once")
    }

    @Test func theHostsObjectsAreLeftAlone() throws {
        // The globals table is the host's: the snapshot neither copies nor restores it.
        let (state, taken) = try snapshotted("T = { x = 1 }")
        let snapshot = try taken.get()
        try state.run("NEW = true; T.x = 2")
        try state.restore(snapshot)
        #expect(try state.run("return NEW, T.x") == [true, 1])
    }

    @Test func whatCannotBeCopiedIsRefused() throws {
        let (_, coroutine) = try snapshotted("f = coroutine.wrap(function() coroutine.yield(1) end)")
        #expect(throws: LuaSnapshotRefusal.coroutine) { try coroutine.get() }
        let (_, iterator) = try snapshotted("f = string.gmatch('a b', '%a')", profile: .trusted(.all))
        #expect(throws: LuaSnapshotRefusal.userdata) { try iterator.get() }
        let (_, large) = try snapshotted("T = {} for i = 1, 100 do T[i] = i end", maxSlots: 50)
        #expect(throws: LuaSnapshotRefusal.tooLarge(limit: 50)) { try large.get() }
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
