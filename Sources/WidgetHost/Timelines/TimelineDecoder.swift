import LuaSandbox

/// Turns what a provider returned into a `Timeline` or an entry, by the
/// rules: every entry needs a numeric date (placeholder and snapshot may
/// leave it out: the host fills in now); entries are sorted (T5, with a
/// warning when they were not); entries closer than the 5-minute floor
/// draw a warning (T8); too many entries or bytes (`encodedSize`) draw a
/// warning or are refused (T9).
enum TimelineDecoder {
    /// The keys read on every call, made once.
    private static let entriesKey: LuaString = "entries", policyKey: LuaString = "policy", dateKey: LuaString = "date",
                       relevanceKey: LuaString = "relevance", afterKey: LuaString = "after", scoreKey: LuaString = "score",
                       durationKey: LuaString = "duration"
    struct Decoded<T> {
        var value: T
        var warnings: [String]
    }

    /// `{ entries = { … }, policy = "atEnd" | "never" | { after = t } }`.
    static func timeline(_ values: [LuaValue], policy: HostPolicy) -> Result<Decoded<Timeline>, DecodeError> {
        guard case .table(let result)? = values.first else {
            return .failure(DecodeError("timeline must return { entries = { … }, policy = … }, got \(values.first?.typeName ?? "nothing")"))
        }
        // One pass over the fields finds both and any unknown one (not
        // `keys`, which would make an array of them on every call).
        var entriesValue = LuaValue.nil, policyValue = LuaValue.nil
        for field in result.fields {
            if field.key == entriesKey {
                entriesValue = field.value
            } else if field.key == policyKey {
                policyValue = field.value
            } else {
                return .failure(DecodeError("the timeline has an unknown field '\(field.key.string ?? "?")' (fields: entries, policy)"))
            }
        }
        guard case .table(let list) = entriesValue else {
            return .failure(DecodeError("the timeline's 'entries' must be an array of entries, got \(entriesValue.typeName)"))
        }
        if !list.fields.isEmpty { return .failure(DecodeError("the timeline's 'entries' must be an array, not a map")) }
        var warnings: [String] = []
        if list.array.count > policy.entriesLimit {
            return .failure(DecodeError("the timeline has \(list.array.count) entries, over the limit of \(policy.entriesLimit) (rule T9)"))
        }
        if list.array.count > policy.entriesWarning {
            warnings.append("the timeline has \(list.array.count) entries, over \(policy.entriesWarning) (rule T9): the system may drop it")
        }
        // One pass decodes the entries and counts the list's bytes (what
        // `list.encodedSize` counts) as it reads each entry's fields; the
        // byte limit is still checked before any entry's error is given.
        var entries: [TimelineEntry] = []
        entries.reserveCapacity(list.array.count)
        var bytes = 2 + max(0, list.array.count - 1)
        var firstError: DecodeError?
        list.array.withUnsafeBufferPointer { items in
            for i in items.indices {
                switch entry(items[i], at: "entries[\(i + 1)]", defaultDate: nil, bytes: &bytes) {
                case .success(let e): if firstError == nil { entries.append(e) }
                case .failure(let error): if firstError == nil { firstError = error }
                }
            }
        }
        if bytes > policy.timelineBytesLimit {
            return .failure(DecodeError("the timeline is \(bytes) bytes encoded, over the limit of \(policy.timelineBytesLimit) (rule T9)"))
        }
        if let firstError { return .failure(firstError) }
        if bytes > policy.timelineBytesWarning {
            warnings.append("the timeline is \(bytes) bytes encoded, over \(policy.timelineBytesWarning) (rule T9)")
        }
        // Neighbours by index (a `zip` of the array and its tail costs a
        // generic type made at run time, on every call).
        if entries.indices.dropFirst().contains(where: { entries[$0 - 1].date > entries[$0].date }) {
            warnings.append("entries were not in date order; the host sorted them (rule T5)")
            entries = entries.enumerated().sorted { ($0.element.date, $0.offset) < ($1.element.date, $1.offset) }.map(\.element)
        }
        if let i = entries.indices.dropFirst().first(where: {
            entries[$0].date - entries[$0 - 1].date < policy.minimumReloadInterval && entries[$0].date != entries[$0 - 1].date
        }) {
            let (a, b) = (entries[i - 1], entries[i])
            warnings.append("entries \(ISODate.format(a.date)) and \(ISODate.format(b.date)) are \(Int(b.date - a.date)) s apart, closer than \(Int(policy.minimumReloadInterval)) s (rule T8)")
        }
        let reloadPolicy: ReloadPolicy
        switch policyValue {
        case .nil: reloadPolicy = .atEnd
        case .string(let s) where s.string == "atEnd": reloadPolicy = .atEnd
        case .string(let s) where s.string == "never": reloadPolicy = .never
        case .table(let t):
            guard let after = t[afterKey].doubleValue, after.isFinite, t.count == 1 else {
                return .failure(DecodeError("the timeline's policy must be \"atEnd\", \"never\" or { after = <date> }"))
            }
            reloadPolicy = .after(after)
        case let other:
            return .failure(DecodeError("the timeline's policy must be \"atEnd\", \"never\" or { after = <date> }, got \(other.typeName)\(other.stringValue.map { " \"\($0)\"" } ?? "")"))
        }
        return .success(Decoded(value: Timeline(entries: entries, policy: reloadPolicy), warnings: warnings))
    }

