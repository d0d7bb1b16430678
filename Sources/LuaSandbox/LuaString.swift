import CLuaShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A Lua string: an exact sequence of bytes, NUL included.
///
/// Lua strings are bytes, not text. `LuaString` keeps them byte-exact and
/// gives a Swift `String` only where the bytes are valid UTF-8 (`string`),
/// so two different Lua strings never collapse into one Swift value (Swift's
/// `==` on `String` treats canonically equivalent text as equal; `LuaString`
/// compares bytes). Strings of up to 16 bytes — most keys — are stored
/// inline, with no allocation and no reference counting.
public struct LuaString: Sendable {
    @usableFromInline
    // @unchecked: HeapBytes is a ManagedBuffer (never Sendable), but it is
    // immutable once made, so sharing it across threads is safe.
    enum Storage: @unchecked Sendable {
        /// Up to 16 bytes in two words (memory order), with the count.
        case inline(UInt64, UInt64, UInt8)
        case heap(HeapBytes)
    }

    /// Bytes of a string longer than 16, in one allocation. Immutable once
    /// made. (A plain `[UInt8]` costs a generic-metadata lookup per
    /// allocation on Linux, which showed up in the boundary benchmark.)
    @usableFromInline
    final class HeapBytes: ManagedBuffer<Int, UInt8> {
        static func make(_ buffer: UnsafeBufferPointer<UInt8>) -> HeapBytes {
            let count = buffer.count
            let made = HeapBytes.create(minimumCapacity: count) { _ in count }
            made.withUnsafeMutablePointerToElements { $0.initialize(from: buffer.baseAddress!, count: count) }
            return unsafeDowncast(made, to: HeapBytes.self)
        }

        var count: Int { header }

        func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
            try withUnsafeMutablePointers { header, elements in
                try body(UnsafeBufferPointer(start: elements, count: header.pointee))
            }
        }
    }

    @usableFromInline
    let storage: Storage

    /// The C value walk packs strings of up to this many bytes the same way
    /// (`lunette_slot.str_words`): one constant for both.
    package static let inlineCapacity = Int(LUNETTE_SHORT_STRING)

    /// The empty string.
    static let empty = LuaString(storage: .inline(0, 0, 0))

    private init(storage: Storage) { self.storage = storage }

    /// A string from Swift text (its UTF-8 bytes).
    public init(_ text: String) {
        var text = text
        self = text.withUTF8 { LuaString(copying: $0) }
    }

    /// A string from raw bytes.
    ///
    /// Inlinable, so that callers in other modules get it specialised for
    /// their collection: bytes in contiguous storage (an array, a slice of
    /// one, a buffer) are copied once, with no intermediate array. Left
    /// generic, each call made its type's metadata at run time (≈ 2.4 k
    /// instructions a string read off a worker's answer).
    @inlinable
    public init<Bytes: Collection<UInt8>>(bytes: Bytes) {
        if let made = bytes.withContiguousStorageIfAvailable({ LuaString(copying: $0) }) {
            self = made
            return
        }
        let array = Array(bytes)
        self = array.withUnsafeBufferPointer { LuaString(copying: $0) }
    }

    /// Copies `buffer`; used when reading strings off the Lua stack.
    @usableFromInline
    init(copying buffer: UnsafeBufferPointer<UInt8>) {
        let count = buffer.count
        if count <= LuaString.inlineCapacity {
            var words: (UInt64, UInt64) = (0, 0)
            if count > 0 {
                withUnsafeMutableBytes(of: &words) { raw in
                    raw.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: count)
                }
            }
            storage = .inline(words.0, words.1, UInt8(count))
        } else {
            storage = .heap(HeapBytes.make(buffer))
        }
    }

    /// A string of up to 16 bytes from its two words in memory order,
    /// zero-padded, as C packs them (`lunette_slot.str_words`).
    init(inlineWords first: UInt64, _ second: UInt64, count: Int) {
        assert(count <= LuaString.inlineCapacity)
        storage = .inline(first, second, UInt8(count))
    }

    /// True when the bytes are in an allocation of their own (over 16 bytes).
    @inline(__always)
    var holdsReference: Bool {
        switch storage {
        case .inline: return false
        case .heap: return true
        }
    }

    /// Number of bytes (Lua's `#s`).
    public var count: Int {
        switch storage {
        case .inline(_, _, let n): return Int(n)
        case .heap(let b): return b.count
        }
    }

    /// Calls `body` with the bytes, without copying to the heap.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch storage {
        case .inline(let a, let b, let n):
            var words = (a, b)
            return try withUnsafeBytes(of: &words) { raw in
                try body(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: Int(n)))
            }
        case .heap(let bytes):
            return try bytes.withBytes(body)
        }
    }

    /// The bytes, copied into an array.
    public var bytes: [UInt8] {
        switch storage {
        case .inline, .heap: return withBytes { Array($0) }
        }
    }

    /// True when the bytes are well-formed UTF-8.
    public var isValidUTF8: Bool {
        withBytes { $0.isEmpty || lunette_utf8_valid($0.baseAddress, $0.count) != 0 }
    }

    /// The text, when the bytes are valid UTF-8; nil otherwise.
    public var string: String? { withBytes(Self.text(of:)) }

    /// `bytes` as Swift text when they are valid UTF-8, else nil (what
    /// `string` gives; also for bytes read in place off the Lua stack).
    static func text(of bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if bytes.isEmpty { return "" }
        guard lunette_utf8_valid(bytes.baseAddress, bytes.count) != 0 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Text for people: the string itself, or invalid bytes replaced by U+FFFD.
    public var displayText: String {
        withBytes { String(decoding: $0, as: UTF8.self) }
    }
}

extension LuaString: Hashable {
    public static func == (lhs: LuaString, rhs: LuaString) -> Bool {
        if case .inline(let a0, let a1, let an) = lhs.storage, case .inline(let b0, let b1, let bn) = rhs.storage {
            return a0 == b0 && a1 == b1 && an == bn
        }
        return compare(lhs, rhs) == 0
    }

    public func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(count)
    }
}

extension LuaString: Comparable {
    /// Byte-wise order, as Lua's `<` on strings in the C locale.
    public static func < (lhs: LuaString, rhs: LuaString) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// memcmp order of the bytes, then length: negative, zero or positive.
    static func compare(_ lhs: LuaString, _ rhs: LuaString) -> Int {
        if case .inline(let a0, let a1, let an) = lhs.storage, case .inline(let b0, let b1, let bn) = rhs.storage {
            // Unused bytes are zero, so comparing the words as big-endian numbers is
            // memcmp order; equal words mean one is a prefix of the other.
            if a0 != b0 { return a0.bigEndian < b0.bigEndian ? -1 : 1 }
            if a1 != b1 { return a1.bigEndian < b1.bigEndian ? -1 : 1 }
            return Int(an) - Int(bn)
        }
        return lhs.withBytes { a in
            rhs.withBytes { b in
                let common = min(a.count, b.count)
                if common > 0 {
                    let order = memcmp(a.baseAddress!, b.baseAddress!, common)
                    if order != 0 { return Int(order) }
                }
                return a.count - b.count
            }
        }
    }
}

extension LuaString: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}

extension LuaString: CustomStringConvertible {
    public var description: String { displayText }
}
