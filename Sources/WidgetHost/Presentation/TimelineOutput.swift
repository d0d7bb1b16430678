#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LuaSandbox

/// How `lunette timeline` shows one provider call: JSON or text.
public enum TimelineOutput {
    /// `{"kind","family","config","at","status","entries","policy","diagnostics","logs","elapsedMs"}`;
    /// on failure also "message" and "traceback".
    public static func json(_ result: ProviderResult<Timeline>, widget: WidgetConfiguration, at: Double) -> String {
        let o = JSONWriter()
        let outcome = result.outcome
        o.object {
            o.field("kind", string: widget.kind)
            o.field("family", string: widget.family.rawValue)
            o.key("config")
            if let values = widget.values { LuaValue.table(values).writeJSON(to: o) } else { o.null() }
            o.field("at", number: at)
            Diagnostic.writeFields(of: outcome.diagnostic, to: o)
            o.key("entries")
            o.array(result.value?.entries ?? []) { entry in LuaValue.table(entry.content).writeJSON(to: o) }
            o.key("policy")
            switch result.value?.policy {
            case .atEnd?: o.string("atEnd")
            case .never?: o.string("never")
            case .after(let t)?: o.object { o.field("after", number: t) }
            case nil: o.null()
            }
            o.key("diagnostics")
            o.array(outcome.warnings) { warning in
                o.object {
                    o.field("level", string: "warning")
                    o.field("message", string: warning)
                }
            }
            o.key("logs")
            o.array(outcome.logs) { line in
                o.object {
                    o.field("level", string: line.level.name)
                    o.field("text", string: line.text)
                }
            }
            o.field("elapsedMs", number: (outcome.elapsed * 1e5).rounded() / 100)
            o.field("memoryPeakBytes", integer: outcome.memoryPeak)
        }
        return o.text
    }

    /// A table of entries with local (with their offset) and UTC times, the
    /// policy, warnings and logs. Entries are whole; with a `width` they
    /// wrap at it, indented under their column.
    public static func text(_ result: ProviderResult<Timeline>, widget: WidgetConfiguration, at: Double, calendar: HostCalendar,
                            width: Int? = nil) -> String {
        let outcome = result.outcome
        var out = "\(widget) at \(ISODate.format(at)) (\(calendar.identifier))\n"
        for line in outcome.logs { out += "  \(line.level.linePrefix)\(line.text)\n" }
        guard let timeline = result.value else {
            out += (outcome.diagnostic?.text ?? "failed") + "\n"
            return out
        }
        var table = TextTable(["#", "local", "date (UTC)", "entry"])
        for (i, entry) in timeline.entries.enumerated() {
            table.add(["\(i + 1)", calendar.timeText(entry.date, day: true), ISODate.format(entry.date), SimulationReport.summary(entry.content)])
        }
        out += timeline.entries.isEmpty ? "  (no entries: the placeholder stays on screen)\n" : table.render(indent: "  ", width: width)
        out += "policy: \(timeline.policy)\n"
        for warning in outcome.warnings { out += "warning: \(warning)\n" }
        out += "took \(fixedText(outcome.elapsed * 1000, decimals: 2)) ms, peak memory \(outcome.memoryPeak / 1024) KB\n"
        return out
    }
}
