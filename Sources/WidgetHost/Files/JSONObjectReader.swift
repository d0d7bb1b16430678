/// Reads the fields of one object of a settings file (`JSONFile`), naming
/// the key in every problem and putting it where the value it is about is
/// (docs/json.md, "Settings files"):
/// - `null` means "not set": a key whose value is `null` reads as absent,
///   so its default applies (`"timezone": null` keeps the host's zone);
/// - a key given twice in one object is a problem at the second
///   occurrence, "duplicate key 'x' (first at line N)", so no value is
///   silently dropped (the first is read, to find the other problems);
/// - a key no reader asked for is a problem (a typo), at that key, with the
///   known key it most likely meant.
///
/// Nothing here throws: a problem is reported to the file and reading goes
/// on with the value treated as absent, so one run finds every problem;
/// the file's `check()` throws them all once the file has been read.
struct JSONObjectReader {
    let file: JSONFile
    /// "budget." for nested objects, so problems name "budget.limit".
    let prefix: String
    /// Where the object starts: problems about a missing key point here.
    let location: JSONLocation
    /// The members, in file order, each key once (its first occurrence).
    let members: [JSONMember]
    private(set) var used: Set<String> = []

    /// A reader of `value`; nil, with the problem reported, when it is not
    /// an object.
    init?(_ file: JSONFile, _ value: JSONValue, prefix: String = "") {
        guard let members = value.members else {
            let name = prefix.isEmpty ? "the top level" : "'\(prefix.dropLast())'"
            file.report("\(name) must be an object, got \(value.kindName)", at: value.location)
            return nil
        }
        var seen: [ByteString: JSONMember] = [:]
        var unique: [JSONMember] = []
        for member in members {
            if let first = seen[ByteString(member.key)] {
                file.report("duplicate key '\(prefix)\(member.key)' (first at line \(first.keyLocation.line))", at: member.keyLocation)
                continue
            }
            seen[ByteString(member.key)] = member
            unique.append(member)
        }
        self.file = file
        self.prefix = prefix
        self.location = value.location
        self.members = unique
    }

    /// The reader of `file`'s top level; a top level that is not an object
    /// is the one problem there is.
    static func topLevel(of file: JSONFile) throws(LocatedErrors) -> JSONObjectReader {
        guard let reader = JSONObjectReader(file, file.root) else { throw LocatedErrors(file.problems) }
        return reader
    }

    private func member(_ key: String) -> JSONMember? {
        members.first { $0.key.utf8.elementsEqual(key.utf8) }
    }

    /// Whether `key` is given (present and not `null`).
    func isSet(_ key: String) -> Bool {
        guard let value = member(key)?.value else { return false }
        return !value.isNull
    }

    /// The value of `key`, which counts as read; nil when absent or `null`.
    mutating func value(_ key: String) -> JSONValue? {
        used.insert(key)
        guard let value = member(key)?.value, !value.isNull else { return nil }
        return value
    }

    /// Counts `keys` as read without reading them: keys that are known but
    /// cannot be judged (the fields of an event whose type is unknown).
    mutating func accept(_ keys: some Sequence<String>) {
        used.formUnion(keys)
    }

    /// Reports `message` at the value of `key`, or at the object when `key`
    /// is nil or absent.
    func report(_ message: String, at key: String? = nil) {
        file.report(message, at: key.flatMap { member($0)?.value.location } ?? location)
    }

    /// Reports "'prefix.key' what", at the value of `key`.
    func report(_ key: String, _ what: String) {
        report("'\(prefix)\(key)' \(what)", at: key)
    }

    /// `value`, or nil with "'prefix.key' is missing: what" reported when
    /// `key` is not given. A key given with a value of the wrong kind
    /// (already reported) is not called missing.
    func required<T>(_ key: String, _ value: T?, _ what: String) -> T? {
        if value == nil && !isSet(key) { report(key, "is missing: \(what)") }
        return value
    }

    mutating func string(_ key: String) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v.kind else { report(key, "must be a string, got \(v.kindName)"); return nil }
        return s
    }

    mutating func number(_ key: String) -> Double? {
        guard let v = value(key) else { return nil }
        switch v.kind {
        case .integer(let i): return Double(i)
        case .double(let d) where d.isFinite: return d
        default: report(key, "must be a number, got \(v.kindName)"); return nil
        }
    }

    mutating func integer(_ key: String) -> Int? {
        guard let v = value(key) else { return nil }
        switch v.kind {
        case .integer(let i): return Int(i)
        case .double(let d):
            if let i = Int(exactly: d) { return i }
            report(key, "must be a whole number, got \(v.jsonText)")
        default: report(key, "must be a whole number, got \(v.kindName)")
        }
        return nil
    }

    mutating func boolean(_ key: String) -> Bool? {
        guard let v = value(key) else { return nil }
        guard case .boolean(let b) = v.kind else { report(key, "must be true or false, got \(v.kindName)"); return nil }
        return b
    }

    /// An array of strings, each with where it is (for problems about one
    /// item); an item that is not a string is reported and left out.
    mutating func strings(_ key: String) -> [(text: String, location: JSONLocation)]? {
        guard let items = array(key) else { return nil }
        var out: [(text: String, location: JSONLocation)] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item.kind else {
                file.report("'\(prefix)\(key)' must be an array of strings; item \(i + 1) is \(item.kindName)", at: item.location)
                continue
            }
            out.append((s, item.location))
        }
        return out
    }

    mutating func object(_ key: String) -> JSONObjectReader? {
        guard let v = value(key) else { return nil }
        return JSONObjectReader(file, v, prefix: prefix + key + ".")
    }

    mutating func array(_ key: String) -> [JSONValue]? {
        guard let v = value(key) else { return nil }
        guard case .array(let items) = v.kind else { report(key, "must be an array, got \(v.kindName)"); return nil }
        return items
    }

    /// The value of `key` as a store value (any JSON but a `null` inside a
    /// table, which is a problem at that `null`).
    mutating func storeValue(_ key: String) -> StoreValue? {
        guard let v = value(key) else { return nil }
        do { return try StoreValue(json: v) } catch {
            file.report("'\(prefix)\(key)': \(error.reason)", at: error.location)
            return nil
        }
    }

    /// Every key that is set (not `null`) and a good store value, with its
    /// value: an object of free-form values, such as a widget's
    /// configuration.
    mutating func storeValues() -> [(key: String, value: StoreValue)] {
        var out: [(key: String, value: StoreValue)] = []
        for member in members {
            if let value = storeValue(member.key) { out.append((member.key, value)) }
        }
        return out
    }

    /// Reports every key that no reader asked for (typos), each at its key:
    /// "unknown key 'timline' (did you mean 'timeline'?)", or with the
    /// known keys when none is close: "unknown key 'x' (known: a, b)".
    func finish() {
        for member in members where !used.contains(member.key) {
            if let near = NearestName.of(member.key, in: used) {
                file.report("unknown key '\(prefix)\(member.key)' (did you mean '\(near)'?)", at: member.keyLocation)
            } else {
                file.report("unknown key '\(prefix)\(member.key)' (known: \(used.sorted().joined(separator: ", ")))", at: member.keyLocation)
            }
        }
    }
}
