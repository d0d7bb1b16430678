import Foundation
import Testing
import WidgetHost

/// A sandboxed state with `store` over a temporary root, and the app's own
/// view of the same groups through another connection.
final class StoreHarness {
    let root: String
    let store: SharedStore
    let state: LuaState
    let binding: StoreBinding
    var printed: [String] = []

    init(groups: [String] = ["group.t"], limits: StoreLimits = .default, timeoutMs: Int = 1000, profile: SandboxProfile = .sandbox) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-binding-\(UUID().uuidString)").path
        store = SharedStore(root: root, limits: limits)
        state = try LuaState(profile: profile)
        var callLimits = LuaLimits.sandbox
        callLimits.timeout = .milliseconds(timeoutMs)
        state.options = LuaCallOptions(limits: callLimits)
        binding = StoreBinding(store: store, grants: groups, owner: "bundle com.example.test")
        state.logHandler = { [unowned self] _, line in self.printed.append(line.displayText) }
        try binding.install(in: state)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// The app's side: another `SharedStore` on the same root.
    func app(_ group: String = "group.t") throws -> StoreGroup {
        try SharedStore(root: root).group(group)
    }

    /// Runs `source` as one call: its writes commit when it succeeds.
    @discardableResult
    func run(_ source: String) throws(LuaError) -> [LuaValue] {
        let chunk = try state.load(source, name: "t.lua")
        return try binding.perform { () throws(LuaError) in try state.call(chunk) }
    }
}

@Suite("store in scripts: the API, and a call as all or nothing")
struct StoreBindingTests {
    @Test func theAPIOfLuaAPIMd() throws {
        let h = try StoreHarness()
        try h.app().set("fromApp", ["title": "Buy milk", "done": false])
        let results = try h.run("""
            local g = store.group("group.t")
            assert(g.id == "group.t" and store.group("group.t") == g)
            g:set("n", 1); g:set("x", 2.5); g:set("s", "text"); g:set("t", { 1, 2, { a = true } })
            g:set("gone", 1); g:remove("gone"); g:set("alsoGone", 1); g:set("alsoGone", nil)
            local new = g:update("n", function(old) return old + 41 end)
            g:writeFile("a.txt", "hello\\0world"); g:writeFile("b.bin", "x"); g:removeFile("b.bin")
            return g:get("n"), new, g:get("x"), g:get("t")[3].a, g:get("fromApp").title, g:get("missing"),
                   table.concat(g:keys(), ","), table.concat(g:keys("f"), ","), table.concat(g:files(), ","),
                   g:readFile("a.txt"), g:readFile("nope")
            """)
        #expect(results == [42, 42, 2.5, true, "Buy milk", nil, "fromApp,n,s,t,x", "fromApp", "a.txt", .string(LuaString(bytes: Array("hello\0world".utf8))), nil])
        let app = try h.app()
        #expect(try app.get("n") == .integer(42))
        #expect(try app.get("x") == .double(2.5))
        #expect(try app.get("t") == [1, 2, ["a": true]])
        #expect(try app.get("gone") == nil)
        #expect(try app.files() == ["a.txt"])
    }

    @Test func bytesAreKeptExactlyAndKeysMustBeText() throws {
        let h = try StoreHarness()
        // The values of attack 37: NUL, invalid and non-Unicode UTF-8.
        let values: [[UInt8]] = [Array("abc\0def".utf8), [0xFF, 0xFE], [0xC0, 0xAF], [0xED, 0xA0, 0x80],
                                 [0xF4, 0x90, 0x80, 0x80], [0xFD, 0xBF, 0xBF, 0xBF, 0xBF, 0xBF], [0x80]]
        for (i, bytes) in values.enumerated() {
            try h.state.setGlobal("v", .string(LuaString(bytes: bytes)))
            try h.run("store.group('group.t'):set('val\(i)', v)")
        }
        for (i, bytes) in values.enumerated() {
            let read = try h.run("return store.group('group.t'):get('val\(i)')")
            #expect(read == [.string(LuaString(bytes: bytes))], "val\(i)")
            let stored = try h.app().get("val\(i)")
            #expect(stored == (i == 0 ? .string("abc\0def") : .bytes(bytes)), "val\(i)")
        }
        let badKey = try #require(luaFailure { try h.run("store.group('group.t'):set('\\xff', 1)") })
        #expect(badKey.contains("t.lua:1: bad argument #1 to 'set' (key \"\\xff\" is not valid UTF-8)"), "\(badKey)")
        let nulKey = try #require(luaFailure { try h.run("store.group('group.t'):get('a\\0b')") })
        #expect(nulKey.contains("must not contain NUL"))
        let badMapKey = try #require(luaFailure { try h.run("store.group('group.t'):set('k', { ['\\xff'] = 1 })") })
        #expect(badMapKey.contains("bad argument #2 to 'set'") && badMapKey.contains("not valid UTF-8"))
    }

