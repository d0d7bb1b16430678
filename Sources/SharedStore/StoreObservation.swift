import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// What changed in a group.
public struct StoreChange: Sendable, Equatable {
    /// The group's id.
    public var group: String
    /// The group's sequence number after the change.
    public var sequence: Int64
    /// Keys set or removed, sorted by their bytes.
    public var keys: [String]
    /// Files written or removed, sorted by their bytes.
    public var files: [String]
    /// Bundles whose Live Activities changed (their rows, pushes or
    /// enabled flag), sorted.
    public var activities: [String] = []
    /// False when the observer fell behind the store's change log (it keeps
    /// the last 1024 commits): then anything may have changed, so read again.
    public var isComplete: Bool
    /// True for writes made through the observed `StoreGroup` object itself.
    public var isLocal: Bool
}

/// Keeps an observation alive; cancel it, or let it go, to stop.
public final class StoreObservation: @unchecked Sendable {
    private let cancelAction: () -> Void
    private let lock = FastLock()
    private var cancelled = false

    init(cancel: @escaping () -> Void) { cancelAction = cancel }

    public func cancel() {
        lock.lock()
        let first = !cancelled
        cancelled = true
        lock.unlock()
        if first { cancelAction() }
    }

    deinit { cancel() }
}

/// The observers of one `StoreGroup`: local writes are delivered at once,
/// other writers' by a poller that reads SQLite's data_version on its own
/// connection (cheap: no file read when nothing changed) and then the
/// change log.
final class StoreObservers: @unchecked Sendable {
    private struct Observer {
        let handler: @Sendable (StoreChange) -> Void
    }

    let group: String
    let path: String
    private let lock = FastLock()
    private var observers: [Int: Observer] = [:]
    private var nextID = 0
    private var lastSeen: Int64 = 0
    private var localSequences = Set<Int64>()
    private var poller: DispatchSourceTimer?
    private var pollDatabase: StoreDatabase?
    private var lastDataVersion: Int64 = -1
    private let queue: DispatchQueue

    init(group: String, path: String) {
        self.group = group
        self.path = path
        queue = DispatchQueue(label: "lunette.store.observe.\(group)")
    }

    func add(interval: Duration, sequence: Int64, _ handler: @escaping @Sendable (StoreChange) -> Void) throws(StoreError) -> StoreObservation {
        lock.lock()
        defer { lock.unlock() }
        if poller == nil {
            let database = try StoreDatabase(path: path, group: group, create: false, durability: .processCrash)
            pollDatabase = database
            lastDataVersion = try database.dataVersion()
            lastSeen = sequence
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let nanos = max(1_000_000, Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000))
            timer.schedule(deadline: .now() + .nanoseconds(nanos), repeating: .nanoseconds(nanos), leeway: .milliseconds(1))
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.resume()
            poller = timer
        }
        let id = nextID
        nextID += 1
        observers[id] = Observer(handler: handler)
        return StoreObservation { [weak self] in self?.remove(id) }
    }

    private func remove(_ id: Int) {
        lock.lock()
        observers[id] = nil
        var stopped: DispatchSourceTimer?
        if observers.isEmpty {
            stopped = poller
            poller = nil
        }
        lock.unlock()
        stopped?.cancel()
        // The poll connection closes on the queue, after any poll in flight.
        if stopped != nil { queue.async { [weak self] in self?.closePollConnectionIfIdle() } }
    }

    private func closePollConnectionIfIdle() {
        lock.lock()
        if poller == nil { pollDatabase = nil }
        lock.unlock()
    }

    /// After a commit through the observed object: tell observers now.
    func deliverLocal(_ writer: StoreWriter) {
        guard writer.hasChanges else { return }
        lock.lock()
        guard !observers.isEmpty else { lock.unlock(); return }
        localSequences.insert(writer.sequence)
        let handlers = observers.values.map(\.handler)
        lock.unlock()
        let change = StoreChange(group: group, sequence: writer.sequence, keys: Self.sortedUnique(writer.changedKeys),
                                 files: Self.sortedUnique(writer.changedFiles), activities: Self.sortedUnique(writer.changedActivities),
                                 isComplete: true, isLocal: true)
        for handler in handlers { handler(change) }
    }

    /// On the poll queue: has anyone else committed? Then read the log.
    private func poll() {
        lock.lock()
        guard let database = pollDatabase, poller != nil else { lock.unlock(); return }
        let since = lastSeen
        lock.unlock()
        // The poll connection is used only on this queue.
        guard let version = try? database.dataVersion(), version != lastDataVersion else { return }
        lastDataVersion = version
        guard let log = try? database.changes(after: since), let current = try? database.sequence() else { return }
        lock.lock()
        let local = localSequences
        let logged = Set(log.map(\.seq))
        let foreign = log.filter { !local.contains($0.seq) }
        // Sequences neither logged nor ours were pruned from the log before we read it.
        let missed = current > since && (since + 1...current).contains { !logged.contains($0) && !local.contains($0) }
        lastSeen = max(since, current)
        localSequences = localSequences.filter { $0 > lastSeen }
        let handlers = observers.values.map(\.handler)
        lock.unlock()
        guard !foreign.isEmpty || missed else { return }
        let change = StoreChange(group: group, sequence: current,
                                 keys: Self.sortedUnique(foreign.flatMap(\.keys)),
                                 files: Self.sortedUnique(foreign.flatMap(\.files)),
                                 activities: Self.sortedUnique(foreign.flatMap(\.activities)),
                                 isComplete: !missed, isLocal: false)
        for handler in handlers { handler(change) }
    }

    static func sortedUnique(_ names: [String]) -> [String] {
        Set(names.map(ByteString.init)).sorted().map(\.text)
    }
}
