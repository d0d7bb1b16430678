import LuaSandbox

/// A provider call that failed (rule T10: the last good timeline stays).
public struct CallFailure: Sendable, Codable {
    public var at: Double
    public var role: CallRole
    /// What went wrong.
    public var diagnostic: Diagnostic
    public var status: CallStatus { diagnostic.kind }
    public var message: String { diagnostic.message }
    public var traceback: String? { diagnostic.traceback }
}

/// Something the host noticed about a call that did not stop it.
public struct CallNote: Sendable {
    public var at: Double
    public var message: String
}
