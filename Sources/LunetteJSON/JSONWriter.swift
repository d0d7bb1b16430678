/// The one streaming JSON writer: reports, `--json` lines and the JSON of
/// plain data (`LuaValue`, `StoreValue`) all write through it, so they share
/// one escaper, one number formatter and one form for bytes (see `JSON`).
///
/// A class, so the closures that write an object's fields can write to it.
/// It writes compact JSON (no spaces), keys in the order they are given.
public final class JSONWriter {
    /// The JSON written so far.
    public private(set) var text = ""
    private var needsComma = false

    /// An empty writer.
    public init() {}

    /// Writes `{`, what `body` writes (keys and values), then `}`.
    public func object(_ body: () -> Void) {
        separate()
        text += "{"
        needsComma = false
        body()
        text += "}"
        needsComma = true
    }

    /// Writes `[`, what `body` writes for each item, then `]`.
    public func array<S: Sequence>(_ items: S, _ body: (S.Element) -> Void) {
        separate()
        text += "["
        needsComma = false
        for item in items { body(item) }
        text += "]"
        needsComma = true
    }

    /// Writes an object key; the next value written is its value.
    public func key(_ name: String) {
        separate()
        JSON.writeString(name, to: &text)
        text += ":"
        needsComma = false
    }

    /// Writes a string (escaped by `JSON.writeString`).
    public func string(_ value: String) {
        separate()
        JSON.writeString(value, to: &text)
        needsComma = true
    }

    /// Writes a float (`JSON.writeNumber`: `2.0`, `"NaN"` …).
    public func number(_ value: Double) {
        separate()
        JSON.writeNumber(value, to: &text)
        needsComma = true
    }

    /// Writes an integer.
    public func integer(_ value: Int64) {
        separate()
        JSON.writeInteger(value, to: &text)
        needsComma = true
    }

    /// Writes an integer (a count, an id, a size).
    public func integer(_ value: Int) { integer(Int64(value)) }

    /// Writes `true` or `false`.
    public func bool(_ value: Bool) {
        separate()
        text += value ? "true" : "false"
        needsComma = true
    }

    /// Writes `null`.
    public func null() {
        separate()
        text += "null"
        needsComma = true
    }

    /// Writes bytes as `{"$bytes": "<base64>"}` (`JSON.writeBytes`).
    public func bytes(_ value: [UInt8]) {
        separate()
        JSON.writeBytes(value, to: &text)
        needsComma = true
    }

    /// Writes `json`, a whole JSON value another writer wrote (a report
    /// inside a summary), as it is.
    public func value(json: String) {
        separate()
        text += json
        needsComma = true
    }

    private func separate() {
        if needsComma { text += "," }
    }
}

extension JSONWriter {
    /// `"name": "value"`.
    public func field(_ name: String, string value: String) { key(name); string(value) }
    /// `"name": "value"`, or `null` for nil.
    public func field(_ name: String, string value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }
    /// `"name": 1.5` (a float, `JSON.writeNumber`).
    public func field(_ name: String, number value: Double) { key(name); number(value) }
    /// `"name": 1.5`, or `null` for nil.
    public func field(_ name: String, number value: Double?) {
        key(name)
        if let value { number(value) } else { null() }
    }
    /// `"name": 3`.
    public func field(_ name: String, integer value: Int) { key(name); integer(value) }
    /// `"name": true`.
    public func field(_ name: String, bool value: Bool) { key(name); bool(value) }
}
