#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteJSON

// JSON for store values: what `lunette store` reads and prints, and the
// bridge for Codable types. The text follows the project's one JSON
// convention (LunetteJSON, docs/json.md): integers and doubles stay apart
// (a number with ".", "e" or "E" is a double, any other an integer, or a
// double when it does not fit in 64 bits; doubles are written with a "." or
// an exponent), non-finite doubles are the strings "NaN", "Infinity" and
// "-Infinity", and `.bytes` is `{"$bytes": "<base64>"}`, which reads back
// as bytes.

extension StoreValue {
    /// Parses JSON text. `null` gives nil at the top level and is an error
    /// inside arrays and objects (tables cannot hold nil); when a key
    /// repeats, the last value wins; an integer beyond 64 bits is an error
    /// unless `largeIntegers` is `.floats`. Errors say where (line and
    /// column).
    public init?(json: String, largeIntegers: JSONValue.LargeIntegers = .refused) throws(StoreError) {
        do {
            try self.init(json: try JSONValue.parse(json, largeIntegers: largeIntegers))
        } catch {
            throw StoreError(.invalidValue, "invalid JSON at \(error)")
        }
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
        // JSONEncoder writes a UInt64, or a whole Double, as digits: beyond 64 bits, a float.
        try set(key, try StoreValue(json: String(decoding: data, as: UTF8.self), largeIntegers: .floats))
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
