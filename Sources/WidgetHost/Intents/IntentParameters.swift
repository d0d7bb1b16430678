import LuaSandbox

/// The parameters an intent's `perform` gets, checked before it runs (rule
/// I1): every given name is declared, every value has its declared type
/// (`date` as seconds or ISO 8601 text, `enum` one of its values, `entity`
/// an id that the parameter's query resolves), required values are
/// present, and defaults fill in the rest. The first problem is an error
/// that names the parameter, and `perform` does not run.
enum IntentParameters {
    /// Resolves an entity id of `parameter` to its entity table, or says why not.
    typealias Resolver = (_ parameter: IntentParameter, _ id: String) throws(ParameterError) -> LuaValue

    static func validate(_ given: [String: LuaValue], for intent: IntentDeclaration, calendar: HostCalendar,
                         resolve: Resolver) throws(ParameterError) -> LuaTable {
        for name in given.keys.sorted() where !intent.parameters.contains(where: { $0.name == name }) {
            throw ParameterError.unknownParameter(name, of: intent)
        }
        var fields = LuaFields()
        for parameter in intent.parameters {
            guard let raw = given[parameter.name], raw != .nil else {
                if let value = parameter.defaultValue {
                    fields[LuaString(parameter.name)] = try resolved(value, parameter, resolve)
                } else if !parameter.isOptional {
                    throw ParameterError(message: "intent '\(intent.id)': parameter '\(parameter.name)' is required (\(ParameterValues.describe(parameter))) and has no default")
                }
                continue
            }
            var value = raw
            if parameter.type == .date, let text = raw.stringValue {
                switch ISODate.parse(text, calendar: calendar) {
                case .success(let t): value = ClockBinding.date(t)
                case .failure(let error): throw ParameterError(message: "parameter '\(parameter.name)': \(error.message)")
                }
            }
            fields[LuaString(parameter.name)] = try resolved(try ParameterValues.check(value, for: parameter), parameter, resolve)
        }
        return LuaTable(fields: fields)
    }

    /// An entity parameter's value as its query resolves it; others as they are.
    private static func resolved(_ value: LuaValue, _ parameter: IntentParameter, _ resolve: Resolver) throws(ParameterError) -> LuaValue {
        guard parameter.type == .entity, case .table(let t) = value, let id = t[LuaString("id")].stringValue else { return value }
        return try resolve(parameter, id)
    }
}
