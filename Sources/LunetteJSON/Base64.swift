/// Standard base64 (RFC 4648 §4, padded): how `{"$bytes": …}` carries bytes.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` as base64 text with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = UInt32(bytes[i]) << 16
                | (i + 1 < bytes.count ? UInt32(bytes[i + 1]) << 8 : 0)
                | (i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of padded base64 `text`; nil when it is not exactly that
    /// (wrong length, a character outside the alphabet, misplaced `=`, or
    /// leftover bits that are not zero), so each byte string has one text.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var i = 0
        while i < chars.count {
            let equals = UInt8(ascii: "=")
            // Only the last group may end in one or two "=".
            let padding = i + 4 < chars.count ? 0 : chars[i + 3] != equals ? 0 : chars[i + 2] == equals ? 2 : 1
            var n: UInt32 = 0
            for k in 0..<4 {
                let c = chars[i + k]
                let v: UInt32
                if k >= 4 - padding { v = 0 } else {
                    guard let sextet = sextet(c) else { return nil }
                    v = sextet
                }
                n = n << 6 | v
            }
            if padding == 2, n & 0xFFFF != 0 { return nil }
            if padding == 1, n & 0xFF != 0 { return nil }
            out.append(UInt8(n >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(n & 0xFF)) }
            i += 4
        }
        return out
    }

    private static func sextet(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
