/// Why a JSON text, or a value in it, was refused, and where: a syntax error
/// of `JSONValue.parse`, or a value that a reader of the tree cannot take.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, without the location ("expected ':'").
    public var reason: String
    /// Where it is.
    public var location: JSONLocation

    /// An error about the text at `location`.
    public init(_ reason: String, at location: JSONLocation) {
        self.reason = reason
        self.location = location
    }

    /// "line 3, column 7: expected ':'".
    public var description: String { "\(location): \(reason)" }
}
