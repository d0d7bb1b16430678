import CSQLite
import Foundation
import SharedStore
import Testing

/// A script call reads a group through a `StoreCallReader`, in one read
/// transaction. A finished call's transaction is parked, and the next
/// call adopts it only when the WAL index says nothing was committed since:
/// these check that it never serves an old snapshot, that it does spare
/// transactions, and that an unadopted one ends.
@Suite("Call readers share a read transaction only while nothing was committed")
struct CallReaderTests {
    let temp = TemporaryStore()

    /// One call: a reader, one read of `key`, the end of its reads.
    func call(_ group: StoreGroup, _ key: String) throws -> StoreValue? {
        let reader = StoreCallReader(group: group)
        defer { reader.end() }
        return try reader.entry(checkedKey: key).value
    }

    @Test func aCallAdoptsTheLastCallsTransactionOnlyWhileNothingWasCommitted() throws {
        let group = try temp.store.group("group.reader")
        try group.set("k", .integer(1))
        let other = try temp.reopen().group("group.reader")   // another connection, as another process
        #expect(try call(group, "k") == .integer(1))   // maps the WAL index; its transaction is not parked
        #expect(try call(group, "k") == .integer(1))   // parked
        let begun = group.readTransactionsBegun
        for _ in 0..<5 { #expect(try call(group, "k") == .integer(1)) }
        #expect(group.readTransactionsBegun == begun, "nothing was committed: each call adopts the parked transaction")

        // Another connection's commit: the next call sees it, in a new transaction.
        try other.set("k", .integer(2))
        #expect(try call(group, "k") == .integer(2))
        #expect(group.readTransactionsBegun == begun + 1)
        // A commit of another key changes the header too.
        try other.set("unrelated", .integer(0))
        #expect(try call(group, "k") == .integer(2))
        #expect(group.readTransactionsBegun == begun + 2)
        // A write through the same group ends the parked transaction first.
        try group.set("k", .integer(3))
        #expect(try call(group, "k") == .integer(3))
        try other.update("k") { _ in .integer(4) }
        #expect(try call(group, "k") == .integer(4))
    }

    @Test func aParkedTransactionThatNoCallAdoptsEnds() throws {
        let group = try temp.store.group("group.idle")
        group.parkedIdleLimit = .seconds(1)
        try group.set("k", .integer(1))
        #expect(try call(group, "k") == .integer(1))
        #expect(try call(group, "k") == .integer(1))   // parked, its snapshot in the log

        // While parked, its read mark keeps a checkpoint from restarting the
        // log; once it ends, one can.
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(group.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(db) }
        func checkpointIsBlocked() -> Bool {
            var busy: Int32 = 0
            var statement: OpaquePointer?
            sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            if sqlite3_step(statement) == SQLITE_ROW { busy = sqlite3_column_int(statement, 0) }
            return busy != 0
        }
        #expect(checkpointIsBlocked(), "a parked transaction holds its snapshot")
        let deadline = ContinuousClock.now + .seconds(10)
        while checkpointIsBlocked() && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(!checkpointIsBlocked(), "the parked transaction ended after its idle limit")
        #expect(try call(group, "k") == .integer(1))
    }
}
