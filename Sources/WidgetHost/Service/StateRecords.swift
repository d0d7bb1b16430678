import LuaSandbox
import SharedStore

/// The kept state's records as `StoreValue`s (the store's compact binary
/// form), exactly: a float stays a float (NaN and infinities included), a
/// string that is not UTF-8 stays bytes, a table keeps both its array
/// items and its keys, and a control's nil value stays nil. (The JSON of
/// `LuaValue`'s Codable cannot promise all of that.)
///
/// A Lua value is tagged by the store value's type: integer, double,
/// boolean, string or bytes for scalars; a table is a map `{"a": [items],
/// "f": [key, value, key, value, …]}`; nil is the map `{"nil": true}`.
enum StateRecords {
    struct DecodeError: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: Lua values

    static func encode(_ value: LuaValue) -> StoreValue {
        switch value {
        case .nil: return .map(["nil": true])
        case .boolean(let b): return .boolean(b)
        case .integer(let i): return .integer(i)
        case .number(let d): return .double(d)
        case .string(let s): return encode(s)
        case .table(let t): return encode(t)
        }
    }

    static func encode(_ string: LuaString) -> StoreValue { StoreValue(lua: string) }   // text, or bytes

    static func encode(_ table: LuaTable) -> StoreValue {
        var fields: [StoreValue] = []
        fields.reserveCapacity(table.fields.count * 2)
        for entry in table.fields {
            fields.append(encode(entry.key))
            fields.append(encode(entry.value))
        }
        return .map(["a": .array(table.array.map(encode)), "f": .array(fields)])
    }

    static func luaValue(_ value: StoreValue, _ what: String) throws(DecodeError) -> LuaValue {
        switch value {
        case .integer(let i): return .integer(i)
        case .double(let d): return .number(d)
        case .boolean(let b): return .boolean(b)
        case .string, .bytes: return .string(try luaString(value, what))
        case .map(let map):
            if map["nil"] == .boolean(true) { return .nil }
            return .table(try luaTable(value, what))
        case .array: throw DecodeError(description: "\(what): an array where a Lua value was expected")
        }
    }

    static func luaString(_ value: StoreValue, _ what: String) throws(DecodeError) -> LuaString {
        switch value {
        case .string(let s): return LuaString(s)
        case .bytes(let b): return LuaString(bytes: b)
        default: throw DecodeError(description: "\(what): a \(value.kindName) where a string was expected")
        }
    }

    static func luaTable(_ value: StoreValue, _ what: String) throws(DecodeError) -> LuaTable {
        guard case .array(let items)? = value["a"], case .array(let pairs)? = value["f"], pairs.count % 2 == 0 else {
            throw DecodeError(description: "\(what): not a table record")
        }
        var array: [LuaValue] = []
        array.reserveCapacity(items.count)
        for (i, item) in items.enumerated() { array.append(try luaValue(item, "\(what)[\(i + 1)]")) }
        var fields: [LuaString: LuaValue] = [:]
        var i = 0
        while i < pairs.count {
            let key = try luaString(pairs[i], "\(what): a key")
            fields[key] = try luaValue(pairs[i + 1], "\(what).\(key.displayText)")
            i += 2
        }
        return LuaTable(array: array, fields: fields)
    }

    // MARK: Timelines

    static func encode(_ entry: TimelineEntry) -> StoreValue {
        var map: [(String, StoreValue)] = [("date", .double(entry.date)), ("content", encode(entry.content))]
        if let relevance = entry.relevance {
            map.append(("score", .double(relevance.score)))
            map.append(("duration", .double(relevance.duration)))
        }
        return .map(StoreMap(map))
    }

    static func entry(_ value: StoreValue, _ what: String) throws(DecodeError) -> TimelineEntry {
        let date = try double(value["date"], "\(what).date")
        let content = try luaTable(value["content"] ?? .map([:]), "\(what).content")
        var relevance: (score: Double, duration: Double)?
        if value["score"] != nil {
            relevance = (try double(value["score"], "\(what).score"), try double(value["duration"], "\(what).duration"))
        }
        return TimelineEntry(date: date, content: content, relevance: relevance)
    }

    static func encode(_ timeline: Timeline) -> StoreValue {
        let policy: StoreValue
        switch timeline.policy {
        case .atEnd: policy = "atEnd"
        case .never: policy = "never"
        case .after(let t): policy = .double(t)
        }
        return .map(["entries": .array(timeline.entries.map(encode)), "policy": policy])
    }

