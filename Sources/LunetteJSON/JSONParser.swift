/// A strict JSON parser (RFC 8259) over UTF-8 bytes that builds a located
/// tree: every value and key knows its line, column and byte offset.
struct JSONParser {
    private let bytes: [UInt8]
    private var i = 0
    /// The current line, the offset where it starts, and how many UTF-8
    /// continuation bytes it has before `i` (to count columns in scalars).
    /// Raw newlines only occur between tokens, so strings never reset these.
    private var line = 1
    private var lineStart = 0
    private var continuations = 0
    /// Deeper nesting is refused, so hostile input cannot exhaust the stack.
    static let maxDepth = 200

    private let largeIntegers: JSONValue.LargeIntegers

    init(_ bytes: [UInt8], largeIntegers: JSONValue.LargeIntegers) {
        self.bytes = bytes
        self.largeIntegers = largeIntegers
    }

    mutating func document() throws(JSONError) -> JSONValue {
        skipSpace()
        let value = try value(depth: 0)
        skipSpace()
        if i < bytes.count { throw fail("unexpected text after the value") }
        return value
    }

    private var here: JSONLocation {
        JSONLocation(offset: i, line: line, column: i - lineStart - continuations + 1)
    }

    private func fail(_ reason: String) -> JSONError { JSONError(reason, at: here) }

    /// "expected a value, got ']'": names the byte found (or the end).
    private func unexpected(_ expected: String) -> JSONError {
        guard i < bytes.count else { return fail("\(expected) is missing at the end of the text") }
        let b = bytes[i]
        let found = (0x21..<0x7F).contains(b) ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x" + String(b, radix: 16)
        return fail("expected \(expected), got \(found)")
    }

    private mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0D: i += 1
            case 0x0A:
                i += 1
                line += 1
                lineStart = i
                continuations = 0
            default: return
            }
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard bytes.count - i >= n else { return false }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return false }
        i += n
        return true
    }

    private mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw fail("nested more than \(Self.maxDepth) deep") }
        let start = here
        guard i < bytes.count else { throw unexpected("a value") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return JSONValue(.object(try members(depth: depth)), at: start)
        case UInt8(ascii: "["): return JSONValue(.array(try items(depth: depth)), at: start)
        case UInt8(ascii: "\""): return JSONValue(.string(try string()), at: start)
        case UInt8(ascii: "t") where literal("true"): return JSONValue(.boolean(true), at: start)
        case UInt8(ascii: "f") where literal("false"): return JSONValue(.boolean(false), at: start)
        case UInt8(ascii: "n") where literal("null"): return JSONValue(.null, at: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return JSONValue(try number(), at: start)
        default: throw unexpected("a value")
        }
    }

    private mutating func members(depth: Int) throws(JSONError) -> [JSONMember] {
        var members: [JSONMember] = []
        try list(closing: "}", named: "object") { (p: inout JSONParser) throws(JSONError) in
            guard p.i < p.bytes.count, p.bytes[p.i] == UInt8(ascii: "\"") else { throw p.unexpected("a key in quotes") }
            let keyLocation = p.here
            let key = try p.string()
            p.skipSpace()
            guard p.i < p.bytes.count, p.bytes[p.i] == UInt8(ascii: ":") else { throw p.unexpected("':'") }
            p.i += 1
            p.skipSpace()
            members.append(JSONMember(key: key, keyLocation: keyLocation, value: try p.value(depth: depth + 1)))
        }
        return members
    }

    private mutating func items(depth: Int) throws(JSONError) -> [JSONValue] {
        var items: [JSONValue] = []
        try list(closing: "]", named: "array") { (p: inout JSONParser) throws(JSONError) in
            items.append(try p.value(depth: depth + 1))
        }
        return items
    }

    /// Reads a bracketed, comma-separated list from its opening byte to
    /// `close`; `element` reads each element (white space around it is
    /// skipped here).
    private mutating func list(closing close: Unicode.Scalar, named name: String,
                               _ element: (inout JSONParser) throws(JSONError) -> Void) throws(JSONError) {
        let closing = UInt8(ascii: close)
        i += 1
        skipSpace()
        if i < bytes.count, bytes[i] == closing { i += 1; return }
        while true {
            skipSpace()
            try element(&self)
            skipSpace()
            guard i < bytes.count else { throw fail("unterminated \(name)") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == closing { i += 1; return }
            throw unexpected("',' or '\(close)'")
        }
    }

    private mutating func number() throws(JSONError) -> JSONValue.Kind {
        let start = i
        var isDouble = false
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        let digits = i
        skipDigits()
        if i == digits { throw unexpected("a digit") }
        if bytes[digits] == UInt8(ascii: "0"), i - digits > 1 { i = digits; throw fail("a number must not start with 0") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isDouble = true
            i += 1
            let fraction = i
            skipDigits()
            if i == fraction { throw unexpected("digits after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isDouble = true
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let exponent = i
            skipDigits()
            if i == exponent { throw unexpected("digits in the exponent") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if !isDouble {
            if let integer = Int64(text) { return .integer(integer) }
            if largeIntegers == .refused { i = start; throw fail(JSON.integerOutOfRange(text)) }
        }
        guard let double = Double(text) else { i = start; throw fail("number out of range") }
        return .double(double)
    }

    private mutating func skipDigits() {
        while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
    }

    private mutating func string() throws(JSONError) -> String {
        let start = here
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "\""):
                i += 1
                guard let text = JSON.text(validating: out) else { throw JSONError("a string that is not UTF-8", at: start) }
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &out)
            case 0..<0x20:
                throw fail("a control character inside a string (write it as an escape)")
            default:
                if b & 0xC0 == 0x80 { continuations += 1 }
                out.append(b)
                i += 1
            }
        }
    }

    /// Reads one escape (at the backslash) and appends what it stands for.
    private mutating func escape(into out: inout [UInt8]) throws(JSONError) {
        let at = here
        i += 1
        guard i < bytes.count else { throw fail("unterminated string") }
        let e = bytes[i]
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            i += 1
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard literal("\\u") else { throw JSONError("a lone surrogate", at: at) }
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONError("a lone surrogate", at: at) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let u = Unicode.Scalar(scalar) else { throw JSONError("a lone surrogate", at: at) }
            UTF8.encode(u) { out.append($0) }
            return
        default:
            throw JSONError("unknown escape '\\\(Character(Unicode.Scalar(e)))'", at: at)
        }
        i += 1
    }

    private mutating func hex4() throws(JSONError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard i < bytes.count, let digit = Character(Unicode.Scalar(bytes[i])).hexDigitValue else {
                throw unexpected("four hex digits after \\u")
            }
            v = v << 4 | UInt32(digit)
            i += 1
        }
        return v
    }
}
