import LuaSandbox

/// The Swift side of `widget { … }`, `intent { … }`, `query { … }`,
/// `control { … }` and `activity { … }` in one state: checks each
/// declaration, records it with the location of its call, and keeps its
/// functions for the host to call. Problems are collected, not raised, so
/// that one load reports all of them — every problem of every declaration
/// (a field with a problem is treated as absent, and the declaration is
/// left out); `finish()` adds the cross-references (a configuration intent
/// that does not exist, an entity query that does not exist), and says
/// nothing about a reference to a declaration that was left out for its own
/// problems: those are reported already.
final class DeclarationRecorder {
    /// Check each declaration (when the bundle loads). Calls after that
    /// only collect functions: the declarations were checked once.
    let validating: Bool
    private(set) var declarations = BundleDeclarations()
    private(set) var problems: [LocatedError] = []
    /// Functions by declaration and field ("timeline"). Looked up on every
    /// call: the key is the two names, not a string made from them.
    private var functions: [DeclarationKey: [String: LuaFunctionRef]] = [:] {
        didSet { lastFunction = nil }   // no oldValue: changes stay in place
    }

    private struct DeclarationKey: Hashable {
        var what: String
        var id: String
    }
    /// What each declaration refers to, accepted or not, checked by `finish()`.
    private var references: [Reference] = []
    /// The intents and queries left out for their own problems ("intent:X").
    private var rejected: Set<String> = []
    /// Where each declaration ("intent:C"), accepted or not, was first declared:
    /// a second one is a duplicate even when the first was left out.
    private var seen: [String: ScriptLocation] = [:]

    /// A name one declaration gives to another.
    private struct Reference {
        enum Target { case configurationIntent, query, actionIntent }
        var target: Target
        var name: String
        /// Who refers, as problems name it ("widget 'K'", "intent 'I': parameter 'p'").
        var from: String
        var location: ScriptLocation
    }

    init(validating: Bool) { self.validating = validating }

    /// The function `field` of the declaration `what` `id`.
    func function(_ what: String, _ id: String, _ field: String) -> LuaFunctionRef? {
        // A pooled sandbox's calls ask for the same function again and
        // again: three short string compares instead of two hashed lookups.
        // Compared where they are stored: binding a copy of a tuple of them
        // retained and released each part.
        if let function = lastFunction, lastField == field, lastID == id, lastWhat == what { return function }
        let found = functions[DeclarationKey(what: what, id: id)]?[field]
        (lastWhat, lastID, lastField, lastFunction) = (what, id, field, found)
        return found
    }

    /// The last function `function` found, and what it was asked for;
    /// forgotten whenever `functions` changes.
    private var lastFunction: LuaFunctionRef?
    private var lastWhat = "", lastID = "", lastField = ""

    /// Every function recorded, of every declaration.
    var allFunctions: [LuaFunctionRef] {
        // A closure, not the key path `\.values`: a process's first key path
        // of a generic type costs the Swift runtime ≈ 0.4 M instructions of
        // conformance lookups (most of a CLI start's).
        functions.values.flatMap { $0.values }
    }

    /// Adds `declare`, the Swift side of the declaration globals (see `glue`).
    func add(to module: inout LuaModule) {
        module.add("declare", replayable: true) { [unowned self] args in
            try self.record(args)
            return []
        }
    }

    /// Forgets everything, for the next run of main.lua.
    func reset() {
        declarations = BundleDeclarations()
        problems = []
        functions = [:]
        references = []
        rejected = []
        seen = [:]
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
            if let id = try? args.text(2) { functions[DeclarationKey(what: what, id: id)] = refs }
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
        let id: String?
        switch what {
        case "widget": id = recordWidget(&reader, here)
        case "intent": id = recordIntent(&reader, here)
        case "query": id = recordQuery(&reader, here)
        case "control": id = recordControl(&reader, here)
        case "activity": id = recordActivity(&reader, here)
        default: return
        }
        if reader.problems.isEmpty, let id {
            functions[DeclarationKey(what: what, id: id)] = refs
        } else {
            if let id { rejected.insert("\(what):\(id)") }
            problems += reader.problems.map { LocatedError(file: here.file, line: here.line, message: $0) }
        }
    }

    /// Reports a second declaration of `what` `id` (the first may have been
    /// left out for its own problems: it still counts).
    private func checkDuplicate(_ what: String, _ id: String, _ field: String, _ r: inout DeclarationFields, _ here: ScriptLocation) {
        if let first = seen["\(what):\(id)"] {
            r.report("duplicate \(field) '\(id)': already declared at \(first)")
        } else {
            seen["\(what):\(id)"] = here
        }
    }

