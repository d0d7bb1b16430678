import Foundation

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

    private let lock = NSLock()
    let database: StoreDatabase
    let observers: StoreObservers

    init(id: String, path: String, create: Bool, limits: StoreLimits, durability: StoreDurability) throws(StoreError) {
        self.id = id
        self.path = path
        self.limits = limits
        database = try StoreDatabase(path: path, group: id, create: create, durability: durability)
        observers = StoreObservers(group: id, path: path)
    }

    func locked<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
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

