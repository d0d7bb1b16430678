/// What `lunette check` found.
public struct Finding: Sendable, Equatable, CustomStringConvertible {
    public enum Level: String, Sendable { case error, warning }
    public var level: Level
    /// The widget kind, or nil for the bundle.
    public var kind: String?
    /// Short name of the check ("placeholder", "budget", …).
    public var check: String
    public var message: String

    public init(level: Level, kind: String?, check: String, message: String) {
        self.level = level
        self.kind = kind
        self.check = check
        self.message = message
    }

    public var description: String {
        "\(level.rawValue): " + (kind.map { "widget '\($0)': " } ?? "") + message
    }
}
