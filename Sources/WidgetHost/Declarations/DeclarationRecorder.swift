import LuaSandbox

/// The Swift side of `widget { … }`, `intent { … }`, `query { … }`,
/// `control { … }` and `activity { … }` in one state: checks each
/// declaration, records it with the location of its call, and keeps its
/// functions for the host to call. Problems are collected, not raised, so
/// that one load reports all of them; `finish()` adds the cross-references
/// (a configuration intent that does not exist, an entity query that does
/// not exist).
final class DeclarationRecorder {
    /// Check each declaration (when the bundle loads). Calls after that
    /// only collect functions: the declarations were checked once.
    let validating: Bool
    private(set) var declarations = BundleDeclarations()
    private(set) var problems: [LocatedError] = []
    /// Functions by declaration ("widget:TaskCount") and field ("timeline").
    private var functions: [String: [String: LuaFunctionRef]] = [:]

    init(validating: Bool) { self.validating = validating }

    /// The function `field` of the declaration `what` `id`.
    func function(_ what: String, _ id: String, _ field: String) -> LuaFunctionRef? {
        functions["\(what):\(id)"]?[field]
    }

    /// Adds `declare`, the Swift side of the declaration globals (see `glue`).
    func add(to module: inout LuaModule) {
        module.add("declare") { [unowned self] args in
            try self.record(args)
            return []
        }
    }

    /// Forgets everything, for the next run of main.lua.
    func reset() {
        declarations = BundleDeclarations()
        problems = []
        functions = [:]
    }

    /// `declare(what, id, plain fields, names of function fields, functions…)`.
    private func record(_ args: LuaArguments) throws {
        let what = try args.text(1)
        var refs: [String: LuaFunctionRef] = [:]
        if case .table(let names) = try args.value(4) {
            for (i, name) in names.array.enumerated() {
                refs[name.stringValue ?? "[\(name)]"] = try args.function(5 + i)
            }
        }
        if !validating {
            if let id = try? args.text(2) { functions["\(what):\(id)"] = refs }
            return
        }
        let here = args.location(level: 2).map { ScriptLocation(file: $0.chunk, line: $0.line) }
            ?? ScriptLocation(file: "?", line: 0)
        let fields: LuaTable
        do {
            guard case .table(let t) = try args.value(3) else { return }
            fields = t
        } catch {
            problems.append(LocatedError(file: here.file, line: here.line, message: "\(what): \(error.message)"))
            return
        }
        var reader = DeclarationFields(what: what, fields: fields, functions: Set(refs.keys))
        do {
            let id: String
            switch what {
            case "widget": id = try recordWidget(&reader, here)
            case "intent": id = try recordIntent(&reader, here)
            case "query": id = try recordQuery(&reader, here)
            case "control": id = try recordControl(&reader, here)
            case "activity": id = try recordActivity(&reader, here)
            default: return
            }
            functions["\(what):\(id)"] = refs
        } catch {
            problems.append(LocatedError(file: here.file, line: here.line, message: error.message))
        }
    }

    private func recordWidget(_ r: inout DeclarationFields, _ here: ScriptLocation) throws(DeclarationProblem) -> String {
        let kind = try r.requiredString("kind")
        r.name = "widget '\(kind)'"
        if let other = declarations.widget(kind) {
            throw r.problem("duplicate kind '\(kind)': already declared at \(other.location)")
        }
        var families: [WidgetFamily] = []
        if let names = try r.strings("families") {
            if names.isEmpty { throw r.problem("'families' is empty: list at least one of \(WidgetFamily.names)") }
            for name in names {
                guard let family = WidgetFamily(rawValue: name) else {
                    throw r.problem("unknown family '\(name)' (families: \(WidgetFamily.names))")
                }
                families.append(family)
            }
        } else {
            families = [.systemSmall, .systemMedium, .systemLarge]
        }
        let widget = WidgetDeclaration(
            kind: kind, displayName: try r.string("displayName"), description: try r.string("description"),
            families: families, configuration: try r.string("configuration"),
            hasSnapshot: try r.function("snapshot", required: false), location: here)
        _ = try r.function("placeholder", required: true)
        _ = try r.function("timeline", required: true)
        try r.finish()
        declarations.widgets.append(widget)
        return kind
    }

    private func recordIntent(_ r: inout DeclarationFields, _ here: ScriptLocation) throws(DeclarationProblem) -> String {
        let id = try r.requiredString("id")
        r.name = "intent '\(id)'"
        if let other = declarations.intent(id) { throw r.problem("duplicate id '\(id)': already declared at \(other.location)") }
        let isConfiguration = try r.boolean("configuration") ?? false
        var parameters: [IntentParameter] = []
        for (i, item) in (try r.array("parameters") ?? []).enumerated() {
            let parameter = try Self.parameter(item, index: i + 1, in: r.name)
            if parameters.contains(where: { $0.name == parameter.name }) {
                throw r.problem("parameter '\(parameter.name)' is declared twice")
            }
            if isConfiguration && !parameter.isOptional && parameter.defaultValue == nil && parameter.type != .entity {
                throw r.problem("parameter '\(parameter.name)' is not optional and has no default: a configuration intent needs one for new widgets (add default = … or optional = true)")
            }
            parameters.append(parameter)
        }
        let hasPerform = try r.function("perform", required: !isConfiguration)
        let intent = IntentDeclaration(id: id, title: try r.string("title"), isConfiguration: isConfiguration,
                                       parameters: parameters, hasPerform: hasPerform, location: here)
        _ = try r.string("description")
        try r.finish()
        declarations.intents.append(intent)
        return id
    }

