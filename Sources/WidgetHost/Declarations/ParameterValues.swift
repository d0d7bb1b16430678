import LuaSandbox

/// Intent parameter values: checked against their declared types (rule I1),
/// read from text (`--config name=value`, scenario files), and completed
/// with defaults.
public enum ParameterValues {
    /// `value` as a value of `parameter`'s type, or why it is not one.
    /// Ints accept whole floats; numbers accept ints; dates are numbers;
    /// an entity is its id (a string) or a table with an `id`.
    public static func check(_ value: LuaValue, for parameter: IntentParameter) throws(ParameterError) -> LuaValue {
        func wrong() -> ParameterError {
            ParameterError(message: "parameter '\(parameter.name)' expects \(describe(parameter)), got \(value.typeName)\(value.stringValue.map { " \"\($0)\"" } ?? "")")
        }
        switch parameter.type {
        case .string:
            guard value.stringValue != nil else { throw wrong() }
            return value
        case .int:
            if let i = value.integerValue { return .integer(i) }
            throw wrong()
        case .number, .date:
            guard let d = value.doubleValue else { throw wrong() }
            return value.integerValue.map { .integer($0) } ?? .number(d)
        case .bool:
            guard value.boolValue != nil else { throw wrong() }
            return value
        case .enum:
            guard let s = value.stringValue else { throw wrong() }
            guard parameter.values.contains(s) else {
                throw ParameterError(message: "parameter '\(parameter.name)': \"\(s)\" is not one of \(parameter.values.joined(separator: ", "))")
            }
            return value
        case .entity:
            if let id = value.stringValue { return .table(LuaTable(fields: ["id": .string(id)])) }
            if case .table(let t) = value, t[LuaString("id")].stringValue != nil { return value }
            throw wrong()
        }
    }

    /// Reads `text` as a value of `parameter`'s type ("true", "42", an ISO date…).
    public static func parse(_ text: String, for parameter: IntentParameter, calendar: HostCalendar) throws(ParameterError) -> LuaValue {
        let value: LuaValue
        switch parameter.type {
        case .string, .enum, .entity: value = .string(text)
        case .int:
            guard let i = Int64(text) else { throw ParameterError(message: "parameter '\(parameter.name)' expects a whole number, got \"\(text)\"") }
            value = .integer(i)
        case .number:
            guard let d = Double(text), d.isFinite else { throw ParameterError(message: "parameter '\(parameter.name)' expects a number, got \"\(text)\"") }
            value = .number(d)
        case .bool:
            switch text {
            case "true", "yes", "1": value = true
            case "false", "no", "0": value = false
            default: throw ParameterError(message: "parameter '\(parameter.name)' expects true or false, got \"\(text)\"")
            }
        case .date:
            if let d = Double(text) { value = .number(d) } else {
                switch ISODate.parse(text, calendar: calendar) {
                case .success(let t): value = ClockBinding.date(t)
                case .failure(let error): throw ParameterError(message: "parameter '\(parameter.name)': \(error.message)")
                }
            }
        }
        return try check(value, for: parameter)
    }

    /// The values of a configuration: `given` checked, defaults filled in,
    /// unknown names refused.
    public static func configuration(_ given: [String: LuaValue], for intent: IntentDeclaration) throws(ParameterError) -> LuaTable {
        for name in given.keys.sorted() where !intent.parameters.contains(where: { $0.name == name }) {
            throw ParameterError.unknownParameter(name, of: intent)
        }
        var fields = LuaFields()
        for parameter in intent.parameters {
            if let value = given[parameter.name] {
                fields[LuaString(parameter.name)] = try check(value, for: parameter)
            } else if let value = parameter.defaultValue {
                fields[LuaString(parameter.name)] = value
            }
        }
        return LuaTable(fields: fields)
    }

    static func describe(_ parameter: IntentParameter) -> String {
        switch parameter.type {
        case .string: return "a string"
        case .int: return "a whole number"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .date: return "a date (a number)"
        case .enum: return "one of \(parameter.values.joined(separator: ", "))"
        case .entity: return "an entity id"
        }
    }
}

/// A parameter value that does not fit its declaration.
public struct ParameterError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    static func unknownParameter(_ name: String, of intent: IntentDeclaration) -> ParameterError {
        let names = intent.parameters.map(\.name).joined(separator: ", ")
        return ParameterError(message: "intent '\(intent.id)' has no parameter '\(name)' (parameters: \(names.isEmpty ? "none" : names))")
    }
}
