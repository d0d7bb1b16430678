import LuaSandbox

/// A widget's next reload: when it happens, when it was wanted (earlier
/// when the budget defers it; `at` is infinite when no slot will free),
/// and why.
public struct NextReload: Sendable, Equatable, Codable {
    public var at: Double
    public var wantedAt: Double
    public var reason: ReloadReason
    public var isDeferred: Bool { at > wantedAt }
}
