/// A parsed JSON value that knows where it is: the tree the project's own
/// files (bundle.json, scenarios, policy files) and the store's JSON input
/// are read into.
///
/// Numbers keep integers apart from floats (a number with `.`, `e` or `E`
/// is a float, any other an integer, or a float when it does not fit in 64
/// bits); `null` is a value of its own, so readers decide what it means;
/// objects keep their members in file order, repeated keys included.
public struct JSONValue: Sendable, Equatable {
    /// What the value is.
    public enum Kind: Sendable, Equatable {
        /// `null`.
        case null
        /// `true` or `false`.
        case boolean(Bool)
        /// A number without `.`, `e` or `E` that fits in 64 bits.
        case integer(Int64)
        /// Any other number.
        case double(Double)
        /// A string, unescaped (always valid UTF-8).
        case string(String)
        /// An array's items, in order.
        case array([JSONValue])
        /// An object's members in file order, repeated keys included.
        case object([JSONMember])
    }

    /// What the value is.
    public var kind: Kind
    /// Where its first character is.
    public var location: JSONLocation

    /// A value found at `location`.
    public init(_ kind: Kind, at location: JSONLocation) {
        self.kind = kind
        self.location = location
    }

    /// What the parser makes of a decimal integer beyond 64 bits
    /// (`18446744073709551616`).
    public enum LargeIntegers: Sendable {
        /// An error at the number (the default): Lua's integers, and the
        /// store's, are 64-bit, and a float in their place would silently
        /// lose digits of what is most likely an id or a count.
        case refused
        /// A float, as Lua makes such a numeral in source code: for JSON
        /// that another encoder wrote from a Swift value (`JSONEncoder`
        /// writes a `UInt64`, or a whole `Double`, as digits).
        case floats
    }

    /// Parses a whole JSON text (RFC 8259; nothing but white space after
    /// the value). Errors say what and where (`JSONError.location`).
    public static func parse(_ text: String, largeIntegers: LargeIntegers = .refused) throws(JSONError) -> JSONValue {
        try parse(bytes: Array(text.utf8), largeIntegers: largeIntegers)
    }

    /// Parses a whole JSON text given as UTF-8 bytes; strings that are not
    /// valid UTF-8 are errors at the string.
    public static func parse(bytes: [UInt8], largeIntegers: LargeIntegers = .refused) throws(JSONError) -> JSONValue {
        var parser = JSONParser(bytes, largeIntegers: largeIntegers)
        return try parser.document()
    }

    /// The name of the kind for messages: "null", "boolean", "integer",
    /// "double", "string", "array" or "object".
    public var kindName: String {
        switch kind {
        case .null: return "null"
        case .boolean: return "boolean"
        case .integer: return "integer"
        case .double: return "double"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// True for `null`.
    public var isNull: Bool { kind == .null }

    /// The members of an object (nil for other kinds), in file order.
    public var members: [JSONMember]? {
        if case .object(let members) = kind { return members }
        return nil
    }

    /// Every member of an object whose key is `key`, byte for byte, in file
    /// order: more than one when the key is repeated.
    public func members(named key: String) -> [JSONMember] {
        (members ?? []).filter { $0.key.utf8.elementsEqual(key.utf8) }
    }

    /// The bytes of a `{"$bytes": "<base64>"}` object (`JSON.writeBytes`);
    /// nil for any other value, a base64 text that is not exact included.
    public var bytesValue: [UInt8]? {
        guard let members, members.count == 1, members[0].key == JSON.bytesKey,
              case .string(let text) = members[0].value.kind else { return nil }
        return Base64.decode(text)
    }

    /// Writes the value back as JSON, members in file order.
    public func writeJSON(to writer: JSONWriter) {
        switch kind {
        case .null: writer.null()
        case .boolean(let b): writer.bool(b)
        case .integer(let i): writer.integer(i)
        case .double(let d): writer.number(d)
        case .string(let s): writer.string(s)
        case .array(let items): writer.array(items) { $0.writeJSON(to: writer) }
        case .object(let members):
            writer.object {
                for member in members {
                    writer.key(member.key)
                    member.value.writeJSON(to: writer)
                }
            }
        }
    }

    /// The value as compact JSON, for messages ("got 1.5").
    public var jsonText: String {
        let writer = JSONWriter()
        writeJSON(to: writer)
        return writer.text
    }
}
