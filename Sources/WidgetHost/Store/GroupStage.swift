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
        /// Bytes charged to the call's staging limit for this key (−1: a
        /// stage being made, not yet charged).
        var cost = 0
    }

    private struct FileStage {
        var name: String
        var data: [UInt8]?
        var cost: Int
    }

    let group: StoreGroup
    /// The call's reads of the group, sharing one read transaction.
    private let reader: StoreCallReader
    let callLimit: Int
    /// The keys' stages in the order the call first touched them, which is
    /// the order the commit writes them; `positions` finds one by key.
    /// (These, and the files' stages, are touched by the call's one thread
    /// only — several times per operation, and at every call's commit and
    /// reset: no run-time exclusivity checks.)
    @exclusivity(unchecked) private var stages: [KeyStage] = []
    @exclusivity(unchecked) private var positions: [ByteString: Int] = [:]
    @exclusivity(unchecked) private var fileStages: [ByteString: FileStage] = [:]
    @exclusivity(unchecked) private var staged = 0
    static let operationCost = 64

    init(group: StoreGroup, callLimit: Int) {
        self.group = group
        reader = StoreCallReader(group: group)
        self.callLimit = callLimit
    }

    /// Ends the call's read transaction: before its commit, and when it fails.
    func endReads() { reader.end() }

    /// Forgets the call's stages (when the call ends), so the next call of
    /// the same binding can use this object again. Ends its reads first: a
    /// transform run again at commit (`replay`) may have read after
    /// `endReads`, and a transaction left open would be this reader's in the
    /// next call, which would then read that old snapshot (a reader freed
    /// with its stage ended it in `deinit`). Keeps the arrays' room only
    /// when it is small: a call may stage thousands of keys, and the stage
    /// lives as long as its binding.
    func reset() {
        reader.end()
        stages.removeAll(keepingCapacity: stages.capacity <= 64)
        positions.removeAll(keepingCapacity: positions.capacity <= 64)
        if !fileStages.isEmpty { fileStages.removeAll() }
        staged = 0
    }

    var hasWrites: Bool { !stages.isEmpty || !fileStages.isEmpty }

    /// The writes to commit.
    var batch: StoreBatch {
        StoreBatch(values: stages.map { ($0.key, $0.value) }, files: fileStages.values.map { ($0.name, $0.data) })
    }

    /// The versions the commit must still find (keys read by updates).
    var expectations: [(key: String, version: Int64)] {
        stages.compactMap { stage in stage.readVersion.map { (stage.key, $0) } }
    }

    // MARK: Reads

    /// The key's value as this call sees it: staged, else stored. The caller
    /// has checked the key (`StoreText.keyProblem`).
    func value(_ key: String) throws(StoreError) -> StoreValue? {
        if !positions.isEmpty, let i = positions[ByteString(key)] { return stages[i].value }
        return try reader.entry(checkedKey: key).value
    }

    /// The value of the key whose bytes are `key` when it is at hand
    /// (`StoreGroup.valueAtHand`) and the call staged no key: `found` false
    /// otherwise, and the caller reads it through `value(_:)`.
    func valueAtHand(key: UnsafeBufferPointer<UInt8>) -> (found: Bool, value: StoreValue?) {
        guard positions.isEmpty else { return (false, nil) }
        return reader.valueAtHand(key: key)
    }

    /// The key's value for an update; reading the store records the version
    /// the commit must find.
    func valueForUpdate(_ key: String) throws(StoreError) -> StoreValue? {
        let id = ByteString(key)
        if let i = positions[id] { return stages[i].value }
        let (value, version) = try reader.entry(checkedKey: key)
        positions[id] = stages.count
        stages.append(KeyStage(key: key, value: value, readVersion: version))
        return value
    }

    /// Stored keys with the staged ones laid over them, sorted by bytes.
    func keys(prefix: String) throws(StoreError) -> [String] {
        var result = Set(try reader.keys(prefix: prefix).map(ByteString.init))
        for stage in stages where stage.key.utf8.starts(with: prefix.utf8) {
            let id = ByteString(stage.key)
            if stage.value == nil { result.remove(id) } else { result.insert(id) }
        }
        return result.sorted().map(\.text)
    }

    func file(_ name: String) throws(StoreError) -> [UInt8]? {
        if let stage = fileStages[ByteString(name)] { return stage.data }
        return try reader.readFile(checkedName: name)
    }

    func files() throws(StoreError) -> [String] {
        var result = Set(try reader.files().map(ByteString.init))
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
        // One hash lookup: the key's stage is changed in place, a new key's
        // made at the end (marked by cost −1 until charged) and taken out
        // again if the charge is refused. (A lookup, then an insert for a
        // new key, costs ≈ 1 k instructions more a set: 6% of a set from Lua.)
        let next = stages.count
        let i = Self.value(&positions[id, default: next])
        if i == next { stages.append(KeyStage(key: key, cost: -1)) }
        if let refused = record(&stages[i], value: value, transform: transform, cost: cost) {
            if stages[i].cost == -1 {
                stages.removeLast()
                positions[id] = nil
            }
            throw refused
        }
    }

    /// Reads a dictionary slot through its `modify` accessor, which inserts
    /// the default of `dictionary[key, default:]` when the key is new: a
    /// lookup and an insert in one hash.
    private static func value(_ slot: inout Int) -> Int { slot }

    /// Charges the operation and records it in `stage`; the error, with
    /// `stage` unchanged, when the call's staging limit refuses it.
    private func record(_ stage: inout KeyStage, value: StoreValue?, transform: LuaFunctionRef?, cost: Int) -> StoreError? {
        let before = max(stage.cost, 0)
        // An update adds to the key's log; a plain write replaces it.
        let after = transform == nil ? cost : before + cost
        do { try charge(after - before, key: stage.key) } catch { return error }
        if let transform {
            if stage.readVersion != nil { stage.transforms.append(transform) }
        } else {
            // A plain write makes the key's history irrelevant: its value no
            // longer depends on what the store held.
            stage.transforms = []
            stage.readVersion = nil
        }
        stage.cost = after
        stage.value = value
        return nil
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
        for (i, stage) in stages.enumerated() where stage.readVersion != nil {
            var fresh = stage
            do { (fresh.value, fresh.readVersion) = try group.entry(stage.key) } catch {
                throw failure(error)
            }
            // The commit checks the new values' sizes.
            for transform in stage.transforms { fresh.value = try run(transform, fresh.value) }
            stages[i] = fresh
        }
    }
}
