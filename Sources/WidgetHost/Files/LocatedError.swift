import LuaSandbox

/// A mistake in a file the host reads (bundle.json, main.lua, a scenario, a
/// policy): the one `Diagnostic`, of kind `invalid`, with where it is.
public typealias LocatedError = Diagnostic

/// Several located errors, reported together: every problem of a settings
/// file, or every declaration problem of a bundle, found in one run.
public struct LocatedErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [Diagnostic]

    public init(_ errors: [Diagnostic]) { self.errors = errors }

    /// Each diagnostic's text (`Diagnostic.text`), one after another, one
    /// per line: what a command prints.
    public var text: String { errors.map(\.text).joined(separator: "\n") }

    public var description: String { text }
}
