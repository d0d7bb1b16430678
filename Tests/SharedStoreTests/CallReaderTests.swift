import CSQLite
import Dispatch
import Foundation
import SharedStore
import Testing

/// A script call reads a group through a `StoreCallReader`, in one read
/// transaction. Inside `SharedStore.reusingReadTransactions`, a finished
/// call's transaction is parked, and the next call adopts it only when the
/// WAL index says nothing was committed since: these check that it never
/// serves an old snapshot, that it does spare transactions, and that none
/// outlives its scope.
@Suite("Call readers share a read transaction only while nothing was committed")
struct CallReaderTests {
    let temp = TemporaryStore()

    /// One call: a reader, one read of `key`, the end of its reads.
    func call(_ group: StoreGroup, _ key: String) throws -> StoreValue? {
        let reader = StoreCallReader(group: group)
        defer { reader.end() }
        return try reader.entry(checkedKey: key).value
    }

    /// A group holding k = 1 whose transactions are adopted however slow the
    /// machine is (a 10 s age limit, where adoptions are counted).
    func adoptingGroup(_ id: String) throws -> StoreGroup {
        let group = try temp.store.group(id)
        group.parkedAgeLimit = .seconds(10)
        try group.set("k", .integer(1))
        return group
    }

    @Test func aCallAdoptsTheLastCallsTransactionOnlyWhileNothingWasCommitted() throws {
        try temp.store.reusingReadTransactions { try adoptsOnlyWhileNothingWasCommitted() }
    }

    func adoptsOnlyWhileNothingWasCommitted() throws {
        let group = try adoptingGroup("group.reader")
        let other = try temp.reopen().group("group.reader")   // another connection, as another process
        #expect(try call(group, "k") == .integer(1))   // finds the WAL index; its transaction is not parked
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

    @Test func aParkedTransactionEndsWithItsScopeAndNoneIsParkedOutOfOne() throws {
        let group = try adoptingGroup("group.scope")
        let checkpointer = try Checkpointer(path: group.path)
        try temp.store.reusingReadTransactions { () throws in
            #expect(try call(group, "k") == .integer(1))
            #expect(try call(group, "k") == .integer(1))   // parked, its snapshot in the log
            // While parked, its read mark keeps a checkpoint from restarting the log.
            #expect(checkpointer.truncateIsBlocked(), "a parked transaction holds its snapshot")
            try temp.store.reusingReadTransactions { () throws in #expect(try call(group, "k") == .integer(1)) }
            #expect(checkpointer.truncateIsBlocked(), "an inner scope's end leaves the outer one's transaction")
        }
        #expect(!checkpointer.truncateIsBlocked(), "the scope's end ended it")
        try group.set("k", .integer(2))   // something in the log again
        let begun = group.readTransactionsBegun
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(2)) }
        #expect(group.readTransactionsBegun == begun + 3, "out of a scope, each call begins its own")
        #expect(!checkpointer.truncateIsBlocked(), "out of a scope, none is left open")
    }

    /// A key read again in an adopted read transaction — by the same call,
    /// or by a later call that adopts it too — comes from memory; a new
    /// transaction, for whatever reason, reads the database again, and
    /// keeps nothing until a later call adopts it.
    @Test func anAdoptedTransactionsEntriesAreReadOnceAndForgottenWithIt() throws {
        try temp.store.reusingReadTransactions { try entriesAreReadOnce() }
    }

