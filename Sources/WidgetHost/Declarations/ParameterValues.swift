import LuaSandbox
import LunetteJSON

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
            // An integer stays an integer (exact to 64 bits) and a float a float, as in Lua.
            guard value.doubleValue != nil else { throw wrong() }
            return value
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
            guard let number = try number(text, for: parameter), case .integer = number else {
                throw ParameterError(message: "parameter '\(parameter.name)' expects a whole number, got \"\(text)\"")
            }
            value = number
        case .number:
            guard let number = try number(text, for: parameter) else {
                throw ParameterError(message: "parameter '\(parameter.name)' expects a number, got \"\(text)\"")
            }
            value = number
        case .bool:
            switch text {
            case "true", "yes", "1": value = true
            case "false", "no", "0": value = false
            default: throw ParameterError(message: "parameter '\(parameter.name)' expects true or false, got \"\(text)\"")
            }
        case .date:
            if let number = try number(text, for: parameter) { value = number } else {
                switch ISODate.parse(text, calendar: calendar) {
                case .success(let t): value = ClockBinding.date(t)
                case .failure(let error): throw ParameterError(message: "parameter '\(parameter.name)': \(error.message)")
                }
            }
        }
        return try check(value, for: parameter)
    }

    /// `text` as a number, read as JSON files are: digits (with a sign) are
    /// an integer, exact to 64 bits, and an error beyond them; a numeral
    /// with `.` or an exponent is a float. Nil when `text` is not a finite
    /// number.
    private static func number(_ text: String, for parameter: IntentParameter) throws(ParameterError) -> LuaValue? {
        let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
        if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard let i = Int64(text) else { throw ParameterError(message: "parameter '\(parameter.name)': \(JSON.integerOutOfRange(text))") }
            return .integer(i)
        }
        guard let d = Double(text), d.isFinite, text.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }) else { return nil }
        return .number(d)
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
        ParameterError(message: "intent '\(intent.id)' has no parameter '\(name)' \(NearestName.hint(for: name, among: intent.parameters.map(\.name), label: "parameters"))")
    }
}
