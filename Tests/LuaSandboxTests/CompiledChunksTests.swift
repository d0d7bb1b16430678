import Foundation
import Testing
@testable import LuaSandbox

@Suite("Compiled chunks kept for the next state")
struct CompiledChunksTests {
    @Test func aSecondStateLoadsTheBinaryAndRunsTheSame() throws {
        let text = Array("local n = ... return n * 2, '\(UUID().uuidString)'".utf8)
        var results: [[LuaValue]] = []
        for _ in 0..<3 {
            let state = try LuaState(profile: .sandbox)
            let chunk = try state.loadReusingCompiled(bytes: text, name: "double.lua")
            results.append(try state.call(chunk, [21]))
        }
        #expect(results.allSatisfy { $0 == results[0] } && results[0].first == .integer(42))
        #expect(LuaState.binaryLoads(of: text, name: "double.lua") == 2)
        // Another name, or another text, is another chunk.
        let state = try LuaState(profile: .sandbox)
        _ = try state.loadReusingCompiled(bytes: text, name: "other.lua")
        #expect(LuaState.binaryLoads(of: text, name: "other.lua") == 0)
    }

    @Test func syntaxErrorsAreNotKeptAndSayWhere() throws {
        // The UUID (a text no other test has) in a comment: bare, it can
        // read as Lua ("1 + AB12CD34-1E55-…" parses), and the load succeed.
        let text = Array("return 1 +\n-- ".utf8) + Array(UUID().uuidString.utf8)
        for _ in 0..<2 {
            let state = try LuaState(profile: .sandbox)
            #expect {
                _ = try state.loadReusingCompiled(bytes: text, name: "bad.lua")
            } throws: { error in
                guard case LuaError.syntax(let syntax) = error else { return false }
                return syntax.chunk == "bad.lua" && syntax.line == 2
            }
        }
        #expect(LuaState.binaryLoads(of: text, name: "bad.lua") == 0)
    }

    /// Texts hashed alike (same name, length, first and last 64 bytes) are
    /// still told apart by their whole text.
    @Test func textsThatDifferOnlyInTheMiddleAreDifferentChunks() throws {
        let edge = "--" + String(repeating: "x", count: 80) + "\n"
        let a = Array((edge + "return 'a'\n" + edge).utf8), b = Array((edge + "return 'b'\n" + edge).utf8)
        let name = "middle-\(UUID().uuidString).lua"
        var results: [LuaValue] = []
        for text in [a, b, a, b] {
            let state = try LuaState(profile: .sandbox)
            results += try state.call(try state.loadReusingCompiled(bytes: text, name: name), [])
        }
        #expect(results == ["a", "b", "a", "b"])
        #expect(LuaState.binaryLoads(of: a, name: name) == 1 && LuaState.binaryLoads(of: b, name: name) == 1)
    }

    @Test func theStoreKeepsToItsLimitDroppingTheOldest() {
        let store = LuaCompiledChunks(limit: 4_096)
        let keys = (0..<12).map { LuaCompiledChunks.Key(name: "c\($0)", text: Array(repeating: UInt8(ascii: "x"), count: 300)) }
        for key in keys { store.keep(Array(repeating: 1, count: 400), for: key) }
        let kept = keys.filter { store.binary($0) != nil }
        #expect(kept.count == 4_096 / (302 + 400))
        #expect(kept == Array(keys.suffix(kept.count)), "the newest stay")
        // An evicted entry's text is let go: the test's copy is its only
        // owner again (a write to it then happens in place).
        var text = Array(repeating: UInt8(ascii: "y"), count: 300)
        let address = text.withUnsafeBufferPointer { $0.baseAddress }
        store.keep(Array(repeating: 1, count: 400), for: LuaCompiledChunks.Key(name: "evicted", text: text))
        for key in keys { store.keep(Array(repeating: 2, count: 400), for: LuaCompiledChunks.Key(name: key.name + "'", text: key.text)) }
        text[0] = UInt8(ascii: "z")
        #expect(text.withUnsafeBufferPointer { $0.baseAddress } == address, "the store still holds the evicted text")
        // A chunk larger than a quarter of the store is not kept.
        let big = LuaCompiledChunks.Key(name: "big", text: Array(repeating: 0, count: 2_000))
        store.keep(Array(repeating: 1, count: 100), for: big)
        #expect(store.binary(big) == nil)
    }
}
