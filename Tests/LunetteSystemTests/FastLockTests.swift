import Foundation
import Testing
import LunetteSystem

@Suite("FastLock")
struct FastLockTests {
    /// Four threads each add 50,000 times under the lock, with the lock
    /// contended (the futex path runs): no increment is lost.
    @Test func contendedIncrementsAreNotLost() {
        final class Counter: @unchecked Sendable { var value = 0 }
        let lock = FastLock(), counter = Counter()
        let threads = 4, rounds = 50_000
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                for _ in 0..<rounds { lock.withLock { counter.value += 1 } }
                done.leave()
            }
        }
        done.wait()
        #expect(counter.value == threads * rounds)
    }

    @Test func withLockReturnsAndRethrows() {
        struct Failure: Error {}
        let lock = FastLock()
        #expect(lock.withLock { 42 } == 42)
        #expect(throws: Failure.self) { try lock.withLock { () throws(Failure) in throw Failure() } }
        // The lock was released by the throw: it can be taken again.
        #expect(lock.withLock { true })
    }
}
