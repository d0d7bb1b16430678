import Foundation
import LunetteJSON

// JSON for store values: what `lunette store` reads and prints, and the
// bridge for Codable types. The text follows the project's one JSON
// convention (LunetteJSON, docs/json.md): integers and doubles stay apart
// (a number with ".", "e" or "E" is a double, any other an integer, or a
// double when it does not fit in 64 bits; doubles are written with a "." or
// an exponent), non-finite doubles are the strings "NaN", "Infinity" and
// "-Infinity", and `.bytes` is `{"$bytes": "<base64>"}`.

extension StoreValue {
    /// Parses JSON text. `null` gives nil at the top level and is an error
    /// inside arrays and objects (tables cannot hold nil).
    public init?(json: String) throws(StoreError) {
        var parser = JSONParser(bytes: Array(json.utf8))
        let value = try parser.document()
        guard let value else { return nil }
        self = value
    }

    /// The store value of a parsed JSON value: nil for a top-level `null`.
    /// A `null` inside an array or object is an error at its location.
    public init?(json value: JSONValue) throws(JSONError) {
        if value.isNull { return nil }
        self = try Self.converting(value)
    }

    private static func converting(_ value: JSONValue) throws(JSONError) -> StoreValue {
        switch value.kind {
        case .null: throw JSONError("null inside an array or object (the store keeps no nil in a table)", at: value.location)
        case .boolean(let b): return .boolean(b)
        case .integer(let i): return .integer(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let items):
            var values: [StoreValue] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try converting(item)) }
            return .array(values)
        case .object(let members):
            if let bytes = value.bytesValue { return .bytes(bytes) }
            var pairs: [(String, StoreValue)] = []
            pairs.reserveCapacity(members.count)
            for member in members { pairs.append((member.key, try converting(member.value))) }
            return .map(StoreMap(pairs))
        }
    }

    /// The value as compact JSON text.
    public var json: String {
        let writer = JSONWriter()
        writeJSON(to: writer)
        return writer.text
    }

    /// Writes the value to `writer` (map keys in their byte order).
    public func writeJSON(to writer: JSONWriter) {
        switch self {
        case .integer(let v): writer.integer(v)
        case .double(let v): writer.number(v)
        case .boolean(let v): writer.bool(v)
        case .string(let s): writer.string(s)
        case .bytes(let b): writer.bytes(b)
        case .array(let items): writer.array(items) { $0.writeJSON(to: writer) }
        case .map(let map):
            writer.object {
                for entry in map.entries {
                    writer.key(entry.key)
                    entry.value.writeJSON(to: writer)
                }
            }
        }
    }

    /// Appends `s` as a JSON string literal (`JSON.writeString`); the
    /// database binds its batches of names with it.
    static func writeJSON(_ s: String, to out: inout String) {
        JSON.writeString(s, to: &out)
    }
}

extension StoreGroup {
    /// Stores an `Encodable` value as the store value of its JSON encoding,
    /// so scripts read structs as tables; nil removes the key.
    public func set<T: Encodable>(_ value: T?, forKey key: String) throws {
        guard let value else { return try remove(key) }
        let data = try StoreValue.jsonEncoder.encode(value)
        try set(key, try StoreValue(json: String(decoding: data, as: UTF8.self)))
    }

    /// Reads `key` as a `Decodable` type (nil when absent).
    public func get<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let value = try get(key) else { return nil }
        return try StoreValue.jsonDecoder.decode(T.self, from: Data(value.json.utf8))
    }
}

