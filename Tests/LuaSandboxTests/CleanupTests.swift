import LuaSandbox
import Testing

@Suite("Nothing leaks and nothing is skipped when Swift functions raise")
struct CleanupTests {
    final class Tracker {
        var deferred = 0
    }

    @Test func capturedObjectIsReleasedAndDeferAlwaysRuns() throws {
        weak var weakTracker: Tracker?
        var deferCount = 0
        do {
            let tracker = Tracker()
            weakTracker = tracker
            let state = try LuaState(profile: .trusted)
            try state.register(function: "raise") { _ in
                defer { tracker.deferred += 1 }
                throw LuaFunctionError("raised")
            }
            let results = try state.run("""
                local caught = 0
                for i = 1, 100000 do
                  if not pcall(raise) then caught = caught + 1 end
                end
                return caught
                """)
            #expect(results == [100_000])
            deferCount = tracker.deferred
            #expect(weakTracker != nil)
        }
        #expect(deferCount == 100_000)
        #expect(weakTracker == nil, "the state closed, so the callback and what it captured must be released")
    }

    @Test func functionRefsDoNotKeepTheStateAlive() throws {
        weak var weakState: LuaState?
        var ref: LuaFunctionRef?
        do {
            let state = try LuaState(profile: .trusted)
            weakState = state
            ref = try state.load("return 1", name: "r")
        }
        #expect(weakState == nil)
        ref = nil  // releasing a reference after its state closed must not touch the closed state
        _ = ref
    }

    @Test func memoryIsReturnedWhenCallsFail() throws {
        let state = try LuaState(profile: .trusted)
        try state.register(function: "raise") { _ in throw LuaFunctionError(String(repeating: "x", count: 1000)) }
        _ = try? state.run("for i = 1, 1000 do pcall(raise) end")
        _ = try state.run("collectgarbage(); collectgarbage()")
        let before = state.memoryUsed
        _ = try? state.run("for i = 1, 10000 do pcall(raise) end")
        _ = try state.run("collectgarbage(); collectgarbage()")
        #expect(state.memoryUsed <= before + 4096)
        #expect(state.memoryPeak >= state.memoryUsed)
    }
}
