import Foundation
import SharedStore

/// A JSON file read for its settings, which knows where things are in it:
/// syntax errors and wrong keys come back as `LocatedError`s with a line.
struct JSONFile {
    let path: String
    let text: String
    let root: StoreValue

    /// Reads and parses `path`; the top level must be an object.
    static func load(_ path: String) throws(LocatedError) -> JSONFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LocatedError(file: path, message: FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw LocatedError(file: path, message: "not UTF-8 text") }
        return try parse(text, path: path)
    }

    static func parse(_ text: String, path: String) throws(LocatedError) -> JSONFile {
        let value: StoreValue?
        do { value = try StoreValue(json: text) } catch {
            throw LocatedError(file: path, line: lineOfByte(in: error.message, text: text), message: error.message)
        }
        guard case .map = value else { throw LocatedError(file: path, line: 1, message: "expected a JSON object at the top level") }
        return JSONFile(path: path, text: text, root: value!)
    }

    /// The line of the first `"key"` in the text (how errors about a key find it).
    func line(ofKey key: String) -> Int? {
        guard let range = text.range(of: "\"\(key)\"") else { return nil }
        return text[..<range.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }

    func error(_ message: String, key: String? = nil) -> LocatedError {
        LocatedError(file: path, line: key.flatMap { line(ofKey: $0) }, message: message)
    }

    /// The parser says "at byte N": the line of that byte.
    private static func lineOfByte(in message: String, text: String) -> Int? {
        guard let range = message.range(of: "at byte ") else { return nil }
        let digits = message[range.upperBound...].prefix { $0.isNumber }
        guard let byte = Int(digits) else { return nil }
        return text.utf8.prefix(max(0, byte - 1)).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
    }
}

/// Reads the fields of one JSON object, naming the key in every error and
/// refusing keys it does not know.
struct JSONObjectReader {
    let file: JSONFile
    /// "budget." for nested objects, so errors name "budget.limit".
    let prefix: String
    let map: StoreMap
    private(set) var used: Set<String> = []

    init(_ file: JSONFile, _ value: StoreValue, prefix: String = "") throws(LocatedError) {
        guard case .map(let map) = value else {
            throw file.error("'\(prefix.isEmpty ? "top level" : String(prefix.dropLast()))' must be an object", key: prefix.isEmpty ? nil : String(prefix.dropLast()))
        }
        self.file = file
        self.prefix = prefix
        self.map = map
    }

    mutating func value(_ key: String) -> StoreValue? {
        used.insert(key)
        return map[key]
    }

    func fail(_ key: String, _ what: String) -> LocatedError {
        file.error("'\(prefix)\(key)' \(what)", key: key)
    }

    mutating func string(_ key: String) throws(LocatedError) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v else { throw fail(key, "must be a string, got \(v.typeName)") }
        return s
    }

    mutating func number(_ key: String) throws(LocatedError) -> Double? {
        guard let v = value(key) else { return nil }
        switch v {
        case .integer(let i): return Double(i)
        case .double(let d) where d.isFinite: return d
        default: throw fail(key, "must be a number, got \(v.typeName)")
        }
    }

    mutating func integer(_ key: String) throws(LocatedError) -> Int? {
        guard let v = value(key) else { return nil }
        switch v {
        case .integer(let i): return Int(i)
        case .double(let d) where d == d.rounded() && abs(d) < 1e15: return Int(d)
        default: throw fail(key, "must be a whole number, got \(v.typeName == "double" ? "\(v.json)" : v.typeName)")
        }
    }

    mutating func boolean(_ key: String) throws(LocatedError) -> Bool? {
        guard let v = value(key) else { return nil }
        guard case .boolean(let b) = v else { throw fail(key, "must be true or false, got \(v.typeName)") }
        return b
    }

    mutating func strings(_ key: String) throws(LocatedError) -> [String]? {
        guard let v = value(key) else { return nil }
        guard case .array(let items) = v else { throw fail(key, "must be an array of strings, got \(v.typeName)") }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else { throw fail(key, "must be an array of strings; item \(i + 1) is \(item.typeName)") }
            out.append(s)
        }
        return out
    }

    mutating func object(_ key: String) throws(LocatedError) -> JSONObjectReader? {
        guard let v = value(key) else { return nil }
        return try JSONObjectReader(file, v, prefix: prefix + key + ".")
    }

    mutating func array(_ key: String) throws(LocatedError) -> [StoreValue]? {
        guard let v = value(key) else { return nil }
        guard case .array(let items) = v else { throw fail(key, "must be an array, got \(v.typeName)") }
        return items
    }

    /// Refuses keys that no reader asked for (typos): "unknown key 'budgt'".
    func finish() throws(LocatedError) {
        for entry in map.entries where !used.contains(entry.key) {
            let all = used.sorted().joined(separator: ", ")
            throw file.error("unknown key '\(prefix)\(entry.key)' (known: \(all))", key: entry.key)
        }
    }
}

extension StoreValue {
    /// The JSON name of the value's type, for errors ("object" for a map).
    var typeName: String { kindName == "map" ? "object" : kindName }
}
