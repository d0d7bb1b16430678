/// One `"key": value` of a parsed object, with where its key is.
///
/// An object keeps every member in file order, a repeated key included, so
/// a reader can say where each occurrence is (`JSONValue.members(named:)`).
public struct JSONMember: Sendable, Equatable {
    /// The key, unescaped.
    public var key: String
    /// Where the key's opening quote is.
    public var keyLocation: JSONLocation
    /// The value, with its own location.
    public var value: JSONValue

    /// A member.
    public init(key: String, keyLocation: JSONLocation, value: JSONValue) {
        self.key = key
        self.keyLocation = keyLocation
        self.value = value
    }
}
