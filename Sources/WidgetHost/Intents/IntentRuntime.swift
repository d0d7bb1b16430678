import LuaSandbox

/// Runs a bundle's intents and entity queries (rules I1, I3, I4, L3), in
/// the same pooled sandboxes as its widgets: `perform` under the intent
/// limits (30 MB and 30 s by default), with its store writes all or
/// nothing; `suggested` and `entities` under the same limits, their
/// results checked.
public final class IntentRuntime {
    /// The sandboxes, shared with the bundle's widgets when made by a
    /// `TimelineEngine`.
    let pool: SandboxPool

    /// Intents of `bundle` in sandboxes of their own.
    public convenience init(bundle: ScriptBundle, services: HostServices) {
        self.init(pool: SandboxPool(bundle: bundle, services: services))
    }

    init(pool: SandboxPool) {
        self.pool = pool
    }

    public var bundle: ScriptBundle { pool.bundle }
    public var services: HostServices { pool.services }

    /// Checks `parameters` against intent `id`'s declaration, then runs its
    /// `perform(params, ctx)`; `ctx.source` is `source`. A parameter that
    /// fails its checks ends the performance as `invalid` before `perform`
    /// runs, so nothing is written. Throws for an intent the bundle does
    /// not declare, or one without `perform` (a configuration intent).
    public func perform(_ id: String, parameters: [String: LuaValue] = [:], source: IntentSource? = nil) throws(IntentError) -> IntentPerformance {
        try perform(id, parameters: parameters, source: source, hostValues: [:])
    }

