import LunetteJSON

/// How a table reads, for `LuaValue` and `LuaDisplayValue` alike: the
/// array part `t[1...n]` first, then the string-keyed fields in key order.
/// One place for the table shape of the Lua-source and the JSON renderings.
enum TableRendering {
    /// `{1, 2, name = "x", ["odd key"] = 3}`, each element by `element`.
    static func writeLiteral<Element>(array: [Element], fields: [(key: LuaString, value: Element)],
                                      to out: inout String, _ element: (Element, inout String) -> Void) {
        out += "{"
        var first = true
        for value in array {
            if !first { out += ", " }
            first = false
            element(value, &out)
        }
        for (key, value) in fields {
            if !first { out += ", " }
            first = false
            if let name = key.string, PathComponent.isIdentifier(name) {
                out += name
            } else {
                out += "[" + LuaLiteral.quoted(key) + "]"
            }
            out += " = "
            element(value, &out)
        }
        out += "}"
    }

    /// A JSON array for a table with only an array part; otherwise an
    /// object, array entries keyed "1", "2", … first (docs/json.md).
    static func writeJSON<Element>(array: [Element], fields: [(key: LuaString, value: Element)],
                                   to writer: JSONWriter, _ element: (Element) -> Void) {
        if fields.isEmpty, !array.isEmpty {
            writer.array(array, element)
            return
        }
        writer.object {
            for (i, value) in array.enumerated() {
                writer.key(String(i + 1))
                element(value)
            }
            for (key, value) in fields {
                writer.key(key.displayText)
                element(value)
            }
        }
    }
}