extension StoreValue {
    /// Non-finite doubles as the convention's strings; `Data` as base64
    /// text (Foundation's default), so a struct's data reaches scripts as
    /// a string, as before.
    static var jsonEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: JSON.infinityText, negativeInfinity: JSON.negativeInfinityText, nan: JSON.nanText)
        return encoder
    }

    /// Reads what `json` writes: non-finite doubles from their strings, and
    /// `Data` from base64 text or from `{"$bytes": …}` (a `.bytes` value).
    static var jsonDecoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: JSON.infinityText, negativeInfinity: JSON.negativeInfinityText, nan: JSON.nanText)
        decoder.dataDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text: String
            if let plain = try? container.decode(String.self) {
                text = plain
            } else {
                let object = try container.decode([String: String].self)
                guard object.count == 1, let base64 = object[JSON.bytesKey] else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected base64 text or {\"\(JSON.bytesKey)\": base64}")
                }
                text = base64
            }
            guard let bytes = Base64.decode(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not base64: \(text)")
            }
            return Data(bytes)
        }
        return decoder
    }
}

/// A strict JSON parser (RFC 8259) that keeps integers apart from doubles.
struct JSONParser {
    let bytes: [UInt8]
    var i = 0
    static let maxDepth = 200

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() throws(StoreError) -> StoreValue? {
        skipSpace()
        let value = try value(depth: 0, inside: false)
        skipSpace()
        if i < bytes.count { throw fail("unexpected text after the value") }
        return value
    }

    private func fail(_ what: String) -> StoreError {
        StoreError(.invalidValue, "invalid JSON at byte \(i + 1): \(what)")
    }

    private mutating func skipSpace() {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    private mutating func literal(_ word: String) -> Bool {
        let w = Array(word.utf8)
        guard bytes.count - i >= w.count, Array(bytes[i..<i + w.count]) == w else { return false }
        i += w.count
        return true
    }

    private mutating func value(depth: Int, inside: Bool) throws(StoreError) -> StoreValue? {
        guard depth <= Self.maxDepth else { throw fail("nested more than \(Self.maxDepth) deep") }
        guard i < bytes.count else { throw fail("a value is missing") }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var pairs: [(String, StoreValue)] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .map(StoreMap()) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key in quotes") }
                let key = try string()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipSpace()
                guard let item = try value(depth: depth + 1, inside: true) else { throw fail("null inside an object") }
                pairs.append((key, item))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; break }
                throw fail("expected ',' or '}'")
            }
            return .map(StoreMap(pairs))
        case UInt8(ascii: "["):
            i += 1
            var items: [StoreValue] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array([]) }
            while true {
                skipSpace()
                guard let item = try value(depth: depth + 1, inside: true) else { throw fail("null inside an array") }
                items.append(item)
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; break }
                throw fail("expected ',' or ']'")
            }
            return .array(items)
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            if literal("true") { return .boolean(true) }
        case UInt8(ascii: "f"):
            if literal("false") { return .boolean(false) }
        case UInt8(ascii: "n"):
            if literal("null") { return nil }
        default:
            return try number()
        }
        throw fail("unexpected character")
    }

    private mutating func number() throws(StoreError) -> StoreValue {
        let start = i
        var isDouble = false
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        let digitsStart = i
        while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
        if i == digitsStart { i = start; throw fail("unexpected character") }
        if bytes[digitsStart] == 0x30, i - digitsStart > 1 { throw fail("a number must not start with 0") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isDouble = true
            i += 1
            let fraction = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            if i == fraction { throw fail("digits expected after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isDouble = true
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let exponent = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            if i == exponent { throw fail("digits expected in the exponent") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if !isDouble, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text) else { throw fail("number out of range") }
        return .double(double)
    }

    private mutating func string() throws(StoreError) -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let b = bytes[i]
            i += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let text = StoreText.string(validating: out) else { throw fail("a string that is not UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard literal("\\u") else { throw fail("a lone surrogate") }
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("a lone surrogate") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw fail("unknown escape")
                }
            case 0..<0x20:
                throw fail("a control character inside a string")
            default:
                out.append(b)
            }
        }
    }

    private mutating func hex4() throws(StoreError) -> UInt32 {
        guard bytes.count - i >= 4, let v = UInt32(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16) else {
            throw fail("four hex digits expected after \\u")
        }
        i += 4
        return v
    }
}
