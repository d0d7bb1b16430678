import CHostFastPaths
import LuaSandbox
import Logging
import SharedStore

/// The `store` module of scripts, over a `SharedStore`, with the rule that a
/// call is all or nothing.
///
/// A script's writes are staged in memory while its call runs and applied
/// when the call succeeds, one transaction per group, so readers never see
/// half of them; a call that fails (error, deadline, memory) applies none.
/// Reads see the call's own staged writes. No lock is held while script
/// code runs: the app can write while a widget computes.
///
/// `g:update(key, f)` reads the key's version as well as its value. If
/// another writer changed the key before the call commits, the commit is
/// refused, the call's writes are staged again from its log — each `f`
/// runs again on the new value, outside any lock — and the commit retried.
/// So no increment is lost, and `f` must depend only on its argument.
///
/// One `StoreBinding` serves one `LuaState` (and, like it, one thread).
public final class StoreBinding {
    /// Where the groups live.
    public let store: SharedStore
    /// The app groups scripts may open.
    public let grants: [String]
    /// Who the grants belong to, for errors: "bundle com.example.tasks".
    public let owner: String
    /// How to grant a group, appended to the error for an ungranted one.
    public let grantHint: String
    /// Commit attempts before a call whose updates keep conflicting fails.
    public var maxCommitAttempts = 32
    /// The host's log: the full text of database failures goes here (it
    /// names files on the host); scripts get a neutral message.
    public var logger: Logger

    /// Group ids by handle: group objects carry a small integer, so each
    /// method call finds its stage without string work.
    /// (It and `slots` are read by every operation, on the state's one
    /// thread: no run-time exclusivity checks.)
    @exclusivity(unchecked) private var handles: [String] = []
    /// This call's stages by handle (`openGroup` grows it with `handles`
    /// and `kept`; kept between calls, so no array is made per call).
    @exclusivity(unchecked) private var slots: [GroupStage?] = []
    /// The stages of earlier calls by handle, reset and used again: the
    /// group and its reader are found once, not on every call.
    @exclusivity(unchecked) private var kept: [GroupStage?] = []
    /// (It and the three below are set or read once or twice in every call,
    /// on the state's one thread, and never held across a call: no
    /// run-time exclusivity checks either.)
    @exclusivity(unchecked) private var active = false {
        didSet { callRunning.value.pointee = active ? 1 : 0 }
    }
    /// What the glue's `running()` returns, read in C
    /// (`lunette_store_running`): whether a call runs (`active`). The glue
    /// finds a granted group's handle without asking Swift only then.
    private let callRunning = RunningFlag()

    /// The flag's storage, owned by the binding and by the state's `running`
    /// function (its body keeps this alive): the C fast path can read it for
    /// as long as the state may call it.
    private final class RunningFlag {
        let value = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
        init() { value.initialize(to: 0) }
        deinit { value.deallocate() }
    }
    /// Why the last `perform`'s commit failed, when it did (`.conflict`:
    /// other writers changed what it read; running the call again may succeed).
    @exclusivity(unchecked) public private(set) var lastCommitFailure: StoreError.Code?
    /// Calls of the glue's `group` (tests: the glue finds a group it has seen
    /// without one while a call runs).
    package private(set) var groupLookups = 0
    /// `get` calls the C fast path answered (tests: which way a read went).
    @exclusivity(unchecked) package private(set) var getsAtHand = 0
    /// App groups asked for and refused since the last `beginCall()`.
    @exclusivity(unchecked) public private(set) var deniedGroups: [String] = []
    /// The state it is installed in (not retained, and no weak reference,
    /// which would slow every retain of the state: see `LuaState.Life`).
    private var life: LuaState.Life?

    public init(store: SharedStore, grants: [String], owner: String, grantHint: String = "",
                logger: Logger = Logger(label: "lunette.store")) {
        self.store = store
        self.grants = grants
        self.owner = owner
        self.grantHint = grantHint
        self.logger = logger
    }

