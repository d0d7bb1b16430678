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

    @Test func asyncCallersUseRun() async throws {
        let thread = LuaThread()
        let value = try await thread.run { () throws -> Int in
            let state = try LuaState()
            return Int(try state.run("return 6 * 7").first?.integerValue ?? 0)
        }
        #expect(value == 42)
    }
}

final class UncheckedResult: @unchecked Sendable {
    var value: [LuaValue]?
    var error: String?
    var callerStack = 0
}

import CLuaShims
func currentStackSize() -> Int { Int(lunette_thread_stack_size()) }
