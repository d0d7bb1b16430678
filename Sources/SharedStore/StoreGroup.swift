#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// One app group's store: keys with typed values, and files, shared by the
/// app, its scripts and other processes.
///
/// Every method is safe to call from any thread; calls on one `StoreGroup`
/// run one at a time. Writes are durable when they return (see
/// `StoreDurability`). Other processes, and other `SharedStore`s in this
/// process, see a write as soon as it returns.
public final class StoreGroup: @unchecked Sendable {
    /// The app-group id, e.g. "group.com.example.tasks".
    public let id: String
    /// The database file.
    public let path: String
    public let limits: StoreLimits

    private let lock = FastLock()
    /// The store's identity in `ReadScope`s: a finished call's read
    /// transaction is parked only inside one of its store's scopes. Held, so
    /// that no later store can take its identity while this group lives.
    private let scopeOwner: ReadScope.Owner
    let database: StoreDatabase
    let observers: StoreObservers

    init(id: String, path: String, create: Bool, limits: StoreLimits, durability: StoreDurability,
         scopeOwner: ReadScope.Owner) throws(StoreError) {
        self.id = id
        self.path = path
        self.limits = limits
        self.scopeOwner = scopeOwner
        database = try StoreDatabase(path: path, group: id, create: create, durability: durability)
        observers = StoreObservers(group: id, path: path)
    }