    func entriesAreReadOnce() throws {
        let group = try adoptingGroup("group.entries")
        try group.set("tasks", .array([.string("a"), .string("b")]))
        let other = try temp.reopen().group("group.entries")
        #expect(try call(group, "k") == .integer(1))   // finds the WAL index; not parked
        var served = group.entriesFromSnapshot
        #expect(try call(group, "k") == .integer(1))   // a new transaction: from the database, then parked
        #expect(try call(group, "k") == .integer(1))   // adopted: from the database, kept
        #expect(group.entriesFromSnapshot == served)
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(1)) }
        #expect(group.entriesFromSnapshot == served + 3, "adopted transactions serve the key from memory")

        // One reader in the adopted transaction, two keys, each read twice:
        // the second read comes from memory, with the version the first found.
        served = group.entriesFromSnapshot
        let reader = StoreCallReader(group: group)
        let first = try reader.entry(checkedKey: "tasks")
        #expect(try reader.entry(checkedKey: "tasks") == first)
        #expect(try reader.entry(checkedKey: "absent") == (nil, 0))
        #expect(try reader.entry(checkedKey: "absent") == (nil, 0))
        #expect(group.entriesFromSnapshot == served + 2)
        reader.end()

        // Another connection's commit: a new transaction, which reads it and
        // keeps nothing; the next call adopts it and keeps what it reads.
        try other.set("k", .integer(2))
        served = group.entriesFromSnapshot
        #expect(try call(group, "k") == .integer(2))
        #expect(try call(group, "k") == .integer(2))
        #expect(group.entriesFromSnapshot == served)
        #expect(try call(group, "k") == .integer(2))
        #expect(group.entriesFromSnapshot == served + 1)
        // A write through the same group ends the transaction, and with it what it read.
        try group.set("k", .integer(3))
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(3)) }
        try group.update("k") { _ in .integer(4) }
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(4)) }
        // Keys differing only by Unicode normalization are different keys.
        try group.set("caf\u{E9}", .integer(5))
        try group.set("cafe\u{301}", .integer(6))
        for _ in 0..<3 {
            #expect(try call(group, "caf\u{E9}") == .integer(5))
            #expect(try call(group, "cafe\u{301}") == .integer(6))
        }
    }

    /// `StoreBinding` keeps one reader per group for call after call: ended
    /// after each call, it adopts and begins transactions as new readers do.
    @Test func oneReaderServesCallAfterCallAsNewReadersWould() throws {
        try temp.store.reusingReadTransactions { () throws in
            let group = try adoptingGroup("group.reused")
            let other = try temp.reopen().group("group.reused")
            let reader = StoreCallReader(group: group)
            func call() throws -> StoreValue? {
                defer { reader.end() }
                return try reader.entry(checkedKey: "k").value
            }
            for _ in 0..<2 { #expect(try call() == .integer(1)) }   // finds the WAL index, then parks
            let begun = group.readTransactionsBegun
            for _ in 0..<3 { #expect(try call() == .integer(1)) }
            #expect(group.readTransactionsBegun == begun, "each call adopts the parked transaction")
            try other.set("k", .integer(2))
            #expect(try call() == .integer(2))
            #expect(group.readTransactionsBegun == begun + 1)
            #expect(try call() == .integer(2))
            #expect(group.readTransactionsBegun == begun + 1)
        }
    }

    @Test func aNewTransactionKeepsNoEntries() throws {
        let group = try temp.store.group("group.fresh")
        try group.set("k", .integer(1))
        // Out of a scope no transaction is adopted: every read is the database's.
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(1)) }
        let reader = StoreCallReader(group: group)
        defer { reader.end() }
        for _ in 0..<3 { #expect(try reader.entry(checkedKey: "k").value == .integer(1)) }
        #expect(group.entriesFromSnapshot == 0)
    }

    @Test func anAdoptedTransactionKeepsNoMoreEntriesThanItsLimits() throws {
        try temp.store.reusingReadTransactions { () throws in
            let group = try temp.store.group("group.limits")
            group.parkedAgeLimit = .seconds(10)
            for key in ["a", "b", "c"] { try group.set(key, .string(String(repeating: "x", count: 100))) }
            for _ in 0..<2 { _ = try call(group, "a") }   // finds the WAL index, then parks a transaction
            group.snapshotEntriesLimit = 2
            let reader = StoreCallReader(group: group)
            for key in ["a", "b", "c", "a", "b", "c"] { #expect(try reader.entry(checkedKey: key).value != nil) }
            #expect(group.entriesFromSnapshot == 2, "two entries kept: the third read twice from the database")
            reader.end()
            try group.set("d", .integer(0))   // ends the transaction and what it kept
            for _ in 0..<2 { _ = try call(group, "d") }
            group.snapshotEntriesLimit = 256
            group.snapshotBytesLimit = 150
            let next = StoreCallReader(group: group)
            defer { next.end() }
            for key in ["a", "b", "a", "b"] { #expect(try next.entry(checkedKey: key).value != nil) }
            // "d" (8 bytes, kept by the second call above) and one 100-byte value fit in 150 bytes; a second does not.
            #expect(group.entriesFromSnapshot == 3, "a kept, b read twice from the database")
        }
    }

    /// A log past `parkedLogLimit` frames: calls no longer park, so between
    /// them no read mark is held and a checkpoint can restart the log; once
    /// it is short again, calls park again.
    @Test func aLongLogStopsParkingSoCheckpointsCanRestartIt() throws {
        try temp.store.reusingReadTransactions { try longLogStopsParking() }
    }

    func longLogStopsParking() throws {
        let group = try temp.store.group("group.log")
        group.parkedAgeLimit = .seconds(10)   // no adoption hangs on the machine's speed
        group.parkedLogLimit = 8
        try group.set("k", .integer(0))
        let other = try temp.reopen().group("group.log")
        for i in 1...12 { try other.set("k", .integer(Int64(i))) }   // a frame or more each
        #expect(try call(group, "k") == .integer(12))
        let begun = group.readTransactionsBegun
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(12)) }
        #expect(group.readTransactionsBegun == begun + 3, "past the limit, each call begins its own transaction")

        let checkpointer = try Checkpointer(path: group.path)
        #expect(!checkpointer.truncateIsBlocked(), "between calls no read mark is held")
        #expect(try call(group, "k") == .integer(12))   // the log is empty again: parked
        let again = group.readTransactionsBegun
        #expect(try call(group, "k") == .integer(12))
        #expect(group.readTransactionsBegun == again, "a short log parks again")
    }

    /// A transaction older than `parkedAgeLimit` is neither adopted nor
    /// parked again, even with nothing committed: a checkpoint changes no
    /// header, so only a new transaction lets go of its read mark.
    @Test func anOldTransactionIsNeitherAdoptedNorParkedAgain() throws {
        try temp.store.reusingReadTransactions { try oldTransactionIsLetGo() }
    }

    func oldTransactionIsLetGo() throws {
        let group = try temp.store.group("group.age")
        // Limits are set before each step, so no step depends on how fast the
        // machine runs: young is 10 s, old is past a limit slept through.
        group.parkedAgeLimit = .seconds(10)
        try group.set("k", .integer(1))
        #expect(try call(group, "k") == .integer(1))
        #expect(try call(group, "k") == .integer(1))   // begins, and is parked (young)
        let begun = group.readTransactionsBegun
        #expect(try call(group, "k") == .integer(1))   // adopts it
        #expect(group.readTransactionsBegun == begun)
        group.parkedAgeLimit = .milliseconds(20)
        Thread.sleep(forTimeInterval: 0.03)
        #expect(try call(group, "k") == .integer(1))   // too old to adopt: a new one
        #expect(group.readTransactionsBegun == begun + 1)

        // One adopted young that ends old is not parked again.
        group.parkedAgeLimit = .seconds(10)
        #expect(try call(group, "k") == .integer(1))   // parked again, young
        let young = group.readTransactionsBegun
        let reader = StoreCallReader(group: group)
        #expect(try reader.entry(checkedKey: "k").value == .integer(1))   // adopts it
        #expect(group.readTransactionsBegun == young)
        group.parkedAgeLimit = .milliseconds(20)
        Thread.sleep(forTimeInterval: 0.03)
        reader.end()
        #expect(!group.holdsReadTransaction, "ended, not parked")
    }

    /// A task started in a scope inherits it (task-local values do), and may
    /// run after the scope ended: its calls then keep nothing open.
    @Test func aTaskStartedInAScopeKeepsNothingOpenAfterIt() async throws {
        let group = try adoptingGroup("group.task")
        let task = temp.store.reusingReadTransactions {
            Task { [group] in
                try await Task.sleep(for: .milliseconds(20))
                for _ in 0..<2 {
                    let reader = StoreCallReader(group: group)
                    _ = try reader.entry(checkedKey: "k")
                    reader.end()
                }
            }
        }
        try await task.value
        #expect(!group.holdsReadTransaction)
    }

    /// A scope is its thread's: a call on another thread, out of any scope,
    /// keeps nothing open while this one is in a scope.
    @Test func aScopeIsItsThreadsOnly() throws {
        let group = try adoptingGroup("group.threads")
        let entered = DispatchSemaphore(value: 0)
        let leave = DispatchSemaphore(value: 0)
        let store: SharedStore = temp.store
        let other = Thread {
            let hold: () -> Void = {
                entered.signal()
                leave.wait()
            }
            store.reusingReadTransactions(hold)
        }
        other.start()
        entered.wait()
        defer { leave.signal() }
        let begun = group.readTransactionsBegun
        for _ in 0..<3 { #expect(try call(group, "k") == .integer(1)) }
        #expect(group.readTransactionsBegun == begun + 3, "out of a scope on this thread: each call begins its own")
        #expect(!group.holdsReadTransaction)
    }

    #if os(Linux)
    /// Finding the WAL index must not release this process's locks on the
    /// `-shm` file: closing any descriptor of a file drops every POSIX lock
    /// the process holds on it, and without SQLite's lock on the index (its
    /// "dead man switch", byte 128) the next process to open the database
    /// would think itself the only one and rebuild the index under us.
    @Test func findingTheWALIndexKeepsSQLitesLocksOnIt() throws {
        let group = try adoptingGroup("group.locks")
        try temp.store.reusingReadTransactions { () throws in
            #expect(try call(group, "k") == .integer(1))   // finds the index
            #expect(try call(group, "k") == .integer(1))   // parked
        }
        // An open-file-description lock query conflicts with this process's
        // own POSIX locks, so it sees SQLite's. The descriptor stays open to
        // the end of the test: closing it drops them too.
        let fd = open(group.path + "-shm", O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        var query = flock()
        query.l_type = Int16(F_WRLCK)
        query.l_whence = Int16(SEEK_SET)
        query.l_start = 128
        query.l_len = 1
        let ofdGetLock: Int32 = 36   // F_OFD_GETLK in Linux's fcntl.h (only with _GNU_SOURCE, so not imported)
        #expect(fcntl(fd, ofdGetLock, &query) == 0)
        #expect(query.l_type != Int16(F_UNLCK), "SQLite's shared lock on the index is held")
        close(fd)
    }
    #endif
}

/// Another connection that asks for a TRUNCATE checkpoint, which cannot
/// complete while any reader holds a snapshot in the log.
final class Checkpointer {
    private var db: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
            throw StoreError(.database, "cannot open \(path)")
        }
    }

    deinit { sqlite3_close_v2(db) }

    func truncateIsBlocked() -> Bool {
        var busy: Int32 = 0
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        if sqlite3_step(statement) == SQLITE_ROW { busy = sqlite3_column_int(statement, 0) }
        return busy != 0
    }
}
