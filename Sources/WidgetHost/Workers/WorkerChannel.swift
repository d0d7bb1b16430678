#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem

/// The framed protocol between a host and a worker process (issue 17),
/// over the worker's standard input and output: each message is a 4-byte
/// big-endian length, then that many bytes (docs/plugins.md, "Worker
/// processes"). A message is a JSON object (its first byte `{`), or, for
/// the calls of a bundle, which are most of the traffic, a binary one whose
/// first byte says which (`WireTag`). In JSON, bytes that may not be UTF-8
/// (Lua sources, log lines) travel as base64.
///
/// It reads and writes the file descriptors itself (a `read` fills a buffer
/// that usually holds a whole message; a `write` sends the length and the
/// message together), and waits for a message with `poll`, so that a
/// deadline costs no thread.
public final class WorkerChannel: @unchecked Sendable {
    /// The most bytes one message may hold: a bigger length is a broken peer.
    public static let maxMessage = 64 << 20

    private let inputFD: Int32
    private let outputFD: Int32
    /// Whether the channel closes its descriptors when it ends.
    private let closesDescriptors: Bool
    /// Set once `closeOutput` ended the output, and when it had to close
    /// the descriptor itself (both under `outputLock`).
    private var outputClosed = false, outputGone = false
    private let outputLock = FastLock()
    /// Bytes read and not yet taken, from `start` on.
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where `read` puts what it gets: raw memory, never zeroed, so that
    /// only the pages reads reach become resident (most messages are
    /// small; a host holds one channel per live worker). Only the bytes a
    /// read wrote are ever read.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)

    /// A channel that reads `input` and writes `output`. With
    /// `closesDescriptors`, the channel owns them and closes both when it
    /// ends (they must then be two descriptors); otherwise the caller keeps
    /// them open as long as the channel is used, and closes them.
    public init(input: Int32, output: Int32, closesDescriptors: Bool = false) {
        precondition(!closesDescriptors || input != output, "a channel that closes its descriptors needs two of them")
        inputFD = input
        outputFD = output
        self.closesDescriptors = closesDescriptors
    }

    deinit {
        scratch.deallocate()
        if closesDescriptors {
            SystemCall.close(inputFD)
            if !outputGone { SystemCall.close(outputFD) }
        }
    }

    /// Ends the output now (the peer reads the end of its input), once;
    /// only for a channel that closes its descriptors. The descriptor is
    /// not closed but made /dev/null's, so that a send racing this one
    /// cannot write to another file that reused its number; `deinit`
    /// closes it.
    func closeOutput() {
        guard closesDescriptors else { return }
        outputLock.withLock {
            guard !outputClosed else { return }
            outputClosed = true
            let nothing = open("/dev/null", O_WRONLY | O_CLOEXEC)
            if nothing >= 0 {
                while dup2(nothing, outputFD) < 0 && errno == EINTR {}
                SystemCall.close(nothing)
            } else {
                SystemCall.close(outputFD)   // no /dev/null: closed, as before
                outputGone = true
            }
        }
    }

    /// The deadline of `receive(until:)` passed first.
    public struct TimedOut: Error {}

    /// Writes one JSON message (by `deadline`, when given: `TimedOut` after).
    public func send(_ message: JSONValue, until deadline: ContinuousClock.Instant? = nil) throws {
        let writer = JSONWriter()
        message.writeJSON(to: writer)
        try send(bytes: Array(writer.text.utf8), until: deadline)
    }

    /// Writes one message of `body`. On a descriptor that does not block
    /// (the host's side), a peer that does not read is waited for with
    /// `poll` until `deadline`, then `TimedOut`.
    public func send(bytes body: [UInt8], until deadline: ContinuousClock.Instant? = nil) throws {
        guard body.count <= Self.maxMessage else { throw WorkerProtocolError("a message of \(body.count) bytes, over the limit of \(Self.maxMessage)") }
        let n = UInt32(body.count)
        var frame = [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        frame += body
        var written = 0
        while written < frame.count {
            let w = frame.withUnsafeBytes { raw in write(outputFD, raw.baseAddress! + written, raw.count - written) }
            if w >= 0 { written += w; continue }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: try wait(for: Int16(POLLOUT), on: outputFD, until: deadline)
            default: throw WorkerProtocolError("cannot write to the peer: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Reads one JSON message; nil at the end of the stream (the peer is gone).
    public func receive() throws -> JSONValue? {
        guard let body = try receive(until: nil) else { return nil }
        return try Self.json(body)
    }

    /// A message's body as JSON.
    public static func json(_ body: [UInt8]) throws -> JSONValue {
        do { return try JSONValue.parse(bytes: body) } catch {
            throw WorkerProtocolError("a message that is not JSON: \(error.reason)")
        }
    }

    /// Reads one message's bytes; nil at the end of the stream. With a
    /// `deadline`, throws `TimedOut` when no whole message came by then.
    public func receive(until deadline: ContinuousClock.Instant?) throws -> [UInt8]? {
        while true {
            let available = buffer.count - start
            if available >= 4 {
                let n = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
                guard n <= Self.maxMessage else { throw WorkerProtocolError("a message of \(n) bytes, over the limit of \(Self.maxMessage)") }
                if available >= 4 + n {
                    let body = Array(buffer[(start + 4)..<(start + 4 + n)])
                    start += 4 + n
                    if start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
                    return body
                }
            }
            if let deadline { try wait(for: Int16(POLLIN), on: inputFD, until: deadline) }
            guard try fill() else {
                if buffer.count > start { throw WorkerProtocolError("the stream ended inside a message") }
                return nil
            }
        }
    }

    /// Waits until `fd` is ready for `events`, or throws `TimedOut` at
    /// `deadline` (nil: as long as it takes).
    private func wait(for events: Int16, on fd: Int32, until deadline: ContinuousClock.Instant?) throws {
        while true {
            var ms: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { throw TimedOut() }
                ms = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&p, 1, ms)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw WorkerProtocolError("cannot wait for the peer: \(String(cString: strerror(errno)))") }
        }
    }

    /// Reads what is there into the buffer; false at the end of the stream.
    private func fill() throws -> Bool {
        if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
        while true {
            let got = read(inputFD, scratch.baseAddress!, scratch.count)
            if got < 0 {
                if errno == EINTR { continue }
                throw WorkerProtocolError("cannot read from the peer: \(String(cString: strerror(errno)))")
            }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<got]))
            return got > 0
        }
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
