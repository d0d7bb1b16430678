import LunetteJSON

/// Checks on the text the store is given: keys, file names, group ids.
///
/// The rules are those of docs/script-api.md: a key is 1...256 bytes of valid UTF-8
/// without NUL; a file name is one path component; a group id becomes a
/// directory name, so it is kept to a portable set of characters.
public enum StoreText {
    /// Longest key, in UTF-8 bytes.
    public static let maxKeyBytes = 256
    /// Longest file name, in UTF-8 bytes (the usual file-system limit).
    public static let maxFileNameBytes = 255
    /// Longest group id, in bytes.
    public static let maxGroupBytes = 128

    /// The text, when `bytes` are well-formed UTF-8 (no overlong forms, no
    /// surrogates, nothing above U+10FFFF); nil otherwise.
    public static func string<C: Collection>(validating bytes: C) -> String? where C.Element == UInt8 {
        JSON.text(validating: bytes)
    }

    /// Why `key` is not a valid key, or nil when it is.
    public static func keyProblem(_ key: String) -> String? {
        let n = key.utf8.count
        if n == 0 { return "a key must not be empty" }
        if n > maxKeyBytes { return "a key is at most \(maxKeyBytes) bytes, this one has \(n)" }
        if containsNUL(key) { return "a key must not contain NUL" }
        return nil
    }

    /// True when `text` holds a NUL byte (read in place for native strings).
    static func containsNUL(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? text.utf8.contains(0)
    }

    /// Why `name` is not a valid file name, or nil when it is.
    public static func fileNameProblem(_ name: String) -> String? {
        let n = name.utf8.count
        if n == 0 { return "a file name must not be empty" }
        if n > maxFileNameBytes { return "a file name is at most \(maxFileNameBytes) bytes, this one has \(n)" }
        if name == "." || name == ".." { return "a file name must not be \".\" or \"..\"" }
        if name.utf8.contains(0x2F) { return "a file name is a single path component (no \"/\")" }
        if containsNUL(name) { return "a file name must not contain NUL" }
        return nil
    }

    /// Why `id` is not a valid app-group id, or nil when it is: 1...128 of
    /// A-Z a-z 0-9 . - _, not starting with "." (it names a directory).
    public static func groupProblem(_ id: String) -> String? {
        let n = id.utf8.count
        if n == 0 { return "a group id must not be empty" }
        if n > maxGroupBytes { return "a group id is at most \(maxGroupBytes) bytes, this one has \(n)" }
        if id.utf8.first == UInt8(ascii: ".") { return "a group id must not start with \".\"" }
        // Over the bytes in place when the string is contiguous (this runs on
        // every store.group a script calls; through the view's iterator it
        // cost ≈ 540 instructions for an 11-byte id).
        func allowed<S: Sequence<UInt8>>(_ bytes: S) -> Bool {
            bytes.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
            }
        }
        let ok = id.utf8.withContiguousStorageIfAvailable { allowed($0) } ?? allowed(id.utf8)
        return ok ? nil : "a group id uses only letters, digits, \".\", \"-\" and \"_\""
    }

    /// `text` quoted for messages, with control characters and invalid bytes escaped.
    public static func quoted<C: Collection>(_ bytes: C, limit: Int = 60) -> String where C.Element == UInt8 {
        var out = "\""
        var count = 0
        for b in bytes {
            if count == limit { out += "…"; break }
            count += 1
            switch b {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x20..<0x7F: out.append(Character(Unicode.Scalar(b)))
            default: out += "\\x" + String(b, radix: 16, uppercase: false).leftPadded(2)
            }
        }
        return out + "\""
    }

    public static func quoted(_ text: String, limit: Int = 60) -> String {
        if !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "\"" || $0 == "\\" }) {
            return text.count <= limit ? "\"\(text)\"" : "\"\(text.prefix(limit))…\""
        }
        return quoted(Array(text.utf8), limit: limit)
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A string compared and hashed by its UTF-8 bytes, as Lua and SQLite
/// compare keys (Swift's `String ==` treats canonically equivalent texts,
/// such as "é" precomposed and decomposed, as equal; keys must not).
public struct ByteString: Hashable, Comparable, Sendable {
    public let text: String

    public init(_ text: String) { self.text = text }

    public static func == (a: ByteString, b: ByteString) -> Bool { StoreMap.compare(a.text, b.text) == 0 }

    public static func < (a: ByteString, b: ByteString) -> Bool { StoreMap.compare(a.text, b.text) < 0 }

    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