    @Test func anUngrantedGroupNamesTheOwnerAndTheGroup() throws {
        let h = try StoreHarness()
        let message = try #require(luaFailure { try h.run("local ok = 1\nstore.group('group.other')") })
        #expect(message == "t.lua:2: store.group: app group \"group.other\" is not granted to bundle com.example.test, which has only group.t")
        let forged = try #require(luaFailure { try h.run("local g = store.group('group.t'); g.get({}, 'k')") })
        #expect(forged.contains("store group expected"))
        #expect(luaFailure { try h.run("store.group('group.t').id = 'group.other'") }?.contains("read-only") == true)
        #expect(luaFailure { try h.run("store.group = nil") } != nil)
    }

    /// A granted group's object is made once per state and given to every
    /// later call, so it must hold nothing: writes to it, `rawset` among
    /// them, are refused, and its metatable is out of reach. (Before
    /// 2026-11-27 each call made new objects and the old ones stopped
    /// working, which cost a table, its hashing into the glue's tables and
    /// its collection on every call.)
    @Test func aGroupObjectIsMadeOncePerStateAndHoldsNothing() throws {
        let h = try StoreHarness(groups: ["group.t", "group.u"])
        // The harness's state keeps its globals between runs, as a state
        // reused without a fresh environment would.
        try h.run("""
            old, oldU = store.group("group.t"), store.group("group.u")
            assert(old ~= oldU and old.id == "group.t" and oldU.id == "group.u")
            old:set("k", 1); oldU:set("k", 2)
            """)
        h.binding.beginCall()
        let results = try h.run("""
            local g, u = store.group("group.t"), store.group("group.u")
            assert(g == old and u == oldU, "the same objects in a later call")
            assert(getmetatable(g) == false and g.id == "group.t" and u.id == "group.u")
            local raw, rawWhy = pcall(rawset, g, "stash", true)
            local set, setWhy = pcall(function() g.stash = true end)
            local meta = pcall(setmetatable, g, {})
            local inserted = pcall(table.insert, g, "x")
            return raw, rawWhy, set, setWhy, meta, inserted, rawget(g, "stash"), rawget(g, 1), next(g), g:get("k"), u:get("k")
            """)
        #expect(results.count == 11, "\(results)")
        guard results.count == 11 else { return }
        #expect(results[0] == false && results[1].stringValue?.contains("attempt to modify a read-only table") == true, "\(results)")
        #expect(results[2] == false && results[3].stringValue?.contains("store group objects are read-only") == true, "\(results)")
        #expect(results[4] == false, "setmetatable on a group object")
        #expect(results[5] == false, "table.insert into a group object")
        #expect(Array(results[6...]) == [LuaValue.nil, .nil, .nil, 1, 2], "\(results)")
    }

    /// The glue finds a granted group's handle itself once it has seen it,
    /// but only while a call runs: outside one, `store.group` is refused
    /// every time, and an ungranted group on every call, with its record.
    @Test func aGroupSeenBeforeIsStillRefusedOutsideACallAndAnUngrantedOneEveryTime() throws {
        let h = try StoreHarness()
        try h.run("store.group('group.t'):set('k', 1)")
        let outside = try h.state.load("local g = store.group('group.t')\nreturn g", name: "outside.lua")
        for _ in 0..<2 {
            h.binding.beginCall()
            let lookups = h.binding.groupLookups
            #expect(try h.run("return store.group('group.t'):get('k')") == [1])
            #expect(h.binding.groupLookups == lookups, "a group seen before is found in the glue while a call runs")
            let message = try #require(luaFailure { try h.state.call(outside) })
            #expect(message == "outside.lua:1: store.group: store: the store is open only during a call", "\(message)")
        }
        for _ in 0..<2 {
            h.binding.beginCall()
            #expect(luaFailure { try h.run("return store.group('group.other')") }?.contains("is not granted") == true)
            #expect(h.binding.deniedGroups == ["group.other"])
        }
    }

