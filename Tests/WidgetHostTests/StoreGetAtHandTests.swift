import Foundation
import SharedStore
import Testing
@testable import WidgetHost

/// `g:get(key)` answered in C (`lunette_store_get`) when the call's read
/// transaction has the key at hand: the same values, errors and snapshots
/// as the Swift body, whichever way a read goes.
@Suite("store get: the fast path for a key at hand")
struct StoreGetAtHandTests {
    /// Calls `source` `times` times inside one `reusingReadTransactions`
    /// scope (as the engine runs an instant's reloads), running `between`
    /// before each call; the results of each call. Of a scope's calls, the
    /// first two begin read transactions (a connection's first cannot be
    /// parked: its WAL index is found only after its first read), the
    /// third adopts the second's and keeps the key it reads, and from the
    /// fourth on that key is at hand.
    static func calls(_ h: StoreHarness, _ source: String, times: Int,
                      between: (Int) throws -> Void = { _ in }) throws -> [[LuaValue]] {
        let chunk = try h.state.load(source, name: "t.lua")
        // A parked transaction is adopted only while young: long enough
        // here that a loaded machine does not change which way reads go.
        try h.store.group("group.t").parkedAgeLimit = .seconds(60)
        return try h.store.reusingReadTransactions {
            try (0..<times).map { i in
                try between(i)
                return try h.binding.perform { () throws(LuaError) in try h.state.call(chunk) }
            }
        }
    }

