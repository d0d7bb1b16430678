import CSQLite

/// One group's database: its schema, and reads and writes in SQL. Not
/// thread-safe; `StoreGroup` serializes access.
final class StoreDatabase {
    let connection: SQLiteConnection
    /// The journal mode is WAL (what opening asks for; a file system without
    /// shared memory for the WAL index could refuse it).
    private(set) var isWAL = false
    var path: String { connection.path }

    /// Identifies a Lunette store among SQLite files ("LNTT").
    static let applicationID: Int64 = 0x4C4E_5454
    /// The schema this build writes; `migrations[n - 1]` brings version n - 1 to n.
    static let schemaVersion: Int64 = 3
    static let migrations: [String] = [
        """
        CREATE TABLE entries (key TEXT PRIMARY KEY NOT NULL, type INTEGER NOT NULL, value,
                              size INTEGER NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE files (name TEXT PRIMARY KEY NOT NULL, data BLOB NOT NULL,
                            size INTEGER NOT NULL, version INTEGER NOT NULL);
        CREATE TABLE changes (seq INTEGER PRIMARY KEY NOT NULL, keys BLOB NOT NULL, files BLOB NOT NULL);
        CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
        INSERT INTO meta VALUES ('seq', 0), ('usage', 0);
        """,
        // 2: Live Activities, per bundle (StoredActivities).
        """
        CREATE TABLE activity_bundles (bundle TEXT PRIMARY KEY NOT NULL, enabled INTEGER NOT NULL,
                                       next INTEGER NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE activities (bundle TEXT NOT NULL, id TEXT NOT NULL, ord INTEGER NOT NULL, record BLOB NOT NULL,
                                 PRIMARY KEY (bundle, id)) WITHOUT ROWID;
        CREATE TABLE activity_pushes (bundle TEXT NOT NULL, activity TEXT NOT NULL, n INTEGER NOT NULL, push BLOB NOT NULL,
                                      PRIMARY KEY (bundle, activity, n)) WITHOUT ROWID;
        """,
        // 3: the change log names the bundles whose activities a commit
        // changed; hosts keep their engines' state (StoredHostState).
        """
        ALTER TABLE changes ADD COLUMN activities BLOB;
        CREATE TABLE host_state (bundle TEXT NOT NULL, name TEXT NOT NULL, record BLOB NOT NULL,
                                 PRIMARY KEY (bundle, name)) WITHOUT ROWID;
        """,
    ]
    /// The statements run more than once, each prepared on first use and
    /// kept for the connection's life (found by index, not by hashing SQL).
    enum Query: Int, CaseIterable {
        case entry, readFile, upsertEntry, deleteEntry, upsertFile, deleteFile
        case allKeys, keysWithPrefix, fileNames, changes, logChange, setMeta, pruneChanges, usage, sequence, dataVersion
        case activityBundle, activityRecords, activityPushes, upsertActivityBundle, upsertActivity, upsertActivityPush
        case deleteActivity, deleteActivityPushes, trimActivityPushes
        case hostState, upsertHostState, deleteHostState
        case beginRead, endRead