    /// Gives `state` the global `store`.
    public func install(in state: LuaState) throws(LuaError) {
        life = state.life
        var module = LuaModule(name: "store")
        module.add("group") { [unowned self] args in try self.openGroup(args) }
        // Its common call (a key the call's transaction has at hand, a
        // value that is nil, a boolean or a number) is answered in C
        // (`lunette_store_get`, asking `scalarAtHand`): no Swift function
        // call, arguments or value conversion on the way.
        let getFastPath = GetFastPath(binding: self)
        // Not replayable: a read's answer depends on the moment (each
        // call, answered in C or not, is an effect).
        module.addReturningOne("get", fastPath: LuaFastPath(lunette_store_get, data: UnsafeMutableRawPointer(getFastPath.data))) {
            [unowned self, getFastPath] args in
            _ = getFastPath   // kept alive by this body, as long as the state may call get
            let (stage, key) = try self.stageAndKey(args)
            return try self.mapped(args) { () throws(StoreError) in try stage.value(key) }.map(\.lua) ?? .nil
        }
        module.add("set") { [unowned self] args in
            let (stage, key) = try self.stageAndKey(args)
            let value = try self.storeValue(args, 3)
            try self.mapped(args) { () throws(StoreError) in try stage.stage(key, value) }
            return []
        }
        module.add("remove") { [unowned self] args in
            let (stage, key) = try self.stageAndKey(args)
            try self.mapped(args) { () throws(StoreError) in try stage.stage(key, nil) }
            return []
        }
        module.add("keys") { [unowned self] args in
            let stage = try self.stage(args)
            let prefix = try args.isNil(2) ? "" : self.text(args, 2, what: "prefix")
            let keys = try self.mapped(args) { () throws(StoreError) in try stage.keys(prefix: prefix) }
            return [.table(LuaTable(array: keys.map { .string(LuaString($0)) }))]
        }
        module.add("update") { [unowned self] args in
            let (stage, key) = try self.stageAndKey(args)
            let transform = try args.function(3)
            let old = try self.mapped(args) { () throws(StoreError) in try stage.valueForUpdate(key) }
            let results = try args.call(3, [old?.lua ?? .nil])
            let new = try self.storeValue(results.first ?? .nil, args, position: nil)
            try self.mapped(args) { () throws(StoreError) in try stage.stage(key, new, transform: transform) }
            return [new?.lua ?? .nil]
        }
        module.add("readFile") { [unowned self] args in
            let stage = try self.stage(args)
            let name = try self.fileName(args)
            return [try self.mapped(args) { () throws(StoreError) in try stage.file(name) }.map { .string(LuaString(bytes: $0)) } ?? .nil]
        }
        module.add("writeFile") { [unowned self] args in
            let stage = try self.stage(args)
            let name = try self.fileName(args)
            let data = try args.string(3).bytes
            try self.mapped(args) { () throws(StoreError) in try stage.stageFile(name, data) }
            return []
        }
        module.add("removeFile") { [unowned self] args in
            let stage = try self.stage(args)
            let name = try self.fileName(args)
            try self.mapped(args) { () throws(StoreError) in try stage.stageFile(name, nil) }
            return []
        }
        module.add("files") { [unowned self] args in
            let stage = try self.stage(args)
            let names = try self.mapped(args) { () throws(StoreError) in try stage.files() }
            return [.table(LuaTable(array: names.map { .string(LuaString($0)) }))]
        }
        module.add("seal") { args in
            try args.seal(table: 1, name: "store group")
            return []
        }
        let running = callRunning
        module.addReturningOne("running", fastPath: LuaFastPath(lunette_store_running, data: UnsafeMutableRawPointer(running.value))) { _ in
            .boolean(running.value.pointee != 0)
        }
        try state.register(module, glue: Self.glue)
    }

    /// The `get` fast path's data (`lunette_store_get_data`), owned by the
    /// state's `get` function (its body keeps this alive); its context is
    /// this object, which reaches the binding unowned, as the bodies do.
    private final class GetFastPath {
        unowned let binding: StoreBinding
        let data = UnsafeMutablePointer<lunette_store_get_data>.allocate(capacity: 1)
        init(binding: StoreBinding) {
            self.binding = binding
            data.initialize(to: lunette_store_get_data(lookup: GetFastPath.lookup, context: nil))
            data.pointee.context = Unmanaged.passUnretained(self).toOpaque()
        }
        deinit { data.deallocate() }

        static let lookup: lunette_store_lookup_fn = { context, handle, key, length, out in
            guard let context, let key, let out else { return -1 }
            let fast = Unmanaged<GetFastPath>.fromOpaque(context).takeUnretainedValue()
            return fast.binding.scalarAtHand(handle, UnsafeBufferPointer(start: UnsafeRawPointer(key).assumingMemoryBound(to: UInt8.self), count: length), out)
        }
    }

