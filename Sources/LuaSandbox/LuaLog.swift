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

    /// What goes before a line of this level in combined output: nothing
    /// for info (print), "[debug] ", "[warn] ", "[error] " otherwise.
    public var linePrefix: String { self == .info ? "" : "[\(name)] " }

    public static func < (a: LuaLogLevel, b: LuaLogLevel) -> Bool { a.rawValue < b.rawValue }
}
