import LuaSandbox
import LunetteJSON

/// How `lunette intent` shows a performance, and the widget reload that
/// followed a tap.
public enum IntentOutput {
    /// A widget reload that followed a performance: the widget and the
    /// first entry of the timeline it now shows.
    public struct Reload: Sendable {
        public var kind: String
        public var family: WidgetFamily
        public var reason: ReloadReason
        public var entry: LuaTable?

        public init(kind: String, family: WidgetFamily, reason: ReloadReason, entry: LuaTable?) {
            self.kind = kind
            self.family = family
            self.reason = reason
            self.entry = entry
        }
    }

    /// `{"intent","status","message","traceback","location","limit","performed","parameters","result","reloads":[{"kind","family","reason","entry"}]}`.
    public static func json(_ performance: IntentPerformance, reloads: [Reload]) -> String {
        let o = JSONWriter()
        o.object {
            o.field("intent", string: performance.intent)
            Diagnostic.writeFields(of: performance.outcome.diagnostic, to: o)
            o.field("performed", bool: performance.performed)
            o.key("parameters")
            if let parameters = performance.parameters { LuaValue.table(parameters).writeJSON(to: o) } else { o.null() }
            o.key("result")
            if let result = performance.result { result.writeJSON(to: o) } else { o.null() }
            o.key("reloads")
            o.array(reloads) { reload in
                o.object {
                    o.field("kind", string: reload.kind)
                    o.field("family", string: reload.family.rawValue)
                    o.field("reason", string: reload.reason.rawValue)
                    o.key("entry")
                    if let entry = reload.entry { LuaValue.table(entry).writeJSON(to: o) } else { o.null() }
                }
            }
        }
        return o.text
    }

    /// "performed ID → result", the logs, and each reload with its whole
    /// entry (wrapped at `width`, indented, when one is given); a failure
    /// is the diagnostic's text.
    public static func text(_ performance: IntentPerformance, reloads: [Reload], width: Int? = nil) -> String {
        var out = ""
        for line in performance.outcome.logs { out += "  \(line.level.linePrefix)\(line.text)\n" }
        if let diagnostic = performance.outcome.diagnostic {
            out += diagnostic.text + "\n"
            if !performance.performed { out += "(perform did not run)\n" }
        } else {
            out += "performed \(performance.intent)" + (performance.result.map { " → \($0)" } ?? "") + "\n"
        }
        for reload in reloads {
            let line = "reloaded \(reload.kind) · \(reload.family.rawValue) (\(reload.reason.rawValue)): "
                + (reload.entry.map { SimulationReport.summary($0) } ?? "no entry")
            out += TextWrap.block(line, width: width, firstColumn: 0, indent: "  ") + "\n"
        }
        return out
    }
}