    /// `get(handle, key)` answered without the database: while a call
    /// runs, from the group's stage (`knownStage`, as `openStage` finds it), when the key
    /// is at hand (`GroupStage.valueAtHand`: no key staged, the key the
    /// transaction's last read) and its value is nil, a boolean or a number;
    /// -1 otherwise, and the Swift body answers (with its checks and
    /// errors: a key at hand passed them when it was read).
    fileprivate func scalarAtHand(_ handle: Int64, _ key: UnsafeBufferPointer<UInt8>, _ out: UnsafeMutablePointer<lunette_store_scalar>) -> Int32 {
        guard active, handle >= 0, handle < handles.count, let stage = knownStage(Int(handle)) else { return -1 }
        let (found, value) = stage.valueAtHand(key: key)
        guard found else { return -1 }
        switch value {
        case nil:
            out.pointee.kind = LUNETTE_SCALAR_NIL
        case .boolean(let b)?:
            out.pointee.kind = LUNETTE_SCALAR_BOOLEAN
            out.pointee.integer = b ? 1 : 0
        case .integer(let i)?:
            out.pointee.kind = LUNETTE_SCALAR_INTEGER
            out.pointee.integer = i
        case .double(let d)?:
            out.pointee.kind = LUNETTE_SCALAR_FLOAT
            out.pointee.number = d
        default:
            return -1
        }
        getsAtHand &+= 1
        return 0
    }

    /// Starts a call's record: forgets `deniedGroups` and
    /// `lastCommitFailure`. Call it at the start of each call, before
    /// main.lua runs. (Group objects are made once per state: they hold
    /// nothing, so a later call gets the same ones; see Store/store.lua.)
    public func beginCall() {
        if !deniedGroups.isEmpty { deniedGroups = [] }
        lastCommitFailure = nil
    }

    // MARK: Calls

    /// Runs `call` (a script call on the installed state) with a fresh stage:
    /// commits the staged writes when it succeeds, drops them when it throws.
    /// A commit that fails makes the call fail with a runtime error.
    ///
    /// `attached` gives rows of another kind to commit in the same
    /// transaction as the writes to their group (a call's Live Activity
    /// changes); it is asked once the call has succeeded.
    public func perform<R>(attaching attached: (any StoreAttachment)? = nil,
                           _ call: () throws(LuaError) -> R) throws(LuaError) -> R {
        precondition(!active, "StoreBinding.perform does not nest")
        active = true
        defer {
            active = false
            for i in slots.indices {
                slots[i]?.reset()
                slots[i] = nil
            }
        }
        lastCommitFailure = nil
        let result: R
        do { result = try call() } catch {
            endReads()
            throw error
        }
        // The call's reads shared a read transaction per group; the commit
        // (and the app, meanwhile) reads the latest data.
        endReads()
        var extra: (group: String, write: ActivityWrite)?
        if let attached {
            do { extra = try attached.attachedWrite() } catch { throw commitFailure(error, group: attached.attachmentGroup) }
        }
        try commit(attaching: extra)
        return result
    }

    private func endReads() {
        for stage in slots { stage?.endReads() }
    }

    /// Commits every touched group; replays the log of one whose updates conflicted.
    private func commit(attaching extra: (group: String, write: ActivityWrite)?) throws(LuaError) {
        // Most calls only read: nothing to commit, and no map, list or
        // sort to make on their way out (≈ 1 k instructions a widget call).
        if extra == nil && !slots.contains(where: { $0?.hasWrites == true }) { return }
        try commitWrites(attaching: extra)
    }

