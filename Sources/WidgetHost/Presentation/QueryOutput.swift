import LuaSandbox
import LunetteJSON

/// How `lunette query` shows a query's answer.
public enum QueryOutput {
    /// `{"query","status","message","traceback","location","limit","entities":[{"id","title",…}]}`.
    public static func json(_ answer: QueryAnswer) -> String {
        let o = JSONWriter()
        o.object {
            o.field("query", string: answer.query)
            Diagnostic.writeFields(of: answer.outcome.diagnostic, to: o)
            o.key("entities")
            o.array(answer.entities ?? []) { LuaValue.table($0.fields).writeJSON(to: o) }
        }
        return o.text
    }

    /// One line per entity, "id  title", or the diagnostic's text.
    public static func text(_ answer: QueryAnswer) -> String {
        if let diagnostic = answer.outcome.diagnostic { return diagnostic.text + "\n" }
        guard let entities = answer.entities, !entities.isEmpty else { return "(no entities)\n" }
        var table = TextTable(["id", "title"])
        for entity in entities { table.add([entity.id, entity.title]) }
        return table.render(indent: "")
    }
}
