import LuaSandbox
import Testing

/// Lua raises errors with longjmp across the C functions of CLuaShims.
/// liblua built with _FORTIFY_SOURCE jumps with __longjmp_chk, which
/// ThreadSanitizer does not intercept: without CLuaShims' interposer
/// (tsan_longjmp.c) each error left entries on TSan's shadow stack, and a
/// few tens of thousands of them killed the test process. Cheap in every
/// build (well under a second under ThreadSanitizer).
@Suite("Lua errors raised through C leave nothing behind on the thread")
struct ErrorUnwindTests {
    @Test func aHundredAndFiftyThousandErrorsInOneCall() throws {
        let state = try LuaState(profile: .sandbox)
        state.options.limits.timeout = .seconds(60)
        let results = try state.run("""
            local failed = 0
            for _ = 1, 50000 do
              if not pcall(string.rep) then failed = failed + 1 end
              if not pcall(error, 'x') then failed = failed + 1 end
              if not pcall(coroutine.wrap(function() error('y') end)) then failed = failed + 1 end
            end
            return failed
            """, name: "errors.lua")
        #expect(results == [150_000])
    }
}
