/// Reads the fields of one object of a settings file (`JSONFile`), naming
/// the key in every error and putting the error where the value it is about
/// is (docs/json.md, "Settings files"):
/// - `null` means "not set": a key whose value is `null` reads as absent,
///   so its default applies (`"timezone": null` keeps the host's zone);
/// - a key given twice in one object is an error at the second occurrence,
///   "duplicate key 'x' (first at line N)", so no value is silently dropped;
/// - a key no reader asked for is an error (a typo), at that key.
struct JSONObjectReader {
    let file: JSONFile
    /// "budget." for nested objects, so errors name "budget.limit".
    let prefix: String
    /// Where the object starts: errors about a missing key point here.
    let location: JSONLocation
    /// The members, in file order, keys unique.
    let members: [JSONMember]
    private(set) var used: Set<String> = []

    /// A reader of `value`, which must be an object without repeated keys.
    init(_ file: JSONFile, _ value: JSONValue, prefix: String = "") throws(LocatedError) {
        guard let members = value.members else {
            let name = prefix.isEmpty ? "the top level" : "'\(prefix.dropLast())'"
            throw file.error("\(name) must be an object, got \(value.kindName)", at: value.location)
        }
        var seen: [ByteString: JSONMember] = [:]
        for member in members {
            if let first = seen[ByteString(member.key)] {
                throw file.error("duplicate key '\(prefix)\(member.key)' (first at line \(first.keyLocation.line))", at: member.keyLocation)
            }
            seen[ByteString(member.key)] = member
        }
        self.file = file
        self.prefix = prefix
        self.location = value.location
        self.members = members
    }

    private func member(_ key: String) -> JSONMember? {
        members.first { $0.key.utf8.elementsEqual(key.utf8) }
    }

    /// The value of `key`, which counts as read; nil when absent or `null`.
    mutating func value(_ key: String) -> JSONValue? {
        used.insert(key)
        guard let value = member(key)?.value, !value.isNull else { return nil }
        return value
    }

    /// An error at the value of `key`, or at the object when `key` is nil
    /// or absent.
    func error(_ message: String, at key: String? = nil) -> LocatedError {
        file.error(message, at: key.flatMap { member($0)?.value.location } ?? location)
    }

    /// "'prefix.key' what", at the value of `key`.
    func fail(_ key: String, _ what: String) -> LocatedError {
        error("'\(prefix)\(key)' \(what)", at: key)
    }

    mutating func string(_ key: String) throws(LocatedError) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v.kind else { throw fail(key, "must be a string, got \(v.kindName)") }
        return s
    }

    mutating func number(_ key: String) throws(LocatedError) -> Double? {
        guard let v = value(key) else { return nil }
        switch v.kind {
        case .integer(let i): return Double(i)
        case .double(let d) where d.isFinite: return d
        default: throw fail(key, "must be a number, got \(v.kindName)")
        }
    }

    mutating func integer(_ key: String) throws(LocatedError) -> Int? {
        guard let v = value(key) else { return nil }
        switch v.kind {
        case .integer(let i): return Int(i)
        case .double(let d) where d == d.rounded() && abs(d) < 1e15: return Int(d)
        case .double: throw fail(key, "must be a whole number, got \(v.jsonText)")
        default: throw fail(key, "must be a whole number, got \(v.kindName)")
        }
    }

    mutating func boolean(_ key: String) throws(LocatedError) -> Bool? {
        guard let v = value(key) else { return nil }
        guard case .boolean(let b) = v.kind else { throw fail(key, "must be true or false, got \(v.kindName)") }
        return b
    }

    /// An array of strings, each with where it is (for errors about one item).
    mutating func strings(_ key: String) throws(LocatedError) -> [(text: String, location: JSONLocation)]? {
        guard let items = try array(key) else { return nil }
        var out: [(text: String, location: JSONLocation)] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item.kind else {
                throw file.error("'\(prefix)\(key)' must be an array of strings; item \(i + 1) is \(item.kindName)", at: item.location)
            }
            out.append((s, item.location))
        }
        return out
    }

    mutating func object(_ key: String) throws(LocatedError) -> JSONObjectReader? {
        guard let v = value(key) else { return nil }
        return try JSONObjectReader(file, v, prefix: prefix + key + ".")
    }

    mutating func array(_ key: String) throws(LocatedError) -> [JSONValue]? {
        guard let v = value(key) else { return nil }
        guard case .array(let items) = v.kind else { throw fail(key, "must be an array, got \(v.kindName)") }
        return items
    }

    /// The value of `key` as a store value (any JSON but a `null` inside a
    /// table, which is an error at that `null`).
    mutating func storeValue(_ key: String) throws(LocatedError) -> StoreValue? {
        guard let v = value(key) else { return nil }
        do { return try StoreValue(json: v) } catch {
            throw file.error("'\(prefix)\(key)': \(error.reason)", at: error.location)
        }
    }

    /// Every key that is set (not `null`), with its value as a store value:
    /// an object of free-form values, such as a widget's configuration.
    mutating func storeValues() throws(LocatedError) -> [(key: String, value: StoreValue)] {
        var out: [(key: String, value: StoreValue)] = []
        for member in members {
            if let value = try storeValue(member.key) { out.append((member.key, value)) }
        }
        return out
    }

    /// Refuses keys that no reader asked for (typos): "unknown key 'budgt'".
    func finish() throws(LocatedError) {
        for member in members where !used.contains(member.key) {
            let all = used.sorted().joined(separator: ", ")
            throw file.error("unknown key '\(prefix)\(member.key)' (known: \(all))", at: member.keyLocation)
        }
    }
}
