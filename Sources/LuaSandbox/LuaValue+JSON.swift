/// JSON text for plain data, used by `--json` output.
///
/// The mapping (documented in docs/lua-sandbox.md):
/// - nil → null; booleans and integers as themselves; floats in their
///   shortest round-trip form, NaN and ±infinity as the strings "nan",
///   "inf" and "-inf" (JSON has no such numbers);
/// - strings of valid UTF-8 as JSON strings; other bytes as
///   `{"$bytes": "<base64>"}`;
/// - a table with only an array part as a JSON array; any other table
///   (including the empty one) as an object, array entries keyed "1", "2", …;
///   object keys sorted by their bytes.
extension LuaValue {
    public var jsonText: String {
        var out = ""
        writeJSON(to: &out)
        return out
    }

    public func writeJSON(to out: inout String) {
        switch self {
        case .nil: out += "null"
        case .boolean(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .number(let d):
            if d.isNaN { out += "\"nan\"" }
            else if d.isInfinite { out += d < 0 ? "\"-inf\"" : "\"inf\"" }
            else { out += d.description }
        case .string(let s):
            if let text = s.string {
                JSON.writeString(text, to: &out)
            } else {
                out += "{\"$bytes\":\""
                out += JSON.base64(s.bytes)
                out += "\"}"
            }
        case .table(let t):
            if t.fields.isEmpty, !t.array.isEmpty {
                out += "["
                for (i, element) in t.array.enumerated() {
                    if i > 0 { out += "," }
                    element.writeJSON(to: &out)
                }
                out += "]"
                return
            }
            out += "{"
            var first = true
            for (i, element) in t.array.enumerated() {
                if !first { out += "," }
                first = false
                out += "\"\(i + 1)\":"
                element.writeJSON(to: &out)
            }
            for entry in t.fields {
                let (key, element) = (entry.key, entry.value)
                if !first { out += "," }
                first = false
                JSON.writeString(key.displayText, to: &out)
                out += ":"
                element.writeJSON(to: &out)
            }
            out += "}"
        }
    }
}

/// Small JSON writing helpers shared by the JSON outputs.
public enum JSON {
    /// Appends `text` as a JSON string literal.
    public static func writeString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// A JSON string literal.
    public static func string(_ text: String) -> String {
        var out = ""
        writeString(text, to: &out)
        return out
    }

    /// Standard base64 with padding.
    public static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