    /// `perform`, with `hostValues` added to the checked parameters whether
    /// or not the intent declares them: a toggle's `value` (C3) reaches its
    /// action even when the action does not declare it.
    func perform(_ id: String, parameters: [String: LuaValue], source: IntentSource?, hostValues: [String: LuaValue]) throws(IntentError) -> IntentPerformance {
        let intent = try self.intent(id)
        guard intent.hasPerform else {
            throw IntentError(message: "intent '\(id)' has no perform function\(intent.isConfiguration ? " (a configuration intent only holds a widget's settings)" : "")")
        }
        var checked: LuaTable
        var declared = parameters
        var undeclared: [String: LuaValue] = [:]
        for (name, value) in hostValues {
            if intent.parameters.contains(where: { $0.name == name }) { declared[name] = value } else { undeclared[name] = value }
        }
        do {
            checked = try IntentParameters.validate(declared, for: intent, calendar: services.calendar) { (parameter, entityID) throws(ParameterError) in
                try self.resolve(entityID, for: parameter)
            }
        } catch {
            return .refused(id, error, source: source)
        }
        for (name, value) in undeclared { checked.fields[LuaString(name)] = value }
        var context = LuaFields()
        if let source { context["source"] = source.lua }
        let outcome = pool.call(.intent, "intent", id, "perform", [.table(checked), .table(LuaTable(fields: context))])
        return IntentPerformance(intent: id, source: source, parameters: checked, outcome: outcome, performed: true)
    }

    /// Reads `name=value` texts (a command line, a form) as values of intent
    /// `id`'s declared parameter types: `true`/`false`, whole numbers,
    /// numbers, dates as ISO 8601 or seconds, enum values, entity ids.
    /// Throws `IntentError` for an unknown intent; a text that does not fit
    /// is a `ParameterError` naming the parameter.
    public func parameters(_ id: String, fromTexts texts: [String: String]) throws(IntentError) -> Result<[String: LuaValue], ParameterError> {
        let intent = try self.intent(id)
        var values: [String: LuaValue] = [:]
        for name in texts.keys.sorted() {
            guard let parameter = intent.parameters.first(where: { $0.name == name }) else {
                return .failure(ParameterError.unknownParameter(name, of: intent))
            }
            do { values[name] = try ParameterValues.parse(texts[name]!, for: parameter, calendar: services.calendar) } catch {
                return .failure(error)
            }
        }
        return .success(values)
    }

    /// The options of an entity parameter: query `id`'s `suggested()` (I4).
    public func suggested(_ id: String) throws(IntentError) -> QueryAnswer {
        _ = try query(id)
        return answer(id, pool.call(.query, "query", id, "suggested", []))
    }

    /// The entities with these ids: query `id`'s `entities(ids)`, or its
    /// suggestions with these ids when it declares no `entities` (I4).
    public func entities(_ id: String, ids: [String]) throws(IntentError) -> QueryAnswer {
        let query = try self.query(id)
        guard query.hasEntities else {
            var answer = answer(id, pool.call(.query, "query", id, "suggested", []))
            answer.entities = answer.entities?.filter { ids.contains($0.id) }
            return answer
        }
        let list = LuaValue.table(LuaTable(array: ids.map { .string(LuaString($0)) }))
        return answer(id, pool.call(.query, "query", id, "entities", [list]))
    }

    /// An entity id of `parameter` resolved by its query, as `perform` gets it.
    private func resolve(_ entityID: String, for parameter: IntentParameter) throws(ParameterError) -> LuaValue {
        guard let queryID = parameter.query else { return .table(LuaTable(fields: ["id": .string(LuaString(entityID))])) }
        let answer: QueryAnswer
        do { answer = try entities(queryID, ids: [entityID]) } catch {
            throw ParameterError(message: "parameter '\(parameter.name)': \(error.message)")
        }
        guard let entities = answer.entities else {
            throw ParameterError(message: "parameter '\(parameter.name)': query '\(queryID)' failed: \(answer.outcome.diagnostic?.summary ?? "no entities")")
        }
        guard let entity = entities.first(where: { $0.id == entityID }) else {
            throw ParameterError(message: "parameter '\(parameter.name)': query '\(queryID)' has no entity with id \"\(entityID)\"")
        }
        return .table(entity.fields)
    }

    /// Checks a query's result: an array of `{ id = string, title = string, … }`.
    private func answer(_ id: String, _ outcome: CallOutcome) -> QueryAnswer {
        var outcome = outcome
        guard outcome.succeeded else { return QueryAnswer(query: id, outcome: outcome, entities: nil) }
        let value = outcome.values.first ?? .nil
        guard case .table(let list) = value, list.fields.isEmpty else {
            outcome.refuse("query '\(id)' must return an array of { id = <string>, title = <string> }, got \(value.typeName)")
            return QueryAnswer(query: id, outcome: outcome, entities: nil)
        }
        var entities: [QueryEntity] = []
        for (i, item) in list.array.enumerated() {
            guard case .table(let t) = item else {
                outcome.refuse("query '\(id)': entities[\(i + 1)] must be a table { id =, title = }, got \(item.typeName)")
                return QueryAnswer(query: id, outcome: outcome, entities: nil)
            }
            guard let entityID = t[LuaString("id")].stringValue, !entityID.isEmpty else {
                outcome.refuse("query '\(id)': entities[\(i + 1)].id must be a non-empty string, got \(t[LuaString("id")].typeName)")
                return QueryAnswer(query: id, outcome: outcome, entities: nil)
            }
            guard let title = t[LuaString("title")].stringValue else {
                outcome.refuse("query '\(id)': entities[\(i + 1)].title must be a string, got \(t[LuaString("title")].typeName)")
                return QueryAnswer(query: id, outcome: outcome, entities: nil)
            }
            entities.append(QueryEntity(id: entityID, title: title, fields: t))
        }
        return QueryAnswer(query: id, outcome: outcome, entities: entities)
    }

    private func intent(_ id: String) throws(IntentError) -> IntentDeclaration {
        guard let intent = bundle.declarations.intent(id) else {
            let ids = bundle.declarations.intents.map(\.id).joined(separator: ", ")
            throw IntentError(message: "bundle \(bundle.manifest.id) has no intent '\(id)' (intents: \(ids.isEmpty ? "none" : ids))")
        }
        return intent
    }

    private func query(_ id: String) throws(IntentError) -> QueryDeclaration {
        guard let query = bundle.declarations.query(id) else {
            let ids = bundle.declarations.queries.map(\.id).joined(separator: ", ")
            throw IntentError(message: "bundle \(bundle.manifest.id) has no query '\(id)' (queries: \(ids.isEmpty ? "none" : ids))")
        }
        return query
    }
}
