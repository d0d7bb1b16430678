import LuaSandbox
import LunetteJSON

/// How `lunette activity` shows activities: a line or a table for people,
/// `{"id","type","state","attributes","content":{"state","staleDate"},"relevance"}`
/// for programs (with `started`, `ended`, `dismissAt` and the pushes).
public enum ActivityOutput {
    /// One activity as JSON; `extra` adds fields after the activity's own.
    public static func json(_ record: ActivityRecord, at t: Double, extra: ((JSONWriter) -> Void)? = nil) -> String {
        let o = JSONWriter()
        write(record, at: t, to: o, extra: extra)
        return o.text
    }

    /// Activities as a JSON array.
    public static func json(_ records: [ActivityRecord], at t: Double) -> String {
        let o = JSONWriter()
        o.array(records) { write($0, at: t, to: o, extra: nil) }
        return o.text
    }

    /// An error as JSON: `{"error": refusal name or null, "message"}`.
    public static func json(_ error: ActivityError) -> String {
        let o = JSONWriter()
        o.object {
            o.field("error", string: error.refusal?.rawValue)
            o.field("message", string: error.message)
        }
        return o.text
    }

    static func write(_ record: ActivityRecord, at t: Double, to o: JSONWriter, extra: ((JSONWriter) -> Void)?) {
        o.object {
            o.field("id", string: record.id)
            o.field("type", string: record.type)
            o.field("state", string: record.phase(at: t).rawValue)
            o.key("attributes")
            LuaValue.table(record.attributes).writeJSON(to: o)
            o.key("content")
            o.object {
                o.key("state")
                LuaValue.table(record.content.state).writeJSON(to: o)
                o.field("staleDate", number: record.content.staleDate)
            }
            o.field("relevance", number: record.relevance)
            o.field("started", number: record.startedAt)
            o.field("ended", number: record.endedAt)
            o.field("dismissAt", number: record.dismissAt)
            o.key("pushes")
            o.array(record.pushes) { writePush($0, to: o) }
            extra?(o)
        }
    }

    /// A push: `{"at", "deliveredAt", "delay", "priority", "counted", "dropped", "payload"}`.
    static func writePush(_ p: PushRecord, to o: JSONWriter) {
        o.object {
            o.field("at", number: p.arrivedAt)
            o.field("deliveredAt", number: p.deliveredAt)
            o.field("delay", number: p.delay)
            o.field("priority", integer: p.priority)
            o.field("counted", bool: p.counted)
            o.field("dropped", bool: p.dropped)
            o.key("payload")
            p.payload.writeJSON(to: o)
        }
    }

    /// One activity for people: its id, type, phase and content.
    public static func text(_ record: ActivityRecord, at t: Double) -> String {
        var line = "\(record.id) \(record.type) \(record.phase(at: t).rawValue): \(LuaValue.table(record.content.state).jsonText)"
        if let stale = record.content.staleDate { line += " (stale at \(ISODate.format(stale)))" }
        return line + "\n"
    }

    /// A table of activities for people, most relevant first.
    public static func text(_ records: [ActivityRecord], at t: Double, width: Int? = nil) -> String {
        guard !records.isEmpty else { return "no activities on screen\n" }
        var table = TextTable(["id", "type", "state", "relevance", "started", "content"])
        for r in records {
            let content = LuaValue.table(r.content.state).jsonText
            var relevance = ""
            JSON.writeNumber(r.relevance, to: &relevance)
            table.add([r.id, r.type, r.phase(at: t).rawValue, relevance, ISODate.format(r.startedAt), content])
        }
        return table.render(indent: "", width: width)
    }

    /// What happened to a push: delivered (and when), or waiting for the budget.
    public static func text(push: PushRecord, of id: String, budget: Int, nextDelivery: Double?) -> String {
        if let delivered = push.deliveredAt {
            return "push to \(id) delivered at \(ISODate.format(delivered))" + (push.counted ? " (counted: \(budget) per hour)" : " (priority 5, not counted)") + "\n"
        }
        let when = nextDelivery.map { " until \(ISODate.format($0))" } ?? ""
        return "push to \(id) throttled: over its budget of \(budget) per hour, it waits\(when); it is not lost (A6) unless the activity ends first\n"
    }
}
