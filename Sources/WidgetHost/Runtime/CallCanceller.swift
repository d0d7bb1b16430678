#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox
import SharedStore

/// Ends the call a runtime is running, from any thread: a task's
/// cancellation handler, a supervisor. The call stops as at its deadline
/// (status `timeout`, its message "cancelled by the host after … ms"); its
/// store writes and activity changes are not committed.
///
/// Inside a `cancellable` scope (a host operation that may make several
/// calls), a cancel also stops the calls that would start after it, until
/// the scope ends; outside one, it affects only the call running now.
public final class CallCanceller: @unchecked Sendable {
    private let lock = FastLock()
    /// The call now running: an in-process call's handle, or a worker's
    /// cancel (at most one is set). The handle is kept as it is, not wrapped
    /// in a closure: a provider call sets it, and a closure would be an
    /// allocation on every call.
    private var currentHandle: LuaCancelHandle?
    private var currentCancel: (() -> Bool)?
    private var inScope = false
    private var requested = false

    public init() {}

    /// Cancels the running call, if any, and the calls the current scope
    /// would still make. True when a call was running.
    @discardableResult
    public func cancel() -> Bool {
        lock.lock()
        if inScope { requested = true }
        let (handle, cancel) = (currentHandle, currentCancel)
        lock.unlock()
        if let handle { return handle.cancel() }
        return cancel?() ?? false
    }

    /// Runs `body` as one cancellable operation.
    public func scope<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.withLock { inScope = true; requested = false }
        defer { lock.withLock { inScope = false; requested = false } }
        return try body()
    }

    /// True when the current scope was cancelled: calls should not start.
    var isCancelled: Bool { lock.withLock { requested } }

    /// The call now running (nil: none).
    func running(_ handle: LuaCancelHandle?) {
        lock.withLock {
            currentHandle = handle
            currentCancel = nil
        }
    }

    /// The call now running ends with `cancel` (a worker's: it kills the
    /// worker). A cancel of the scope that came before it, while the call
    /// was getting ready (its worker starting), ends it at once.
    func running(cancel: @escaping () -> Bool) {
        let already = lock.withLock { () -> Bool in
            currentHandle = nil
            currentCancel = cancel
            return requested
        }
        if already { _ = cancel() }
    }
}
