/// One bundle's Live Activities as its app group's database keeps them, in
/// tables of their own beside the keys and files: whether activities are
/// enabled, the number of the next one, and each activity's record and
/// pushes. The store does not read records or pushes: they are maps the
/// host encodes (WidgetHost's `ActivityManager`), stored as `StoreValue`s,
/// so an app that links the store alone still sees the same rows.
///
/// Every write is a transaction of the group's database, so processes that
/// share the group see an activity's change whole or not at all, and one
/// killed mid-write leaves the last committed rows.
public struct StoredActivities: Sendable, Equatable {
    /// Rule A7: when false, requests are refused.
    public var enabled: Bool
    /// The number the next activity's id is made from.
    public var nextNumber: Int64
    /// The activities, in the order they were started.
    public var activities: [StoredActivity]
    /// Bumped by every write of the bundle's rows; a conditional write
    /// (`StoreBatch.activities`) expects the version it read.
    public internal(set) var version: Int64

    public init(enabled: Bool = true, nextNumber: Int64 = 1, activities: [StoredActivity] = []) {
        self.enabled = enabled
        self.nextNumber = nextNumber
        self.activities = activities
        version = 0
    }
}

/// One activity's rows: its record, and its pushes in order of arrival.
public struct StoredActivity: Sendable, Equatable {
    public var id: String
    public var record: StoreValue
    public var pushes: [StoreValue]

    public init(id: String, record: StoreValue, pushes: [StoreValue] = []) {
        self.id = id
        self.record = record
        self.pushes = pushes
    }
}

/// A write of one bundle's activity rows, from `old` (as read) to `new`:
/// only the rows that differ are written, and only if nobody else wrote the
/// bundle's rows since `old` was read.
public struct ActivityWrite: Sendable {
    public var bundle: String
    public var old: StoredActivities
    public var new: StoredActivities

    public init(bundle: String, old: StoredActivities, new: StoredActivities) {
        self.bundle = bundle
        self.old = old
        self.new = new
    }

    /// True when `new` is the same as `old`: nothing to write.
    public var isEmpty: Bool { old == new }

    /// The rows as they are once this write has committed (with their new version).
    public var written: StoredActivities {
        guard !isEmpty else { return old }
        var rows = new
        rows.version = old.version + 1
        return rows
    }
}

extension StoreGroup {
    /// The activity rows of `bundle` (empty, enabled, when it has none).
    public func activities(of bundle: String) throws(StoreError) -> StoredActivities {
        var cache: StoredActivities?
        return try activities(of: bundle, cache: &cache)
    }

    /// The same, reusing `cache` when the bundle's rows are still at its
    /// version (one small read instead of every row), and leaving the rows
    /// read in `cache`.
    public func activities(of bundle: String, cache: inout StoredActivities?) throws(StoreError) -> StoredActivities {
        let rows = try locked { () throws(StoreError) in try database.activities(of: bundle, reusing: cache) }
        cache = rows
        return rows
    }

    /// Reads `bundle`'s activity rows, lets `body` change them and writes
    /// what it changed, all under the group's write lock, so that other
    /// processes' changes cannot interleave. Nothing is written when the
    /// rows come back unchanged.
    public func updateActivities<R>(of bundle: String, _ body: (inout StoredActivities) -> R) throws(StoreError) -> R {
        var cache: StoredActivities?
        return try updateActivities(of: bundle, cache: &cache, body)
    }

    /// The same, reusing `cache` as `activities(of:cache:)` does; `cache`
    /// ends as the rows written (nil when the write failed).
    public func updateActivities<R>(of bundle: String, cache: inout StoredActivities?,
                                    _ body: (inout StoredActivities) -> R) throws(StoreError) -> R {
        let cached = cache
        cache = nil
        var written: StoredActivities?
        let result = try locked { () throws(StoreError) in
            try database.write(limits: limits, group: id) { (writer: inout StoreWriter) throws(StoreError) -> R in
                let old = try database.activities(of: bundle, reusing: cached)
                var new = old
                let result = body(&new)
                new.version = old.version
                let write = ActivityWrite(bundle: bundle, old: old, new: new)
                try database.writeActivities(write, in: &writer)
                written = write.written
                return result
            }
        }
        observers.deliverLocal(result.writer)
        cache = written
        return result.result
    }
}

