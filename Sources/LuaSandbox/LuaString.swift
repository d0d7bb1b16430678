import CLuaShims

/// A Lua string: an exact sequence of bytes, NUL included.
///
/// Lua strings are bytes, not text. `LuaString` keeps them byte-exact and
/// offers a Swift `String` only where the bytes are valid UTF-8, so two
/// different Lua strings never collapse into one Swift value (Swift's `==`
/// on `String` treats canonically equivalent text as equal; `LuaString`
/// compares bytes).
public struct LuaString: Sendable {
    @usableFromInline
    enum Storage: Sendable {
        case utf8(String)      // valid UTF-8: small strings stay inline
        case bytes([UInt8])    // anything else
    }

    @usableFromInline
    let storage: Storage

    /// A string from Swift text (always valid UTF-8).
    @inlinable
    public init(_ text: String) { storage = .utf8(text) }

    /// A string from raw bytes; valid UTF-8 is kept as text internally.
    public init<Bytes: Collection<UInt8>>(bytes: Bytes) {
        let array = Array(bytes)
        self = array.withUnsafeBufferPointer { LuaString(copying: $0) }
    }

    /// Copies `buffer`; used when reading strings off the Lua stack.
    init(copying buffer: UnsafeBufferPointer<UInt8>) {
        if buffer.isEmpty {
            storage = .utf8("")
        } else if lunette_utf8_valid(buffer.baseAddress, buffer.count) != 0 {
            storage = .utf8(String(decoding: buffer, as: UTF8.self))
        } else {
            storage = .bytes(Array(buffer))
        }
    }

    /// The text, when the bytes are valid UTF-8; nil otherwise.
    @inlinable
    public var string: String? {
        if case .utf8(let s) = storage { return s }
        return nil
    }

    /// The bytes, always.
    public var bytes: [UInt8] {
        switch storage {
        case .utf8(let s): return Array(s.utf8)
        case .bytes(let b): return b
        }
    }

    /// Number of bytes (Lua's `#s`).
    public var count: Int {
        switch storage {
        case .utf8(let s): return s.utf8.count
        case .bytes(let b): return b.count
        }
    }

    /// True when the bytes are valid UTF-8.
    public var isValidUTF8: Bool {
        if case .utf8 = storage { return true }
        return false
    }

    /// Text for people: the string itself, or invalid bytes replaced by U+FFFD.
    public var displayText: String {
        switch storage {
        case .utf8(let s): return s
        case .bytes(let b): return String(decoding: b, as: UTF8.self)
        }
    }

    /// Calls `body` with the bytes, without copying where possible.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch storage {
        case .utf8(var s):
            return try s.withUTF8(body)
        case .bytes(let b):
            return try b.withUnsafeBufferPointer(body)
        }
    }
}

extension LuaString: Hashable {
    public static func == (lhs: LuaString, rhs: LuaString) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case (.utf8(let a), .utf8(let b)):
            // Byte equality, not Unicode canonical equivalence.
            return a.utf8.elementsEqual(b.utf8)
        case (.bytes(let a), .bytes(let b)):
            return a == b
        default:
            // Construction keeps valid UTF-8 as .utf8, so the cases never overlap.
            return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension LuaString: Comparable {
    /// Byte-wise order, as Lua's `<` on strings in the C locale.
    public static func < (lhs: LuaString, rhs: LuaString) -> Bool {
        lhs.withBytes { a in rhs.withBytes { b in a.lexicographicallyPrecedes(b) } }
    }
}

extension LuaString: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}

extension LuaString: CustomStringConvertible {
    public var description: String { displayText }
}
