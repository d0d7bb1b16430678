/// An error in a file the host reads (bundle.json, main.lua, a scenario, a
/// policy), with where it is: "examples/tasks/bundle.json:3: …".
public struct LocatedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file, as the user named it.
    public var file: String
    /// 1-based line, when known.
    public var line: Int?
    public var message: String

    public init(file: String, line: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// "file:line: message", or "file: message" without a line.
    public var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}

/// Several located errors, reported together (a bundle's declarations are
/// all checked before any is reported).
public struct LocatedErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [LocatedError]

    public init(_ errors: [LocatedError]) { self.errors = errors }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
