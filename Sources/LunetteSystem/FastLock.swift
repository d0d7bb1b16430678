import CFastLock

/// A lock for short critical sections taken on every call: one atomic
/// exchange each way when uncontended (`CFastLock`), where an `NSLock` costs
/// ≈ 75 instructions a lock and unlock. Not recursive, as `NSLock`.
package final class FastLock: @unchecked Sendable {
    @usableFromInline let state: UnsafeMutablePointer<lunette_fast_lock>

    package init() {
        state = .allocate(capacity: 1)
        lunette_fast_lock_init(state)
    }

    deinit { state.deallocate() }

    // Inlinable: its users are in other modules (WidgetHost's call
    // canceller), where a generic `withLock` was not specialized (≈ 120
    // instructions a widget call in its unspecialized form).
    @inlinable package func lock() { lunette_fast_lock_lock(state) }
    @inlinable package func unlock() { lunette_fast_lock_unlock(state) }

    @inlinable package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lunette_fast_lock_lock(state)
        defer { lunette_fast_lock_unlock(state) }
        return try body()
    }
}
