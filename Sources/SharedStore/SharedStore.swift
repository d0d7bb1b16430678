#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem

/// The root of the app-group stores: one directory with a folder per group.
///
/// ```
/// <root>/<group id>/store.sqlite        the group's keys, values and files
///                   store.sqlite-wal    SQLite's write-ahead log
///                   store.sqlite-shm    SQLite's shared index of the log
/// ```
///
/// The root is, in order: the `root` given, `$LUNETTE_STORE`, or
/// `~/.lunette/store`. Opening a group twice from one `SharedStore` gives the
/// same object; several processes (or several `SharedStore`s) may open the
/// same group at once.
public final class SharedStore: @unchecked Sendable {
    /// The directory holding one folder per group.
    public let root: String
    public let limits: StoreLimits
    public let durability: StoreDurability

    private let lock = FastLock()
    private var groups: [String: StoreGroup] = [:]
    private let scopeOwner = ReadScope.Owner()

    /// The longest a commit waits for another connection's lock, in seconds
    /// (SQLite's busy timeout): a host that kills calls at a deadline gives
    /// a call's commit this long first.
    public static let lockWaitSeconds = Double(StoreDatabase.busyTimeoutMs) / 1000

    /// The database file of each group, under its folder.
    public static let databaseName = "store.sqlite"

    public init(root: String? = nil, limits: StoreLimits = .default, durability: StoreDurability = .processCrash,
                environment: [String: String]? = nil) {
        self.root = SharedStore.resolveRoot(root, environment: environment)
        self.limits = limits
        self.durability = durability
    }

    /// `explicit`, else `$LUNETTE_STORE`, else `~/.lunette/store`. The
    /// variables come from `environment`, or when it is nil from the
    /// process's own (read one by one: `ProcessInfo`'s environment copies all
    /// of it into a dictionary, ≈ 0.4 M instructions at a command's start).
    public static func resolveRoot(_ explicit: String?, environment: [String: String]? = nil) -> String {
        func variable(_ name: String) -> String? {
            if let environment { return environment[name] }
            return getenv(name).map { String(cString: $0) }
        }
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = variable("LUNETTE_STORE"), !fromEnvironment.isEmpty { return fromEnvironment }
        let home = variable("HOME").flatMap { $0.isEmpty ? nil : $0 } ?? FileManager.default.homeDirectoryForCurrentUser.path
        return home + "/.lunette/store"
    }

    /// The database path of group `id` (whether or not it exists).
    public func databasePath(of id: String) -> String {
        root + "/" + id + "/" + SharedStore.databaseName
    }

    /// True when group `id` has a database.
    public func exists(_ id: String) -> Bool {
        FileManager.default.fileExists(atPath: databasePath(of: id))
    }

    /// Opens group `id`, creating its folder and database when `create`
    /// (otherwise a missing group is a `.noSuchGroup` error).
    public func group(_ id: String, create: Bool = true) throws(StoreError) -> StoreGroup {
        // Checked before the lookup: String keys compare by canonical
        // equivalence, so a non-ASCII id could find an open ASCII group.
        if let problem = StoreText.groupProblem(id) {
            throw StoreError(.invalidName, "invalid app-group id \(StoreText.quoted(id)): \(problem)")
        }
        lock.lock()
        defer { lock.unlock() }
        if let open = groups[id] { return open }
        let path = databasePath(of: id)
        if !FileManager.default.fileExists(atPath: path) {
            guard create else {
                throw StoreError(.noSuchGroup, "app group \(id) has no store yet (\(path) does not exist)")
            }
            do {
                try FileManager.default.createDirectory(atPath: root + "/" + id, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError(.database, "cannot create the store folder \(root)/\(id): \(errorText(error))")
            }
        }
        let group = try StoreGroup(id: id, path: path, create: create, limits: limits, durability: durability, scopeOwner: scopeOwner)
        groups[id] = group
        return group
    }

    /// Runs `body`, in which script calls on this thread hand their read
    /// transactions on: a call's transaction stays open when it returns,
    /// and the next call takes it over if nothing was committed since (by
    /// any connection or process, as SQLite's WAL index shows), which spares
    /// the two system calls of a new read lock. What a call reads is the
    /// same either way. When the scope ends, so does every transaction kept
    /// in it; out of one, each call's transaction ends with the call. Scopes
    /// nest (the outermost one ends them). For a host that runs calls in
    /// batches: the timeline engine runs each instant's reloads in one.
    public func reusingReadTransactions<R>(_ body: () throws -> R) rethrows -> R {
        if ReadScope.of(scopeOwner) != nil { return try body() }
        let scope = ReadScope(owner: scopeOwner)
        defer { scope.end() }
        return try ReadScope.$current.withValue(ReadScope.current + [scope]) { try body() }
    }

    /// `body` inside `store`'s `reusingReadTransactions`, or just `body`
    /// when there is no store (for hosts whose store is optional).
    public static func reusingReadTransactions<R>(of store: SharedStore?, _ body: () throws -> R) rethrows -> R {
        guard let store else { return try body() }
        return try store.reusingReadTransactions(body)
    }

    /// Ids of the groups under the root, sorted.
    public func groupIDs() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return names.filter { StoreText.groupProblem($0) == nil && exists($0) }.sorted()
    }
}
