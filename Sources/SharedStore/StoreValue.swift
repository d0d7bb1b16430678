/// A value in the store: what the app and scripts share.
///
/// Values keep their type: integers stay integers, doubles stay doubles,
/// text and raw bytes are different kinds, and tables are arrays or
/// string-keyed maps of values. A script's string that is valid UTF-8 is
/// stored as `.string`, any other string as `.bytes`; both read back as the
/// same Lua string, byte for byte.
public enum StoreValue: Sendable, Hashable {
    case integer(Int64)
    case double(Double)
    case boolean(Bool)
    case string(String)
    case bytes([UInt8])
    case array([StoreValue])
    case map(StoreMap)
}

extension StoreValue {
    /// The name of the value's kind: "integer", "double", "boolean",
    /// "string", "bytes", "array" or "map".
    public var kindName: String {
        switch self {
        case .integer: return "integer"
        case .double: return "double"
        case .boolean: return "boolean"
        case .string: return "string"
        case .bytes: return "bytes"
        case .array: return "array"
        case .map: return "map"
        }
    }

    public var integerValue: Int64? { if case .integer(let v) = self { return v }; return nil }
    public var doubleValue: Double? {
        switch self {
        case .double(let v): return v
        case .integer(let v): return Double(v)
        default: return nil
        }
    }
    public var boolValue: Bool? { if case .boolean(let v) = self { return v }; return nil }
    public var stringValue: String? { if case .string(let v) = self { return v }; return nil }
    public var arrayValue: [StoreValue]? { if case .array(let v) = self { return v }; return nil }
    public var mapValue: StoreMap? { if case .map(let v) = self { return v }; return nil }

    /// `value[key]` for maps, nil otherwise.
    public subscript(key: String) -> StoreValue? { mapValue?[key] }
}

extension StoreValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: StoreValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, StoreValue)...) {
        self = .map(StoreMap(elements))
    }
}

/// The string-keyed entries of a map value, in byte order of their keys.
///
/// Keys are compared byte for byte, not by Swift's canonical equivalence, so
/// "é" written precomposed and decomposed are two keys, as they are in Lua.
public struct StoreMap: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public struct Entry: Sendable, Hashable {
        public var key: String
        public var value: StoreValue
        public init(key: String, value: StoreValue) { self.key = key; self.value = value }
    }

    /// The entries, sorted by the UTF-8 bytes of their keys, keys unique.
    public private(set) var entries: [Entry]

    public init() { entries = [] }

    /// Builds a map; when a key repeats (byte for byte), the last value wins.
    public init<S: Sequence>(_ pairs: S) where S.Element == (String, StoreValue) {
        var sorted = pairs.map { Entry(key: $0.0, value: $0.1) }
        sorted = sorted.enumerated().sorted { a, b in
            let order = StoreMap.compare(a.element.key, b.element.key)
            return order == 0 ? a.offset < b.offset : order < 0
        }.map(\.element)
        var unique: [Entry] = []
        unique.reserveCapacity(sorted.count)
        for entry in sorted {
            if let last = unique.last, StoreMap.compare(last.key, entry.key) == 0 {
                unique[unique.count - 1] = entry
            } else {
                unique.append(entry)
            }
        }
        entries = unique
    }

    public init(dictionaryLiteral elements: (String, StoreValue)...) { self.init(elements) }

    public var startIndex: Int { 0 }
    public var endIndex: Int { entries.count }
    public subscript(position: Int) -> Entry { entries[position] }

    public var keys: [String] { entries.map(\.key) }

    /// The value stored under `key` (byte-exact match).
    public subscript(key: String) -> StoreValue? {
        get {
            let i = index(of: key)
            return i < entries.count && StoreMap.compare(entries[i].key, key) == 0 ? entries[i].value : nil
        }
        set {
            let i = index(of: key)
            let found = i < entries.count && StoreMap.compare(entries[i].key, key) == 0
            switch (found, newValue) {
            case (true, let value?): entries[i].value = value
            case (true, nil): entries.remove(at: i)
            case (false, let value?): entries.insert(Entry(key: key, value: value), at: i)
            case (false, nil): break
            }
        }
    }

    /// The first position whose key is not below `key` in byte order.
    private func index(of key: String) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if StoreMap.compare(entries[mid].key, key) < 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Byte-order comparison of two strings' UTF-8: < 0, 0 or > 0.
    static func compare(_ a: String, _ b: String) -> Int {
        // Read where they are (native strings, small ones included, always
        // can be): `withUTF8` needs a copy of each, whose retain and release
        // cost ≈ 60 instructions a compare.
        if let order = a.utf8.withContiguousStorageIfAvailable({ x in
            b.utf8.withContiguousStorageIfAvailable { y in compare(x, y) }
        }), let order {
            return order
        }
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in compare(x, y) } }
    }

    /// Byte-order comparison of two byte buffers: < 0, 0 or > 0.
    static func compare(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int {
        let n = Swift.min(x.count, y.count)
        if n > 0, let xp = x.baseAddress, let yp = y.baseAddress {
            let c = memcmp(xp, yp, n)
            if c != 0 { return Int(c) }
        }
        return x.count - y.count
    }

    public static func == (lhs: StoreMap, rhs: StoreMap) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { compare($0.key, $1.key) == 0 && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(entries.count)
        for entry in entries {
            hasher.combine(Array(entry.key.utf8))
            hasher.combine(entry.value)
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
