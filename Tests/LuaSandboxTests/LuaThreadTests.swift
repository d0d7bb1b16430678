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
        let error = thread.sync { luaError { try state.run("error('x', 0)") } }
        #expect(error?.message == "x")
    }

    @Test func callsFromSmallStacksStillParseDeepNesting() throws {
        // 190 nested parentheses recurse deeply in the C parser; on a 256 KiB
        // thread this would risk the stack, so LuaState hops to LuaThread.shared.
        let done = DispatchSemaphore(value: 0)
        let outcome = UncheckedResult()
        let small = Thread {
            do {
                let state = try LuaState()
                let source = "return " + String(repeating: "(", count: 190) + "1" + String(repeating: ")", count: 190)
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
        #expect(outcome.value == [1])
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
}

import CLuaShims
func currentStackSize() -> Int { Int(lunette_thread_stack_size()) }
