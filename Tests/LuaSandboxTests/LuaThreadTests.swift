import Foundation
import LuaSandbox
import Testing

@Suite("Lua runs on large stacks")
struct LuaThreadTests {
    @Test func luaThreadHasTheRequestedStack() throws {
        let thread = LuaThread(name: "test.lua", stackSize: 32 << 20)
        let size = thread.sync { currentStackSize() }
        #expect(size >= 32 << 20)
        #expect(thread.sync { thread.isCurrent })
        #expect(!thread.isCurrent)
    }

    @Test func errorsCrossTheHop() throws {
        let thread = LuaThread()
        let state = try thread.sync { () throws(LuaError) in try LuaState() }
        // The error is thrown on the Lua thread and caught on this one.
        let error = luaError { _ = try thread.sync { () throws(LuaError) in try state.run("error('x', 0)") } }
        #expect(error?.message == "x")
    }

    @Test func callsFromSmallStacksRunOnALargeStack() throws {
        // A caller on a 256 KiB thread: Lua (and the Swift functions it calls)
        // must run on a stack of at least LuaState.minimumStackSize.
        let done = DispatchSemaphore(value: 0)
        let outcome = UncheckedResult()
        let small = Thread {
            do {
                let state = try LuaState()
                try state.register(function: "stackSize") { _ in [.integer(Int64(currentStackSize()))] }
                let source = "return stackSize(), " + String(repeating: "(", count: 190) + "1" + String(repeating: ")", count: 190)
                outcome.callerStack = currentStackSize()
                outcome.value = try state.run(source)
            } catch {
                outcome.error = "\(error)"
            }
            done.signal()
        }
        small.stackSize = 256 << 10
        small.start()
        done.wait()
        #expect(outcome.error == nil)
        #expect(outcome.callerStack < LuaState.minimumStackSize)
        let luaStack = try #require(outcome.value?.first?.integerValue)
        #expect(luaStack >= Int64(LuaState.minimumStackSize))
        #expect(outcome.value?.last == 1)
    }

    @Test func anActorOnALuaThreadRunsLuaThereWithoutAHop() async throws {
        let worker = try LuaWorker()
        let (stack, onThread, values) = try await worker.run("return 6 * 7")
        #expect(onThread, "the actor's method did not run on its LuaThread")
        #expect(stack >= 24 << 20)
        #expect(values == [.integer(42)])
    }

    @Test func callersOnSmallStacksRunAtTheSameTime() throws {
        // Two callers on 512 KiB threads, each a loop of 20 million steps (about 0.1 s): they hop to
        // different threads of the shared pool, so their calls overlap.
        let spans = try #require(overlapOfTwoSmallStackCallers(pool: nil))
        #expect(spans.first.overlaps(spans.second), "the calls ran one after the other: \(spans)")
        #expect(spans.first.upperBound - spans.first.lowerBound > 0.01, "the loop did not run: \(spans)")
        #expect(LuaThreadPool.shared.limit >= 2)
    }

    @Test func aPoolNeverRunsMoreThanItsLimit() throws {
        // With a pool of one thread, the same two callers take turns.
        let pool = LuaThreadPool(limit: 1)
        let spans = try #require(overlapOfTwoSmallStackCallers(pool: pool))
        #expect(!spans.first.overlaps(spans.second), "two calls ran at once on a pool of one: \(spans)")
        #expect(pool.threads == 1)
    }

    @Test func asyncCallersUseRun() async throws {
        let thread = LuaThread()
        let value = try await thread.run { () throws -> Int in
            let state = try LuaState()
            return Int(try state.run("return 6 * 7").first?.integerValue ?? 0)
        }
        #expect(value == 42)
    }
}

/// An actor whose executor is a LuaThread: its methods run Lua on that thread.
actor LuaWorker {
    let thread = LuaThread(name: "test.actor", stackSize: 24 << 20)
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private let state: LuaState

    init() throws { state = try LuaState(profile: .trusted) }

    /// The stack it ran on, whether it was the actor's thread, and Lua's answer.
    func run(_ source: String) throws -> (stack: Int, onThread: Bool, values: [LuaValue]) {
        (currentStackSize(), thread.isCurrent, try state.run(source))
    }
}

/// When two callers' calls ran, each on a thread of its own with a small stack.
func overlapOfTwoSmallStackCallers(pool: LuaThreadPool?) -> (first: ClosedRange<Double>, second: ClosedRange<Double>)? {
    let spans = UncheckedSpans()
    let group = DispatchGroup()
    for i in 0..<2 {
        group.enter()
        let caller = Thread {
            defer { group.leave() }
            guard let state = try? LuaState(profile: .trusted) else { return }
            let busy = { () throws(LuaError) -> Void in
                let start = ContinuousClock.now
                _ = try state.run("local x = 0 for i = 1, 2e7 do x = x + i end return x")
                spans.set(i, start, ContinuousClock.now)
            }
            if let pool { try? pool.sync(busy) } else { try? busy() }
        }
        caller.stackSize = 512 << 10
        caller.start()
    }
    group.wait()
    return spans.ranges()
}

final class UncheckedSpans: @unchecked Sendable {
    private let lock = NSLock()
    private var spans: [Int: (ContinuousClock.Instant, ContinuousClock.Instant)] = [:]
    private let origin = ContinuousClock.now
    func set(_ i: Int, _ start: ContinuousClock.Instant, _ end: ContinuousClock.Instant) { lock.withLock { spans[i] = (start, end) } }
    func ranges() -> (first: ClosedRange<Double>, second: ClosedRange<Double>)? {
        lock.withLock {
            func seconds(_ t: ContinuousClock.Instant) -> Double {
                let d = t - origin
                return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
            }
            guard let a = spans[0], let b = spans[1] else { return nil }
            return (seconds(a.0)...seconds(a.1), seconds(b.0)...seconds(b.1))
        }
    }
}

final class UncheckedResult: @unchecked Sendable {
    var value: [LuaValue]?
    var error: String?
    var callerStack = 0
}

import CLuaShims
func currentStackSize() -> Int { Int(lunette_thread_stack_size()) }