    @Test func aFailedCallWritesNothing() throws {
        let h = try StoreHarness(timeoutMs: 100)
        try h.app().set("keep", 1)
        let scripts = [
            "error": "g:set('a', 1); g:writeFile('f', 'x'); g:remove('keep'); error('boom')",
            "timeout": "g:set('a', 1); g:update('keep', function(n) return n + 1 end); while true do end",
            "memory": "g:set('a', 1); local t = {}; while true do t[#t + 1] = ('x'):rep(1000) .. #t end",
            "caught by pcall": "g:set('a', 1); pcall(error, 'x'); g:writeFile('f', 'y'); error({ code = 1 })",
        ]
        for (what, body) in scripts {
            let error = luaFailure { try h.run("local g = store.group('group.t')\n" + body) }
            #expect(error != nil, "\(what)")
            let app = try h.app()
            #expect(try app.keys() == ["keep"], "\(what)")
            #expect(try app.get("keep") == .integer(1), "\(what)")
            #expect(try app.files() == [], "\(what)")
        }
        // The same state serves the next call, which commits.
        try h.run("store.group('group.t'):set('after', true)")
        #expect(try h.app().get("after") == .boolean(true))
    }

    @Test func readersDoNotSeeACallUntilItCommitsAndTheAppCanWriteMeanwhile() throws {
        let h = try StoreHarness()
        let app = try h.app()
        var seenDuringCall: [StoreValue?] = []
        try h.state.register(function: "appSide") { _ in
            seenDuringCall.append(try app.get("a"))
            try app.set("fromApp", 7)   // the write lock is free while the script runs
            return []
        }
        let results = try h.run("""
            local g = store.group('group.t')
            g:set('a', 1); g:set('b', 2)
            appSide()
            return g:get('a'), g:get('fromApp'), table.concat(g:keys(), ',')
            """)
        #expect(seenDuringCall == [nil])
        #expect(results == [1, 7, "a,b,fromApp"])
        #expect(try app.get("a") == .integer(1))
        #expect(try app.get("b") == .integer(2))
    }

    @Test func aConflictingUpdateRunsAgainOnTheNewValue() throws {
        let h = try StoreHarness()
        let app = try h.app()
        try app.set("n", 10)
        var runs = 0
        try h.state.register(function: "counted") { _ in runs += 1; return [] }
        try h.state.register(function: "appIncrements") { _ in
            try app.update("n") { .integer(($0?.integerValue ?? 0) + 100) }
            return []
        }
        let results = try h.run("""
            local g = store.group('group.t')
            local seen = g:update('n', function(n) counted(); return n + 1 end)
            g:set('other', 'kept')
            appIncrements()   -- another writer moves 'n' before this call commits
            return seen
            """)
        #expect(results == [11])          // what the script saw when it ran
        #expect(runs == 2)                // the transform ran again at commit
        #expect(try app.get("n") == .integer(111))   // no increment lost
        #expect(try app.get("other") == "kept")
    }

    /// The binding keeps each group's stage and reader from call to call: a
    /// transform run again at commit that reads another group must not leave
    /// that reader's transaction open into the next call, which would read
    /// its old snapshot.
    @Test func aTransformRunAgainAtCommitLeavesNoReadOpenForTheNextCall() throws {
        let h = try StoreHarness(groups: ["group.t", "group.u"])
        let app = try h.app(), appU = try h.app("group.u")
        try app.set("n", 10)
        try appU.set("x", 1)
        try h.state.register(function: "appIncrements") { _ in
            try app.update("n") { .integer(($0?.integerValue ?? 0) + 100) }
            return []
        }
        try h.run("""
            local g, u = store.group('group.t'), store.group('group.u')
            g:update('n', function(n) return n + u:get('x') end)
            appIncrements()   -- the commit conflicts: the transform runs again, and reads group.u again
            """)
        #expect(try app.get("n") == .integer(111))
        try appU.set("x", 5)   // another connection's commit, after the call
        #expect(try h.run("return store.group('group.u'):get('x')") == [5])
    }

    @Test func aCallsReadsShareASnapshotAndNoIncrementIsLost() throws {
        let h = try StoreHarness()
        let other = try h.app()                        // another connection, as another process has
        let same = try h.store.group("group.t")        // the connection the script's reads use
        try other.set("k", 1)
        try other.set("j", 1)
        try h.state.register(function: "otherWrites") { args in try other.set(try args.text(1), .integer(try args.integer(2))); return [] }
        try h.state.register(function: "sameWrites") { args in try same.set(try args.text(1), .integer(try args.integer(2))); return [] }
        let results = try h.run("""
            local g = store.group('group.t')
            local first = g:get('k')       -- the call's snapshot begins at its first read
            otherWrites('k', 2)            -- committed on another connection during the call
            otherWrites('j', 2)
            local second = g:get('k')      -- still the snapshot
            local before = g:get('j')      -- a key not read yet: the snapshot too
            local seen = g:update('k', function(n) return n + 10 end)
            sameWrites('x', 3)             -- this process's own connection: ends the snapshot
            local after = g:get('j')       -- a new snapshot, which sees the other write
            return first, second, before, seen, after
            """)
        #expect(results == [1, 1, 1, 11, 2])
        // The update read 1 in the snapshot; the commit found 2 and ran it again.
        #expect(try other.get("k") == .integer(12))
    }

