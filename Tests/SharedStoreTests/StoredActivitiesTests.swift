import CSQLite
import Foundation
import SharedStore
import Testing

/// A bundle's Live Activity rows in the group's database.
@Suite("Activity rows in the store")
struct StoredActivitiesTests {
    func rows(_ n: Int64) -> StoredActivities {
        StoredActivities(nextNumber: n + 1, activities: (1...n).map {
            StoredActivity(id: "activity-\($0)", record: ["n": .integer($0)], pushes: [["p": .integer($0)], ["p": .integer($0 + 100)]])
        })
    }

    @Test func rowsRoundTripInOrderAndOtherConnectionsSeeThem() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        #expect(try group.activities(of: "com.b") == StoredActivities(), "a bundle without rows is empty and enabled")
        try group.updateActivities(of: "com.b") { $0 = rows(3); $0.enabled = false }
        let seen = try temp.reopen().group("group.a").activities(of: "com.b")
        var expected = rows(3)
        expected.enabled = false
        #expect(seen.activities == expected.activities && seen.enabled == false && seen.nextNumber == 4)
        #expect(seen.version == 1)
        #expect(try group.activities(of: "com.other").activities.isEmpty, "bundles share rows")
        // Removing an activity removes its pushes; a shorter push list is trimmed.
        try group.updateActivities(of: "com.b") { rows in
            rows.activities.removeFirst()
            rows.activities[0].pushes.removeLast()
        }
        let after = try group.activities(of: "com.b")
        #expect(after.activities.map(\.id) == ["activity-2", "activity-3"])
        #expect(after.activities[0].pushes == [["p": 2]])
        #expect(after.version == 2)
    }

    @Test func anUnchangedUpdateWritesNothing() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        try group.updateActivities(of: "com.b") { $0 = rows(2) }
        try group.updateActivities(of: "com.b") { _ in }
        #expect(try group.activities(of: "com.b").version == 1)
    }

    @Test func aBatchWhoseRowsChangedMeanwhileIsRefusedWhole() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        try group.updateActivities(of: "com.b") { $0 = rows(1) }
        let read = try group.activities(of: "com.b")
        var mine = read
        mine.activities[0].record = ["n": 99]
        // Another process writes first.
        try temp.reopen().group("group.a").updateActivities(of: "com.b") { $0.activities[0].record = ["n": 7] }
        let error = storeError { try group.commit(StoreBatch(values: [("k", 1)], activities: ActivityWrite(bundle: "com.b", old: read, new: mine))) }
        #expect(error?.code == .conflict)
        #expect(error?.message.contains("changed by another writer") == true)
        #expect(try group.get("k") == nil, "the batch's values were written without its rows")
        #expect(try group.activities(of: "com.b").activities[0].record == ["n": 7])
    }
}

/// What observers learn of activity writes, and the host's own records.
@Suite("Activity changes and host records in the store")
struct StoreActivityChangeTests {
    /// Collects changes delivered to an observer.
    final class Changes: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [StoreChange] = []
        var all: [StoreChange] { lock.withLock { seen } }
        func add(_ change: StoreChange) { lock.withLock { seen.append(change) } }