    /// Records a reference for `finish()`.
    private func refer(_ target: Reference.Target, to name: String?, from: String, _ here: ScriptLocation) {
        guard let name else { return }
        references.append(Reference(target: target, name: name, from: from, location: here))
    }

    /// Each record function reads every field, reporting each problem to
    /// `r`, and adds the declaration only when there was none; it returns
    /// the declaration's id when it has one.
    private func recordWidget(_ r: inout DeclarationFields, _ here: ScriptLocation) -> String? {
        let kind = r.requiredString("kind")
        if let kind {
            r.name = "widget '\(kind)'"
            checkDuplicate("widget", kind, "kind", &r, here)
        }
        var families: [WidgetFamily] = [.systemSmall, .systemMedium, .systemLarge]
        if let names = r.strings("families") {
            if names.isEmpty { r.report("'families' is empty: list at least one of \(WidgetFamily.names)") }
            families = []
            for name in names {
                guard let family = WidgetFamily(rawValue: name) else {
                    let near = NearestName.of(name, in: WidgetFamily.allCases.map(\.rawValue)).map { "did you mean '\($0)'? " } ?? ""
                    r.report("unknown family '\(name)' (\(near)families: \(WidgetFamily.names))")
                    continue
                }
                families.append(family)
            }
        }
        let displayName = r.string("displayName")
        let description = r.string("description")
        let configuration = r.string("configuration")
        let hasSnapshot = r.function("snapshot", required: false)
        r.function("placeholder", required: true)
        r.function("timeline", required: true)
        r.finish()
        refer(.configurationIntent, to: configuration, from: r.name, here)
        guard let kind, r.problems.isEmpty else { return kind }
        declarations.widgets.append(WidgetDeclaration(
            kind: kind, displayName: displayName, description: description, families: families,
            configuration: configuration, hasSnapshot: hasSnapshot, location: here))
        return kind
    }

    private func recordIntent(_ r: inout DeclarationFields, _ here: ScriptLocation) -> String? {
        let id = r.requiredString("id")
        if let id {
            r.name = "intent '\(id)'"
            checkDuplicate("intent", id, "id", &r, here)
        }
        let isConfiguration = r.boolean("configuration") ?? false
        var parameters: [IntentParameter] = []
        for (i, item) in (r.array("parameters") ?? []).enumerated() {
            guard let parameter = parameter(item, index: i + 1, in: &r, here) else { continue }
            if parameters.contains(where: { $0.name == parameter.name }) {
                r.report("parameter '\(parameter.name)' is declared twice")
                continue
            }
            if isConfiguration && !parameter.isOptional && parameter.defaultValue == nil && parameter.type != .entity {
                r.report("parameter '\(parameter.name)' is not optional and has no default: a configuration intent needs one for new widgets (add default = … or optional = true)")
            }
            parameters.append(parameter)
        }
        let hasPerform = r.function("perform", required: !isConfiguration)
        let title = r.string("title")
        _ = r.string("description")
        r.finish()
        guard let id, r.problems.isEmpty else { return id }
        declarations.intents.append(IntentDeclaration(id: id, title: title, isConfiguration: isConfiguration,
                                                      parameters: parameters, hasPerform: hasPerform, location: here))
        return id
    }

    /// The parameter `value` (item `index` of the intent `owner`'s
    /// parameters); its problems go to `owner`, and it is nil when it has any.
    private func parameter(_ value: LuaValue, index: Int, in owner: inout DeclarationFields, _ here: ScriptLocation) -> IntentParameter? {
        guard case .table(let t) = value else {
            owner.report("parameters[\(index)] must be a table { name =, type = }, got \(value.typeName)")
            return nil
        }
        var r = DeclarationFields(what: "\(owner.name): parameters[\(index)]", fields: t, functions: [])
        let name = r.requiredString("name")
        if let name { r.name = "\(owner.name): parameter '\(name)'" }
        var type: ParameterType?
        if let typeName = r.requiredString("type") {
            type = ParameterType(rawValue: typeName)
            if type == nil {
                let names = ParameterType.allCases.map(\.rawValue)
                let near = NearestName.of(typeName, in: names).map { "did you mean '\($0)'? " } ?? ""
                r.report("unknown type '\(typeName)' (\(near)types: \(names.joined(separator: ", ")))")
            }
        }
        let values = r.strings("values") ?? []
        if type == .enum && values.isEmpty { r.report("an enum needs values = { … }") }
        let query = r.string("query")
        if type == .entity && query == nil && !r.isSet("query") { r.report("an entity parameter needs query = \"<query id>\"") }
        let title = r.string("title")
        let isOptional = r.boolean("optional") ?? false
        let defaultValue = r.value("default")
        _ = r.string("description")
        r.finish()
        refer(.query, to: query, from: r.name, here)
        guard let name, let type else {
            owner.adopt(r)
            return nil
        }
        var parameter = IntentParameter(name: name, type: type, title: title, defaultValue: nil,
                                        isOptional: isOptional, values: values, query: query)
        if let defaultValue {
            do { parameter.defaultValue = try ParameterValues.check(defaultValue, for: parameter) } catch {
                r.report("default: \(error.message)")
            }
        }
        owner.adopt(r)
        return r.problems.isEmpty ? parameter : nil
    }

