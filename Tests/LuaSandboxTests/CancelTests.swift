import Foundation
import LuaSandbox
import Testing

/// `LuaCancelHandle`: another thread ends a running call, as its deadline would.
@Suite("Cancelling a running call")
struct CancelTests {
    /// Runs `source` with a 20 s deadline on a thread of its own, cancels it
    /// after `delay`, and returns how the call ended.
    func cancelled(_ source: String, after delay: Duration = .milliseconds(50)) throws -> LuaError? {
        let outcome = CancelOutcome()
        let ready = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        // The state lives on the runner thread; only its handle crosses.
        let runner = Thread {
            defer { done.signal() }
            guard let state = try? LuaState(profile: .sandbox), let chunk = try? state.load(source, name: "loop.lua") else {
                ready.signal()
                return
            }
            state.options = LuaCallOptions(limits: LuaLimits(memory: 8 << 20, timeout: .seconds(20), output: 4096))
            outcome.handle = state.cancelHandle
            ready.signal()
            do throws(LuaError) { _ = try state.call(chunk) } catch { outcome.error = error }
            outcome.servesAfterwards = (try? state.run("return 6 * 7")) == [42]
        }
        runner.stackSize = 16 << 20
        runner.start()
        ready.wait()
        let handle = try #require(outcome.handle)
        Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
        #expect(handle.cancel(), "no call was running to cancel")
        done.wait()
        #expect(outcome.servesAfterwards, "the state does not serve a call after a cancelled one")
        return outcome.error
    }

    @Test func aLoopEndsAtOnceAndSaysItWasCancelled() throws {
        let error = try cancelled("local n = 0 while true do n = n + 1 end")
        guard case .timeout(let t)? = error else { Issue.record("expected a timeout, got \(String(describing: error))"); return }
        #expect(t.cancelled)
        #expect(t.elapsed < .seconds(10), "it ran to its deadline: \(t)")
        #expect(t.description.hasPrefix("cancelled by the host after "))
    }

    @Test func aRetryLoopInPcallCannotCatchIt() throws {
        let error = try cancelled("while true do pcall(function() while true do end end) end")
        guard case .timeout(let t)? = error else { Issue.record("expected a timeout, got \(String(describing: error))"); return }
        #expect(t.cancelled)
    }

    @Test func aHandleOfAStateThatIsGoneDoesNothing() throws {
        var state: LuaState? = try LuaState(profile: .sandbox)
        let handle = state!.cancelHandle
        #expect(!handle.cancel(), "cancelled a call that was not running")
        state = nil
        #expect(!handle.cancel())
    }
}

final class CancelOutcome: @unchecked Sendable {
    var handle: LuaCancelHandle?
    var error: LuaError?
    var servesAfterwards = false
}