    /// One entry: a table with a date (or `defaultDate`), an optional
    /// relevance. `path` names it in errors, and is made only for one.
    static func entry(_ value: LuaValue, at path: @autoclosure () -> String, defaultDate: Double?) -> Result<TimelineEntry, DecodeError> {
        var bytes = 0
        return entry(value, at: path(), defaultDate: defaultDate, bytes: &bytes)
    }

    /// The same, adding the entry's `encodedSize` to `bytes`: its date and
    /// relevance are found in the walk over its fields that counts them.
    /// (That walk repeats `LuaTable.encodedSize`'s sum in line: shared
    /// through a visiting closure it cost ≈ 300 instructions a timeline
    /// more; `bytesAreTheListsEncodedSizeAndTheLimitComesFirst` holds the
    /// two to the same count.)
    static func entry(_ value: LuaValue, at path: @autoclosure () -> String, defaultDate: Double?,
                      bytes: inout Int) -> Result<TimelineEntry, DecodeError> {
        guard case .table(var content) = value else {
            bytes += value.encodedSize
            return .failure(DecodeError("\(path()) must be a table, got \(value.typeName)"))
        }
        var size = 2 + max(0, content.count - 1)
        content.array.withUnsafeBufferPointer { items in
            for i in items.indices { size += items[i].encodedSize }
        }
        var dateValue = LuaValue.nil, relevanceValue = LuaValue.nil
        let dateKey = Self.dateKey, relevanceKey = Self.relevanceKey
        content.fields.entries.withUnsafeBufferPointer { fields in
            for i in fields.indices {
                let length = fields[i].key.count
                size += length + 3 + fields[i].value.encodedSize
                // The length first: most keys are neither.
                if length == 4, fields[i].key == dateKey {
                    dateValue = fields[i].value
                } else if length == 9, fields[i].key == relevanceKey {
                    relevanceValue = fields[i].value
                }
            }
        }
        bytes += size
        let date: Double
        switch dateValue {
        case .nil:
            guard let defaultDate else { return .failure(DecodeError("\(path()) has no date (every entry needs date = <seconds since the epoch>)")) }
            date = defaultDate
            content.fields[dateKey] = ClockBinding.date(defaultDate)
        case let v:
            guard let d = v.doubleValue, d.isFinite else { return .failure(DecodeError("\(path()).date must be a number (seconds since the epoch), got \(v.typeName)")) }
            date = d
        }
        var relevance: (Double, Double)? = nil
        switch relevanceValue {
        case .nil: break
        case .table(let r):
            guard let score = r[scoreKey].doubleValue else { return .failure(DecodeError("\(path()).relevance.score must be a number")) }
            let duration = r[durationKey].doubleValue ?? 0
            if duration < 0 { return .failure(DecodeError("\(path()).relevance.duration must not be negative")) }
            relevance = (score, duration)
        case let v:
            return .failure(DecodeError("\(path()).relevance must be { score =, duration = }, got \(v.typeName)"))
        }
        return .success(TimelineEntry(date: date, content: content, relevance: relevance))
    }
}

/// Why a provider's result was refused.
struct DecodeError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

extension LuaValue {
    /// About the length of the value's JSON text, counted without writing
    /// it: strings by their bytes plus quotes (escapes not counted), 8
    /// bytes per number, keys and punctuation as JSON has them. What rule
    /// T9's byte limits measure.
    var encodedSize: Int {
        switch self {
        case .nil: return 4
        case .boolean: return 5
        case .integer, .number: return 8
        case .string(let s): return s.count + 2
        case .table(let t): return t.encodedSize
        }
    }
}

extension LuaTable {
    /// `LuaValue.encodedSize` of the table. Its parts are walked through
    /// buffer pointers: the checks run on every provider call, and iterating
    /// the arrays would retain and release each element.
    var encodedSize: Int {
        var size = 2 + max(0, count - 1)
        array.withUnsafeBufferPointer { items in
            for i in items.indices { size += items[i].encodedSize }
        }
        fields.entries.withUnsafeBufferPointer { entries in
            for i in entries.indices { size += entries[i].key.count + 3 + entries[i].value.encodedSize }
        }
        return size
    }
}
