import CLua
import CLuaShims
import Foundation
import LuaSandbox
import Testing

/// How deadlines are enforced depends on the build: the watchdog's signal
/// normally, the count hook reading the clock under ThreadSanitizer (which
/// holds signals back until the thread calls into the C library, which a
/// pure Lua loop never does). Either way a pure loop ends at its deadline.
/// Runs in every build: plain, `--sanitize=thread` and `--sanitize=address`.
@Suite("The deadline mechanism matches the build and stops a pure loop")
struct DeadlineMechanismTests {
    /// True when the ThreadSanitizer runtime is in the process.
    static var threadSanitizerIsLoaded: Bool {
        guard let process = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(process) }
        return dlsym(process, "__tsan_init") != nil
    }

    @Test func signalsAreUsedExactlyWhenThreadSanitizerIsAbsent() {
        #expect((lunette_watch_uses_signals() != 0) == !Self.threadSanitizerIsLoaded)
    }

    @Test func aPureLoopEndsAtA50MillisecondDeadline() throws {
        let signals = lunette_watch_uses_signals() != 0
        let state = try LuaState(profile: .sandbox)
        try state.register(function: "hooked") { [unowned state] _ in [.boolean(lua_gethook(state.rawState) != nil)] }
        let chunk = try state.load("hookedBefore = hooked(); while true do end", name: "spin.lua")
        let limits = LuaLimits(memory: 4 << 20, timeout: .milliseconds(50), output: 4096)
        do throws(LuaError) {
            _ = try state.call(chunk, options: LuaCallOptions(limits: limits))
            Issue.record("the loop did not end")
        } catch {
            guard case .timeout(let t) = error else {
                Issue.record("expected a timeout, got \(error)")
                return
            }
            #expect(!t.cancelled && t.limit == .milliseconds(50))
            #expect(t.elapsed >= .milliseconds(50) && t.elapsed < .seconds(2), "\(t)")
            // It says which line was running, for the host to show.
            #expect(t.chunk == "spin.lua" && t.line == 1, "\(String(describing: t.chunk)):\(String(describing: t.line))")
            #expect(Diagnostic(error).line == 1)
        }
        // The kill's hook (every instruction) went with the call.
        #expect(lua_gethook(state.rawState) == nil)
        // With the signal no hook runs before the deadline; without, the hook is on from the start.
        #expect(try state.global("hookedBefore") == .boolean(!signals))
        #expect(try state.run("return 6 * 7") == [42])
        #expect(try state.run("return hooked()") == [.boolean(!signals)])
    }

    /// A top-level call removes the sandbox's own hook only: a hook a
    /// trusted script sets with debug.sethook stays for its later calls.
    @Test func aTrustedScriptsOwnHookOutlivesItsCall() throws {
        let state = try LuaState(profile: .trusted)
        try state.run("lines = 0; debug.sethook(function() lines = lines + 1 end, 'l')", name: "set.lua")
        try state.run("local a = 1\nlocal b = 2\nlocal c = 3", name: "three.lua")
        let counted = try state.run("debug.sethook(); return lines", name: "read.lua")
        // the three lines of three.lua, and read.lua's first
        #expect(counted == [4])
    }

    /// The watchdog times a call from the first poll that sees it, which is
    /// after the call began: timed from outside, no call ends before its
    /// timeout. (A deadline from Linux's coarse clock, which lags by up to
    /// a few ticks, ended these rounds 3–7 ms early.)
    @Test func noCallEndsBeforeItsTimeout() throws {
        let state = try LuaState(profile: .sandbox)
        let spin = try state.load("while true do end", name: "spin.lua")
        let limits = LuaLimits(memory: 4 << 20, timeout: .milliseconds(20), output: 4096)
        for round in 0..<5 {
            let start = ContinuousClock.now
            do throws(LuaError) {
                _ = try state.call(spin, options: LuaCallOptions(limits: limits))
                Issue.record("the loop did not end")
            } catch {
                guard case .timeout = error else {
                    Issue.record("expected a timeout, got \(error)")
                    return
                }
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(20) && elapsed < .milliseconds(500), "round \(round) ended after \(elapsed)")
        }
    }

    /// Each thread that runs calls owns a watchdog slot, given back when it
    /// ends: more threads than slots (256) over a process's life are each
    /// still watched without the hook.
    @Test func threadsThatComeAndGoAreEachWatched() throws {
        let signals = lunette_watch_uses_signals() != 0
        final class Misses: @unchecked Sendable {
            let lock = NSLock()
            var threads: [Int] = []
            func add(_ i: Int) { lock.lock(); threads.append(i); lock.unlock() }
        }
        let misses = Misses()
        for i in 0..<300 {
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                defer { done.signal() }
                guard let state = try? LuaState(profile: .sandbox) else { return }
                try? state.register(function: "hooked") { [unowned state] _ in [.boolean(lua_gethook(state.rawState) != nil)] }
                let limits = LuaLimits(memory: 4 << 20, timeout: .seconds(5), output: 4096)
                let hooked = try? state.call(try state.load("return hooked()", name: "probe.lua"), options: LuaCallOptions(limits: limits))
                if hooked != [.boolean(!signals)] { misses.add(i) }
            }
            thread.stackSize = 8 << 20
            thread.start()
            done.wait()
        }
        #expect(misses.threads.isEmpty, "threads whose call was not watched as the build watches: \(misses.threads.prefix(5))…")
    }

    /// A cancel whose signal lands while a Swift function runs another
    /// state's call on the same thread finds that call, not the cancelled
    /// one: the cancelled call must end as soon as the Swift function
    /// returns, not at its own deadline.
    @Test func aCancelDuringANestedCallEndsTheOuterCallWhenItResumes() throws {
        let outer = try LuaState(profile: .sandbox)
        let inner = try LuaState(profile: .sandbox)
        let spin = try inner.load("local t = os.clock() while os.clock() - t < 0.2 do end", name: "inner.lua")
        let innerOptions = LuaCallOptions(limits: LuaLimits(memory: 4 << 20, timeout: .seconds(5), output: 4096))
        try outer.register(function: "nested") { [unowned inner] _ in
            _ = try inner.call(spin, options: innerOptions)
            return []
        }
        let chunk = try outer.load("nested() while true do end", name: "outer.lua")
        let handle = outer.cancelHandle
        let canceller = Thread {
            usleep(50_000)   // during the nested call, which spins for 200 ms of CPU
            handle.cancel()
        }
        canceller.start()
        let started = ContinuousClock.now
        do throws(LuaError) {
            _ = try outer.call(chunk, options: LuaCallOptions(limits: LuaLimits(memory: 4 << 20, timeout: .seconds(3), output: 4096)))
            Issue.record("the outer loop did not end")
        } catch {
            guard case .timeout(let t) = error else {
                Issue.record("expected a cancelled call, got \(error)")
                return
            }
            #expect(t.cancelled)
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(2), "the outer call ran on until its deadline: \(elapsed)")
    }
}

