import LuaSandbox

/// How one call of a script ended, and what it did on the way.
public struct CallOutcome: Sendable {
    public enum Status: String, Sendable {
        /// Returned normally (its result may still be refused: see `invalid`).
        case ok
        /// A runtime error.
        case error
        /// Ended at its hard deadline.
        case timeout
        /// Went over its memory cap.
        case memory
        /// main.lua or a module did not compile.
        case syntax
        /// Returned something the host cannot use (a timeline without dates…).
        case invalid
    }

    public var status: Status
    /// What went wrong, with chunk:line when the script said where.
    public var message: String?
    public var traceback: String?
    /// The function's results (on success).
    public var values: [LuaValue] = []
    /// Wall time of the whole call, main.lua included, in seconds.
    public var elapsed: Double = 0
    /// Most bytes the call's state held.
    public var memoryPeak: Int = 0
    /// Lines printed or logged, in order.
    public var logs: [(level: LuaLogLevel, text: String)] = []
    /// Reload requests the call made (kept only when the call succeeds).
    public var reloadRequests: [ReloadRequest] = []
    /// Things the host noticed that did not stop the call (a soft deadline passed…).
    public var warnings: [String] = []

    public var succeeded: Bool { status == .ok }

    init(status: Status, message: String? = nil, traceback: String? = nil) {
        self.status = status
        self.message = message
        self.traceback = traceback
    }

    init(_ error: LuaError) {
        switch error {
        case .syntax: status = .syntax
        case .runtime, .value: status = .error
        case .timeout: status = .timeout
        case .memory: status = .memory
        }
        message = error.message
        traceback = error.traceback
    }
}
