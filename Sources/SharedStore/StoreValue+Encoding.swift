// How values are kept in SQLite. Scalars use SQLite's own types, so a store
// reads well in the sqlite3 shell; arrays and maps are one BLOB in a small
// tagged format:
//
//   value   = tag payload
//   0x01    integer, 8 bytes little-endian
//   0x02    double, 8 bytes (IEEE 754 bits) little-endian
//   0x03    false          0x04 true
//   0x05    string: varint length, UTF-8 bytes
//   0x06    bytes:  varint length, bytes
//   0x07    array:  varint count, values
//   0x08    map:    varint count, (varint key length, key bytes, value)...
//
// Varints are LEB128 (7 bits a byte, low bits first).

/// The `type` column of the entries table.
enum StoredType: Int64 {
    case integer = 1, double = 2, boolean = 3, string = 4, bytes = 5, array = 6, map = 7
}

extension StoreValue {
    /// Byte-exact equality: strings compare by their UTF-8 bytes, as in Lua
    /// (Swift's `String ==` would call canonically equivalent texts equal).
    public static func == (lhs: StoreValue, rhs: StoreValue) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.boolean(let a), .boolean(let b)): return a == b
        case (.string(let a), .string(let b)): return StoreMap.compare(a, b) == 0
        case (.bytes(let a), .bytes(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.map(let a), .map(let b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .integer(let v): hasher.combine(1); hasher.combine(v)
        case .double(let v): hasher.combine(2); hasher.combine(v)
        case .boolean(let v): hasher.combine(3); hasher.combine(v)
        case .string(let v): hasher.combine(4); hasher.combine(Array(v.utf8))
        case .bytes(let v): hasher.combine(5); hasher.combine(v)
        case .array(let v): hasher.combine(6); hasher.combine(v)
        case .map(let v): hasher.combine(7); hasher.combine(v)
        }
    }

    var storedType: StoredType {
        switch self {
        case .integer: return .integer
        case .double: return .double
        case .boolean: return .boolean
        case .string: return .string
        case .bytes: return .bytes
        case .array: return .array
        case .map: return .map
        }
    }

    /// Bytes the value counts for against the per-value limit and the
    /// group's quota: 8 for a scalar, the length of a string or bytes, the
    /// encoded length of an array or map.
    public var storageSize: Int {
        switch self {
        case .integer, .double, .boolean: return 8
        case .string(let s): return s.utf8.count
        case .bytes(let b): return b.count
        case .array, .map: return encodedSize
        }
    }

    /// The length of `encoded()`, counted without building it.
    private var encodedSize: Int {
        switch self {
        case .integer, .double: return 9
        case .boolean: return 1
        case .string(let s): return 1 + varintSize(s.utf8.count) + s.utf8.count
        case .bytes(let b): return 1 + varintSize(b.count) + b.count
        case .array(let items): return items.reduce(1 + varintSize(items.count)) { $0 + $1.encodedSize }
        case .map(let map):
            return map.entries.reduce(1 + varintSize(map.count)) { total, entry in
                total + varintSize(entry.key.utf8.count) + entry.key.utf8.count + entry.value.encodedSize
            }
        }
    }

    /// The tagged encoding (used for arrays and maps).
    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    private func encode(into out: inout [UInt8]) {
        switch self {
        case .integer(let v):
            out.append(0x01)
            appendFixed(UInt64(bitPattern: v), to: &out)
        case .double(let v):
            out.append(0x02)
            appendFixed(v.bitPattern, to: &out)
        case .boolean(let v):
            out.append(v ? 0x04 : 0x03)
        case .string(let s):
            out.append(0x05)
            appendVarint(UInt64(s.utf8.count), to: &out)
            out.append(contentsOf: s.utf8)
        case .bytes(let b):
            out.append(0x06)
            appendVarint(UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case .array(let items):
            out.append(0x07)
            appendVarint(UInt64(items.count), to: &out)
            for item in items { item.encode(into: &out) }
        case .map(let map):
            out.append(0x08)
            appendVarint(UInt64(map.count), to: &out)
            for entry in map.entries {
                appendVarint(UInt64(entry.key.utf8.count), to: &out)
                out.append(contentsOf: entry.key.utf8)
                entry.value.encode(into: &out)
            }
        }
    }

    /// Decodes an array or map; nil when the bytes are not a valid encoding.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> StoreValue? {
        var reader = ByteReader(bytes: bytes)
        guard let value = reader.value(depth: 0), reader.offset == bytes.count else { return nil }
        return value
    }
}

private func appendFixed(_ v: UInt64, to out: inout [UInt8]) {
    for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
}

private func varintSize(_ n: Int) -> Int {
    var n = UInt64(n), size = 1
    while n >= 0x80 { n >>= 7; size += 1 }
    return size
}

private func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
    var v = v
    while v >= 0x80 {
        out.append(UInt8(v & 0x7F) | 0x80)
        v >>= 7
    }
    out.append(UInt8(v))
}

/// Reads the tagged format, checking every length against what is left.
private struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    static let maxDepth = 200

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func fixed() -> UInt64? {
        guard bytes.count - offset >= 8 else { return nil }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += 8
        return v
    }

    mutating func varint() -> Int? {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while let b = byte() {
            v |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return v <= UInt64(bytes.count) ? Int(v) : nil }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    mutating func chunk() -> UnsafeRawBufferPointer? {
        guard let n = varint(), bytes.count - offset >= n else { return nil }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n])
    }

    mutating func value(depth: Int) -> StoreValue? {
        guard depth <= Self.maxDepth, let tag = byte() else { return nil }
        switch tag {
        case 0x01: return fixed().map { .integer(Int64(bitPattern: $0)) }
        case 0x02: return fixed().map { .double(Double(bitPattern: $0)) }
        case 0x03: return .boolean(false)
        case 0x04: return .boolean(true)
        case 0x05:
            guard let c = chunk(), let s = StoreText.string(validating: c) else { return nil }
            return .string(s)
        case 0x06:
            return chunk().map { .bytes(Array($0)) }
        case 0x07:
            guard let n = varint() else { return nil }
            var items: [StoreValue] = []
            items.reserveCapacity(min(n, 1024))
            for _ in 0..<n {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
            }
            return .array(items)
        case 0x08:
            guard let n = varint() else { return nil }
            var pairs: [(String, StoreValue)] = []
            pairs.reserveCapacity(min(n, 1024))
            for _ in 0..<n {
                guard let k = chunk(), let key = StoreText.string(validating: k),
                      let item = value(depth: depth + 1) else { return nil }
                pairs.append((key, item))
            }
            return .map(StoreMap(pairs))
        default:
            return nil
        }
    }
}
