/// An error in a file the host reads (bundle.json, main.lua, a scenario, a
/// policy), with where it is: "examples/tasks/bundle.json:3: …".
public struct LocatedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file, as the user named it.
    public var file: String
    /// 1-based line, when known.
    public var line: Int?
    /// 1-based column (in Unicode scalars), when known: JSON syntax errors.
    public var column: Int?
    /// What is wrong, without the location.
    public var message: String

    /// An error in `file`, at `line` (and `column`) when known.
    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = line == nil ? nil : column
        self.message = message
    }

    /// An error at a place in a JSON file (its line and column).
    public init(file: String, at location: JSONLocation, message: String) {
        self.init(file: file, line: location.line, column: location.column, message: message)
    }

    /// "file:line:column: message" (as compilers write it, so editors can
    /// jump there), "file:line: message", or "file: message".
    public var description: String {
        switch (line, column) {
        case (let line?, let column?): return "\(file):\(line):\(column): \(message)"
        case (let line?, nil): return "\(file):\(line): \(message)"
        default: return "\(file): \(message)"
        }
    }
}

/// Several located errors, reported together (a bundle's declarations are
/// all checked before any is reported).
public struct LocatedErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [LocatedError]

    public init(_ errors: [LocatedError]) { self.errors = errors }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
