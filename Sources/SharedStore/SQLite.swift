import CSQLite

/// A thin owner of one SQLite connection. Not thread-safe: its owner
/// (a `StoreGroup`) serializes access.
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String

    /// Opens (and, when `create`, creates) the database at `path`, and sets
    /// its busy timeout before anything can run a statement on it.
    init(path: String, create: Bool, readOnly: Bool = false, busyTimeoutMs: Int32) throws(StoreError) {
        var db: OpaquePointer?
        var flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        flags |= SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(db)
            throw SQLiteConnection.error(path: path, code: status, message: message)
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        setBusyTimeout(milliseconds: busyTimeoutMs)
    }

    /// How long a statement waits for another connection's lock before it
    /// fails with SQLITE_BUSY (where SQLite waits at all: see `StoreDatabase.init`).
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    deinit {
        // close_v2 waits for statements still held elsewhere to be finalized.
        sqlite3_close_v2(handle)
    }

    /// Runs SQL without results (one or more statements).
    func exec(_ sql: String) throws(StoreError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        if status != SQLITE_OK { throw failure(status) }
    }

    /// Prepares `sql`; `persistent` for statements kept for the connection's life.
    func prepare(_ sql: String, persistent: Bool = false) throws(StoreError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0, &stmt, nil)
        guard status == SQLITE_OK, let stmt else { throw failure(status) }
        return SQLiteStatement(stmt, connection: self)
    }

    /// The first column of the first row of a one-off `sql`, as an integer (0 when no row).
    func integer(_ sql: String) throws(StoreError) -> Int64 {
        try prepare(sql).firstInteger()
    }

    /// The first column of the first row of a one-off `sql`, as text ("" when no row).
    func text(_ sql: String) throws(StoreError) -> String {
        let s = try prepare(sql)
        return try s.step() ? s.text(0) : ""
    }

    func failure(_ status: Int32) -> StoreError {
        SQLiteConnection.error(path: path, code: status, message: String(cString: sqlite3_errmsg(handle)))
    }

    static func error(path: String, code: Int32, message: String) -> StoreError {
        let primary = code & 0xFF
        let name = codeName(primary)
        switch primary {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            return StoreError(.notAStore, "store database \(path): \(message) (\(name)); it was left as it is")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return StoreError(.busy, "store database \(path): \(message) (\(name))")
        default:
            return StoreError(.database, "store database \(path): \(message) (\(name))")
        }
    }

    static func codeName(_ code: Int32) -> String {
        switch code {
        case SQLITE_BUSY: return "SQLITE_BUSY"
        case SQLITE_LOCKED: return "SQLITE_LOCKED"
        case SQLITE_NOMEM: return "SQLITE_NOMEM"
        case SQLITE_READONLY: return "SQLITE_READONLY"
        case SQLITE_IOERR: return "SQLITE_IOERR"
        case SQLITE_CORRUPT: return "SQLITE_CORRUPT"
        case SQLITE_FULL: return "SQLITE_FULL"
        case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN"
        case SQLITE_NOTADB: return "SQLITE_NOTADB"
        case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT"
        case SQLITE_PERM: return "SQLITE_PERM"
        default: return "SQLite error \(code)"
        }
    }
}

/// SQLite's "copy this buffer now" destructor.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One prepared statement; bind, step, read columns, reset.
final class SQLiteStatement {
    let stmt: OpaquePointer
    unowned let connection: SQLiteConnection
    /// True while a bound value holds a copy larger than `keptBindingBytes`:
    /// `reset` then clears the bindings, so a kept statement does not hold
    /// a large file or value until its next use. Small ones are left (every
    /// use binds all its parameters again), which saves a call per use.
    private var holdsLargeBinding = false
    static let keptBindingBytes = 4096

    init(_ stmt: OpaquePointer, connection: SQLiteConnection) {
        self.stmt = stmt
        self.connection = connection
    }

    deinit { sqlite3_finalize(stmt) }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(stmt, index, value) }
    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(stmt, index, value) }
    func bindNull(_ index: Int32) { sqlite3_bind_null(stmt, index) }

    /// Binds text byte for byte (no terminator needed, NUL allowed).
    func bind(_ index: Int32, text: String) {
        var text = text
        text.withUTF8 { buffer in bindText(index, UnsafeRawBufferPointer(buffer)) }
    }

    private func bindText(_ index: Int32, _ buffer: UnsafeRawBufferPointer) {
        let empty: StaticString = ""
        let base = buffer.baseAddress ?? UnsafeRawPointer(empty.utf8Start)
        _ = sqlite3_bind_text(stmt, index, base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), sqliteTransient)
        if buffer.count > Self.keptBindingBytes { holdsLargeBinding = true }
    }

    /// Runs `body` with `text` bound at `index` in place, without the copy
    /// `bind(_:text:)` makes; the parameter is set to NULL again before this
    /// returns, so the statement never keeps the pointer. For the hot
    /// one-key statements (a read, a write), whose steps run inside `body`.
    func withText<R>(_ index: Int32, _ text: String, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        var text = text
        let result = text.withUTF8 { buffer -> Result<R, StoreError> in
            let empty: StaticString = ""
            let base = UnsafeRawPointer(buffer.baseAddress) ?? UnsafeRawPointer(empty.utf8Start)
            _ = sqlite3_bind_text(stmt, index, base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), nil)
            defer { sqlite3_bind_null(stmt, index) }
            return Result { () throws(StoreError) -> R in try body() }
        }
        return try result.get()
    }

    /// Binds text given as bytes (may be any bytes, e.g. a range bound).
    func bind(_ index: Int32, textBytes: [UInt8]) {
        textBytes.withUnsafeBytes { buffer in bindText(index, buffer) }
    }

    func bind(_ index: Int32, blob: [UInt8]) {
        blob.withUnsafeBytes { buffer in
            _ = sqlite3_bind_blob(stmt, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), sqliteTransient)
        }
        if blob.count > Self.keptBindingBytes { holdsLargeBinding = true }
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws(StoreError) -> Bool {
        let status = sqlite3_step(stmt)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(stmt)
            throw connection.failure(status)
        }
    }

    /// The first column of the first row as an integer (0 when no row), then resets.
    func firstInteger() throws(StoreError) -> Int64 {
        defer { reset() }
        return try step() ? integer(0) : 0
    }

    /// Runs a statement that returns no rows, then resets it.
    func run() throws(StoreError) {
        defer { reset() }
        _ = try step()
    }

    func reset() {
        sqlite3_reset(stmt)
        if holdsLargeBinding {
            sqlite3_clear_bindings(stmt)
            holdsLargeBinding = false
        }
    }

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, column) else { return "" }
        let n = Int(sqlite3_column_bytes(stmt, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The column's bytes, valid until the next step or reset.
    func withBytes<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws(StoreError) -> R) throws(StoreError) -> R {
        let p = sqlite3_column_blob(stmt, column)
        let n = Int(sqlite3_column_bytes(stmt, column))
        return try body(UnsafeRawBufferPointer(start: n == 0 ? nil : p, count: n))
    }

    func bytes(_ column: Int32) -> [UInt8] {
        let p = sqlite3_column_blob(stmt, column)
        let n = Int(sqlite3_column_bytes(stmt, column))
        guard n > 0, let p else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