    /// `commit`'s writing part, out of line (most calls write nothing).
    @inline(never)
    private func commitWrites(attaching extra: (group: String, write: ActivityWrite)?) throws(LuaError) {
        var stages: [String: GroupStage] = [:]
        for stage in slots.compactMap({ $0 }) where stage.hasWrites { stages[stage.group.id] = stage }
        var ids = Array(stages.keys)
        if let extra, stages[extra.group] == nil { ids.append(extra.group) }
        // One group after another, in order of their ids (docs/store.md);
        // attached rows go with their group's writes, in one transaction.
        for id in ids.sorted() {
            let attached = extra?.group == id ? extra?.write : nil
            guard let stage = stages[id] else {
                do { try store.group(id).commit(StoreBatch(activities: attached)) } catch {
                    throw commitFailure(error, group: id)
                }
                continue
            }
            var attempt = 0
            while true {
                attempt += 1
                let outcome: StoreCommitOutcome
                var batch = stage.batch
                batch.activities = attached
                do { outcome = try stage.group.commit(batch, expecting: stage.expectations) } catch {
                    throw commitFailure(error, group: id)
                }
                guard case .conflict(let keys) = outcome else { break }
                guard attempt < maxCommitAttempts else {
                    lastCommitFailure = .conflict
                    throw Self.commitError("store group \(id): updates of \(keys.map { StoreText.quoted($0) }.joined(separator: ", ")) kept conflicting with other writers (\(attempt) attempts); nothing was written")
                }
                try replay(stage)
            }
        }
    }

    /// A commit that failed: remembered by its code (`lastCommitFailure`),
    /// raised with the message the script may see.
    private func commitFailure(_ error: StoreError, group: String) -> LuaError {
        lastCommitFailure = error.code
        return Self.commitError(scriptMessage(error, group: group))
    }

    /// Runs the conflicting updates' transforms again on the current values.
    private func replay(_ stage: GroupStage) throws(LuaError) {
        guard let state = life?.state else { throw Self.commitError("store: the Lua state is gone") }
        let failure = { (error: StoreError) -> LuaError in Self.commitError(self.scriptMessage(error, group: stage.group.id)) }
        try stage.replay(failure: failure) { (transform, old) throws(LuaError) -> StoreValue? in
            let results = try state.call(transform, [old?.lua ?? .nil])
            do { return try StoreValue(lua: results.first ?? .nil) } catch let error as StoreError {
                throw Self.commitError(self.scriptMessage(error, group: stage.group.id))
            } catch {
                throw Self.commitError("\(error)")
            }
        }
    }

    private static func commitError(_ message: String) -> LuaError {
        .runtime(LuaRuntimeError(message: "store commit failed: \(message)"))
    }

    // MARK: Arguments

    private func openGroup(_ args: LuaArguments) throws -> [LuaValue] {
        groupLookups += 1
        guard args.typeName(1) == "string", let id = try? args.string(1).string else {
            return [.nil, .string("bad argument #1 to 'store.group' (app-group id expected, got \(args.typeName(1)))")]
        }
        guard grants.contains(id) else {
            deniedGroups.append(id)
            let listed = grants.isEmpty ? "no app groups" : "only " + grants.joined(separator: ", ")
            return [.nil, .string("store.group: app group \(StoreText.quoted(id)) is not granted to \(owner), which has \(listed)\(grantHint.isEmpty ? "" : " (\(grantHint))")")]
        }
        let handle = handles.firstIndex(of: id) ?? {
            handles.append(id)
            slots.append(nil)
            kept.append(nil)
            return handles.count - 1
        }()
        do { _ = try openStage(handle) } catch { return [.nil, .string("store.group: \(error.message)")] }
        return [.integer(Int64(handle)), .string(id)]
    }

    /// The call's stage of the group with `handle`, opening the group on first use.
    private func openStage(_ handle: Int) throws(LuaFunctionError) -> GroupStage {
        guard active else { throw LuaFunctionError("store: the store is open only during a call") }
        if let stage = knownStage(handle) { return stage }
        let id = handles[handle]
        do {
            let stage = GroupStage(group: try store.group(id), callLimit: store.limits.callBytes)
            slots[handle] = stage
            kept[handle] = stage
            return stage
        } catch {
            throw LuaFunctionError(scriptMessage(error, group: id))
        }
    }

    /// While a call runs: its stage of the group with `handle`, or an
    /// earlier call's, which it then takes (in `slots`: the call's end ends
    /// its reads and resets it); nil when the group has none yet.
    @inline(__always)
    private func knownStage(_ handle: Int) -> GroupStage? {
        if let stage = slots[handle] { return stage }
        guard let stage = kept[handle] else { return nil }
        slots[handle] = stage
        return stage
    }

    private func stage(_ args: LuaArguments) throws(LuaFunctionError) -> GroupStage {
        // The handle comes from a group object, which only a granted store.group makes.
        guard let handle = try? args.integer(1), handle >= 0, handle < handles.count else {
            throw LuaFunctionError("store: not a group handle")
        }
        return try openStage(Int(handle))
    }

