extension JSON {
    /// Appends `text` as a JSON string literal: the one escaper of the
    /// project.
    ///
    /// Escapes `"` and `\`, the C0 controls (`\n`, `\r`, `\t`, `\b`, `\f`
    /// by name, the others as `\u00xx`) and U+2028 / U+2029, so the text
    /// is also safe inside JavaScript; every other character stays as it is.
    public static func writeString(_ text: String, to out: inout String) {
        out += "\""
        if text.utf8.contains(where: mayNeedEscape) {
            for scalar in text.unicodeScalars { writeEscaped(scalar, to: &out) }
        } else {
            out += text
        }
        out += "\""
    }

    /// `text` as a JSON string literal (see `writeString`).
    public static func string(_ text: String) -> String {
        var out = ""
        writeString(text, to: &out)
        return out
    }

    /// Bytes that may start a character `writeEscaped` changes: controls,
    /// quote, backslash, and 0xE2, the first byte of U+2028 and U+2029.
    private static func mayNeedEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0xE2
    }

    private static func writeEscaped(_ scalar: Unicode.Scalar, to out: inout String) {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\u{08}": out += "\\b"
        case "\u{0C}": out += "\\f"
        case "\u{2028}", "\u{2029}": writeUnicodeEscape(scalar.value, to: &out)
        case _ where scalar.value < 0x20: writeUnicodeEscape(scalar.value, to: &out)
        default: out.unicodeScalars.append(scalar)
        }
    }

    /// `\u` and four lowercase hex digits.
    private static func writeUnicodeEscape(_ value: UInt32, to out: inout String) {
        let hex = String(value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    }
}
