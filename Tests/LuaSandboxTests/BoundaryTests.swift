import CLua
import CLuaShims
import Foundation
import LuaSandbox
import Testing

/// The boundary holds by construction: host work on the running thread's
/// stack, kills that no Swift body can swallow, host helpers that are never
/// charged to the script, and a state that closes safely.
@Suite("The Lua boundary")
struct BoundaryTests {
    /// A module of one function, `name.answer()` → 42.
    func answerModule(_ name: String) -> LuaModule {
        var module = LuaModule(name: name)
        module.add("answer") { _ in [42] }
        return module
    }

    @Test(arguments: [SandboxProfile.sandbox, .trusted])
    func functionsRegisteredFromInsideACoroutineWork(_ profile: SandboxProfile) throws {
        // The globals table and the new function used to be pushed on two
        // different threads' stacks: a crash inside a coroutine.
        let h = try Harness(profile: profile)
        let state = h.state
        try state.register(function: "define") { [unowned state] _ in
            try state.register(function: "inner") { _ in ["inner"] }
            try state.register(self.answerModule("plain"))
            try state.register(self.answerModule("glued"), glue: "local f = ...; return { answer = function() return f.answer(nil) end }")
            return []
        }
        let results = try h.run("""
            local co = coroutine.wrap(function()
              define()
              coroutine.yield(inner(), plain.answer())
              return glued.answer()
            end)
            local a, b = co()
            return a, b, co(), select('#', coroutine.running())
            """)
        #expect(results == ["inner", 42, 42, 2])
    }