    static func timeline(_ value: StoreValue, _ what: String) throws(DecodeError) -> Timeline {
        guard case .array(let items)? = value["entries"] else { throw DecodeError(description: "\(what): no entries") }
        var entries: [TimelineEntry] = []
        for (i, item) in items.enumerated() { entries.append(try entry(item, "\(what).entries[\(i + 1)]")) }
        let policy: ReloadPolicy
        switch value["policy"] {
        case .string("atEnd")?: policy = .atEnd
        case .string("never")?: policy = .never
        case .double(let t)?: policy = .after(t)
        default: throw DecodeError(description: "\(what).policy: not atEnd, never or a time")
        }
        return Timeline(entries: entries, policy: policy)
    }

    // MARK: Records

    static func encode(_ widget: WidgetState) -> StoreValue {
        var map: [(String, StoreValue)] = [
            ("id", .integer(Int64(widget.id))), ("kind", .string(widget.kind)), ("family", .string(widget.family.rawValue)),
            ("addedAt", .double(widget.addedAt)), ("pendingRequests", .integer(Int64(widget.pendingRequests))),
        ]
        if let values = widget.values { map.append(("values", encode(values))) }
        if let placeholder = widget.placeholder { map.append(("placeholder", encode(placeholder))) }
        if let timeline = widget.timeline { map.append(("timeline", encode(timeline))) }
        for (name, time) in [("timelineAt", widget.timelineAt), ("lastReloadAt", widget.lastReloadAt),
                             ("pendingRequestAt", widget.pendingRequestAt)] {
            if let time { map.append((name, .double(time))) }
        }
        return .map(StoreMap(map))
    }

    static func widget(_ value: StoreValue, _ what: String) throws(DecodeError) -> WidgetState {
        guard let family = value["family"]?.stringValue.flatMap(WidgetFamily.init(rawValue:)) else {
            throw DecodeError(description: "\(what).family: not a widget family")
        }
        guard let kind = value["kind"]?.stringValue else { throw DecodeError(description: "\(what).kind: not a string") }
        return WidgetState(
            id: try int(value["id"], "\(what).id"), kind: kind, family: family,
            values: try value["values"].map { v throws(DecodeError) in try luaTable(v, "\(what).values") },
            addedAt: try double(value["addedAt"], "\(what).addedAt"),
            placeholder: try value["placeholder"].map { v throws(DecodeError) in try entry(v, "\(what).placeholder") },
            timeline: try value["timeline"].map { v throws(DecodeError) in try timeline(v, "\(what).timeline") },
            timelineAt: try optionalDouble(value["timelineAt"], "\(what).timelineAt"),
            lastReloadAt: try optionalDouble(value["lastReloadAt"], "\(what).lastReloadAt"),
            pendingRequestAt: try optionalDouble(value["pendingRequestAt"], "\(what).pendingRequestAt"),
            pendingRequests: try int(value["pendingRequests"], "\(what).pendingRequests"))
    }

    static func encode(_ control: ControlState) -> StoreValue {
        var map: [(String, StoreValue)] = [("kind", .string(control.kind)), ("type", .string(control.type))]
        if let value = control.value { map.append(("value", encode(value))) }
        if let lastRead = control.lastRead { map.append(("lastRead", encode(lastRead))) }
        return .map(StoreMap(map))
    }

    static func control(_ value: StoreValue, _ what: String) throws(DecodeError) -> ControlState {
        guard let kind = value["kind"]?.stringValue, let type = value["type"]?.stringValue else {
            throw DecodeError(description: "\(what): no kind or type")
        }
        return ControlState(kind: kind, type: type,
                            value: try value["value"].map { v throws(DecodeError) in try luaValue(v, "\(what).value") },
                            lastRead: try value["lastRead"].map { v throws(DecodeError) in try luaValue(v, "\(what).lastRead") })
    }

    static func encode(times: [Double]) -> StoreValue { .array(times.map { .double($0) }) }

    static func times(_ value: StoreValue, _ what: String) throws(DecodeError) -> [Double] {
        guard case .array(let items) = value else { throw DecodeError(description: "\(what): not a list of times") }
        var out: [Double] = []
        for item in items { out.append(try double(item, what)) }
        return out
    }

    // MARK: Scalars

    static func double(_ value: StoreValue?, _ what: String) throws(DecodeError) -> Double {
        guard case .double(let d)? = value else { throw DecodeError(description: "\(what): not a time") }
        return d
    }

    static func optionalDouble(_ value: StoreValue?, _ what: String) throws(DecodeError) -> Double? {
        guard let value else { return nil }
        return try double(value, what)
    }

    static func int(_ value: StoreValue?, _ what: String) throws(DecodeError) -> Int {
        guard case .integer(let i)? = value, let n = Int(exactly: i) else { throw DecodeError(description: "\(what): not an integer") }
        return n
    }
}
