import CLuaShims
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// Ends a state's running call from any thread — a task's cancellation
/// handler, a supervisor — as its deadline would: the call stops within
/// milliseconds, even in a loop inside `pcall`, and fails with a timeout
/// marked `cancelled`. A call that is not running is not affected; the
/// handle does nothing once its state is gone.
public final class LuaCancelHandle: @unchecked Sendable {
    private let lock = FastLock()
    private var host: UnsafeMutablePointer<lunette_host>?

    init(_ host: UnsafeMutablePointer<lunette_host>) { self.host = host }

    /// Cancels the running call. True when a call with a deadline was running.
    @discardableResult
    public func cancel() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let host else { return false }
        return lunette_watch_cancel(host) != 0
    }

    /// The state is closing: cancel does nothing from now on.
    func invalidate() {
        lock.lock()
        host = nil
        lock.unlock()
    }
}