    /// Runs `body` with the connection to itself: ends a reader's shared
    /// read transaction first (`StoreCallReader`), and a parked one, so
    /// every other use of the connection sees the latest commit and may write.
    func locked<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        lock.lock()
        defer { lock.unlock() }
        if snapshotOwner != nil || parked { endSnapshot() }
        return try body()
    }

    // The read transaction's state below is read and written only under
    // `lock`, by calls that hold no access to it across another: no
    // run-time exclusivity checks (they cost ≈ 65 instructions an access,
    // several times a script call).
    /// The reader whose read transaction is open on the connection, if any.
    @exclusivity(unchecked) private var snapshotOwner: ObjectIdentifier?
    /// The WAL index's header read just before the open transaction began:
    /// the snapshot holds at least this (nil: unknown, never parked).
    @exclusivity(unchecked) private var snapshotHeader: WALIndex.Header?
    /// When the open transaction began (kept through adoptions).
    /// (`MonotonicClock` nanoseconds.)
    @exclusivity(unchecked) private var snapshotBegan: Int64 = 0
    /// The open transaction's reader ended, and it is kept for the next
    /// reader (see `sharedRead`), who adopts it if the header is still
    /// `snapshotHeader`.
    @exclusivity(unchecked) private var parked = false
    /// The WAL index's header, in SQLite's mapping (found at the first parking).
    @exclusivity(unchecked) private var walIndex: WALIndex?
    /// True when the connection has no WAL index to read (not in WAL mode, or
    /// its VFS cannot say): nothing is parked, and it is not asked again.
    @exclusivity(unchecked) private var walIndexUnavailable = false
    /// Frames in the log from which a transaction is no longer parked: SQLite's
    /// automatic checkpoint threshold (1,000 pages unless set). A transaction
    /// always open, parked or in a call, would hold a read mark at every
    /// moment; another process's checkpoint could then never restart the log,
    /// and it would grow without end. Past this size each call's transaction
    /// ends with the call again, which leaves checkpoints their moments.
    /// (It and the settings and counters below are read or written by the
    /// read path under `lock` too: unchecked as the state above.)
    @exclusivity(unchecked) package var parkedLogLimit: UInt32 = 1_000
    /// The age from which a transaction is neither parked nor adopted. A
    /// checkpoint does not change the header, so adoption alone would keep
    /// one read mark, and the snapshot under it, for as long as calls come.
    @exclusivity(unchecked) package var parkedAgeLimit: Duration = .milliseconds(100) {
        didSet { parkedAgeLimitNanoseconds = Self.nanoseconds(parkedAgeLimit) }
    }
    @exclusivity(unchecked) private var parkedAgeLimitNanoseconds: Int64 = 100_000_000
    /// The open transaction's age is under `parkedAgeLimit`.
    private var snapshotIsYoung: Bool { MonotonicClock.nanoseconds() - snapshotBegan < parkedAgeLimitNanoseconds }

    private static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// Entries read by readers in an adopted read transaction, by key bytes.
    /// Its snapshot cannot change while it is open, so a key read again — in
    /// the same call, or by a later call that adopts it too — is not looked
    /// up and decoded again. Only adopted transactions keep entries: they are
    /// the ones later calls read again (the engine's batches), while a new
    /// transaction's reads are mostly of keys read once, which would pay for
    /// hashing and keeping each for nothing. Emptied when a read fails and
    /// when the transaction ends (`endSnapshot`, the only way one ends), so
    /// every transaction begins with none; at most `snapshotEntriesLimit`
    /// entries and `snapshotBytesLimit` bytes of stored values (their
    /// `storageSize`; decoded tables take more).
    @exclusivity(unchecked) private var snapshotEntries: [ByteString: (value: StoreValue?, version: Int64)] = [:]
    @exclusivity(unchecked) private var snapshotBytes = 0
    /// Of `snapshotEntries`, the one last read or kept: a call that reads
    /// one key (a widget's, on every reload) finds it with a comparison of
    /// its bytes instead of hashing them. Nil whenever the entries are empty.
    @exclusivity(unchecked) private var lastSnapshotEntry: (key: ByteString, entry: (value: StoreValue?, version: Int64))?
    /// The open transaction was adopted from a parked one.
    @exclusivity(unchecked) private var snapshotAdopted = false
    @exclusivity(unchecked) package var snapshotEntriesLimit = 256
    @exclusivity(unchecked) package var snapshotBytesLimit = 1 << 20
    /// Entries served from `snapshotEntries` (tests count them with it).
    @exclusivity(unchecked) package private(set) var entriesFromSnapshot = 0
    /// True while a reader's transaction is open or parked (for tests).
    package var holdsReadTransaction: Bool { lock.withLock { snapshotOwner != nil || parked } }
    /// Read transactions begun for readers (tests count adoptions with it).
    @exclusivity(unchecked) package private(set) var readTransactionsBegun = 0

    /// Runs `body` inside `reader`'s read transaction, beginning it (after
    /// ending another reader's) when it is not open. SQLite takes the
    /// snapshot at the transaction's first read.
    ///
    /// A parked transaction (its reader ended) is adopted instead when the
    /// WAL index's header is what it was before that transaction began: then
    /// nothing was committed since, by any connection or process, and the
    /// snapshot is the one a new transaction would take. This spares the two
    /// `fcntl` calls of a new transaction's read lock, most of a one-key
    /// read's cost. Any other change of header ends it and begins anew.
    fileprivate func sharedRead<R>(by reader: StoreCallReader, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        lock.lock()
        defer { lock.unlock() }
        let id = ObjectIdentifier(reader)
        if !ownsOrAdopts(id) {
            if snapshotOwner != nil || parked { endSnapshot() }
            try beginSnapshot(for: id)
        }
        return try body()
    }

    /// Under `lock`: true when the reader `id`'s transaction is the open
    /// one, already or now: a parked transaction is adopted when nothing
    /// was committed since it began (its WAL-index header) and it is young.
    @inline(__always)
    private func ownsOrAdopts(_ id: ObjectIdentifier) -> Bool {
        if snapshotOwner == id { return true }
        guard snapshotOwner == nil, parked, let now = walIndex?.header(), now == snapshotHeader, snapshotIsYoung else { return false }
        parked = false
        snapshotOwner = id
        snapshotAdopted = true
        return true
    }

    /// The value of the key whose bytes are `key`, when `reader`'s read
    /// transaction has it at hand: the transaction is open or adoptable
    /// (as `sharedRead` finds it) and the key is the last one read in it
    /// (`lastSnapshotEntry`, which only keys that passed their checks
    /// reach). No database read, no string made. `found` false: not at
    /// hand; the caller reads it the usual way, in the same transaction
    /// when this one adopted it.
    package func valueAtHand(key: UnsafeBufferPointer<UInt8>, by reader: StoreCallReader) -> (found: Bool, value: StoreValue?) {
        lock.lock()
        defer { lock.unlock() }
        guard ownsOrAdopts(ObjectIdentifier(reader)), let last = lastSnapshotEntry,
              last.key.text.utf8.withContiguousStorageIfAvailable({ StoreMap.compare($0, key) == 0 }) == true
        else { return (false, nil) }
        entriesFromSnapshot += 1
        return (true, last.entry.value)
    }

    /// Begins a read transaction for the reader `id` (under `lock`): out
    /// of line, since most reads find theirs open or adopt a parked one.
    @inline(never)
    private func beginSnapshot(for id: ObjectIdentifier) throws(StoreError) {
        // Read before BEGIN: the snapshot, taken at the first read, is at
        // least this state.
        snapshotHeader = walIndex?.header()
        try database.statement(.beginRead).run()
        snapshotBegan = MonotonicClock.nanoseconds()
        readTransactionsBegun += 1
        snapshotOwner = id
    }

    /// The value and version of `key` in `reader`'s read transaction: as an
    /// earlier read in the same transaction found them, else from the database.
    fileprivate func sharedEntry(_ key: String, by reader: StoreCallReader) throws(StoreError) -> (value: StoreValue?, version: Int64) {
        try sharedRead(by: reader) { () throws(StoreError) in
            let id = ByteString(key)
            if !snapshotEntries.isEmpty {
                if let last = lastSnapshotEntry, last.key == id {
                    entriesFromSnapshot += 1
                    return last.entry
                }
                if let known = snapshotEntries[id] {
                    entriesFromSnapshot += 1
                    lastSnapshotEntry = (id, known)
                    return known
                }
            }
            return try readEntry(key, id)
        }
    }

    /// `sharedEntry`'s read from the database (under `lock`, in the open
    /// transaction), kept for later calls when the transaction was
    /// adopted. Out of line: most of a widget's reads find their entry kept.
    @inline(never)
    private func readEntry(_ key: String, _ id: ByteString) throws(StoreError) -> (value: StoreValue?, version: Int64) {
        let entry: (value: StoreValue?, version: Int64)
        do throws(StoreError) { entry = try database.entry(key) } catch {
            // SQLite may have ended the transaction with the error (an
            // I/O error, out of memory): keep nothing more from it.
            forgetSnapshotEntries()
            snapshotAdopted = false
            throw error
        }
        guard snapshotAdopted else { return entry }
        let size = entry.value?.storageSize ?? 0
        if snapshotEntries.count < snapshotEntriesLimit && snapshotBytes + size <= snapshotBytesLimit {
            snapshotEntries[id] = entry
            lastSnapshotEntry = (id, entry)
            snapshotBytes += size
        }
        return entry
    }

    private func forgetSnapshotEntries() {
        guard !snapshotEntries.isEmpty else { return }
        lastSnapshotEntry = nil
        snapshotEntries.removeAll(keepingCapacity: true)
        snapshotBytes = 0
    }

    /// Ends `reader`'s read transaction, if it is the one open: parks it
    /// when the reader's thread is in one of the store's
    /// `reusingReadTransactions` scopes, its starting header is known, the
    /// log is below `parkedLogLimit` and the transaction younger than
    /// `parkedAgeLimit`; else commits it. The scope ends it at the latest.
    fileprivate func endSharedReads(by reader: StoreCallReader) {
        lock.lock()
        defer { lock.unlock() }
        guard snapshotOwner == ObjectIdentifier(reader) else { return }
        guard let scope = ReadScope.of(scopeOwner) else { return endSnapshot() }
        if walIndex == nil && !walIndexUnavailable {
            // After a read, so SQLite has mapped the index for this connection
            // (only in WAL mode: otherwise asking for it would create one).
            walIndex = database.isWAL ? WALIndex(connection: database.connection.handle) : nil
            walIndexUnavailable = walIndex == nil
        }
        guard let header = snapshotHeader, walIndex != nil, header.frames < parkedLogLimit,
              snapshotIsYoung, scope.record(self) else { return endSnapshot() }
        snapshotOwner = nil
        parked = true
    }

    /// Ends the parked transaction, if any (at the end of the scope it was
    /// parked in: the group holds no read mark after it).
    func endParkedRead() {
        lock.lock()
        defer { lock.unlock() }
        if parked { endSnapshot() }
    }

    /// Ends the open or parked read transaction. It wrote nothing, so COMMIT
    /// cannot fail for want of a lock; should it fail anyway, ROLLBACK ends it.
    @inline(never)
    private func endSnapshot() {
        snapshotOwner = nil
        snapshotHeader = nil
        parked = false
        snapshotAdopted = false
        forgetSnapshotEntries()
        if (try? database.statement(.endRead).run()) == nil { try? database.connection.exec("ROLLBACK") }
    }

    deinit {
        if snapshotOwner != nil || parked { endSnapshot() }
    }

    // MARK: Keys

    /// The value under `key`, or nil.
    public func get(_ key: String) throws(StoreError) -> StoreValue? {
        try Self.checkKey(key)
        return try locked { () throws(StoreError) in try database.entry(key).value }
    }

    /// The value under `key` and its version: the sequence number of the
    /// commit that wrote it (0 when absent). Versions only grow.
    public func entry(_ key: String) throws(StoreError) -> (value: StoreValue?, version: Int64) {
        try Self.checkKey(key)
        return try locked { () throws(StoreError) in try database.entry(key) }
    }

    /// Sets `key` to `value`; nil removes it.
    public func set(_ key: String, _ value: StoreValue?) throws(StoreError) {
        try commit(StoreBatch(values: [(key, value)]))
    }

    /// Removes `key` (nothing happens when it is absent).
    public func remove(_ key: String) throws(StoreError) {
        try set(key, nil)
    }

    /// Keys that start with `prefix` (all keys for ""), sorted by their bytes.
    public func keys(prefix: String = "") throws(StoreError) -> [String] {
        try locked { () throws(StoreError) in try database.keys(prefix: prefix) }
    }

    /// Atomic read-modify-write, across threads and processes: `transform`
    /// gets the current value (nil when absent) and returns the new one (nil
    /// removes the key). It runs while the group's write lock is held, so
    /// keep it short. Returns the new value.
    @discardableResult
    public func update(_ key: String, _ transform: (StoreValue?) throws -> StoreValue?) throws -> StoreValue? {
        try Self.checkKey(key)
        var thrown: (any Error)?
        let outcome: (result: StoreValue?, writer: StoreWriter)
        do {
            outcome = try locked { () throws(StoreError) in
                try database.write(limits: limits, group: id) { (writer: inout StoreWriter) throws(StoreError) -> StoreValue? in
                    let old = try database.entry(key).value
                    let new: StoreValue?
                    do { new = try transform(old) } catch {
                        thrown = error
                        throw StoreError(.invalidValue, "update of \(StoreText.quoted(key)) was abandoned")
                    }
                    if let new { try limits.checkValueSize(new.storageSize, of: "value for key \(StoreText.quoted(key))") }
                    try writer.apply(values: [(key, new)], files: [])
                    return new
                }
            }
        } catch {
            if let thrown { throw thrown }
            throw error
        }
        observers.deliverLocal(outcome.writer)
        return outcome.result
    }

    // MARK: Files

    /// The contents of the file `name`, or nil.
    public func readFile(_ name: String) throws(StoreError) -> [UInt8]? {
        try Self.checkFileName(name)
        return try locked { () throws(StoreError) in try database.readFile(name) }
    }

    /// Writes the file `name` (replacing it).
    public func writeFile(_ name: String, _ data: [UInt8]) throws(StoreError) {
        try commit(StoreBatch(files: [(name, data)]))
    }

    /// Removes the file `name` (nothing happens when it is absent).
    public func removeFile(_ name: String) throws(StoreError) {
        try commit(StoreBatch(files: [(name, nil)]))
    }

    /// The group's file names, sorted by their bytes.
    public func files() throws(StoreError) -> [String] {
        try locked { () throws(StoreError) in try database.fileNames() }
    }

    // MARK: Batches

    /// Bytes in use: keys, values, file names and file contents.
    public func usage() throws(StoreError) -> Int {
        Int(try locked { () throws(StoreError) in try database.usage() })
    }

    /// The sequence number of the group's last commit.
    public func sequence() throws(StoreError) -> Int64 {
        try locked { () throws(StoreError) in try database.sequence() }
    }

    /// Applies `batch` in one transaction: all of it or, on any error,
    /// none of it. Returns the commit's sequence number (the current one
    /// when the batch is empty).
    @discardableResult
    public func commit(_ batch: StoreBatch) throws(StoreError) -> Int64 {
        switch try commit(batch, expecting: []) {
        case .committed(let sequence): return sequence
        case .conflict: preconditionFailure("a batch without expectations cannot conflict")
        }
    }

    /// Applies `batch` only if every key in `expecting` still has the given
    /// version (0: absent); otherwise writes nothing and names the keys that moved.
    public func commit(_ batch: StoreBatch, expecting: [(key: String, version: Int64)]) throws(StoreError) -> StoreCommitOutcome {
        for (key, value) in batch.values {
            try Self.checkKey(key)
            if let value { try limits.checkValueSize(value.storageSize, of: "value for key \(StoreText.quoted(key))") }
        }
        for (name, data) in batch.files {
            try Self.checkFileName(name)
            if let data { try limits.checkValueSize(data.count, of: "file \(StoreText.quoted(name))") }
        }
        if batch.isEmpty && expecting.isEmpty { return .committed(try sequence()) }
        var moved: [String] = []
        let done: (result: Void, writer: StoreWriter)
        do {
            done = try locked { () throws(StoreError) in
                try database.write(limits: limits, group: id) { (writer: inout StoreWriter) throws(StoreError) in
                    for (key, version) in expecting where try database.entry(key).version != version {
                        moved.append(key)
                    }
                    if !moved.isEmpty { throw StoreError(.conflict, "conflict") }   // rolls back
                    try writer.apply(values: batch.values, files: batch.files)
                    if let activities = batch.activities { try database.writeActivities(activities, in: &writer) }
                }
            }
        } catch where !moved.isEmpty {
            return .conflict(moved.sorted { ByteString($0) < ByteString($1) })
        }
        observers.deliverLocal(done.writer)
        return .committed(done.writer.committedSequence)
    }

    // MARK: Observation

    /// Calls `handler` after every change to the group: at once (on the
    /// writing thread) for writes made through this object, and within about
    /// `interval` for writes by other processes or connections. Keep the
    /// returned token; the observation ends when it is cancelled or released.
    public func observe(interval: Duration = .milliseconds(10), _ handler: @escaping @Sendable (StoreChange) -> Void) throws(StoreError) -> StoreObservation {
        try observers.add(interval: interval, sequence: try sequence(), handler)
    }

    // MARK: Checks

    static func checkKey(_ key: String) throws(StoreError) {
        if let problem = StoreText.keyProblem(key) {
            throw StoreError(.invalidName, "invalid store key \(StoreText.quoted(key)): \(problem)")
        }
    }

    static func checkFileName(_ name: String) throws(StoreError) {
        if let problem = StoreText.fileNameProblem(name) {
            throw StoreError(.invalidName, "invalid file name \(StoreText.quoted(name)): \(problem)")
        }
    }
}

