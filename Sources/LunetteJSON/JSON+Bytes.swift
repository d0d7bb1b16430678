extension JSON {
    /// The key of the one-key object that holds bytes that are not text:
    /// `{"$bytes": "<base64>"}`.
    public static let bytesKey = "$bytes"

    /// The text of `bytes` when they are well-formed UTF-8 (no overlong
    /// forms, no surrogates, nothing above U+10FFFF), which JSON writes as a
    /// string; nil for bytes it writes as `{"$bytes": …}` instead.
    public static func text<C: Collection>(validating bytes: C) -> String? where C.Element == UInt8 {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error: return nil
            }
        }
    }

    /// Appends bytes that are not (or need not be) UTF-8 text as
    /// `{"$bytes": "<base64>"}`: an object, so they never pass for a string
    /// that happens to look like base64, and base64 (standard alphabet,
    /// padded) so any byte survives.
    public static func writeBytes(_ bytes: [UInt8], to out: inout String) {
        out += "{"
        writeString(bytesKey, to: &out)
        out += ":\""
        out += Base64.encode(bytes)
        out += "\"}"
    }
}
