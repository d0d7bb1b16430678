import LunetteJSON

// Codable for plain Lua data, so hosts can store and send what scripts
// return (entries, results, payloads) with any encoder. The shapes follow
// the JSON convention (docs/json.md): integers and numbers stay apart where
// the format keeps them apart, text is a string, bytes that are not text
// are `{"$bytes": "<base64>"}`, an array is a list, a table with keys is an
// object. A table with both array items and keys is written as an object
// whose array items have the keys "1", "2"…; it reads back with those
// string keys.

extension LuaValue: Codable {
    public func encode(to encoder: Encoder) throws {
        switch self {
        case .nil:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .boolean(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .integer(let i):
            var c = encoder.singleValueContainer()
            try c.encode(i)
        case .number(let d):
            var c = encoder.singleValueContainer()
            try c.encode(d)
        case .string(let s):
            try s.encode(to: encoder)
        case .table(let t):
            try t.encode(to: encoder)
        }
    }

    public init(from decoder: Decoder) throws {
        if let c = try? decoder.singleValueContainer() {
            if c.decodeNil() { self = .nil; return }
            if let b = try? c.decode(Bool.self) { self = .boolean(b); return }
            if let i = try? c.decode(Int64.self) { self = .integer(i); return }
            if let d = try? c.decode(Double.self) { self = .number(d); return }
            if let s = try? c.decode(String.self) { self = .string(LuaString(s)); return }
        }
        if let bytes = try? LuaString.bytesObject(from: decoder) { self = .string(bytes); return }
        self = .table(try LuaTable(from: decoder))
    }
}

extension LuaString: Codable {
    public func encode(to encoder: Encoder) throws {
        if let text = string {
            var c = encoder.singleValueContainer()
            try c.encode(text)
        } else {
            var c = encoder.container(keyedBy: BytesKey.self)
            try c.encode(Base64.encode(bytes), forKey: .bytes)
        }
    }

    public init(from decoder: Decoder) throws {
        if let c = try? decoder.singleValueContainer(), let text = try? c.decode(String.self) {
            self.init(text)
            return
        }
        self = try Self.bytesObject(from: decoder)
    }

    private enum BytesKey: String, CodingKey { case bytes = "$bytes" }

    /// `{"$bytes": "<base64>"}` and nothing else.
    static func bytesObject(from decoder: Decoder) throws -> LuaString {
        let c = try decoder.container(keyedBy: AnyKey.self)
        guard c.allKeys.count == 1, c.allKeys[0].stringValue == "$bytes" else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not a {\"$bytes\": …} object"))
        }
        let text = try c.decode(String.self, forKey: c.allKeys[0])
        guard let bytes = Base64.decode(text) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "$bytes is not padded base64"))
        }
        return LuaString(bytes: bytes)
    }
}

extension LuaTable: Codable {
    public func encode(to encoder: Encoder) throws {
        if fields.isEmpty {
            var c = encoder.unkeyedContainer()
            for item in array { try c.encode(item) }
            return
        }
        var c = encoder.container(keyedBy: AnyKey.self)
        for (i, item) in array.enumerated() { try c.encode(item, forKey: AnyKey(String(i + 1))) }
        for entry in fields {
            guard let key = entry.key.string else {
                throw EncodingError.invalidValue(self, EncodingError.Context(codingPath: encoder.codingPath,
                                                                             debugDescription: "a table key that is not UTF-8 text"))
            }
            try c.encode(entry.value, forKey: AnyKey(key))
        }
    }

    public init(from decoder: Decoder) throws {
        if var c = try? decoder.unkeyedContainer() {
            var items: [LuaValue] = []
            while !c.isAtEnd { items.append(try c.decode(LuaValue.self)) }
            self.init(array: items)
            return
        }
        let c = try decoder.container(keyedBy: AnyKey.self)
        var fields = LuaFields()
        for key in c.allKeys { fields[LuaString(key.stringValue)] = try c.decode(LuaValue.self, forKey: key) }
        self.init(fields: fields)
    }
}

/// Any string as a coding key.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { stringValue = String(intValue) }
}
