import CSQLite
import Foundation
@testable import SharedStore
import Testing

/// A plain SQLite connection that holds a lock on a database file, as
/// another process opening the same store would.
final class LockHolder: @unchecked Sendable {
    private var db: OpaquePointer?

    /// Opens `path` (creating an empty file) and runs `begin`, e.g. "BEGIN IMMEDIATE".
    init(_ path: String, _ begin: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard sqlite3_open(path, &db) == SQLITE_OK, sqlite3_exec(db, begin, nil, nil, nil) == SQLITE_OK else {
            throw StoreError(.database, "cannot hold \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    func release() {
        sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
        sqlite3_close(db)
        db = nil
    }

    deinit { if db != nil { release() } }
}

@Suite("Opening a store while others hold its locks")
struct StoreOpeningTests {
    let temp = TemporaryStore()

    /// The step that failed under contention: the first switch of a new file
    /// to WAL upgrades a read lock to a write lock, and SQLite returns
    /// SQLITE_BUSY there at once, whatever the busy timeout.
    @Test func switchingANewFileToWALWaitsOutAWriterInsteadOfFailing() throws {
        let path = temp.store.databasePath(of: "group.new")
        let holder = try LockHolder(path, "BEGIN IMMEDIATE")
        // The SQLite behaviour the store must work around.
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_busy_timeout(db, 5000)
        let start = ContinuousClock.now
        let status = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nil, nil, nil)
        let waited = ContinuousClock.now - start
        sqlite3_close(db)
        #expect(status & 0xFF == SQLITE_BUSY)
        #expect(waited < .seconds(2), "SQLite waited \(waited): the busy handler covers this step now")
        // The store tries again until the writer lets go.
        let release = Thread { usleep(150_000); holder.release() }
        release.start()
        let group = try temp.store.group("group.new")
        try group.set("k", 1)
        #expect(try temp.reopen().group("group.new").get("k") == .integer(1))
    }

    @Test func aLockHeldPastTheBusyTimeoutGivesABusyErrorNamingTheGroup() throws {
        let path = temp.store.databasePath(of: "group.locked")
        let holder = try LockHolder(path, "BEGIN EXCLUSIVE")
        defer { holder.release() }
        let start = ContinuousClock.now
        var thrown: StoreError?
        do {
            _ = try StoreDatabase(path: path, group: "group.locked", create: true, durability: .processCrash, busyTimeoutMs: 300)
        } catch {
            thrown = error
        }
        let waited = ContinuousClock.now - start
        #expect(thrown?.code == .busy)
        // Scripts show this message: it names the group, not the file.
        #expect(thrown?.message == "store group group.locked: its database was still locked by another process or connection after 300 ms of waiting to open it (SQLITE_BUSY)")
        // The retries keep to the busy timeout (one statement's wait past it at most).
        #expect(waited >= .milliseconds(300) && waited < .seconds(2), "\(waited)")
    }
}
