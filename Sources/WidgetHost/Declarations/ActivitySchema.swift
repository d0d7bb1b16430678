import LuaSandbox

/// The type of a field of an activity's `attributes` or content `state`.
public enum SchemaType: String, CaseIterable, Sendable {
    case string, int, number, bool, date, table

    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// Whether `value` (not nil) is of this type: `int` a whole number,
    /// `date` a number (seconds since the epoch), `table` a table.
    func accepts(_ value: LuaValue) -> Bool {
        switch self {
        case .string: return value.stringValue != nil
        case .int: return value.integerValue != nil
        case .number, .date: return value.doubleValue?.isFinite == true
        case .bool: return value.boolValue != nil
        case .table: if case .table = value { return true } else { return false }
        }
    }
}

/// One field of a schema: `eta = "date"`, `driver = "string?"`.
public struct SchemaField: Sendable, Equatable {
    public var name: String
    public var type: SchemaType
    /// A trailing `?`: the field may be absent (nil).
    public var isOptional: Bool
}

/// The schema of an activity's `attributes` (fixed at start) or content
/// `state` (changing): a table of `name = "type"` with `string`, `int`,
/// `number`, `bool`, `date` or `table`, a trailing `?` for optional.
public struct ActivitySchema: Sendable, Equatable {
    /// The fields, in name order.
    public var fields: [SchemaField]

    public init(fields: [SchemaField] = []) {
        self.fields = fields.sorted { $0.name < $1.name }
    }

    /// Reads a declared schema; `what` names it in problems ("attributes").
    /// Every problem is returned; a field with a problem is left out.
    static func parse(_ value: LuaValue, what: String) -> (schema: ActivitySchema, problems: [String]) {
        guard case .table(let table) = value, table.array.isEmpty else {
            return (ActivitySchema(), ["'\(what)' must be a table of name = \"type\" (types: \(SchemaType.names), each with a trailing ? for optional), got \(value.typeName)"])
        }
        var fields: [SchemaField] = []
        var problems: [String] = []
        for entry in table.fields {
            let name = entry.key.displayText
            guard let text = entry.value.stringValue else {
                problems.append("\(what).\(name) must be a type name as a string, got \(entry.value.typeName)")
                continue
            }
            let optional = text.hasSuffix("?")
            let typeName = optional ? String(text.dropLast()) : text
            guard let type = SchemaType(rawValue: typeName) else {
                let near = NearestName.of(typeName, in: SchemaType.allCases.map(\.rawValue)).map { "did you mean '\($0)\(optional ? "?" : "")'? " } ?? ""
                problems.append("\(what).\(name): unknown type '\(text)' (\(near)types: \(SchemaType.names), each with a trailing ? for optional)")
                continue
            }
            fields.append(SchemaField(name: name, type: type, isOptional: optional))
        }
        return (ActivitySchema(fields: fields), problems)
    }

    /// Why `value` does not fit the schema, or nil when it does: it must be
    /// a table of the declared fields, each of its type, the non-optional
    /// ones present. `what` names it ("state").
    public func problem(in value: LuaValue, what: String) -> String? {
        guard case .table(let table) = value, table.array.isEmpty else {
            return "\(what) must be a table of its fields, got \(value.typeName)"
        }
        for entry in table.fields {
            let name = entry.key.displayText
            guard let field = fields.first(where: { $0.name == name }) else {
                let known = fields.map(\.name).joined(separator: ", ")
                return "\(what).\(name) is not a field of the schema (fields: \(known.isEmpty ? "none" : known))"
            }
            if !field.type.accepts(entry.value) {
                return "\(what).\(name) must be \(field.type.rawValue == "int" ? "an" : "a") \(field.type.rawValue)\(field.type == .date ? " (seconds since the epoch)" : ""), got \(entry.value.typeName)"
            }
        }
        for field in fields where !field.isOptional && table[LuaString(field.name)].isNil {
            return "\(what).\(field.name) is missing (\(field.type.rawValue); add ? to the type to make it optional)"
        }
        return nil
    }
}
