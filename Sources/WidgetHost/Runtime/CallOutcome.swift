import LuaSandbox

/// How one call of a script ended, and what it did on the way.
public struct CallOutcome: Sendable {
    /// How the call ended: `.ok`, or the kind of its `diagnostic`.
    public var status: CallStatus {
        // Matched in place: `diagnostic?.kind` and `diagnostic == nil` made
        // a copy of the whole diagnostic first (≈ 350 instructions a read).
        if case .some(let diagnostic) = diagnostic { return diagnostic.kind }
        return .ok
    }
    /// What went wrong (nil on success): message, location, traceback, limit.
    public var diagnostic: Diagnostic?
    /// The function's results (on success). Empty for the calls whose
    /// results the host decodes as it reads them (`WidgetRuntime`'s
    /// timeline, placeholder and snapshot: their `ProviderResult.value`
    /// is what they returned, checked).
    public var values: [LuaValue] = []
    /// Wall time of the whole call, main.lua included, in seconds.
    public var elapsed: Double = 0
    /// CPU time the call's thread used, main.lua included, in seconds; read
    /// only when the host keeps a `PluginLedger` (0 otherwise).
    public var cpuTime: Double = 0
    /// Most bytes the call's state held.
    public var memoryPeak: Int = 0
    /// Lines printed or logged, in order.
    public var logs: [(level: LuaLogLevel, text: String)] = []
    /// Reload requests the call made (kept only when the call succeeds).
    public var reloadRequests: [ReloadRequest] = []
    /// App groups the call asked for and was refused (typed, so a check can
    /// tell "the placeholder reads the store" without reading messages).
    public var deniedGroups: [String] = []
    /// The call failed only because other writers changed what it read
    /// before it committed (store keys its updates kept conflicting on, or
    /// Live Activity rows): running it again may succeed.
    public var storeConflict = false
    /// Things the host noticed that did not stop the call (a soft deadline passed…).
    public var warnings: [String] = []
    /// The version of the bundle the call ran (`ScriptBundle.version`).
    public var bundleVersion: String?

    public var succeeded: Bool {
        if case .none = diagnostic { return true }
        return false
    }
    /// The diagnostic's message (nil on success).
    public var message: String? { diagnostic?.message }
    /// The diagnostic's traceback.
    public var traceback: String? { diagnostic?.traceback }

    /// A successful call.
    init() {}

    /// A successful call that returned `values` and asked for `reloadRequests`.
    init(values: [LuaValue], reloadRequests: [ReloadRequest]) {
        self.values = values
        self.reloadRequests = reloadRequests
    }

    /// A call that failed with `diagnostic`.
    init(_ diagnostic: Diagnostic) { self.diagnostic = diagnostic }

    /// A call whose Lua call failed.
    init(_ error: LuaError) { self.init(error.diagnostic) }

    /// Refuses what the call returned: it ran, but the host cannot use the
    /// result. Its reload requests are dropped with it.
    mutating func refuse(_ message: String) {
        diagnostic = Diagnostic(.invalid, message)
        reloadRequests = []
    }
}