        var sql: String {
            switch self {
            case .entry: return "SELECT type, value, version FROM entries WHERE key = ?1"
            case .readFile: return "SELECT data FROM files WHERE name = ?1"
            // Writes learn the size they replace in the same search of the
            // table that writes them: an upsert's DO UPDATE passes the old
            // row's size through `lunette_replaced_size`, a delete returns it.
            case .upsertEntry:
                return """
                    INSERT INTO entries (key, type, value, size, version) VALUES (?1, ?2, ?3, ?4, ?5)
                    ON CONFLICT (key) DO UPDATE SET type = excluded.type, value = excluded.value,
                    size = lunette_replaced_size(size, excluded.size), version = excluded.version
                    """
            case .deleteEntry: return "DELETE FROM entries WHERE key = ?1 RETURNING size"
            case .upsertFile:
                return """
                    INSERT INTO files (name, data, size, version) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (name) DO UPDATE SET data = excluded.data,
                    size = lunette_replaced_size(size, excluded.size), version = excluded.version
                    """
            case .deleteFile: return "DELETE FROM files WHERE name = ?1 RETURNING size"
            case .allKeys: return "SELECT key FROM entries ORDER BY key"
            case .keysWithPrefix: return "SELECT key FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key"
            case .fileNames: return "SELECT name FROM files ORDER BY name"
            case .changes: return "SELECT seq, keys, files, activities FROM changes WHERE seq > ?1 ORDER BY seq"
            case .logChange: return "INSERT INTO changes (seq, keys, files, activities) VALUES (?1, ?2, ?3, ?4)"
            case .setMeta: return "UPDATE meta SET value = ?2 WHERE name = ?1"
            case .pruneChanges: return "DELETE FROM changes WHERE seq <= ?1"
            case .usage: return "SELECT value FROM meta WHERE name = 'usage'"
            case .sequence: return "SELECT value FROM meta WHERE name = 'seq'"
            case .dataVersion: return "PRAGMA data_version"
            case .activityBundle: return "SELECT enabled, next, version FROM activity_bundles WHERE bundle = ?1"
            case .activityRecords: return "SELECT id, record FROM activities WHERE bundle = ?1 ORDER BY ord"
            case .activityPushes: return "SELECT activity, push FROM activity_pushes WHERE bundle = ?1 ORDER BY activity, n"
            case .upsertActivityBundle:
                return "INSERT OR REPLACE INTO activity_bundles (bundle, enabled, next, version) VALUES (?1, ?2, ?3, ?4)"
            case .upsertActivity: return "INSERT OR REPLACE INTO activities (bundle, id, ord, record) VALUES (?1, ?2, ?3, ?4)"
            case .upsertActivityPush: return "INSERT OR REPLACE INTO activity_pushes (bundle, activity, n, push) VALUES (?1, ?2, ?3, ?4)"
            case .deleteActivity: return "DELETE FROM activities WHERE bundle = ?1 AND id = ?2"
            case .deleteActivityPushes: return "DELETE FROM activity_pushes WHERE bundle = ?1 AND activity = ?2"
            case .trimActivityPushes: return "DELETE FROM activity_pushes WHERE bundle = ?1 AND activity = ?2 AND n >= ?3"
            case .hostState: return "SELECT name, record FROM host_state WHERE bundle = ?1"
            case .upsertHostState: return "INSERT OR REPLACE INTO host_state (bundle, name, record) VALUES (?1, ?2, ?3)"
            case .deleteHostState: return "DELETE FROM host_state WHERE bundle = ?1 AND name = ?2"
            case .beginRead: return "BEGIN"
            case .endRead: return "COMMIT"
            }
        }
    }

    /// (Read on every statement, under the group's lock: no run-time
    /// exclusivity check.)
    @exclusivity(unchecked) private var prepared = [SQLiteStatement?](repeating: nil, count: Query.allCases.count)

    func statement(_ query: Query) throws(StoreError) -> SQLiteStatement {
        if let statement = prepared[query.rawValue] { return statement }
        let statement = try connection.prepare(query.sql, persistent: true)
        prepared[query.rawValue] = statement
        return statement
    }

    /// Where `lunette_replaced_size(old, new)` leaves `old`: the size of
    /// the row an upsert replaced (−1 before a write: it inserted). The
    /// function evaluates to `new`, so the upsert stores the new size and
    /// the writer learns the old one from the same B-tree search, with no
    /// read before each write. Owned by the connection, which frees it.
    private let replacedSize: UnsafeMutablePointer<Int64>

