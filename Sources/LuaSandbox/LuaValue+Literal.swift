import CLuaShims

/// Lua source text for values: what a person reads in `lunette eval`.
enum LuaLiteral {
    /// A float as Lua's tostring writes it ("0.5", "1e+100", "inf", "-nan", "2.0").
    static func number(_ d: Double) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let length = lunette_format_number(d, buffer.baseAddress, 64)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: Int(length)), as: UTF8.self)
        }
    }

    /// A quoted Lua string literal that reads back to the same bytes.
    static func quoted(_ s: LuaString) -> String {
        var out = "\""
        s.withBytes { bytes in
            if s.isValidUTF8 {
                // Keep printable text as it is; escape quotes, backslashes and controls.
                for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
                    switch scalar {
                    case "\"": out += "\\\""
                    case "\\": out += "\\\\"
                    case "\n": out += "\\n"
                    case "\r": out += "\\r"
                    case "\t": out += "\\t"
                    case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                        out += "\\" + String(scalar.value)
                    default: out.unicodeScalars.append(scalar)
                    }
                }
            } else {
                for byte in bytes {
                    switch byte {
                    case UInt8(ascii: "\""): out += "\\\""
                    case UInt8(ascii: "\\"): out += "\\\\"
                    case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(byte))
                    default: out += "\\x" + hex(byte)
                    }
                }
            }
        }
        return out + "\""
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}

extension LuaValue: CustomStringConvertible {
    /// Lua source for the value: `{1, 2, name = "x"}`; fields sorted by key.
    public var description: String {
        var out = ""
        LuaValue.write(self, to: &out)
        return out
    }

    private static func write(_ value: LuaValue, to out: inout String) {
        switch value {
        case .nil: out += "nil"
        case .boolean(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .number(let d): out += LuaLiteral.number(d)
        case .string(let s): out += LuaLiteral.quoted(s)
        case .table(let t):
            TableRendering.writeLiteral(array: t.array, fields: t.fields.map { ($0.key, $0.value) }, to: &out) { write($0, to: &$1) }
        }
    }
}