    @Test func everyScalarIsServedAtHandAndAsTheBodyGivesIt() throws {
        let values: [(key: String, stored: StoreValue?, lua: LuaValue)] = [
            ("int", .integer(7), .integer(7)),
            ("big", .integer(.max), .integer(.max)),
            ("float", .double(1.5), .number(1.5)),
            ("whole float", .double(2), .number(2)),   // stays a float, as the body pushes it
            ("yes", .boolean(true), .boolean(true)),
            ("no", .boolean(false), .boolean(false)),
            ("absent", nil, .nil),
        ]
        for value in values {
            let h = try StoreHarness()
            if let stored = value.stored { try h.app().set(value.key, stored) }
            let results = try Self.calls(h, "return store.group('group.t'):get('\(value.key)'), math.type(store.group('group.t'):get('\(value.key)'))", times: 6)
            for result in results {
                #expect(result.first == value.lua, "\(value.key): \(result)")
                if case .number = value.lua { #expect(result.last == "float") }
                if case .integer = value.lua { #expect(result.last == "integer") }
            }
            // The third call's second read, and both reads of every call after it.
            #expect(h.binding.getsAtHand == 7, "\(value.key): \(h.binding.getsAtHand) reads at hand")
        }
    }

    @Test func stringsAndTablesGoThroughTheBody() throws {
        let h = try StoreHarness()
        try h.app().set("s", "text")
        try h.app().set("t", ["a": 1])
        let results = try Self.calls(h, "local g = store.group('group.t'); return g:get('s'), g:get('t').a", times: 6)
        #expect(results.allSatisfy { $0 == ["text", 1] })
        #expect(h.binding.getsAtHand == 0)
    }

    @Test func aCommitBetweenCallsIsSeen() throws {
        let h = try StoreHarness()
        let app = try h.app()
        try app.set("n", .integer(1))
        // Another connection commits before calls 5 and 8: the parked
        // transaction is not adopted, its key not at hand, and the new
        // value is at hand from call 7 (call 6 adopts call 5's transaction).
        var atHand: [Int] = []
        let results = try Self.calls(h, "return store.group('group.t'):get('n')", times: 10) { i in
            atHand.append(h.binding.getsAtHand)
            if i == 5 { try app.set("n", .integer(2)) }
            if i == 8 { try app.set("n", .integer(3)) }
        }
        atHand.append(h.binding.getsAtHand)
        #expect(results.map { $0.first } == [1, 1, 1, 1, 1, 2, 2, 2, 3, 3])
        #expect(zip(atHand, atHand.dropFirst()).map { $1 - $0 } == [0, 0, 0, 1, 1, 0, 0, 1, 0, 0], "\(atHand)")
    }

    @Test func theCallsOwnWritesAndUpdatesAreSeen() throws {
        let h = try StoreHarness()
        try h.app().set("n", .integer(1))
        // Calls 1–4 only read (from the fourth, at hand); call 5 reads at
        // hand, then writes and reads again: the staged value, not the one
        // at hand. Its commit ends the reuse: call 6 reads anew.
        var atHand: [Int] = []
        let results = try Self.calls(h, """
            local g = store.group('group.t')
            local before = g:get('n')
            calls = (calls or 0) + 1
            if calls < 5 then return before end
            g:set('n', before + 10)
            local staged = g:get('n')
            g:update('n', function(n) return n + 100 end)
            return before, staged, g:get('n')
            """, times: 6) { _ in atHand.append(h.binding.getsAtHand) }
        atHand.append(h.binding.getsAtHand)
        #expect(results == [[1], [1], [1], [1], [1, 11, 111], [111, 121, 221]])
        #expect(zip(atHand, atHand.dropFirst()).map { $1 - $0 } == [0, 0, 0, 1, 1, 0], "\(atHand)")
        #expect(try h.app().get("n") == .integer(221))
    }

    @Test func anotherKeyIsReadFromTheTransaction() throws {
        let h = try StoreHarness()
        try h.app().set("a", .integer(1))
        try h.app().set("b", .integer(2))
        // Each call reads a, then b: the second read is never the key at
        // hand when it starts, and must still come from the same snapshot.
        let results = try Self.calls(h, "local g = store.group('group.t'); return g:get('a'), g:get('b'), g:get('b'), g:get('a')", times: 6)
        #expect(results.allSatisfy { $0 == [1, 2, 2, 1] })
        // Only the last key read is at hand: the second b of the third
        // call, then a and the second b of each later one.
        #expect(h.binding.getsAtHand == 7)
    }

    @Test func badArgumentsStillRaiseTheBodysErrors() throws {
        let h = try StoreHarness()
        try h.app().set("k", .integer(1))
        try h.store.group("group.t").parkedAgeLimit = .seconds(60)
        let warm = try h.state.load("return store.group('group.t'):get('k')", name: "w.lua")
        let cases: [(String, String)] = [
            ("store.group('group.t'):get(5)", "key must be a string, got number"),
            ("store.group('group.t'):get('')", "a key must not be empty"),
            ("store.group('group.t'):get('a\\0b')", "a key must not contain NUL"),
            ("store.group('group.t'):get('k\\0')", "a key must not contain NUL"),
            ("store.group('group.t').get({}, 'k')", "store group expected, got table"),
        ]
        // In one scope: from the fourth call on, 'k' is at hand, and each
        // bad call reaches the fast path (but the last) with it at hand.
        try h.store.reusingReadTransactions {
            for _ in 0..<4 { _ = try h.binding.perform { () throws(LuaError) in try h.state.call(warm) } }
            #expect(h.binding.getsAtHand == 1)
            for (source, message) in cases {
                let failure = luaFailure { try h.run(source) }
                #expect(failure?.contains(message) == true, "\(source): \(String(describing: failure))")
                #expect(try h.binding.perform { () throws(LuaError) in try h.state.call(warm) } == [1])
            }
            // Extra arguments are the body's to ignore, and the fast path's.
            let before = h.binding.getsAtHand
            #expect(try h.run("return store.group('group.t'):get('k', 'extra', 3)") == [1])
            #expect(h.binding.getsAtHand == before + 1)
        }
    }

    @Test func outsideACallTheBodyAnswers() throws {
        let h = try StoreHarness()
        try h.app().set("k", .integer(1))
        // A group object kept past its calls (this state keeps its
        // globals), used with no call running.
        let results = try Self.calls(h, "kept = store.group('group.t'); return kept:get('k')", times: 5)
        #expect(results.last == [1] && h.binding.getsAtHand > 0)
        let message = luaFailure { try h.state.call(try h.state.load("return kept:get('k')", name: "outside.lua")) }
        #expect(message?.contains("the store is open only during a call") == true, "\(String(describing: message))")
    }
}
