import LuaSandbox

/// The first byte of a binary message (`WorkerChannel`); a JSON message
/// starts with `{`. While the host waits for the answer to a request, the
/// worker sends only binary messages (a log line, a module call) until its
/// answer: JSON for a JSON request, `done` for a `call`.
public enum WireTag: UInt8, Sendable {
    /// A bundle's call, host → worker.
    case call = 1
    /// Its outcome, worker → host.
    case done = 2
    /// A call of an app module, worker → host, in the middle of a call:
    /// the module, the function, the arguments.
    case module = 3
    /// The host's answer to `module`: true and the values, or false and the error.
    case reply = 4
    /// A line an `eval` script printed or logged, worker → host, as it
    /// happens: the level (`LuaLogLevel`), the bytes.
    case log = 5
}

/// Writes a binary message: integers little-endian, counts and lengths as
/// LEB128 varints, strings as a length and their bytes, Lua values as a
/// tag and their data (docs/plugins.md, "The protocol").
public struct WireWriter {
    public private(set) var bytes: [UInt8] = []

    public init(_ tag: WireTag) {
        bytes.reserveCapacity(256)
        bytes.append(tag.rawValue)
    }

    public mutating func byte(_ b: UInt8) { bytes.append(b) }
    public mutating func bool(_ b: Bool) { bytes.append(b ? 1 : 0) }

    public mutating func count(_ n: Int) {
        var v = UInt64(n)
        while v >= 0x80 { bytes.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }

    public mutating func int64(_ i: Int64) {
        var v = UInt64(bitPattern: i)
        for _ in 0..<8 { bytes.append(UInt8(v & 0xFF)); v >>= 8 }
    }

    public mutating func double(_ d: Double) { int64(Int64(bitPattern: d.bitPattern)) }

    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            count(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func data(_ b: [UInt8]) {
        count(b.count)
        bytes.append(contentsOf: b)
    }

    public mutating func lua(_ s: LuaString) {
        s.withBytes { raw in
            count(raw.count)
            bytes.append(contentsOf: raw)
        }
    }

    /// nil 0, false 1, true 2, integer 3, float 4, string 5, table 6 (its
    /// array part, then its keys and values).
    public mutating func value(_ value: LuaValue) {
        switch value {
        case .nil: bytes.append(0)
        case .boolean(let b): bytes.append(b ? 2 : 1)
        case .integer(let i): bytes.append(3); int64(i)
        case .number(let d): bytes.append(4); double(d)
        case .string(let s): bytes.append(5); lua(s)
        case .table(let t):
            bytes.append(6)
            count(t.array.count)
            for item in t.array { self.value(item) }
            count(t.fields.count)
            for entry in t.fields { lua(entry.key); self.value(entry.value) }
        }
    }

    public mutating func values(_ values: [LuaValue]) {
        count(values.count)
        for v in values { value(v) }
    }
}

/// Reads what `WireWriter` wrote; a message that ends early, or holds what
/// no writer writes, is a `WorkerProtocolError`.
public struct WireReader {
    private let bytes: [UInt8]
    private var at = 1   // past the tag

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var tag: WireTag? { bytes.first.flatMap(WireTag.init(rawValue:)) }

    private static let short = WorkerProtocolError("a binary message that ends early")

    public mutating func byte() throws -> UInt8 {
        guard at < bytes.count else { throw Self.short }
        defer { at += 1 }
        return bytes[at]
    }

    public mutating func bool() throws -> Bool { try byte() != 0 }

    public mutating func count() throws -> Int {
        var v: UInt64 = 0, shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 63 else { throw WorkerProtocolError("a count that does not fit") }
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { break }
            shift += 7
        }
        guard v <= UInt64(WorkerChannel.maxMessage) else { throw WorkerProtocolError("a count of \(v), over a message's size") }
        return Int(v)
    }

    /// A count of things that take at least `each` bytes apiece: one that
    /// the rest of the message cannot hold is refused before anything is
    /// reserved for it.
    public mutating func count(each: Int) throws -> Int {
        let n = try count()
        guard n <= (bytes.count - at) / each else { throw WorkerProtocolError("a count of \(n), more than the message holds") }
        return n
    }

    public mutating func int64() throws -> Int64 {
        guard at + 8 <= bytes.count else { throw Self.short }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        at += 8
        return Int64(bitPattern: v)
    }

    public mutating func double() throws -> Double { Double(bitPattern: UInt64(bitPattern: try int64())) }

    public mutating func data() throws -> [UInt8] {
        let n = try count()
        guard at + n <= bytes.count else { throw Self.short }
        defer { at += n }
        return Array(bytes[at..<(at + n)])
    }

    public mutating func string() throws -> String { String(decoding: try data(), as: UTF8.self) }

    public mutating func lua() throws -> LuaString {
        let n = try count()
        guard at + n <= bytes.count else { throw Self.short }
        defer { at += n }
        return LuaString(bytes: bytes[at..<(at + n)])
    }

    public mutating func value(depth: Int = 0) throws -> LuaValue {
        guard depth < 200 else { throw WorkerProtocolError("a table nested over 200 deep") }
        switch try byte() {
        case 0: return .nil
        case 1: return .boolean(false)
        case 2: return .boolean(true)
        case 3: return .integer(try int64())
        case 4: return .number(try double())
        case 5: return .string(try lua())
        case 6:
            // Counts come from the other process: what is reserved up front
            // is capped (each level of nesting could claim the message's size).
            let items = try count(each: 1)
            var array: [LuaValue] = []
            array.reserveCapacity(min(items, Self.reserveCap))
            for _ in 0..<items { array.append(try value(depth: depth + 1)) }
            let keys = try count(each: 2)
            var fields: [LuaFields.Entry] = []
            fields.reserveCapacity(min(keys, Self.reserveCap))
            for _ in 0..<keys {
                let key = try lua()
                fields.append(LuaFields.Entry(key: key, value: try value(depth: depth + 1)))
            }
            // The writer sends fields in key order; any other order reads as
            // the same fields set one by one would (LuaFields.init(_:)).
            return .table(LuaTable(array: array, fields: LuaFields(fields)))
        case let tag: throw WorkerProtocolError("a value of tag \(tag)")
        }
    }

    /// The most elements reserved up front for a count read off the wire.
    static let reserveCap = 1024

    public mutating func values() throws -> [LuaValue] {
        let n = try count(each: 1)
        var out: [LuaValue] = []
        out.reserveCapacity(min(n, Self.reserveCap))
        for _ in 0..<n { out.append(try value()) }
        return out
    }
}

/// An `eval` script's log line on the wire (`WireTag.log`).
public enum WireLogLine {
    public static func encode(_ level: LuaLogLevel, _ line: LuaString) -> [UInt8] {
        var w = WireWriter(.log)
        w.byte(UInt8(level.rawValue))
        w.lua(line)
        return w.bytes
    }

    /// The level and bytes of a log line; nil for another message.
    public static func decode(_ bytes: [UInt8]) throws -> (level: LuaLogLevel, line: [UInt8])? {
        var r = WireReader(bytes)
        guard r.tag == .log else { return nil }
        guard let level = LuaLogLevel(rawValue: Int(try r.byte())) else { throw WorkerProtocolError("a log line of no level") }
        return (level, try r.data())
    }
}