extension StoreDatabase {
    /// `bundle`'s rows: `cached` when they are still at its version.
    func activities(of bundle: String, reusing cached: StoredActivities?) throws(StoreError) -> StoredActivities {
        if let cached, try activityVersion(bundle) == cached.version { return cached }
        return try activities(of: bundle)
    }

    func activities(of bundle: String) throws(StoreError) -> StoredActivities {
        var rows = StoredActivities()
        let header = try statement(.activityBundle)
        defer { header.reset() }
        header.bind(1, text: bundle)
        if try header.step() {
            rows.enabled = header.integer(0) != 0
            rows.nextNumber = header.integer(1)
            rows.version = header.integer(2)
        }
        let records = try statement(.activityRecords)
        defer { records.reset() }
        records.bind(1, text: bundle)
        var index: [String: Int] = [:]
        while try records.step() {
            let id = records.text(0)
            let record = try records.withBytes(1) { bytes throws(StoreError) in try decodeRow(bytes, "activity \(id)") }
            index[id] = rows.activities.count
            rows.activities.append(StoredActivity(id: id, record: record))
        }
        let pushes = try statement(.activityPushes)
        defer { pushes.reset() }
        pushes.bind(1, text: bundle)
        while try pushes.step() {
            let id = pushes.text(0)
            guard let i = index[id] else { continue }   // an orphan push: its activity is gone
            rows.activities[i].pushes.append(try pushes.withBytes(1) { bytes throws(StoreError) in
                try decodeRow(bytes, "a push of activity \(id)")
            })
        }
        return rows
    }

    private func decodeRow(_ bytes: UnsafeRawBufferPointer, _ what: String) throws(StoreError) -> StoreValue {
        guard let value = StoreValue.decode(bytes) else {
            throw StoreError(.corruptValue, "store database \(path): \(what) holds a row that does not decode")
        }
        return value
    }

    /// Writes the rows `write.new` changes from `write.old`, if the
    /// bundle's rows are still at `write.old`'s version; the caller holds
    /// the write transaction, and `writer` logs the change for observers.
    func writeActivities(_ write: ActivityWrite, in writer: inout StoreWriter) throws(StoreError) {
        guard !write.isEmpty else { return }
        writer.changedActivities.append(write.bundle)
        let bundle = write.bundle
        let current = try activityVersion(bundle)
        guard current == write.old.version else {
            throw StoreError(.conflict, "store group \(group): the Live Activities of \(bundle) were changed by another writer while this call ran (version \(write.old.version) became \(current)); nothing was written")
        }
        let header = try statement(.upsertActivityBundle)
        header.bind(1, text: bundle)
        header.bind(2, Int64(write.new.enabled ? 1 : 0))
        header.bind(3, write.new.nextNumber)
        header.bind(4, current + 1)
        try header.run()
        let old = Dictionary(write.old.activities.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let kept = Set(write.new.activities.map(\.id))
        for gone in write.old.activities where !kept.contains(gone.id) {
            for query in [Query.deleteActivity, .deleteActivityPushes] {
                let s = try statement(query)
                s.bind(1, text: bundle)
                s.bind(2, text: gone.id)
                try s.run()
            }
        }
        for (order, activity) in write.new.activities.enumerated() {
            let before = old[activity.id]
            if before?.record != activity.record || write.old.activities.firstIndex(where: { $0.id == activity.id }) != order {
                let s = try statement(.upsertActivity)
                s.bind(1, text: bundle)
                s.bind(2, text: activity.id)
                s.bind(3, Int64(order))
                s.bind(4, blob: activity.record.encoded())
                try s.run()
            }
            let oldPushes = before?.pushes ?? []
            for (n, push) in activity.pushes.enumerated() where n >= oldPushes.count || oldPushes[n] != push {
                let s = try statement(.upsertActivityPush)
                s.bind(1, text: bundle)
                s.bind(2, text: activity.id)
                s.bind(3, Int64(n))
                s.bind(4, blob: push.encoded())
                try s.run()
            }
            if activity.pushes.count < oldPushes.count {
                let s = try statement(.trimActivityPushes)
                s.bind(1, text: bundle)
                s.bind(2, text: activity.id)
                s.bind(3, Int64(activity.pushes.count))
                try s.run()
            }
        }
    }

    private func activityVersion(_ bundle: String) throws(StoreError) -> Int64 {
        let s = try statement(.activityBundle)
        defer { s.reset() }
        s.bind(1, text: bundle)
        return try s.step() ? s.integer(2) : 0
    }
}
