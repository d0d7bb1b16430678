import Foundation

/// The framed protocol between a host and a worker process (issue 17),
/// over the worker's standard input and output: each message is a 4-byte
/// big-endian length, then that many bytes of JSON, one object (docs/plugins.md,
/// "Worker processes"). Bytes that may not be UTF-8 (Lua sources, log
/// lines) travel as base64.
public struct WorkerChannel: @unchecked Sendable {
    /// The most bytes one message may hold: a bigger length is a broken peer.
    public static let maxMessage = 64 << 20

    let input: FileHandle
    let output: FileHandle

    public init(input: FileHandle, output: FileHandle) {
        self.input = input
        self.output = output
    }

    /// Writes one message.
    public func send(_ message: JSONValue) throws {
        let writer = JSONWriter()
        message.writeJSON(to: writer)
        let body = Array(writer.text.utf8)
        var frame = [UInt8](repeating: 0, count: 4)
        let n = UInt32(body.count)
        frame[0] = UInt8(n >> 24); frame[1] = UInt8(n >> 16 & 0xFF); frame[2] = UInt8(n >> 8 & 0xFF); frame[3] = UInt8(n & 0xFF)
        try output.write(contentsOf: Data(frame + body))
    }

    /// Reads one message; nil at the end of the stream (the peer is gone).
    public func receive() throws -> JSONValue? {
        guard let header = try read(4) else { return nil }
        let n = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard n <= Self.maxMessage else { throw WorkerProtocolError("a message of \(n) bytes, over the limit of \(Self.maxMessage)") }
        guard let body = try read(n) else { throw WorkerProtocolError("the stream ended inside a message") }
        do { return try JSONValue.parse(bytes: body) } catch {
            throw WorkerProtocolError("a message that is not JSON: \(error.reason)")
        }
    }

    /// Exactly `count` bytes, or nil at the end of the stream before the first.
    private func read(_ count: Int) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            guard let chunk = try input.read(upToCount: count - bytes.count), !chunk.isEmpty else {
                if bytes.isEmpty && count > 0 { return nil }
                throw WorkerProtocolError("the stream ended inside a message")
            }
            bytes += chunk
        }
        return bytes
    }
}

/// A message that breaks the worker protocol.
public struct WorkerProtocolError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension JSONValue {
    static let here = JSONLocation(offset: 0, line: 1, column: 1)

    /// A JSON object of `fields`, in order.
    public static func record(_ fields: [(String, JSONValue)]) -> JSONValue {
        JSONValue(.object(fields.map { JSONMember(key: $0.0, keyLocation: here, value: $0.1) }), at: here)
    }
    public static func of(_ s: String) -> JSONValue { JSONValue(.string(s), at: here) }
    public static func of(_ i: Int) -> JSONValue { JSONValue(.integer(Int64(i)), at: here) }
    public static func of(_ b: Bool) -> JSONValue { JSONValue(.boolean(b), at: here) }
    public static func list(_ items: [JSONValue]) -> JSONValue { JSONValue(.array(items), at: here) }
    public static func base64(_ b: [UInt8]) -> JSONValue { of(Base64.encode(b)) }
    public static let null = JSONValue(.null, at: here)

    /// The member `key` of an object.
    public subscript(_ key: String) -> JSONValue? { members(named: key).first?.value }
    public var text: String? { if case .string(let s) = kind { return s } else { return nil } }
    public var int: Int? { if case .integer(let i) = kind { return Int(i) } else { return nil } }
    public var items: [JSONValue]? { if case .array(let items) = kind { return items } else { return nil } }
    public var decodedBytes: [UInt8]? { text.flatMap { Base64.decode($0) } }
}
