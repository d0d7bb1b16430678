/// What `lunette check` found.
public struct Finding: Sendable, Equatable, CustomStringConvertible {
    public enum Level: String, Sendable { case error, warning }
    public var level: Level
    /// The widget kind, or nil for the bundle.
    public var kind: String?
    /// Short name of the check ("placeholder", "budget", …).
    public var check: String
    public var message: String
    /// Where it is, when it is at a place in a file (a lint finding, a
    /// declaration problem): the file as given, its line and column.
    public var file: String?
    public var line: Int?
    public var column: Int?

    public init(level: Level, kind: String?, check: String, message: String, file: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.level = level
        self.kind = kind
        self.check = check
        self.message = message
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String {
        "\(level.rawValue): " + (kind.map { "widget '\($0)': " } ?? "") + message
    }
}
