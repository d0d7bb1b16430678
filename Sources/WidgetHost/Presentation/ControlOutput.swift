import LuaSandbox
import LunetteJSON

/// How `lunette control` shows a control's value, and what a tap did.
public enum ControlOutput {
    /// `{"kind","type","value","optimistic","status","message",…,"performed":{"intent","status","message",…,"result"}|null}`;
    /// status and message are the last value read's.
    public static func json(_ record: ControlRecord, tap: ControlTap?) -> String {
        let o = JSONWriter()
        o.object {
            o.field("kind", string: record.kind)
            o.field("type", string: record.type)
            o.key("value")
            if let value = record.value { value.writeJSON(to: o) } else { o.null() }
            o.key("optimistic")
            if let optimistic = tap?.optimistic { optimistic.writeJSON(to: o) } else { o.null() }
            Diagnostic.writeFields(of: record.lastReadFailure, to: o)
            o.key("performed")
            if let performance = tap?.performance {
                o.object {
                    o.field("intent", string: performance.intent)
                    Diagnostic.writeFields(of: performance.outcome.diagnostic, to: o)
                    o.key("result")
                    if let result = performance.result { result.writeJSON(to: o) } else { o.null() }
                }
            } else {
                o.null()
            }
        }
        return o.text
    }

    /// "Kind (toggle): true", what a tap did, and failures' texts.
    public static func text(_ record: ControlRecord, tap: ControlTap?) -> String {
        var out = ""
        if let tap {
            if let optimistic = tap.optimistic { out += "tapped: \(tap.before.map(\.description) ?? "nil") → \(optimistic) at once\n" }
            if let performance = tap.performance {
                out += performance.outcome.diagnostic.map { "action \(performance.intent): \($0.text)\n" }
                    ?? "action \(performance.intent) performed" + (performance.result.map { " → \($0)" } ?? "") + "\n"
            }
        }
        if let failure = record.lastReadFailure { out += "value: \(failure.text)\n" }
        out += "\(record.kind) (\(record.type)): \(record.value.map(\.description) ?? "nil")\n"
        return out
    }
}