        /// Waits up to 5 s for `count` changes.
        func wait(for count: Int) -> [StoreChange] {
            let deadline = Date().addingTimeInterval(5)
            while all.count < count && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            return all
        }
    }

    @Test func anActivityWriteIsAChangeObserversSeeHereAndInOtherConnections() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        let local = Changes(), foreign = Changes()
        let localToken = try group.observe { local.add($0) }
        let other = try temp.reopen().group("group.a")
        let foreignToken = try other.observe(interval: .milliseconds(2)) { foreign.add($0) }
        try group.updateActivities(of: "com.b") { $0.activities = [StoredActivity(id: "activity-1", record: ["n": 1])] }
        let here = local.all
        #expect(here.count == 1 && here.first?.activities == ["com.b"] && here.first?.isLocal == true && here.first?.keys == [])
        let there = foreign.wait(for: 1)
        #expect(there.count == 1 && there.first?.activities == ["com.b"] && there.first?.isLocal == false, "\(there)")
        // A batch with keys and activities names both.
        let rows = try group.activities(of: "com.b")
        var next = rows
        next.activities[0].record = ["n": 2]
        _ = try group.commit(StoreBatch(values: [("k", .integer(1))], activities: ActivityWrite(bundle: "com.b", old: rows, new: next)))
        let both = foreign.wait(for: 2)
        #expect(both.count == 2 && both.last?.activities == ["com.b"] && both.last?.keys == ["k"], "\(both)")
        // An update that changes nothing is no change.
        try group.updateActivities(of: "com.b") { _ in }
        #expect(local.all.count == 2)
        localToken.cancel()
        foreignToken.cancel()
    }

    @Test func hostRecordsAreKeptApartFromTheScriptsData() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        let changes = Changes()
        let token = try group.observe { changes.add($0) }
        try group.writeHostState(of: "com.b", [("engine", ["nextID": 2]), ("widget:1", [3, 1.5, "x"])])
        try group.writeHostState(of: "com.c", [("engine", ["nextID": 9])])
        try group.writeHostState(of: "com.b", [("widget:1", nil), ("widget:2", .double(.infinity))])
        let seen = try temp.reopen().group("group.a").hostState(of: "com.b")
        #expect(seen == ["engine": ["nextID": 2], "widget:2": .double(.infinity)])
        #expect(try group.hostState(of: "com.c") == ["engine": ["nextID": 9]])
        // Not the scripts' data: no keys, no usage, no change for observers, no sequence.
        #expect(try group.keys().isEmpty && group.usage() == 0 && group.sequence() == 0)
        #expect(changes.all.isEmpty)
        token.cancel()
    }
}

@Suite("Store schema migrations")
struct StoreMigrationTests {
    @Test func aSchema2StoreOpensAsSchema3WithItsDataAndLog() throws {
        let temp = TemporaryStore()
        let folder = temp.root + "/group.a"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var db: OpaquePointer?
        #expect(sqlite3_open(folder + "/store.sqlite", &db) == SQLITE_OK)
        // The schema as Lunette 0.x wrote it at version 2, with one committed key.
        let schema2 = """
            CREATE TABLE entries (key TEXT PRIMARY KEY NOT NULL, type INTEGER NOT NULL, value,
                                  size INTEGER NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE files (name TEXT PRIMARY KEY NOT NULL, data BLOB NOT NULL,
                                size INTEGER NOT NULL, version INTEGER NOT NULL);
            CREATE TABLE changes (seq INTEGER PRIMARY KEY NOT NULL, keys BLOB NOT NULL, files BLOB NOT NULL);
            CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
            INSERT INTO meta VALUES ('seq', 0), ('usage', 0);
            CREATE TABLE activity_bundles (bundle TEXT PRIMARY KEY NOT NULL, enabled INTEGER NOT NULL,
                                           next INTEGER NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE activities (bundle TEXT NOT NULL, id TEXT NOT NULL, ord INTEGER NOT NULL, record BLOB NOT NULL,
                                     PRIMARY KEY (bundle, id)) WITHOUT ROWID;
            CREATE TABLE activity_pushes (bundle TEXT NOT NULL, activity TEXT NOT NULL, n INTEGER NOT NULL, push BLOB NOT NULL,
                                          PRIMARY KEY (bundle, activity, n)) WITHOUT ROWID;
            PRAGMA application_id = \(0x4C4E_5454); PRAGMA user_version = 2; PRAGMA journal_mode = WAL;
            """
        #expect(sqlite3_exec(db, schema2, nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        let group = try temp.store.group("group.a")
        let changes = StoreActivityChangeTests.Changes()
        let other = try temp.reopen().group("group.a")
        let token = try other.observe(interval: .milliseconds(2)) { changes.add($0) }
        try group.set("k", .integer(7))
        try group.updateActivities(of: "com.b") { $0.activities = [StoredActivity(id: "activity-1", record: ["n": 1])] }
        try group.writeHostState(of: "com.b", [("engine", [1])])
        #expect(try group.get("k") == .integer(7))
        // One poll may see both commits, or each on its own.
        var seen = changes.wait(for: 1)
        if Set(seen.flatMap(\.activities)).isEmpty { seen = changes.wait(for: 2) }
        #expect(Set(seen.flatMap(\.keys)) == ["k"] && Set(seen.flatMap(\.activities)) == ["com.b"], "\(seen)")
        #expect(try temp.reopen().group("group.a").hostState(of: "com.b") == ["engine": [1]])
        token.cancel()
    }
}
