import LuaSandbox
import SharedStore

/// One group's staged writes during a script call, and the log that lets
/// them be staged again when a conflicting update must be re-run.
///
/// Per key the log keeps what the final value depends on: the transforms
/// of the updates run since the call read the key from the store. A plain
/// write (set or remove) makes the value independent of the store and
/// forgets them. Every logged operation counts against the call's staging
/// limit (its key, its value, and 64 bytes), so a loop of writes cannot
/// grow host memory past it.
final class GroupStage {
    private struct KeyStage {
        var key: String
        /// The updates run since the call read the key from the store, in
        /// order; empty when a plain write made the value independent of it.
        var transforms: [LuaFunctionRef] = []
        /// The value the key will have (nil: removed).
        var value: StoreValue?
        /// The key's version when the call first read it for an update;
        /// nil when the first operation was a plain write.
        var readVersion: Int64?
        var cost = 0
    }

    private struct FileStage {
        var name: String
        var data: [UInt8]?
        var cost: Int
    }

    let group: StoreGroup
    let callLimit: Int
    private var keys: [ByteString: KeyStage] = [:]
    private var fileStages: [ByteString: FileStage] = [:]
    private var staged = 0
    static let operationCost = 64

    init(group: StoreGroup, callLimit: Int) {
        self.group = group
        self.callLimit = callLimit
    }

    var hasWrites: Bool { !keys.isEmpty || !fileStages.isEmpty }

    /// The writes to commit.
    var batch: StoreBatch {
        StoreBatch(values: keys.values.map { ($0.key, $0.value) }, files: fileStages.values.map { ($0.name, $0.data) })
    }

    /// The versions the commit must still find (keys read by updates).
    var expectations: [(key: String, version: Int64)] {
        keys.values.compactMap { stage in stage.readVersion.map { (stage.key, $0) } }
    }

    // MARK: Reads

    /// The key's value as this call sees it: staged, else stored.
    func value(_ key: String) throws(StoreError) -> StoreValue? {
        if let stage = keys[ByteString(key)] { return stage.value }
        return try group.get(key)
    }

    /// The key's value for an update; reading the store records the version
    /// the commit must find.
    func valueForUpdate(_ key: String) throws(StoreError) -> StoreValue? {
        let id = ByteString(key)
        if let stage = keys[id] { return stage.value }
        let (value, version) = try group.entry(key)
        keys[id] = KeyStage(key: key, value: value, readVersion: version)
        return value
    }

    /// Stored keys with the staged ones laid over them, sorted by bytes.
    func keys(prefix: String) throws(StoreError) -> [String] {
        var result = Set(try group.keys(prefix: prefix).map(ByteString.init))
        for (id, stage) in keys where id.text.utf8.starts(with: prefix.utf8) {
            if stage.value == nil { result.remove(id) } else { result.insert(id) }
        }
        return result.sorted().map(\.text)
    }

    func file(_ name: String) throws(StoreError) -> [UInt8]? {
        if let stage = fileStages[ByteString(name)] { return stage.data }
        return try group.readFile(name)
    }

    func files() throws(StoreError) -> [String] {
        var result = Set(try group.files().map(ByteString.init))
        for (id, stage) in fileStages {
            if stage.data == nil { result.remove(id) } else { result.insert(id) }
        }
        return result.sorted().map(\.text)
    }

    // MARK: Writes

    /// Stages a set (nil: remove) or, with `transform`, the result of an update.
    func stage(_ key: String, _ value: StoreValue?, transform: LuaFunctionRef? = nil) throws(StoreError) {
        let size = value?.storageSize ?? 0
        try group.limits.checkValueSize(size, of: "value for key \(StoreText.quoted(key))")
        let id = ByteString(key)
        let cost = key.utf8.count + size + Self.operationCost
        // One hash lookup: an existing key's stage is changed in place.
        guard let index = keys.index(forKey: id) else {
            try charge(cost, key: key)
            var stage = KeyStage(key: key, value: value)
            stage.cost = cost
            keys[id] = stage
            return
        }
        let before = keys.values[index].cost
        let after = transform == nil ? cost : before + cost
        try charge(after - before, key: key)
        Self.record(&keys.values[index], value: value, transform: transform, cost: after)
    }

    private static func record(_ stage: inout KeyStage, value: StoreValue?, transform: LuaFunctionRef?, cost: Int) {
        if let transform {
            if stage.readVersion != nil { stage.transforms.append(transform) }
        } else {
            // A plain write makes the key's history irrelevant: its value no
            // longer depends on what the store held.
            stage.transforms = []
            stage.readVersion = nil
        }
        stage.cost = cost
        stage.value = value
    }

    func stageFile(_ name: String, _ data: [UInt8]?) throws(StoreError) {
        let size = data?.count ?? 0
        try group.limits.checkValueSize(size, of: "file \(StoreText.quoted(name))")
        let id = ByteString(name)
        let cost = name.utf8.count + size + Self.operationCost
        try charge(cost - (fileStages[id]?.cost ?? 0), key: nil)
        fileStages[id] = FileStage(name: name, data: data, cost: cost)
    }

    private func charge(_ bytes: Int, key: String?) throws(StoreError) {
        guard staged + bytes <= callLimit else {
            throw StoreError(.quotaExceeded, "this call's writes to group \(group.id) would pass \(callLimit) bytes, the limit of one call (64 bytes count for each operation); nothing will be written")
        }
        staged += bytes
    }

    // MARK: Replay

    /// Stages again every key whose log starts with an update: reads the
    /// current value and version, and runs the key's operations on it.
    /// A read that fails is reported through `failure`.
    func replay(failure: (StoreError) -> LuaError, _ run: (LuaFunctionRef, StoreValue?) throws(LuaError) -> StoreValue?) throws(LuaError) {
        for (id, stage) in keys where stage.readVersion != nil {
            var fresh = stage
            do { (fresh.value, fresh.readVersion) = try group.entry(stage.key) } catch {
                throw failure(error)
            }
            // The commit checks the new values' sizes.
            for transform in stage.transforms { fresh.value = try run(transform, fresh.value) }
            keys[id] = fresh
        }
    }
}
