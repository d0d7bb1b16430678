/// The level of a line a script printed or logged (`print` is `.info`).
public enum LuaLogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug = 0, info, warn, error

    /// "debug", "info", "warn" or "error": the name of the `log` function.
    public var name: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warn: return "warn"
        case .error: return "error"
        }
    }

    public static func < (a: LuaLogLevel, b: LuaLogLevel) -> Bool { a.rawValue < b.rawValue }
}
