import LuaSandbox

/// A small streaming JSON writer for reports (a class, so nested closures can write).
final class JSONWriter {
    private(set) var text = ""
    private var needsComma = false

    func object(_ body: () -> Void) {
        separate()
        text += "{"
        needsComma = false
        body()
        text += "}"
        needsComma = true
    }

    func array<S: Sequence>(_ items: S, _ body: (S.Element) -> Void) {
        separate()
        text += "["
        needsComma = false
        for item in items { body(item) }
        text += "]"
        needsComma = true
    }

    func key(_ name: String) {
        separate()
        JSON.writeString(name, to: &text)
        text += ":"
        needsComma = false
    }

    func field(_ name: String, string value: String) { key(name); string(value) }
    func field(_ name: String, number value: Double) { key(name); number(value) }
    /// nil (and non-finite numbers) are written as null.
    func field(_ name: String, number value: Double?) {
        key(name)
        if let value { number(value) } else { raw("null") }
    }
    func field(_ name: String, string value: String?) {
        key(name)
        if let value { string(value) } else { raw("null") }
    }
    func field(_ name: String, bool value: Bool) { key(name); raw(value ? "true" : "false") }

    func string(_ value: String) {
        separate()
        JSON.writeString(value, to: &text)
        needsComma = true
    }

    func number(_ value: Double) {
        raw(Self.number(value))
    }

    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if let i = Int64(exactly: value) { return String(i) }
        return String(value)
    }

    func raw(_ json: String) {
        separate()
        text += json
        needsComma = true
    }

    private func separate() {
        if needsComma { text += "," }
    }
}