    /// Registers `lunette_replaced_size` on `connection` (callable from
    /// this connection's own statements only, not from a schema's
    /// triggers or views: SQLITE_DIRECTONLY).
    private static func registerReplacedSize(on connection: SQLiteConnection) throws(StoreError) -> UnsafeMutablePointer<Int64> {
        let slot = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Int64>.size, alignment: MemoryLayout<Int64>.alignment)
        let status = sqlite3_create_function_v2(
            connection.handle, "lunette_replaced_size", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, slot,
            { context, _, arguments in
                guard let arguments, let slot = sqlite3_user_data(context) else { return }
                slot.assumingMemoryBound(to: Int64.self).pointee = sqlite3_value_int64(arguments[0])
                sqlite3_result_value(context, arguments[1])
            },
            nil, nil,
            { slot in slot?.deallocate() })   // also called when registering fails
        guard status == SQLITE_OK else { throw connection.failure(status) }
        return slot.bindMemory(to: Int64.self, capacity: 1)
    }

    /// Runs an upsert that may call `lunette_replaced_size`; returns the
    /// size of the row it replaced, or nil when it inserted a new one.
    func upsert(_ statement: SQLiteStatement) throws(StoreError) -> Int64? {
        replacedSize.pointee = -1
        try statement.run()
        let old = replacedSize.pointee
        return old >= 0 ? old : nil
    }

    /// How many commits of change log to keep for observers that poll.
    static let changeLogRetention: Int64 = 1024

    /// How long to wait for other connections' locks: SQLite's busy
    /// timeout, and the bound of all the retries of opening.
    static let busyTimeoutMs: Int32 = 5000

    /// The group whose database this is, for messages a script may show.
    let group: String

    /// Opens the database of `group` at `path`, creating it and its schema when `create`.
    ///
    /// Other processes may be opening or creating the same database at the
    /// same moment, and SQLite's busy handler does not cover every lock that
    /// opening takes: switching a new file to WAL mode upgrades a read lock
    /// to a write lock, and where another connection holds or waits for the
    /// write lock SQLite answers SQLITE_BUSY at once rather than risk a
    /// deadlock (see `sqlite3_busy_handler`). So the busy timeout is set
    /// before the first statement, and every step of opening is idempotent
    /// and runs again after a short, growing pause when it meets a lock,
    /// until the busy timeout has passed in all; then the error is `.busy`
    /// and names the group.
    init(path: String, group: String, create: Bool, durability: StoreDurability,
         busyTimeoutMs: Int32 = StoreDatabase.busyTimeoutMs) throws(StoreError) {
        self.group = group
        connection = try SQLiteConnection(path: path, create: create, busyTimeoutMs: busyTimeoutMs)
        replacedSize = try Self.registerReplacedSize(on: connection)
        try retryingWhileLocked(timeoutMs: busyTimeoutMs) { () throws(StoreError) in
            try setUp(durability: durability)
        }
    }

    /// Runs `body` until it ends without SQLITE_BUSY or SQLITE_LOCKED, or
    /// `timeoutMs` have passed since the first try. SQLite's own waits
    /// inside a try are cut to the time left, so the whole stays within
    /// `timeoutMs` (plus one statement).
    private func retryingWhileLocked(timeoutMs: Int32, _ body: () throws(StoreError) -> Void) throws(StoreError) {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(timeoutMs)
        defer { connection.setBusyTimeout(milliseconds: timeoutMs) }
        var pauseMs: Int32 = 1
        while true {
            do {
                return try body()
            } catch where error.code == .busy {
                let left = Self.milliseconds(deadline - clock.now)
                guard left > 0 else {
                    throw StoreError(.busy, "store group \(group): its database was still locked by another process or connection after \(timeoutMs) ms of waiting to open it (SQLITE_BUSY)")
                }
                // Half to all of the pause, at random, so that processes
                // that met at one lock do not meet again in step.
                sqlite3_sleep(min(Int32.random(in: (pauseMs + 1) / 2...pauseMs), left))
                pauseMs = min(pauseMs * 2, 32)
                connection.setBusyTimeout(milliseconds: max(1, Self.milliseconds(deadline - clock.now)))
            }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The steps of opening, in order; each may run again after a lock.
    private func setUp(durability: StoreDurability) throws(StoreError) {
        // 1. What the file holds, in one read. A file that is not SQLite
        //    fails here; nothing is written to a file before it is known to
        //    be a Lunette store or empty.
        let found = try identity()
        try check(found)
        // 2. WAL mode. The first switch writes the header under the write lock.
        var mode = try connection.text("PRAGMA journal_mode").lowercased()
        if mode != "wal" { mode = try connection.text("PRAGMA journal_mode=WAL").lowercased() }
        isWAL = mode == "wal"
        try connection.exec(durability == .powerLoss ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        // Temporary tables, indexes and statement journals in memory: no file
        // is opened after the connection (a worker process that has locked
        // down can open none).
        try connection.exec("PRAGMA temp_store=MEMORY")
        // 3. The schema, created or migrated in one write transaction.
        if !found.isCurrent { try prepareSchema() }
    }

    /// The application id, schema version and number of schema objects.
    private struct Identity {
        var applicationID: Int64
        var version: Int64
        var schemaObjects: Int64
        var isCurrent: Bool { applicationID == StoreDatabase.applicationID && version == StoreDatabase.schemaVersion }
    }

    /// Reads the three in one statement, so from one snapshot: separate
    /// reads could see the id of an empty file and the tables another
    /// process has just committed, and take a new store for a stranger's.
    private func identity() throws(StoreError) -> Identity {
        let s = try connection.prepare("""
            SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version),
                   (SELECT count(*) FROM sqlite_schema)
            """)
        defer { s.reset() }
        guard try s.step() else { return Identity(applicationID: 0, version: 0, schemaObjects: 0) }
        return Identity(applicationID: s.integer(0), version: s.integer(1), schemaObjects: s.integer(2))
    }

    /// Brings the schema up to date under the write lock (BEGIN IMMEDIATE),
    /// deciding again there: another process may have created it meanwhile.
    private func prepareSchema() throws(StoreError) {
        try connection.exec("BEGIN IMMEDIATE")
        do {
            let found = try identity()
            try check(found)
            if !found.isCurrent {
                var version = found.version
                while version < Self.schemaVersion {
                    try connection.exec(Self.migrations[Int(version)])
                    version += 1
                }
                try connection.exec("PRAGMA application_id=\(Self.applicationID); PRAGMA user_version=\(version)")
            }
            try connection.exec("COMMIT")
        } catch {
            try? connection.exec("ROLLBACK")
            throw error
        }
    }

    private func check(_ found: Identity) throws(StoreError) {
        if found.applicationID == Self.applicationID {
            if found.version > Self.schemaVersion {
                throw StoreError(.notAStore, "store database \(path): written by a newer Lunette (schema \(found.version); this build knows up to \(Self.schemaVersion)); it was left as it is")
            }
        } else if found.applicationID != 0 || found.schemaObjects != 0 {
            throw StoreError(.notAStore, "store database \(path): an SQLite database, but not a Lunette store (application_id \(found.applicationID), \(found.schemaObjects) schema objects); it was left as it is")
        }
    }

    // MARK: Reads

    /// The value and version of `key` (version 0 and nil when absent).
    func entry(_ key: String) throws(StoreError) -> (value: StoreValue?, version: Int64) {
        let s = try statement(.entry)
        defer { s.reset() }
        return try s.withText(1, key) { () throws(StoreError) in
            guard try s.step() else { return (nil, 0) }
            return (try value(s, typeColumn: 0, valueColumn: 1, key: key), s.integer(2))
        }
    }

    private func value(_ s: SQLiteStatement, typeColumn: Int32, valueColumn: Int32, key: String) throws(StoreError) -> StoreValue {
        let type = StoredType(rawValue: s.integer(typeColumn))
        switch type {
        case .integer: return .integer(s.integer(valueColumn))
        case .double: return .double(s.double(valueColumn))
        case .boolean: return .boolean(s.integer(valueColumn) != 0)
        case .string:
            return try s.withBytes(valueColumn) { bytes throws(StoreError) in
                guard let text = StoreText.string(validating: bytes) else { throw corrupt(key, "a string that is not UTF-8") }
                return .string(text)
            }
        case .bytes: return .bytes(s.bytes(valueColumn))
        case .array, .map:
            return try s.withBytes(valueColumn) { bytes throws(StoreError) in
                guard let value = StoreValue.decode(bytes) else { throw corrupt(key, "a table that does not decode") }
                return value
            }
        case nil:
            throw corrupt(key, "unknown type \(s.integer(typeColumn))")
        }
    }

    private func corrupt(_ key: String, _ what: String) -> StoreError {
        StoreError(.corruptValue, "store database \(path): key \(StoreText.quoted(key)) holds \(what)")
    }

    /// Keys starting with `prefix`, in byte order.
    func keys(prefix: String) throws(StoreError) -> [String] {
        var keys: [String] = []
        if prefix.isEmpty {
            let s = try statement(.allKeys)
            defer { s.reset() }
            while try s.step() { keys.append(s.text(0)) }
            return keys
        }
        let s = try statement(.keysWithPrefix)
        defer { s.reset() }
        s.bind(1, text: prefix)
        s.bind(2, textBytes: Self.upperBound(of: prefix))
        while try s.step() { keys.append(s.text(0)) }
        return keys
    }

    /// The smallest byte string above every string that starts with `prefix`.
    /// Valid UTF-8 never holds 0xFF, so bumping the last byte is enough.
    static func upperBound(of prefix: String) -> [UInt8] {
        var bytes = Array(prefix.utf8)
        bytes[bytes.count - 1] += 1
        return bytes
    }

    func readFile(_ name: String) throws(StoreError) -> [UInt8]? {
        let s = try statement(.readFile)
        defer { s.reset() }
        s.bind(1, text: name)
        return try s.step() ? s.bytes(0) : nil
    }

    func fileNames() throws(StoreError) -> [String] {
        let s = try statement(.fileNames)
        defer { s.reset() }
        var names: [String] = []
        while try s.step() { names.append(s.text(0)) }
        return names
    }

    /// Bytes in use: keys, values, file names and contents.
    func usage() throws(StoreError) -> Int64 {
        try statement(.usage).firstInteger()
    }

    func sequence() throws(StoreError) -> Int64 {
        try statement(.sequence).firstInteger()
    }

    /// Changes committed after `sequence`: each commit's sequence, keys,
    /// files, and the bundles whose activities it changed.
    func changes(after sequence: Int64) throws(StoreError) -> [LoggedChange] {
        let s = try statement(.changes)
        defer { s.reset() }
        s.bind(1, sequence)
        var out: [LoggedChange] = []
        while try s.step() {
            let seq = s.integer(0)
            let keys = try s.withBytes(1) { bytes throws(StoreError) in try Self.names(bytes) }
            let files = try s.withBytes(2) { bytes throws(StoreError) in try Self.names(bytes) }
            let activities = s.isNull(3) ? [] : try s.withBytes(3) { bytes throws(StoreError) in try Self.names(bytes) }
            out.append(LoggedChange(seq: seq, keys: keys, files: files, activities: activities))
        }
        return out
    }

    /// One commit in the change log.
    struct LoggedChange {
        var seq: Int64
        var keys: [String]
        var files: [String]
        var activities: [String]
    }

    /// A change-log list of names: an encoded array of strings.
    private static func names(_ bytes: UnsafeRawBufferPointer) throws(StoreError) -> [String] {
        guard case .array(let items)? = StoreValue.decode(bytes) else {
            throw StoreError(.corruptValue, "store change log holds a list that does not decode")
        }
        return items.compactMap(\.stringValue)
    }

    /// SQLite's counter that moves when another connection commits.
    func dataVersion() throws(StoreError) -> Int64 {
        try statement(.dataVersion).firstInteger()
    }

    // MARK: Writes

    /// Runs `body` in a write transaction (BEGIN IMMEDIATE): commits when it
    /// returns, rolls back when it throws. The writer bumps the sequence.
    func write<R>(limits: StoreLimits, group: String, _ body: (inout StoreWriter) throws(StoreError) -> R) throws(StoreError) -> (result: R, writer: StoreWriter) {
        try connection.exec("BEGIN IMMEDIATE")
        do {
            var writer = StoreWriter(database: self, sequence: try sequence() + 1, usage: try usage(), limits: limits, group: group)
            let result = try body(&writer)
            try writer.finish()
            try connection.exec("COMMIT")
            return (result, writer)
        } catch {
            try? connection.exec("ROLLBACK")
            throw error
        }
    }
}

/// The writes of one transaction: keeps the group's usage and change log.
struct StoreWriter {
    let database: StoreDatabase
    /// The commit's sequence number; every row it writes gets it as version.
    let sequence: Int64
    private(set) var usage: Int64
    let limits: StoreLimits
    let group: String
    private(set) var changedKeys: [String] = []
    private(set) var changedFiles: [String] = []
    /// Bundles whose Live Activities the transaction changed.
    var changedActivities: [String] = []

    init(database: StoreDatabase, sequence: Int64, usage: Int64, limits: StoreLimits, group: String) {
        self.database = database
        self.sequence = sequence
        self.usage = usage
        self.limits = limits
        self.group = group
    }

    private var connection: SQLiteConnection { database.connection }

    /// True when the transaction wrote something.
    var hasChanges: Bool { !changedKeys.isEmpty || !changedFiles.isEmpty || !changedActivities.isEmpty }

    /// The group's sequence number once the transaction commits.
    var committedSequence: Int64 { hasChanges ? sequence : sequence - 1 }

    /// Applies values (nil removes) and files (nil removes), in order.
    /// Each write learns the size it replaces from the statement that
    /// writes it (`StoreDatabase.upsert`, `DELETE … RETURNING`), so the
    /// group's usage follows the rows with no read before the writes.
    mutating func apply(values: [(key: String, value: StoreValue?)], files: [(name: String, data: [UInt8]?)]) throws(StoreError) {
        for (key, value) in values { try put(key, value) }
        for (name, data) in files { try putFile(name, data) }
    }

    /// Its callers (`StoreGroup`) have checked names and sizes.
    private mutating func put(_ key: String, _ value: StoreValue?) throws(StoreError) {
        if let value {
            let s = try database.statement(.upsertEntry)
            s.bind(2, value.storedType.rawValue)
            let size: Int
            switch value {
            case .integer(let v): s.bind(3, v); size = 8
            case .double(let v): s.bind(3, v); size = 8
            case .boolean(let v): s.bind(3, Int64(v ? 1 : 0)); size = 8
            case .string(let v): s.bind(3, text: v); size = v.utf8.count
            case .bytes(let v): s.bind(3, blob: v); size = v.count
            case .array, .map:
                let encoded = value.encoded()
                s.bind(3, blob: encoded)
                size = encoded.count
            }
            s.bind(4, Int64(size))
            s.bind(5, sequence)
            account(key, replaced: try s.withText(1, key) { () throws(StoreError) in try database.upsert(s) }, size: size)
        } else {
            guard let old = try deleted(.deleteEntry, key) else { return }   // absent: nothing changes
            account(key, replaced: old, size: nil)
        }
        changedKeys.append(key)
    }

    private mutating func putFile(_ name: String, _ data: [UInt8]?) throws(StoreError) {
        if let data {
            let s = try database.statement(.upsertFile)
            s.bind(1, text: name)
            s.bind(2, blob: data)
            s.bind(3, Int64(data.count))
            s.bind(4, sequence)
            account(name, replaced: try database.upsert(s), size: data.count)
        } else {
            guard let old = try deleted(.deleteFile, name) else { return }
            account(name, replaced: old, size: nil)
        }
        changedFiles.append(name)
    }

    /// Deletes `name` with `query` (a DELETE … RETURNING size); the size
    /// of the row it removed, or nil when there was none.
    private func deleted(_ query: StoreDatabase.Query, _ name: String) throws(StoreError) -> Int64? {
        let s = try database.statement(query)
        defer { s.reset() }
        s.bind(1, text: name)
        return try s.step() ? s.integer(0) : nil
    }

    /// Moves the group's usage from the size a write replaced (nil: the
    /// name was new) to its new one (nil: removed); a name counts its own
    /// bytes while it exists.
    private mutating func account(_ name: String, replaced: Int64?, size: Int?) {
        let nameBytes = Int64(name.utf8.count)
        if let replaced { usage -= replaced + nameBytes }
        if let size { usage += Int64(size) + nameBytes }
    }

    /// Checks the quota, logs the changes and stores the new sequence and usage.
    func finish() throws(StoreError) {
        if usage > Int64(limits.groupBytes) {
            throw StoreError(.quotaExceeded, "store group \(group): this write would bring the group to \(usage) bytes, over its quota of \(limits.groupBytes) bytes; nothing was written")
        }
        guard hasChanges else { return }
        // One log row per commit, for observers in other processes.
        let log = try database.statement(.logChange)
        log.bind(1, sequence)
        log.bind(2, blob: StoreValue.array(changedKeys.map { .string($0) }).encoded())
        log.bind(3, blob: StoreValue.array(changedFiles.map { .string($0) }).encoded())
        if changedActivities.isEmpty { log.bindNull(4) } else { log.bind(4, blob: StoreValue.array(changedActivities.map { .string($0) }).encoded()) }
        try log.run()
        let meta = try database.statement(.setMeta)
        meta.bind(1, text: "seq"); meta.bind(2, sequence); try meta.run()
        meta.bind(1, text: "usage"); meta.bind(2, usage); try meta.run()
        if sequence % 64 == 0 {
            let prune = try database.statement(.pruneChanges)
            prune.bind(1, sequence - StoreDatabase.changeLogRetention)
            try prune.run()
        }
    }
}
