import LuaSandbox

/// A mistake in a file the host reads (bundle.json, main.lua, a scenario, a
/// policy): the one `Diagnostic`, of kind `invalid`, with where it is.
public typealias LocatedError = Diagnostic

/// Several located errors, reported together (a bundle's declarations are
/// all checked before any is reported).
public struct LocatedErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [Diagnostic]

    public init(_ errors: [Diagnostic]) { self.errors = errors }

    /// Each diagnostic's text, one after another.
    public var description: String { errors.map(\.text).joined(separator: "\n") }
}
