import CLua
import LuaSandbox
import Testing

@Suite("Swift functions called from Lua")
struct SwiftFunctionTests {
    func clockModule() -> LuaModule {
        var clock = LuaModule(name: "clock")
        clock.add("add") { args in
            let t = try args.number(1)
            let delta = try args.table(2)
            return [.number(t + (delta["seconds"].doubleValue ?? 0))]
        }
        clock.add("now") { _ in [1_000] }
        return clock
    }

    @Test func moduleFunctionsReceiveArgumentsAndReturnResults() throws {
        let h = try Harness()
        try h.state.register(clockModule())
        #expect(try h.run("return clock.add(clock.now(), { seconds = 30 })") == [1_030.0])
        #expect(try h.run("return type(clock), type(clock.add)") == ["table", "function"])
    }

    /// `text` keeps the last string it made and gives it again for the same
    /// Lua string (a key read on every call), but only for the same bytes.
    @Test func textOfTheSameStringIsMadeOnceAndOtherBytesAreReadAgain() throws {
        let h = try Harness()
        var module = LuaModule(name: "echo")
        module.add("text") { args in [.string(LuaString(try args.text(1)))] }
        try h.state.register(module)
        let before = h.state.textsMade
        #expect(try h.run("local k = 'count'; return echo.text(k), echo.text(k), echo.text('count')") == ["count", "count", "count"])
        #expect(h.state.textsMade == before + 1, "one string, made once")
        #expect(try h.run("return echo.text('counts'), echo.text('count'), echo.text('cOunt')") == ["counts", "count", "cOunt"])
        #expect(h.state.textsMade == before + 4)
        // The string read last is collected before the next is made, which
        // may then take its address (with the same length): its own bytes
        // are what comes back.
        #expect(try h.run("""
            local same = 0
            for i = 1, 200 do
              do
                local s = string.format('k%03d', i)
                if echo.text(s) == s then same = same + 1 end
              end
              collectgarbage()
            end
            return same
            """) == [200])
        let invalid = luaError { try h.run("return echo.text('count'), echo.text('\\xff')", name: "w.lua") }
        #expect(invalid?.message.contains("string is not valid UTF-8") == true, "\(invalid?.message ?? "")")
    }

    @Test func argumentErrorsReadLikeLuasOwn() throws {
        let h = try Harness()
        try h.state.register(clockModule())
        let error = luaError { try h.run("local t = nil\nreturn clock.add(t)", name: "w.lua") }
        #expect(error?.message == "w.lua:2: bad argument #1 to 'clock.add' (number expected, got nil)")
        let missing = luaError { try h.run("return clock.add(1)", name: "w.lua") }
        #expect(missing?.message == "w.lua:1: bad argument #2 to 'clock.add' (table expected, got no value)")
        let notPlain = luaError { try h.run("return clock.add(1, { seconds = print })", name: "w.lua") }
        #expect(notPlain?.message == "w.lua:1: bad argument #2 to 'clock.add' (seconds: a function is not plain data)")
    }

    @Test func integerArgumentsFollowLuaRules() throws {
        let h = try Harness()
        try h.state.register(function: "twice") { args in [.integer(try args.integer(1) * 2)] }
        #expect(try h.run("return twice(21), twice(4.0)") == [42, 8])
        let error = luaError { try h.run("return twice(1.5)", name: "i.lua") }
        #expect(error?.message == "i.lua:1: bad argument #1 to 'twice' (number has no integer representation)")
    }

    @Test func scriptPcallCatchesSwiftErrors() throws {
        let h = try Harness()
        try h.state.register(function: "fail") { _ in throw LuaFunctionError("no such task") }
        let results = try h.run("local ok, err = pcall(function() local x = fail(); return x end); return ok, err", name: "p.lua")
        #expect(results == [false, "p.lua:1: no such task"])
        // Called straight from pcall (a C function) there is no Lua caller to name, as with Lua's error().
        #expect(try h.run("return pcall(fail)") == [false, "no such task"])
    }

    @Test func otherSwiftErrorsBecomeLuaErrors() throws {
        struct Broken: Error, CustomStringConvertible { var description: String { "disk on fire" } }
        let h = try Harness()
        try h.state.register(function: "broken") { _ in throw Broken() }
        let error = luaError { try h.run("broken()", name: "b.lua") }
        #expect(error?.message == "b.lua:1: disk on fire")
    }

    @Test func nestedSwiftLuaSwiftLuaErrorsKeepTheInnermostMessageAndTraceback() throws {
        let h = try Harness()
        // Lua (outer.lua) → Swift apply → Lua callback → Swift fail
        try h.state.register(function: "apply") { args in try args.call(1, [5]) }
        try h.state.register(function: "fail") { args in throw LuaFunctionError("bad value \(try args.integer(1))") }
        let error = luaError {
            try h.run("""
                local function callback(n)
                  return fail(n)
                end
                return apply(callback)
                """, name: "outer.lua")
        }
        guard case .runtime(let runtime)? = error else { Issue.record("expected runtime error"); return }
        #expect(runtime.message == "outer.lua:2: bad value 5")
        let traceback = try #require(runtime.traceback)
        #expect(traceback.contains("in function 'fail'"))
        #expect(traceback.contains("outer.lua:2: in"))
        #expect(traceback.contains("in function 'apply'"))
        #expect(traceback.contains("outer.lua:4: in main chunk"))
    }

    @Test func nestedErrorObjectsPassThroughUnchanged() throws {
        let h = try Harness()
        try h.state.register(function: "apply") { args in try args.call(1) }
        let results = try h.run("""
            local ok, e = pcall(apply, function() error({ code = 7 }) end)
            return ok, type(e), e.code
            """)
        #expect(results == [false, "table", 7])
    }

    @Test func nestedCallsReturnValues() throws {
        let h = try Harness()
        try h.state.register(function: "map") { args in
            let list = try args.table(1)
            var out: [LuaValue] = []
            for element in list.array { out += try args.call(2, [element]) }
            return [.table(LuaTable(array: out))]
        }
        #expect(try h.run("return map({1, 2, 3}, function(x) return x * x end)") == [[1, 4, 9]])
    }

    @Test func swiftFunctionsWorkInsideCoroutines() throws {
        let h = try Harness()
        try h.state.register(function: "apply") { args in try args.call(1, [try args.value(2)]) }
        let results = try h.run("""
            local co = coroutine.wrap(function(x)
              local y = coroutine.yield(apply(function(v) return v + 1 end, x))
              return apply(function(v) return v * 10 end, y)
            end)
            return co(1), co(7)
            """)
        #expect(results == [2, 70])
    }

    @Test func badReturnValuesAreErrorsNotCrashes() throws {
        let h = try Harness()
        var deep: LuaValue = 1
        for _ in 0..<200 { deep = [deep] }
        let captured = deep
        try h.state.register(function: "deep") { _ in [captured] }
        let error = luaError { try h.run("return deep()", name: "d.lua") }
        #expect(error?.message.hasPrefix("d.lua:1: 'deep' returned a bad value: result[1][1]") == true)
        #expect(error?.message.hasSuffix("tables are nested more than 100 deep") == true)
    }

    @Test func oneResultFunctionsReturnTheirValueErrorsAndBadValuesAlike() throws {
        let h = try Harness()
        var deep: LuaValue = 1
        for _ in 0..<200 { deep = [deep] }
        let captured = deep
        var module = LuaModule(name: "one")
        module.addReturningOne("double") { args in .integer(try args.integer(1) * 2) }
        module.addReturningOne("table") { _ in ["a": 1, "b": [true, "x"]] }
        module.addReturningOne("nothing") { _ in .nil }
        module.addReturningOne("deep") { _ in captured }
        try h.state.register(module)
        #expect(try h.run("return one.double(21), select('#', one.nothing()), one.table().b[2]") == [42, 1, "x"])
        let error = luaError { try h.run("return one.double('x')", name: "o.lua") }
        #expect(error?.message == "o.lua:1: bad argument #1 to 'one.double' (number expected, got string)")
        let bad = luaError { try h.run("return one.deep()", name: "o.lua") }
        #expect(bad?.message.hasPrefix("o.lua:1: 'one.deep' returned a bad value: result[1][1]") == true)
        // Read back through `functions` and registered again as a module of
        // array bodies, it answers the same.
        let copy = LuaModule(name: "copy", functions: module.functions)
        try h.state.register(copy)
        #expect(try h.run("return copy.double(4), copy.table().a") == [8, 1])
    }

    /// A C fast path answers the calls it takes without entering the body;
    /// the body runs every other call, in the same frame, so its errors keep
    /// the caller's position.
    @Test func aFastPathAnswersItsCallsAndTheBodyTheRest() throws {
        final class Count: @unchecked Sendable { var n = 0 }
        let bodyCalls = Count()
        // Doubles one integer; anything else is the body's.
        let fast: lua_CFunction = { L in
            guard lua_gettop(L) == 1, lua_isinteger(L, 1) != 0 else { return -1 }
            lua_pushinteger(L, lua_tointegerx(L, 1, nil) &* 2)
            return 1
        }
        var module = LuaModule(name: "m")
        module.addReturningOne("double", fastPath: LuaFastPath(fast)) { args in
            bodyCalls.n += 1
            return .number(try args.number(1) * 2)
        }
        let h = try Harness()
        try h.state.register(module)
        #expect(try h.run("return m.double(21), m.double(-4)") == [42, -8])
        #expect(bodyCalls.n == 0)
        #expect(try h.run("return m.double(2.5)") == [5.0])
        #expect(bodyCalls.n == 1)
        let error = luaError { try h.run("local x = 1\nreturn m.double('x')", name: "f.lua") }
        #expect(error?.message == "f.lua:2: bad argument #1 to 'm.double' (number expected, got string)")
        #expect(bodyCalls.n == 2)
    }

    /// A fast path reads the data it was given (upvalue 3), and the calls it
    /// answers count as effects exactly when the function is not replayable,
    /// which it is not unless said (as for functions without a fast path).
    @Test func aFastPathReadsItsDataAndCountsEffectsAsItsBodyWould() throws {
        let cell = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
        defer { cell.deallocate() }
        cell.initialize(to: 7)
        let read: lua_CFunction = { L in
            guard let data = lua_touserdata(L, -1_001_003 /* lua_upvalueindex(3): Lua 5.4 registry index, -1,001,000, minus 3 */) else { return -1 }
            lua_pushinteger(L, data.assumingMemoryBound(to: Int64.self).pointee)
            return 1
        }
        var module = LuaModule(name: "cell")
        module.addReturningOne("effect", fastPath: LuaFastPath(read, data: UnsafeMutableRawPointer(cell))) { _ in .nil }
        module.addReturningOne("pure", replayable: true, fastPath: LuaFastPath(read, data: UnsafeMutableRawPointer(cell))) { _ in .nil }
        module.addReturningOne("none", fastPath: LuaFastPath(read)) { _ in "body" }
        let h = try Harness()
        try h.state.register(module)
        let start = h.state.effects
        #expect(try h.run("return cell.effect(), cell.pure()") == [7, 7])
        #expect(h.state.effects - start == 1, "only the effect's call counts")
        cell.pointee = -3
        #expect(try h.run("return cell.effect(), cell.pure(), cell.none()") == [-3, -3, "body"])
        #expect(h.state.effects - start == 3, "the effect's call again, and none's: its body answered, and it is not replayable either")
    }
}

/// Glue is compiled once a process and later states load its binary form:
/// what a state gets must be the same either way, error locations included.
@Suite("Glue loaded from its compiled form behaves as compiled from text")
struct CompiledGlueTests {
    /// A glue chunk unique to this test run (its cache key is its source),
    /// returning a function that adds through the host and fails on demand.
    static let glue = """
        local host = ...
        local token = "\(UInt64.random(in: 0 ... .max))"
        return function(a, b)
          if a == nil then
            error("no operand")
          end
          return host.add(a, b), token
        end
        """

    func entry(_ state: LuaState) throws -> LuaFunctionRef {
        var module = LuaModule(name: "glue-test")
        module.add("add") { args in [.integer(try args.integer(1) + args.integer(2))] }
        return try #require(try state.runGlue(Self.glue, name: "glue-test", functions: module).first)
    }

    @Test func aSecondStateGetsTheSameFunctionAndTheSameErrors() throws {
        var results: [[LuaValue]] = []
        var failures: [String] = []
        for profile in [SandboxProfile.sandbox, .sandbox, .trusted] {
            let state = try LuaState(profile: profile)
            let function = try entry(state)
            results.append(try state.call(function, [2, 3]))
            do {
                try state.call(function, [])
                Issue.record("no error")
            } catch {
                failures.append(error.message)
            }
        }
        #expect(results[0].first == .integer(5))
        #expect(results.allSatisfy { $0 == results[0] }, "the same token and sum from every state")
        #expect(failures.allSatisfy { $0 == failures[0] })
        #expect(failures[0].contains("[host glue-test]:5: no operand"), "\(failures[0])")
        #expect(LuaState.binaryLoads(ofGlue: Self.glue, name: "glue-test") == 2, "the second and third states load the compiled form")
    }
}