    @Test func aPlainWriteNeedsNoReplay() throws {
        let h = try StoreHarness()
        let app = try h.app()
        try h.state.register(function: "appWrites") { _ in try app.set("n", 500); return [] }
        try h.run("local g = store.group('group.t'); g:set('n', 1); g:update('n', function(n) return n + 1 end); appWrites()")
        #expect(try app.get("n") == .integer(2))   // last writer wins; the update read the call's own value
    }

    /// A call can be ended at any instruction (a deadline, a cancel, an
    /// instruction budget), also inside `store.group` while it makes a
    /// group's object: the glue must work again afterwards. A debug hook (a
    /// trusted state's) ends the first call of a new state after k
    /// instructions, for every k through the function.
    @Test func storeGroupWorksAgainAfterACallEndedAtAnyInstructionInsideIt() throws {
        var ended = 0
        for k in 1...120 {
            let h = try StoreHarness(profile: .trusted)
            try h.app().set("n", 1)
            // Everything the hook may end is inside the pcall: store.group, and
            // what is left of the counted function after it.
            let result = try h.run("""
                local ok, message = pcall(function()
                  debug.sethook(function() debug.sethook(); error('ended here', 0) end, '', \(k))
                  local g = store.group('group.t')
                  debug.sethook()
                  return g
                end)
                debug.sethook()
                return ok, message
                """)
            if result.first == false { ended += 1 }
            h.binding.beginCall()
            #expect(try h.run("local a, b = store.group('group.t'), store.group('group.t'); assert(a == b); return a:get('n')") == [1],
                    "the call ended after \(k) instructions")
        }
        #expect(ended > 20, "the hook ended the call inside store.group for many k (\(ended))")
    }

    /// Keys are checked by their bytes on every use: text canonically
    /// equivalent (Swift's `==` holds it equal) to a key used before, but
    /// longer than a key may be, is refused, as is an empty key.
    @Test func everyKeyIsCheckedByItsBytes() throws {
        let h = try StoreHarness()
        // 128 × "é" precomposed is 256 bytes, the most a key may have;
        // decomposed (e + U+0301) it is 384.
        try h.run("store.group('group.t'):set(('\\u{E9}'):rep(128), 1)")
        let long = try #require(luaFailure {
            try h.run("local g = store.group('group.t'); g:get(('\\u{E9}'):rep(128)); return g:get(('e\\u{301}'):rep(128))")
        })
        #expect(long.contains("a key is at most 256 bytes, this one has 384"), "\(long)")
        let empty = try #require(luaFailure { try h.run("local g = store.group('group.t'); g:get('n'); return g:get('')") })
        #expect(empty.contains("a key must not be empty"), "\(empty)")
    }

    @Test func limitsAreErrorsThatNameTheKey() throws {
        let h = try StoreHarness(limits: StoreLimits(valueBytes: 1000, groupBytes: 4000, callBytes: 3000))
        let big = try #require(luaFailure { try h.run("store.group('group.t'):set('big', ('x'):rep(1001))") })
        #expect(big.hasPrefix("t.lua:1: value for key \"big\" is 1001 bytes, over the limit of 1000 bytes per value"), "\(big)")
        let flood = try #require(luaFailure { try h.run("local g = store.group('group.t'); for i = 1, 1e6 do g:set('k' .. i, ('y'):rep(100)) end") })
        #expect(flood.contains("the limit of one call"), "\(flood)")
        #expect(try h.app().keys() == [])
        // The group's quota is checked when the call commits.
        for i in 0..<2 { try h.run("store.group('group.t'):set('a\(i)', ('z'):rep(900))") }
        try h.run("store.group('group.t'):set('a2', ('z'):rep(900)); store.group('group.t'):set('a3', ('z'):rep(900))")
        let quota = try #require(luaFailure { try h.run("store.group('group.t'):set('a4', ('z'):rep(900))") })
        #expect(quota.contains("store commit failed") && quota.contains("quota of 4000 bytes"), "\(quota)")
        #expect(try h.app().keys() == ["a0", "a1", "a2", "a3"])
    }
}

/// The message of the LuaError `body` threw; nil (and an issue) when it did not throw.
func luaFailure(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    do {
        try body()
        Issue.record("expected a LuaError", sourceLocation: sourceLocation)
    } catch let error as LuaError {
        return error.message
    } catch {
        Issue.record("expected a LuaError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
