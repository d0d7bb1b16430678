#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// One `SharedStore.reusingReadTransactions` scope: the groups whose read
/// transactions calls parked in it, ended with it.
///
/// The scopes a thread is in are a task-local value, so a call finds its
/// own scope, not another thread's: a transaction is parked only by a call
/// inside a scope, and only until that scope ends. (Task-local values can be
/// bound and read in synchronous code; tasks started inside a scope inherit
/// it, and a scope refuses what comes after its end.)
final class ReadScope: @unchecked Sendable {
    /// The store the scope is for (its `ReadScope.Owner`).
    let owner: Owner
    private let lock = FastLock()
    /// (Both only under `lock`: no run-time exclusivity checks.)
    @exclusivity(unchecked) private var parked: [StoreGroup] = []
    @exclusivity(unchecked) private var ended = false

    /// Stands for a `SharedStore` in the scopes a thread is in.
    final class Owner: Sendable {}

    @TaskLocal static var current: [ReadScope] = []

    init(owner: Owner) { self.owner = owner }

    /// The scope of `owner`'s store this thread is in, if any.
    static func of(_ owner: Owner) -> ReadScope? {
        current.first { $0.owner === owner }
    }

    /// Notes that `group` parked a transaction in this scope; false when the
    /// scope has ended (then the caller ends the transaction instead).
    func record(_ group: StoreGroup) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if ended { return false }
        if !parked.contains(where: { $0 === group }) { parked.append(group) }
        return true
    }

    /// Ends the scope and every transaction parked in it.
    func end() {
        let groups = lock.withLock { () -> [StoreGroup] in
            ended = true
            defer { parked = [] }
            return parked
        }
        for group in groups { group.endParkedRead() }
    }
}