    /// A top-level call of no arguments takes a path of its own, one C call
    /// (`lunette_call_reference`): what it returns, how it fails and which
    /// limits its errors report are those of any other call, and the stack
    /// is as it was after each.
    @Test func aCallOfNoArgumentsReturnsFailsAndReportsItsLimitsAsAnyOther() throws {
        // On a thread with a large stack: the one-C-call path, on any platform.
        try LuaThread().sync { () throws in
            let state = try LuaState()
            try state.run("""
                function nothing() end
                function values() return 1, 'two', { 3 } end
                function fails() error('boom') end
                function spin() while true do end end
                function nested() return inner() end
                """, name: "calls.lua")
            let function = { (name: String) throws -> LuaFunctionRef in try #require(try state.globalFunction(name)) }
            try state.register(function: "inner") { [unowned state] _ in
                // A call from inside a call (not the outermost: the usual path).
                guard let values = try state.globalFunction("values") else { return [] }
                return try state.call(values)
            }

            #expect(try state.call(function("nothing")) == [])
            #expect(lua_gettop_(state) == 0)
            #expect(try state.call(function("values")) == [1, "two", [3]])
            #expect(lua_gettop_(state) == 0)
            #expect(try state.call(function("nested")) == [1, "two", [3]])
            #expect(lua_gettop_(state) == 0)

            guard case .runtime(let failed)? = luaError({ try state.call(function("fails")) }) else { Issue.record("no runtime error"); return }
            #expect(failed.message == "calls.lua:3: boom" && failed.traceback?.contains("calls.lua:3") == true)
            #expect(lua_gettop_(state) == 0)

            // Explicit options are armed and reported; then the state's own.
            let explicit = LuaCallOptions(limits: LuaLimits(timeout: .milliseconds(30)))
            guard case .timeout(let t)? = luaError({ try state.call(function("spin"), options: explicit) }) else { Issue.record("no timeout"); return }
            #expect(t.limit == .milliseconds(30) && t.elapsed >= .milliseconds(30))
            state.options.limits = LuaLimits(timeout: .milliseconds(40))
            guard case .timeout(let own)? = luaError({ try state.call(function("spin")) }) else { Issue.record("no timeout"); return }
            #expect(own.limit == .milliseconds(40) && own.elapsed >= .milliseconds(40))
            #expect(lua_gettop_(state) == 0)
            #expect(try state.call(function("values")) == [1, "two", [3]])
        }
    }

    /// A call of no arguments made from a Swift function inside a call is a
    /// nested call: it arms nothing, so the running call keeps its limits
    /// (here its memory cap, after the nested call), and an error of either
    /// reports the limits the outermost call armed, even when the nested call
    /// was given options of its own or the state's options changed meanwhile.
    @Test func aNestedCallOfNoArgumentsLeavesTheRunningCallsLimitsArmed() throws {
        // On a thread with a large stack: the one-C-call path, on any platform.
        try LuaThread().sync { () throws in
            let state = try LuaState()
            try state.run("""
                function spin() while true do end end
                function grow() local t = {} for i = 1, 1e7 do t[i] = i end end
                function nestedThenGrow() local ok = pcall(nest) grow() end
                function nestedThenSpin() local ok = pcall(nest) spin() end
                """, name: "nested.lua")
            let spin = try #require(try state.globalFunction("spin"))
            var nestedError: LuaError?
            try state.register(function: "nest") { [unowned state] _ in
                state.options.limits = LuaLimits(memory: 64 << 20, timeout: .seconds(9))   // not armed: a call runs
                do { try state.call(spin, options: LuaCallOptions(limits: LuaLimits(timeout: .seconds(7)))) } catch let error as LuaError {
                    nestedError = error
                    throw error
                }
                return []
            }
            // The nested call never ends by itself: the outer call's deadline ends
            // both, and both report it.
            let outer = LuaCallOptions(limits: LuaLimits(memory: 4 << 20, timeout: .milliseconds(50)))
            guard case .timeout(let t)? = luaError({ try state.call(try #require(try state.globalFunction("nestedThenSpin")), options: outer) }) else {
                Issue.record("no timeout"); return
            }
            #expect(t.limit == .milliseconds(50))
            guard case .timeout(let inner)? = nestedError else { Issue.record("the nested call did not time out: \(String(describing: nestedError))"); return }
            #expect(inner.limit == .milliseconds(50))
            // After a nested call the outer call's memory cap still holds.
            let short = LuaCallOptions(limits: LuaLimits(memory: 4 << 20, timeout: .seconds(5)))
            try state.run("function spin() end", name: "quick.lua")
            let quick = try #require(try state.globalFunction("spin"))
            try state.register(function: "nest") { [unowned state] _ in try state.call(quick) }
            guard case .memory(let m)? = luaError({ try state.call(try #require(try state.globalFunction("nestedThenGrow")), options: short) }) else {
                Issue.record("the memory cap did not hold after a nested call"); return
            }
            #expect(m.limit == 4 << 20)
            #expect(lua_gettop_(state) == 0)
        }
    }

    /// Runs `body` with a sandboxed state, its global `answer()` (returns
    /// 42) and its raw state, on a thread with a large stack: calls of no
    /// arguments take the one-C-call path there, on any platform.
    func withAnswer(_ body: @escaping (LuaState, LuaFunctionRef, OpaquePointer) throws -> Void) throws {
        try LuaThread().sync { () throws in
            let state = try LuaState()
            try state.run("function answer() return 42 end", name: "answer.lua")
            try body(state, try #require(try state.globalFunction("answer")), state.rawState)
        }
    }

    /// A state whose stack cannot grow refuses a call of no arguments with
    /// the stack error of any other call, and works again once it can.
    @Test func aCallOfNoArgumentsOnAFullStackIsRefused() throws {
        try withAnswer { state, answer, L throws in
            // Lua's stack holds at most 1,000,000 slots (LUAI_MAXSTACK).
            var filled: Int32 = 0
            while lua_checkstack(L, 10_000) != 0 { filled += 10_000; lua_settop(L, filled) }
            while lua_checkstack(L, 3) != 0 { filled += 1; lua_settop(L, filled) }
            guard case .runtime(let e)? = luaError({ try state.call(answer) }) else { Issue.record("the call was not refused"); return }
            #expect(e.message == "Lua stack overflow (cannot reserve 3 slots)")
            #expect(lua_gettop(L) == filled)
            lua_settop(L, 1)
            #expect(try state.call(answer) == [42])
        }
    }

    /// A call of no arguments pushes its handler and function unchecked
    /// while the stack holds up to LUA_MINSTACK - 3 values, and checked
    /// above: at every depth around that edge the call works and leaves the
    /// stack as it found it. (That the unchecked pushes are within the
    /// frame's room is Lua's guarantee; a build of Lua without its API
    /// checks, as Debian's, would not show a push a few slots past it. A
    /// threshold far too high is what the full stack above would show.)
    @Test func callsOfNoArgumentsWorkAtAnyStackDepthAroundTheUncheckedEdge() throws {
        try withAnswer { state, answer, L throws in
            // The resting handler is slot 1: the stack holds it and `depth - 1` more.
            for depth in Int32(1)...Int32(LUA_MINSTACK + 3) {
                lua_settop(L, 1)
                #expect(lua_checkstack(L, depth) != 0)
                for i in 1..<depth { lua_pushinteger(L, lua_Integer(i)) }
                #expect(try state.call(answer) == [42], "at depth \(depth)")
                #expect(lua_gettop(L) == depth)
                if depth > 1 { #expect(lua_tointegerx(L, depth, nil) == lua_Integer(depth - 1)) }
            }
            lua_settop(L, 1)
        }
    }

    /// Every state keeps its first registry references in the registry's
    /// array part (a table's `next` gives the array part first, in order),
    /// `luaL_ref` hands them out, and references past them, freed and made
    /// again, still name their own values.
    /// A state keeps its top-level calls' message handler at index 1 of its
    /// stack, and a call of no arguments at the base uses it: the error
    /// keeps its traceback, and the stack holds just the handler after.
    @Test func aStateKeepsItsMessageHandlerAtRest() throws {
        try LuaThread().sync { () throws in
            for profile in [SandboxProfile.sandbox, .trusted] {
                let state = try LuaState(profile: profile)
                let L = state.rawState
                #expect(lua_gettop(L) == 1 && lua_tocfunction(L, 1) != nil)
                try state.run("function fails()\n  error('boom')\nend", name: "fails.lua")
                let fails = try #require(try state.globalFunction("fails"))
                guard case .runtime(let e)? = luaError({ try state.call(fails) }) else { Issue.record("no runtime error"); return }
                #expect(e.message == "fails.lua:2: boom" && e.traceback?.contains("fails.lua:2") == true)
                #expect(lua_gettop(L) == 1 && lua_tocfunction(L, 1) != nil)
                // The call used the resting handler: its error came right above the base.
                #expect(lunette_host_of(L).pointee.call_base == 1 && lunette_host_of(L).pointee.call_first == 2)
                // A host that emptied the stack through `rawState` anyway: the
                // call brings its own handler, which is not taken for a result.
                try state.run("function two() return 1, 2 end", name: "two.lua")
                let two = try #require(try state.globalFunction("two"))
                lua_settop(L, 0)
                #expect(try state.call(two) == [1, 2])
                guard case .runtime(let again)? = luaError({ try state.call(fails) }) else { Issue.record("no runtime error"); return }
                #expect(again.traceback?.contains("fails.lua:2") == true)
                #expect(lunette_host_of(L).pointee.call_base == 0 && lunette_host_of(L).pointee.call_first == 2)
                #expect(lua_gettop(L) == 0)
            }
        }
    }

    /// A call of no arguments made while no call runs but Lua is below (a
    /// finalizer that Lua runs while the host allocates, which calls a Swift
    /// function) is a top-level call not at the stack's base: index 1 there
    /// is the Swift function's first argument, not the resting handler, so
    /// the call pushes a handler of its own and its error keeps its
    /// traceback (with index 1's table as its handler, Lua would report an
    /// error in error handling).
    @Test func aCallOfNoArgumentsFromAFinalizerBringsItsOwnHandler() throws {
        try LuaThread().sync { () throws in
            let state = try LuaState(profile: .trusted)
            let L = state.rawState
            try state.run("""
                function fails()
                  error('boom')
                end
                local function arm() setmetatable({}, { __gc = function(object) finalized(object) end }) end
                arm()
                collectgarbage("incremental", 0, 1000)   -- a new cycle at once: finalizers run as the host allocates
                """, name: "finalizer.lua")
            let fails = try #require(try state.globalFunction("fails"))
            var seen: [LuaError] = []
            var bases: [(base: Int32, first: Int32)] = []
            try state.register(function: "finalized") { [unowned state] _ in
                do { try state.call(fails) } catch let error as LuaError { seen.append(error) }
                bases.append((lunette_host_of(L).pointee.call_base, lunette_host_of(L).pointee.call_first))
                return []
            }
            // Allocate from Swift, outside any call, until the finalizer has run.
            var rounds = 0
            while seen.isEmpty && rounds < 100_000 {
                try state.setGlobal("filler", .string("filler \(rounds)"))
                rounds += 1
            }
            #expect(seen.count == 1, "the finalizer ran \(seen.count) time(s) in \(rounds) allocations")
            guard case .runtime(let e)? = seen.first else { Issue.record("no runtime error: \(seen)"); return }
            #expect(e.message == "finalizer.lua:2: boom" && e.traceback?.contains("finalizer.lua:2") == true)
            // Above the finalizer's argument (base 1), the call's own handler, then the error.
            #expect(bases.map(\.base) == [1] && bases.map(\.first) == [3])
            #expect(lua_gettop(L) == 1 && lua_tocfunction(L, 1) != nil)
        }
    }

    @Test(arguments: [SandboxProfile.sandbox, .trusted])
    func registryReferencesAreReservedAndHoldTheirValues(profile: SandboxProfile) throws {
        let state = try LuaState(profile: profile)
        let L = state.rawState
        lua_pushboolean(L, 1)
        let reference = luaL_ref(L, lunette_registry_index())
        luaL_unref(L, lunette_registry_index(), reference)
        // Lua 5.4.0–5.4.2 keep luaL_ref's free list elsewhere: references
        // then come after the reserved keys.
        if lunette_lua_release_number() >= 50403 {
            #expect((4...64).contains(reference), "a reference from the reserved keys, got \(reference)")
        } else {
            #expect(reference > 64)
        }
        lua_pushnil(L)
        var arrayKeys: [lua_Integer] = []
        while arrayKeys.count < 64, lua_next(L, lunette_registry_index()) != 0 {
            arrayKeys.append(lua_isinteger(L, -2) != 0 ? lua_tointegerx(L, -2, nil) : 0)
            lua_settop(L, -2)
        }
        lua_settop(L, 1)   // the resting message handler stays
        #expect(arrayKeys == Array(1...64))
        try state.run("for i = 0, 249 do local n = i; _G['f' .. i] = function() return n end end", name: "make.lua")
        func function(_ n: Int) throws -> LuaFunctionRef { try #require(try state.globalFunction("f\(n)")) }
        var functions = try (0..<150).map(function)
        functions.removeSubrange(20..<120)
        functions += try (150..<250).map(function)
        let expected = Array(0..<20) + Array(120..<250)
        #expect(functions.count == expected.count)
        for (f, n) in zip(functions, expected) { #expect(try state.call(f) == [.integer(Int64(n))]) }
    }

    @Test func aSwallowedMemoryKillStillEndsTheCall() throws {
        let h = try Harness(profile: .sandbox)
        var afterKill = 0
        try h.state.register(function: "swallow") { args in
            _ = try? args.call(1)
            // The call is being ended: a second nested call does not run.
            _ = try? args.call(2)
            return ["survived"]
        }
        try h.state.register(function: "ranAfterKill") { _ in afterKill += 1; return [] }
        h.state.options.limits = LuaLimits(memory: 2 << 20, timeout: .seconds(5))
        let error = luaError {
            try h.run("""
                local r = swallow(function() local t = {} for i = 1, 1e7 do t[i] = i end end,
                                  function() ranAfterKill() end)
                return r
                """)
        }
        guard case .memory(let memory) = error else {
            Issue.record("expected a memory kill, got \(String(describing: error))")
            return
        }
        #expect(memory.limit == 2 << 20)
        #expect(afterKill == 0)
        // The state is fine afterwards.
        h.state.options.limits = .sandbox
        #expect(try h.run("return 1 + 1") == [2])
    }

    @Test func aSwallowedTimeoutStillEndsTheCall() throws {
        let h = try Harness(profile: .sandbox)
        try h.state.register(function: "swallow") { args in
            _ = try? args.call(1)
            return ["survived"]
        }
        h.state.options.limits = LuaLimits(timeout: .milliseconds(50))
        let error = luaError { try h.run("local r = swallow(function() while true do end end); return r") }
        guard case .timeout = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
    }

    @Test func aTrustedStateEndsACallWhoseMemoryKillWasSwallowed() throws {
        let h = try Harness(profile: .trusted)
        try h.state.register(function: "swallow") { args in
            _ = try? args.call(1)
            return ["survived"]
        }
        h.state.options.limits = LuaLimits(memory: 2 << 20)
        let error = luaError { try h.run("return swallow(function() local t = {} for i = 1, 1e7 do t[i] = i end end)") }
        guard case .memory = error else {
            Issue.record("expected a memory kill, got \(String(describing: error))")
            return
        }
    }

    @Test func registeringDuringACallIsNotChargedToTheScript() throws {
        // The read-only view made for a module used to be built under the
        // script's cap: past it, `register` hit a precondition and aborted.
        let h = try Harness(profile: .sandbox)
        let state = h.state
        try state.register(function: "defineMany") { [unowned state] _ in
            var module = LuaModule(name: "many")
            for i in 0..<4000 { module.add("f\(i)") { _ in [.integer(Int64(i))] } }
            try state.register(module)
            try state.register(self.answerModule("glued"), glue: "local f = ...; local t = {}; for i = 1, 2000 do t['g' .. i] = i end; t.answer = f.answer; return t")
            return [.boolean(state.memoryUsed > 256 << 10)]
        }
        h.state.options.limits = LuaLimits(memory: 256 << 10, timeout: .seconds(5))
        #expect(try h.run("return defineMany()") == [true])
        #expect(h.state.memoryPeak <= 256 << 10, "the peak counts script memory only")
        h.state.options.limits = .sandbox
        #expect(try h.run("return many.f3999(), glued.g2000, rawequal(require('many'), many)") == [3999, 2000, true])
    }

    @Test func aFinalizerAtCloseMayPrintButNotReachTheHost() throws {
        var printed: [String] = []
        var touched = 0
        do {
            let state = try LuaState(profile: .trusted)
            state.logHandler = { _, line in printed.append(line.displayText) }
            try state.register(function: "touch") { _ in touched += 1; return [] }
            try state.run("""
                X = setmetatable({}, { __gc = function() print("closing") end })
                Y = setmetatable({}, { __gc = function() touch() end })
                """)
        }
        // The state is gone; the process is alive.
        #expect(printed == ["closing"])
        #expect(touched == 0)
    }

    @Test func onlyTheBoundaryLayerCallsTheLuaCAPI() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let allowed = ["Sources/LuaSandbox/Boundary/", "Sources/Benchmarks/"]
        let pattern = try Regex(#"\blua(L)?_[a-z]+\s*\("#)
        var offenders: [String] = []
        var scanned = 0
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let relative = String(url.path.dropFirst(root.path.count + 1))
            scanned += 1
            if allowed.contains(where: { relative.hasPrefix($0) }) { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains(pattern) { offenders.append("\(relative):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))") }
            }
        }
        #expect(scanned > 50, "found only \(scanned) Swift files under \(sources.path)")
        #expect(offenders.isEmpty, "raw Lua C API calls outside Sources/LuaSandbox/Boundary:\n\(offenders.joined(separator: "\n"))")
    }
}