    private func recordQuery(_ r: inout DeclarationFields, _ here: ScriptLocation) -> String? {
        let id = r.requiredString("id")
        if let id {
            r.name = "query '\(id)'"
            checkDuplicate("query", id, "id", &r, here)
        }
        r.function("suggested", required: true)
        let hasEntities = r.function("entities", required: false)
        r.finish()
        guard let id, r.problems.isEmpty else { return id }
        declarations.queries.append(QueryDeclaration(id: id, hasEntities: hasEntities, location: here))
        return id
    }

    private func recordControl(_ r: inout DeclarationFields, _ here: ScriptLocation) -> String? {
        let kind = r.requiredString("kind")
        if let kind {
            r.name = "control '\(kind)'"
            checkDuplicate("control", kind, "kind", &r, here)
        }
        let type = r.requiredString("type")
        if let type, type != "toggle" && type != "button" { r.report("type must be \"toggle\" or \"button\", got \"\(type)\"") }
        let action = r.string("action")
        _ = r.string("displayName")
        let hasPreview = r.function("preview", required: false)
        r.function("value", required: true)
        r.finish()
        refer(.actionIntent, to: action, from: r.name, here)
        guard let kind, let type, r.problems.isEmpty else { return kind }
        declarations.controls.append(ControlDeclaration(kind: kind, type: type, action: action, hasPreview: hasPreview, location: here))
        return kind
    }

    private func recordActivity(_ r: inout DeclarationFields, _ here: ScriptLocation) -> String? {
        let type = r.requiredString("type")
        if let type {
            r.name = "activity '\(type)'"
            checkDuplicate("activity", type, "type", &r, here)
        }
        var schemas: [ActivitySchema] = []
        for what in ["attributes", "state"] {
            guard let value = r.value(what) else { schemas.append(ActivitySchema()); continue }
            let (schema, problems) = ActivitySchema.parse(value, what: what)
            for problem in problems { r.report(problem) }
            schemas.append(schema)
        }
        let tick = r.number("tick")
        if let tick, !(tick > 0 && tick.isFinite) { r.report("'tick' must be a positive number of seconds, got \(tick)") }
        r.function("updater", required: true)
        r.finish()
        guard let type, r.problems.isEmpty else { return type }
        declarations.activities.append(ActivityDeclaration(type: type, attributes: schemas[0], state: schemas[1], tick: tick, location: here))
        return type
    }

    /// Cross-references, checked once main.lua has run, for every
    /// declaration (a declaration left out for its own problems is checked
    /// too, so one run finds all). A reference to an intent or query that
    /// was left out for its own problems is not reported again.
    func finish() {
        for reference in references {
            let message: String
            switch reference.target {
            case .configurationIntent:
                if let intent = declarations.intent(reference.name) {
                    if intent.isConfiguration { continue }
                    message = "intent '\(reference.name)' is not a configuration intent (declare it with configuration = true)"
                } else if rejected.contains("intent:\(reference.name)") {
                    continue
                } else {
                    let known = declarations.intents.filter(\.isConfiguration).map(\.id)
                    message = "configuration intent '\(reference.name)' is not declared" + (known.isEmpty ? "" : " " + NearestName.hint(for: reference.name, among: known, label: "configuration intents"))
                }
            case .query:
                if declarations.query(reference.name) != nil || rejected.contains("query:\(reference.name)") { continue }
                let known = declarations.queries.map(\.id)
                let near = NearestName.of(reference.name, in: known).map { " (did you mean '\($0)'?)" } ?? ""
                message = "uses query '\(reference.name)', which is not declared\(near)"
            case .actionIntent:
                if declarations.intent(reference.name) != nil || rejected.contains("intent:\(reference.name)") { continue }
                let known = declarations.intents.map(\.id)
                let near = NearestName.of(reference.name, in: known).map { " (did you mean '\($0)'?)" } ?? ""
                message = "action intent '\(reference.name)' is not declared\(near)"
            }
            problems.append(LocatedError(file: reference.location.file, line: reference.location.line,
                                         message: "\(reference.from)\(reference.target == .query ? " " : ": ")\(message)"))
        }
    }

