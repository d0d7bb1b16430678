import LunetteJSON

/// JSON text for plain data, used by `--json` outputs and reports. It
/// follows the project's one JSON convention (LunetteJSON, docs/json.md):
/// - nil → null; booleans and integers as themselves; floats in their
///   shortest round-trip form with a `.` or an exponent, NaN and ±infinity
///   as the strings "NaN", "Infinity" and "-Infinity";
/// - strings of valid UTF-8 as JSON strings; other bytes as
///   `{"$bytes": "<base64>"}`;
/// - a table with only an array part as a JSON array; any other table
///   (including the empty one) as an object, array entries keyed "1", "2", …
///   first, then the fields in the byte order of their keys (a key that is
///   not UTF-8 is written with U+FFFD for its bad bytes).
extension LuaValue {
    /// The value as compact JSON.
    public var jsonText: String {
        let writer = JSONWriter()
        writeJSON(to: writer)
        return writer.text
    }

    /// Writes the value to `writer`, so reports can embed plain data.
    public func writeJSON(to writer: JSONWriter) {
        switch self {
        case .nil: writer.null()
        case .boolean(let b): writer.bool(b)
        case .integer(let i): writer.integer(i)
        case .number(let d): writer.number(d)
        case .string(let s):
            if let text = s.string { writer.string(text) } else { writer.bytes(s.bytes) }
        case .table(let t):
            TableRendering.writeJSON(array: t.array, fields: t.fields.map { ($0.key, $0.value) }, to: writer) { $0.writeJSON(to: writer) }
        }
    }
}