    /// Runs a store operation; its error is raised in the script at the caller's line.
    private func mapped<R>(_ args: LuaArguments, _ body: () throws(StoreError) -> R) throws(LuaFunctionError) -> R {
        do { return try body() } catch {
            let group = (try? args.integer(1)).flatMap { $0 >= 0 && $0 < handles.count ? handles[Int($0)] : nil } ?? "?"
            throw LuaFunctionError(scriptMessage(error, group: group))
        }
    }

    /// What a script may read of a store failure. The script's own mistakes
    /// (names, values, sizes, quotas, conflicts) are its to see; failures of
    /// the database itself name files on the host, so the script gets a
    /// neutral message and the host's log the full one.
    func scriptMessage(_ error: StoreError, group: String) -> String {
        Self.scriptMessage(error, subject: "the store of app group \(StoreText.quoted(group))", logger: logger,
                           metadata: ["owner": "\(owner)", "group": "\(group)"])
    }

    /// What a script may read of a store failure about `subject` (the same
    /// rule for keys, files and Live Activity rows): the script's own
    /// mistakes in full; database failures, which name files on the host,
    /// as a neutral message, with the full text in `logger`.
    static func scriptMessage(_ error: StoreError, subject: String, logger: Logger, metadata: Logger.Metadata) -> String {
        let reason: String
        switch error.code {
        case .invalidName, .invalidValue, .valueTooLarge, .quotaExceeded, .conflict:
            return error.message
        case .notAStore: reason = "its database is not a Lunette store"
        case .corruptValue: reason = "a stored value does not decode"
        case .noSuchGroup: reason = "it has no store yet"
        case .busy: reason = "its database stayed locked by another process"
        case .database: reason = "database error"
        }
        logger.error("store failure", metadata: metadata.merging(["code": "\(error.code)", "error": "\(error.message)"]) { $1 })
        return "\(subject) is unavailable (\(reason)); the host's log has the details"
    }

    private func stageAndKey(_ args: LuaArguments) throws(LuaFunctionError) -> (GroupStage, String) {
        let stage = try stage(args)
        let key = try text(args, 2, what: "key")
        if let problem = StoreText.keyProblem(key) {
            throw args.badArgument(2, "invalid key \(StoreText.quoted(key)): \(problem)")
        }
        return (stage, key)
    }

    private func text(_ args: LuaArguments, _ n: Int, what: String) throws(LuaFunctionError) -> String {
        guard args.isString(n) else {
            throw args.badArgument(n, "\(what) must be a string, got \(args.typeName(n))")
        }
        guard let text = try? args.text(n) else {
            throw args.badArgument(n, "\(what) \(StoreText.quoted(try args.string(n).bytes)) is not valid UTF-8")
        }
        return text
    }

    private func fileName(_ args: LuaArguments) throws(LuaFunctionError) -> String {
        let name = try text(args, 2, what: "file name")
        if let problem = StoreText.fileNameProblem(name) {
            throw args.badArgument(2, "invalid file name \(StoreText.quoted(name)): \(problem)")
        }
        return name
    }

    private func storeValue(_ args: LuaArguments, _ n: Int) throws(LuaFunctionError) -> StoreValue? {
        try storeValue(try args.value(n), args, position: n)
    }

    private func storeValue(_ value: LuaValue, _ args: LuaArguments, position: Int?) throws(LuaFunctionError) -> StoreValue? {
        do { return try StoreValue(lua: value) } catch {
            if let position { throw args.badArgument(position, error.message) }
            throw LuaFunctionError("\(args.functionName): the transform's result: \(error.message)")
        }
    }

    // MARK: Glue

    /// Builds `store.group(id)` objects with methods over the Swift
    /// functions (Store/store.lua).
    static let glue = HostGlue.source(PackageResources.store_lua, name: "store")

}

/// Rows a call commits together with its store writes to one group (a
/// call's Live Activity changes: `ActivityManager`).
public protocol StoreAttachment: AnyObject {
    /// The group the rows go to.
    var attachmentGroup: String { get }
    /// The group and the rows to write there; nil when there is nothing.
    func attachedWrite() throws(StoreError) -> (group: String, write: ActivityWrite)?
}