    /// The glue that turns each declaration global into a call of
    /// `declare` (Declarations/declarations.lua).
    static let glue = HostGlue.source(PackageResources.declarations_lua, name: "declarations")

}

/// Reads a declaration's fields, naming the declaration in every problem,
/// and collects the problems: a field with a problem reads as absent, so
/// the other fields are still read and one run reports all of them.
struct DeclarationFields {
    /// How problems name the declaration: "widget", then "widget 'K'" once
    /// the kind is known.
    var name: String
    let fields: LuaTable
    let functions: Set<String>
    private var used: Set<String> = []
    /// Each problem found, as a whole message ("widget 'K': …").
    private(set) var problems: [String] = []

    init(what: String, fields: LuaTable, functions: Set<String>) {
        self.name = what
        self.fields = fields
        self.functions = functions
    }

    /// Records "name: message".
    mutating func report(_ message: String) { problems.append("\(name): \(message)") }

    /// Takes the problems of a nested reader (a parameter's).
    mutating func adopt(_ other: DeclarationFields) { problems += other.problems }

    /// Whether `key` is given (not nil), as plain data or as a function.
    func isSet(_ key: String) -> Bool { functions.contains(key) || !fields[LuaString(key)].isNil }

    mutating func value(_ key: String) -> LuaValue? {
        used.insert(key)
        let v = fields[LuaString(key)]
        if v.isNil { return Optional.none }   // not `nil`: LuaValue is nil-literal expressible
        return v
    }

    mutating func string(_ key: String) -> String? {
        guard let v = value(key) else {
            if functions.contains(key) { report("'\(key)' must be a string, got function") }
            return nil
        }
        guard let s = v.stringValue else { report("'\(key)' must be a string, got \(v.typeName)"); return nil }
        return s
    }

    /// A string that must be given and not empty; nil (reported) otherwise.
    mutating func requiredString(_ key: String) -> String? {
        guard let s = string(key) else {
            if !isSet(key) { report("missing '\(key)'") }
            return nil
        }
        if s.isEmpty { report("'\(key)' must not be empty"); return nil }
        return s
    }

    mutating func boolean(_ key: String) -> Bool? {
        guard let v = value(key) else { return nil }
        guard let b = v.boolValue else { report("'\(key)' must be true or false, got \(v.typeName)"); return nil }
        return b
    }

    mutating func number(_ key: String) -> Double? {
        guard let v = value(key) else { return nil }
        guard let d = v.doubleValue else { report("'\(key)' must be a number, got \(v.typeName)"); return nil }
        return d
    }

    mutating func array(_ key: String) -> [LuaValue]? {
        guard let v = value(key) else { return nil }
        guard case .table(let t) = v, t.fields.isEmpty else { report("'\(key)' must be an array, got \(v.typeName)"); return nil }
        return t.array
    }

    /// An array of strings; an item that is not a string is reported and left out.
    mutating func strings(_ key: String) -> [String]? {
        guard let items = array(key) else { return nil }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard let s = item.stringValue else { report("'\(key)'[\(i + 1)] must be a string, got \(item.typeName)"); continue }
            out.append(s)
        }
        return out
    }

    /// Whether the function field `key` is there; a missing required one,
    /// or a value that is not a function, is a problem. A missing required
    /// function whose misspelling was given names it, and that field is
    /// then not also called unknown.
    @discardableResult
    mutating func function(_ key: String, required: Bool) -> Bool {
        used.insert(key)
        if functions.contains(key) { return true }
        let v = fields[LuaString(key)]
        if !v.isNil {
            report("'\(key)' must be a function, got \(v.typeName)")
            return false
        }
        if required {
            let given = fields.fields.keys.compactMap(\.string) + Array(functions)
            if let typo = NearestName.of(key, in: given.filter { !used.contains($0) }) {
                used.insert(typo)
                report("missing function '\(key)' (is '\(typo)' a misspelling of it?)")
            } else {
                report("missing function '\(key)'")
            }
        }
        return false
    }

    /// Reports each field nobody read: "unknown field 'refresh'", or
    /// "unknown field 'familes' (did you mean 'families'?)"; and positional
    /// items.
    mutating func finish() {
        for key in (fields.fields.keys.map({ $0.string ?? "?" }) + Array(functions)).sorted() where !used.contains(key) {
            if let known = NearestName.of(key, in: used) {
                report("unknown field '\(key)' (did you mean '\(known)'?)")
            } else {
                report("unknown field '\(key)'")
            }
        }
        if !fields.array.isEmpty { report("unexpected array items (fields are written name = value)") }
    }
}
