import LuaSandbox
import Testing

/// `LuaLimits` keeps its timeout in whole nanoseconds (what the sandbox
/// arms); `timeout` reads and sets the same value as a `Duration`.
@Suite struct LimitsTests {
    @Test func aTimeoutIsKeptInNanosecondsBothWays() {
        var limits = LuaLimits(timeout: .milliseconds(1500))
        #expect(limits.timeoutNanoseconds == 1_500_000_000)
        #expect(limits.timeout == .milliseconds(1500))
        limits.timeoutNanoseconds = 2_000_000_001
        #expect(limits.timeout == .nanoseconds(2_000_000_001))
        limits.timeout = nil
        #expect(limits.timeoutNanoseconds == nil)
        #expect(LuaLimits(timeoutNanoseconds: 5) == LuaLimits(timeout: .nanoseconds(5)))
    }

    @Test func timeoutsOutsideWholeNanosecondsAreClampedNotTrapped() {
        #expect(LuaLimits(timeout: .seconds(Int64.max)).timeoutNanoseconds == .max, "beyond Int64 nanoseconds: the most it holds")
        #expect(LuaLimits(timeout: .seconds(-3)).timeoutNanoseconds == 0)
        #expect(LuaLimits(timeout: .nanoseconds(1) / 4).timeoutNanoseconds == 0, "below a nanosecond rounds down")
    }

    @Test func aTimeoutSetInNanosecondsEndsALoop() throws {
        let state = try LuaState()
        let loop = try state.load("while true do end", name: "loop")
        var options = LuaCallOptions(limits: .sandbox)
        options.limits.timeoutNanoseconds = 20_000_000
        do {
            try state.call(loop, options: options)
            Issue.record("the loop was not stopped")
        } catch {
            // The limit it reports is the one armed, not the options' 1 s default.
            guard case .timeout(let timeout) = error else { Issue.record("\(error)"); return }
            #expect(timeout.limit == .milliseconds(20))
            #expect(timeout.elapsed < .milliseconds(900), "ended at 20 ms, not at the default second")
        }
    }
}
