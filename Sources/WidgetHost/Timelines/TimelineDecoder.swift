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
                       durationKey: LuaString = "duration", atEndText: LuaString = "atEnd", neverText: LuaString = "never"
    struct Decoded<T> {
        var value: T
        var warnings: [String]
    }

    /// `{ entries = { … }, policy = "atEnd" | "never" | { after = t } }`,
    /// from the call's first result (nil: it returned nothing).
    static func timeline<V: ProviderValue>(_ first: V?, policy: HostPolicy) -> Result<Decoded<Timeline>, DecodeError> {
        guard let result = first, result.isTable else {
            return .failure(DecodeError("timeline must return { entries = { … }, policy = … }, got \(first?.typeName ?? "nothing")"))
        }
        // One pass over the fields finds both and any unknown one.
        var entriesValue: V?, policyValue: V?
        for k in 0..<result.fieldCount {
            let key = result.fieldKey(k)
            if key == entriesKey {
                entriesValue = result.fieldValue(k)
            } else if key == policyKey {
                policyValue = result.fieldValue(k)
            } else {
                return .failure(DecodeError("the timeline has an unknown field '\(key.string ?? "?")' (fields: entries, policy)"))
            }
        }
        guard let list = entriesValue, list.isTable else {
            return .failure(DecodeError("the timeline's 'entries' must be an array of entries, got \(entriesValue?.typeName ?? "nil")"))
        }
        if list.fieldCount > 0 { return .failure(DecodeError("the timeline's 'entries' must be an array, not a map")) }
        let count = list.arrayCount
        var warnings: [String] = []
        if count > policy.entriesLimit {
            return .failure(DecodeError("the timeline has \(count) entries, over the limit of \(policy.entriesLimit) (rule T9)"))
        }
        if count > policy.entriesWarning {
            warnings.append("the timeline has \(count) entries, over \(policy.entriesWarning) (rule T9): the system may drop it")
        }
        // One pass decodes the entries and counts the list's bytes (what
        // `encodedSize` counts) as it reads each entry's fields; the byte
        // limit is still checked before any entry's error is given.
        var entries: [TimelineEntry] = []
        entries.reserveCapacity(count)
        var bytes = 2 + max(0, count - 1)
        var firstError: DecodeError?
        for i in 0..<count {
            switch entry(list.item(i), at: "entries[\(i + 1)]", defaultDate: nil, bytes: &bytes) {
            case .success(let e): if firstError == nil { entries.append(e) }
            case .failure(let error): if firstError == nil { firstError = error }
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
        let policyError = "the timeline's policy must be \"atEnd\", \"never\" or { after = <date> }"
        if let value = policyValue {
            if let text = value.luaStringValue {
                if text == atEndText {
                    reloadPolicy = .atEnd
                } else if text == neverText {
                    reloadPolicy = .never
                } else {
                    return .failure(DecodeError("\(policyError), got string\(text.string.map { " \"\($0)\"" } ?? "")"))
                }
            } else if value.isTable {
                guard value.arrayCount + value.fieldCount == 1, let after = value.field(afterKey)?.doubleValue, after.isFinite else {
                    return .failure(DecodeError(policyError))
                }
                reloadPolicy = .after(after)
            } else {
                return .failure(DecodeError("\(policyError), got \(value.typeName)"))
            }
        } else {
            reloadPolicy = .atEnd
        }
        return .success(Decoded(value: Timeline(entries: entries, policy: reloadPolicy), warnings: warnings))
    }

    /// One entry: a table with a date (or `defaultDate`), an optional
    /// relevance. `path` names it in errors, and is made only for one.
    static func entry<V: ProviderValue>(_ value: V?, at path: @autoclosure () -> String, defaultDate: Double?) -> Result<TimelineEntry, DecodeError> {
        var bytes = 0
        return entry(value, at: path(), defaultDate: defaultDate, bytes: &bytes)
    }

    /// The same, adding the entry's `encodedSize` to `bytes`: its date and
    /// relevance are found in the walk over its fields that counts them.
    /// (That walk repeats `encodedSize`'s sum in line: shared through a
    /// visiting closure it cost ≈ 300 instructions a timeline more;
    /// `bytesAreTheListsEncodedSizeAndTheLimitComesFirst` holds the two to
    /// the same count.)
    static func entry<V: ProviderValue>(_ value: V?, at path: @autoclosure () -> String, defaultDate: Double?,
                                        bytes: inout Int) -> Result<TimelineEntry, DecodeError> {
        guard let value, value.isTable else {
            bytes += value?.encodedSize ?? LuaValue.nil.encodedSize
            return .failure(DecodeError("\(path()) must be a table, got \(value?.typeName ?? "nil")"))
        }
        let items = value.arrayCount, fields = value.fieldCount
        var size = 2 + max(0, items + fields - 1)
        for i in 0..<items { size += value.item(i).encodedSize }
        var dateAt = -1, relevanceAt = -1
        for k in 0..<fields {
            let (length, fieldValue) = value.keyedField(k)
            size += length + 3 + fieldValue.encodedSize
            // The length first: most keys are neither.
            if length == 4, value.fieldKey(k) == dateKey {
                dateAt = k
            } else if length == 9, value.fieldKey(k) == relevanceKey {
                relevanceAt = k
            }
        }
        bytes += size
        let date: Double
        var filledDate: Double?
        if dateAt < 0 {
            guard let defaultDate else { return .failure(DecodeError("\(path()) has no date (every entry needs date = <seconds since the epoch>)")) }
            date = defaultDate
            filledDate = defaultDate
        } else {
            let v = value.fieldValue(dateAt)
            guard let d = v.doubleValue, d.isFinite else { return .failure(DecodeError("\(path()).date must be a number (seconds since the epoch), got \(v.typeName)")) }
            date = d
        }
        var relevance: (Double, Double)? = nil
        if relevanceAt >= 0 {
            let r = value.fieldValue(relevanceAt)
            guard r.isTable else { return .failure(DecodeError("\(path()).relevance must be { score =, duration = }, got \(r.typeName)")) }
            guard let score = r.field(scoreKey)?.doubleValue else { return .failure(DecodeError("\(path()).relevance.score must be a number")) }
            let duration = r.field(durationKey)?.doubleValue ?? 0
            if duration < 0 { return .failure(DecodeError("\(path()).relevance.duration must not be negative")) }
            relevance = (score, duration)
        }
        // Only now, with the entry known good, is its content made (kept).
        var content = value.luaValue.tableValue ?? LuaTable()
        if let filledDate { content.fields[dateKey] = ClockBinding.date(filledDate) }
        return .success(TimelineEntry(date: date, content: content, relevance: relevance))
    }
}

/// The in-place reading's `encodedSize` (`LuaValue.encodedSize`, for the
/// decoder: values of entries, read in place).
extension LuaValueView {
    var encodedSize: Int {
        switch shape {
        case .string(let bytes): return bytes + 2
        case .number: return 8
        case .boolean: return 5
        case .nil: return 4
        case .table: break
        }
        let items = arrayCount, fields = fieldCount
        var size = 2 + max(0, items + fields - 1)
        for i in 0..<items { size += item(i).encodedSize }
        for k in 0..<fields {
            let field = field(at: k)
            size += field.keyByteCount + 3 + field.value.encodedSize
        }
        return size
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
        fields.withUnsafeBufferPointer { entries in
            for i in entries.indices { size += entries[i].key.count + 3 + entries[i].value.encodedSize }
        }
        return size
    }
}