/// Writes to apply together: values (nil removes) and files (nil removes),
/// applied in order, and a bundle's Live Activity rows.
public struct StoreBatch: Sendable {
    public var values: [(key: String, value: StoreValue?)]
    public var files: [(name: String, data: [UInt8]?)]
    /// Activity rows to write in the same transaction; if another writer
    /// changed the bundle's rows since they were read, the whole batch is
    /// refused with a `.conflict` error.
    public var activities: ActivityWrite?

    public init(values: [(key: String, value: StoreValue?)] = [], files: [(name: String, data: [UInt8]?)] = [],
                activities: ActivityWrite? = nil) {
        self.values = values
        self.files = files
        self.activities = activities
    }

    public var isEmpty: Bool { values.isEmpty && files.isEmpty && (activities?.isEmpty ?? true) }
}

/// How a conditional commit ended.
public enum StoreCommitOutcome: Sendable, Equatable {
    /// Written, with this sequence number.
    case committed(Int64)
    /// Nothing written: these keys changed since they were read.
    case conflict([String])
}

/// One script call's reads of a group, sharing one read transaction.
///
/// A read outside a transaction is a transaction of its own: SQLite takes
/// and drops its read lock each time, which is most of what a read of one
/// key costs. A call's reads through one reader run in one read transaction
/// instead, begun at its first read and ended by `end()`, or as soon as
/// anything else uses the group's connection (the app's writes and reads
/// through the same `SharedStore`, another reader, a commit); the reader's
/// next read then begins a new one. So a call never reads data older than
/// its first read of the group, two reads may share a snapshot, and no
/// writer waits on a reader (WAL mode). Inside the store's
/// `reusingReadTransactions`, `end()` parks the transaction for the next
/// call's reader, which adopts it only while nothing has been committed
/// (`StoreGroup.sharedRead`).
///
/// A reader may serve one call after another (`StoreBinding` keeps one per
/// group): each call must `end()` it when it is done, else the next call
/// would go on reading the open transaction's snapshot, however old.
package final class StoreCallReader {
    package let group: StoreGroup

    package init(group: StoreGroup) { self.group = group }

    deinit { end() }

    /// Ends the read transaction, if this reader's is open.
    package func end() { group.endSharedReads(by: self) }

    /// The value and version of `key`, which the caller has checked (`StoreText.keyProblem`).
    package func entry(checkedKey key: String) throws(StoreError) -> (value: StoreValue?, version: Int64) {
        try group.sharedEntry(key, by: self)
    }

    package func keys(prefix: String) throws(StoreError) -> [String] {
        try group.sharedRead(by: self) { () throws(StoreError) in try group.database.keys(prefix: prefix) }
    }

    /// `StoreGroup.valueAtHand` in this reader's transaction.
    package func valueAtHand(key: UnsafeBufferPointer<UInt8>) -> (found: Bool, value: StoreValue?) {
        group.valueAtHand(key: key, by: self)
    }

    /// The file `name`, which the caller has checked (`StoreText.fileNameProblem`).
    package func readFile(checkedName name: String) throws(StoreError) -> [UInt8]? {
        try group.sharedRead(by: self) { () throws(StoreError) in try group.database.readFile(name) }
    }

    package func files() throws(StoreError) -> [String] {
        try group.sharedRead(by: self) { () throws(StoreError) in try group.database.fileNames() }
    }
}