    private static func parameter(_ value: LuaValue, index: Int, in owner: String) throws(DeclarationProblem) -> IntentParameter {
        guard case .table(let t) = value else {
            throw DeclarationProblem(message: "\(owner): parameters[\(index)] must be a table { name =, type = }, got \(value.typeName)")
        }
        var r = DeclarationFields(what: "\(owner): parameters[\(index)]", fields: t, functions: [])
        let name = try r.requiredString("name")
        r.name = "\(owner): parameter '\(name)'"
        let typeName = try r.requiredString("type")
        guard let type = ParameterType(rawValue: typeName) else {
            throw r.problem("unknown type '\(typeName)' (types: \(ParameterType.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let values = try r.strings("values") ?? []
        if type == .enum && values.isEmpty { throw r.problem("an enum needs values = { … }") }
        let query = try r.string("query")
        if type == .entity && query == nil { throw r.problem("an entity parameter needs query = \"<query id>\"") }
        var parameter = IntentParameter(name: name, type: type, title: try r.string("title"), defaultValue: nil,
                                        isOptional: try r.boolean("optional") ?? false, values: values, query: query)
        if let value = r.value("default") {
            do { parameter.defaultValue = try ParameterValues.check(value, for: parameter) } catch {
                throw r.problem("default: \(error.message)")
            }
        }
        _ = try r.string("description")
        try r.finish()
        return parameter
    }

    private func recordQuery(_ r: inout DeclarationFields, _ here: ScriptLocation) throws(DeclarationProblem) -> String {
        let id = try r.requiredString("id")
        r.name = "query '\(id)'"
        if let other = declarations.query(id) { throw r.problem("duplicate id '\(id)': already declared at \(other.location)") }
        _ = try r.function("suggested", required: true)
        let hasEntities = try r.function("entities", required: false)
        try r.finish()
        declarations.queries.append(QueryDeclaration(id: id, hasEntities: hasEntities, location: here))
        return id
    }

    private func recordControl(_ r: inout DeclarationFields, _ here: ScriptLocation) throws(DeclarationProblem) -> String {
        let kind = try r.requiredString("kind")
        r.name = "control '\(kind)'"
        if let other = declarations.controls.first(where: { $0.kind == kind }) {
            throw r.problem("duplicate kind '\(kind)': already declared at \(other.location)")
        }
        let type = try r.requiredString("type")
        guard type == "toggle" || type == "button" else { throw r.problem("type must be \"toggle\" or \"button\", got \"\(type)\"") }
        let action = try r.string("action")
        _ = try r.string("displayName")
        let control = ControlDeclaration(kind: kind, type: type, action: action, hasPreview: try r.function("preview", required: false),
                                         location: here)
        _ = try r.function("value", required: true)
        try r.finish()
        declarations.controls.append(control)
        return kind
    }

    private func recordActivity(_ r: inout DeclarationFields, _ here: ScriptLocation) throws(DeclarationProblem) -> String {
        let type = try r.requiredString("type")
        r.name = "activity '\(type)'"
        if let other = declarations.activities.first(where: { $0.type == type }) {
            throw r.problem("duplicate type '\(type)': already declared at \(other.location)")
        }
        var schemas: [ActivitySchema] = []
        for what in ["attributes", "state"] {
            guard let value = r.value(what) else { schemas.append(ActivitySchema()); continue }
            do { schemas.append(try ActivitySchema.parse(value, what: what)) } catch { throw r.problem(error.message) }
        }
        let tick = try r.number("tick")
        if let tick, !(tick > 0 && tick.isFinite) { throw r.problem("'tick' must be a positive number of seconds, got \(tick)") }
        _ = try r.function("updater", required: true)
        try r.finish()
        declarations.activities.append(ActivityDeclaration(type: type, attributes: schemas[0], state: schemas[1], tick: tick, location: here))
        return type
    }

    /// Cross-references, checked once main.lua has run.
    func finish() {
        for widget in declarations.widgets {
            guard let id = widget.configuration else { continue }
            guard let intent = declarations.intent(id) else {
                let known = declarations.intents.filter(\.isConfiguration).map(\.id)
                problems.append(LocatedError(file: widget.location.file, line: widget.location.line,
                    message: "widget '\(widget.kind)': configuration intent '\(id)' is not declared" + (known.isEmpty ? "" : " (configuration intents: \(known.joined(separator: ", ")))")))
                continue
            }
            if !intent.isConfiguration {
                problems.append(LocatedError(file: widget.location.file, line: widget.location.line,
                    message: "widget '\(widget.kind)': intent '\(id)' is not a configuration intent (declare it with configuration = true)"))
            }
        }
        for intent in declarations.intents {
            for parameter in intent.parameters {
                if let query = parameter.query, declarations.query(query) == nil {
                    problems.append(LocatedError(file: intent.location.file, line: intent.location.line,
                        message: "intent '\(intent.id)': parameter '\(parameter.name)' uses query '\(query)', which is not declared"))
                }
            }
        }
        for control in declarations.controls {
            if let action = control.action, declarations.intent(action) == nil {
                problems.append(LocatedError(file: control.location.file, line: control.location.line,
                    message: "control '\(control.kind)': action intent '\(action)' is not declared"))
            }
        }
    }

    /// The glue that turns each declaration global into a call of
    /// `declare` (Declarations/declarations.lua).
    static let glue = HostGlue.source(PackageResources.declarations_lua)

}

/// What is wrong with one declaration.
struct DeclarationProblem: Error {
    var message: String
}

/// Reads a declaration's fields, naming the declaration in every problem
/// and refusing fields it does not know.
struct DeclarationFields {
    var name: String
    let fields: LuaTable
    let functions: Set<String>
    private var used: Set<String> = []

    init(what: String, fields: LuaTable, functions: Set<String>) {
        self.name = what
        self.fields = fields
        self.functions = functions
    }

    func problem(_ message: String) -> DeclarationProblem { DeclarationProblem(message: "\(name): \(message)") }

    mutating func value(_ key: String) -> LuaValue? {
        used.insert(key)
        let v = fields[LuaString(key)]
        if v.isNil { return Optional.none }   // not `nil`: LuaValue is nil-literal expressible
        return v
    }

    mutating func string(_ key: String) throws(DeclarationProblem) -> String? {
        guard let v = value(key) else {
            if functions.contains(key) { throw problem("'\(key)' must be a string, got function") }
            return nil
        }
        guard let s = v.stringValue else { throw problem("'\(key)' must be a string, got \(v.typeName)") }
        return s
    }

    mutating func requiredString(_ key: String) throws(DeclarationProblem) -> String {
        guard let s = try string(key) else { throw problem("missing '\(key)'") }
        if s.isEmpty { throw problem("'\(key)' must not be empty") }
        return s
    }

    mutating func boolean(_ key: String) throws(DeclarationProblem) -> Bool? {
        guard let v = value(key) else { return nil }
        guard let b = v.boolValue else { throw problem("'\(key)' must be true or false, got \(v.typeName)") }
        return b
    }

    mutating func number(_ key: String) throws(DeclarationProblem) -> Double? {
        guard let v = value(key) else { return nil }
        guard let d = v.doubleValue else { throw problem("'\(key)' must be a number, got \(v.typeName)") }
        return d
    }

    mutating func array(_ key: String) throws(DeclarationProblem) -> [LuaValue]? {
        guard let v = value(key) else { return nil }
        guard case .table(let t) = v, t.fields.isEmpty else { throw problem("'\(key)' must be an array, got \(v.typeName)") }
        return t.array
    }

    mutating func strings(_ key: String) throws(DeclarationProblem) -> [String]? {
        guard let items = try array(key) else { return nil }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard let s = item.stringValue else { throw problem("'\(key)'[\(i + 1)] must be a string, got \(item.typeName)") }
            out.append(s)
        }
        return out
    }

    /// Whether the function field `key` is there; a missing required one,
    /// or a value that is not a function, is a problem.
    mutating func function(_ key: String, required: Bool) throws(DeclarationProblem) -> Bool {
        used.insert(key)
        if functions.contains(key) { return true }
        let v = fields[LuaString(key)]
        if !v.isNil { throw problem("'\(key)' must be a function, got \(v.typeName)") }
        if required {
            let given = fields.fields.keys.compactMap(\.string) + Array(functions)
            if let typo = Self.nearest(key, in: given.filter { $0 != key }) {
                throw problem("missing function '\(key)' (is '\(typo)' a misspelling of it?)")
            }
            throw problem("missing function '\(key)'")
        }
        return false
    }

    /// The candidate closest to `word` when it is close enough to be a
    /// misspelling (at most 1 edit for short words, 2 for longer ones).
    static func nearest(_ word: String, in candidates: [String]) -> String? {
        let limit = word.count <= 4 ? 1 : 2
        var best: (String, Int)?
        for candidate in candidates {
            let d = distance(Array(word.lowercased()), Array(candidate.lowercased()))
            if d <= limit, d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }

    /// Levenshtein distance.
    private static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }

    /// Refuses fields nobody read: "unknown field 'timline'".
    func finish() throws(DeclarationProblem) {
        for key in fields.fields.keys.map({ $0.string ?? "?" }) + Array(functions) where !used.contains(key) {
            if let known = Self.nearest(key, in: Array(used)) { throw problem("unknown field '\(key)' (did you mean '\(known)'?)") }
            throw problem("unknown field '\(key)'")
        }
        if !fields.array.isEmpty { throw problem("unexpected array items (fields are written name = value)") }
    }
}
