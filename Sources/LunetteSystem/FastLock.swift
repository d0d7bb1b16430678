import CFastLock

/// A lock for short critical sections taken on every call: one atomic
/// exchange each way when uncontended (`CFastLock`), where an `NSLock` costs
/// ≈ 75 instructions a lock and unlock. Not recursive, as `NSLock`.
///
/// Public, not `package`, though only this package uses it: Swift 6.3
/// does not inline a `package` function's `@inlinable` body into another
/// module (checked on a two-module package: the calls stay), and the
/// generic `withLock` then runs unspecialized (≈ 40 instructions a use,
/// three uses a widget call).
public final class FastLock: @unchecked Sendable {
    @usableFromInline let state: UnsafeMutablePointer<lunette_fast_lock>

    public init() {
        state = .allocate(capacity: 1)
        lunette_fast_lock_init(state)
    }

    deinit { state.deallocate() }

    // Inlinable (and public, above): its users are in other modules (the
    // call canceller, the store's read scope).
    @inlinable public func lock() { lunette_fast_lock_lock(state) }
    @inlinable public func unlock() { lunette_fast_lock_unlock(state) }

    @inlinable public func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lunette_fast_lock_lock(state)
        defer { lunette_fast_lock_unlock(state) }
        return try body()
    }
}
