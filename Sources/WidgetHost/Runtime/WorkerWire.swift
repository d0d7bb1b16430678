import Foundation
import LuaSandbox

/// How a bundle call's data crosses the worker protocol, losing nothing
/// (docs/plugins.md, "The protocol"). Lua values keep what JSON alone would
/// lose: floats stay floats (NaN and the infinities included), integers stay
/// integers, strings keep their bytes, and a table keeps its array part apart
/// from its keys.
///
/// | Lua | wire |
/// |---|---|
/// | nil, boolean, integer | `null`, `true`/`false`, an integer |
/// | float | `{"f": <its IEEE 754 bits, as a signed integer>}` |
/// | string of UTF-8 | a string |
/// | other string | `{"b": "<base64>"}` |
/// | table | `{"a": [items], "k": [key, value, key, value…]}` (each part only when not empty) |
enum WorkerWire {
    static func value(_ value: LuaValue) -> JSONValue {
        switch value {
        case .nil: return .null
        case .boolean(let b): return .of(b)
        case .integer(let i): return JSONValue(.integer(i), at: JSONValue.here)
        case .number(let d): return .record([("f", JSONValue(.integer(Int64(bitPattern: d.bitPattern)), at: JSONValue.here))])
        case .string(let s): return string(s)
        case .table(let t):
            var parts: [(String, JSONValue)] = []
            if !t.array.isEmpty { parts.append(("a", .list(t.array.map(Self.value)))) }
            if !t.fields.isEmpty {
                var flat: [JSONValue] = []
                flat.reserveCapacity(t.fields.count * 2)
                for entry in t.fields { flat.append(string(entry.key)); flat.append(Self.value(entry.value)) }
                parts.append(("k", .list(flat)))
            }
            return .record(parts)
        }
    }

    static func string(_ s: LuaString) -> JSONValue {
        if let text = s.string { return .of(text) }
        return .record([("b", .base64(s.bytes))])
    }

    static func values(_ values: [LuaValue]) -> JSONValue { .list(values.map(value)) }

    static func value(_ json: JSONValue) throws -> LuaValue {
        switch json.kind {
        case .null: return .nil
        case .boolean(let b): return .boolean(b)
        case .integer(let i): return .integer(i)
        case .string(let s): return .string(LuaString(s))
        case .object:
            if let bits = json["f"]?.kind, case .integer(let i) = bits { return .number(Double(bitPattern: UInt64(bitPattern: i))) }
            if json["b"] != nil { return .string(try string(json)) }
            var table = LuaTable()
            if let items = json["a"]?.items { table.array = try items.map(value) }
            if let flat = json["k"]?.items {
                guard flat.count % 2 == 0 else { throw WorkerProtocolError("a table's keys and values do not pair up") }
                var i = 0
                while i < flat.count {
                    table.fields[try string(flat[i])] = try value(flat[i + 1])
                    i += 2
                }
            }
            return .table(table)
        case .double, .array: throw WorkerProtocolError("not a Lua value on the wire: \(json.kind)")
        }
    }

    static func string(_ json: JSONValue) throws -> LuaString {
        if let text = json.text { return LuaString(text) }
        guard let bytes = json["b"]?.decodedBytes else { throw WorkerProtocolError("not a string on the wire") }
        return LuaString(bytes: bytes)
    }

    static func values(_ json: JSONValue?) throws -> [LuaValue] {
        try (json?.items ?? []).map(value)
    }

    static func logLevel(_ name: String) -> LuaLogLevel? {
        switch name {
        case "debug": return .debug
        case "info": return .info
        case "warn": return .warn
        case "error": return .error
        default: return nil
        }
    }

    // MARK: Codable values, as a JSON text in a string

    /// `value` as JSON text, its keys sorted (the same value, the same text).
    static func encoded<T: Encodable>(_ value: T) throws -> JSONValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return .of(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    static func decoded<T: Decodable>(_ type: T.Type, _ json: JSONValue?) throws -> T? {
        guard let text = json?.text else { return nil }
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    // MARK: Reload requests

    static func reload(_ request: ReloadRequest) -> JSONValue {
        switch request {
        case .timelines(let kind): return .list([.of("timelines"), .of(kind)])
        case .allTimelines: return .list([.of("allTimelines")])
        case .controls(let kind): return .list([.of("controls"), .of(kind)])
        case .allControls: return .list([.of("allControls")])
        }
    }

    static func reload(_ json: JSONValue) throws -> ReloadRequest {
        let parts = json.items?.compactMap(\.text) ?? []
        switch (parts.first, parts.count) {
        case ("timelines", 2): return .timelines(kind: parts[1])
        case ("allTimelines", 1): return .allTimelines
        case ("controls", 2): return .controls(kind: parts[1])
        case ("allControls", 1): return .allControls
        default: throw WorkerProtocolError("not a reload request on the wire")
        }
    }

    // MARK: Live Activity events

    static func mark(_ mark: ActivityEventMark, source: String) -> JSONValue {
        let kind: [JSONValue]
        switch mark.kind {
        case .push(let n): kind = [.of("push"), .of(n)]
        case .tick(let t): kind = [.of("tick"), value(.number(t))]
        case .stale(let t): kind = [.of("stale"), value(.number(t))]
        case .signal: kind = [.of("signal")]
        }
        return .record([("activity", .of(mark.activity)), ("kind", .list(kind)), ("source", .of(source))])
    }

    static func mark(_ json: JSONValue) throws -> (mark: ActivityEventMark, source: String) {
        let kind = json["kind"]?.items ?? []
        guard let activity = json["activity"]?.text, let name = kind.first?.text else { throw WorkerProtocolError("not an activity event on the wire") }
        func time() throws -> Double {
            guard kind.count == 2, let t = try value(kind[1]).doubleValue else { throw WorkerProtocolError("an activity event without its time") }
            return t
        }
        let parsed: ActivityEventMark.Kind
        switch name {
        case "push":
            guard kind.count == 2, let n = kind[1].int else { throw WorkerProtocolError("a push event without its number") }
            parsed = .push(n)
        case "tick": parsed = .tick(try time())
        case "stale": parsed = .stale(try time())
        case "signal": parsed = .signal
        default: throw WorkerProtocolError("an activity event of kind '\(name)'")
        }
        return (ActivityEventMark(activity: activity, kind: parsed), json["source"]?.text ?? "")
    }

    // MARK: Outcomes

    /// A call's outcome, with the Live Activity changes it committed.
    static func outcome(_ o: CallOutcome, activityChanges: [ActivityChange]) throws -> JSONValue {
        var fields: [(String, JSONValue)] = [("op", .of("done"))]
        if let diagnostic = o.diagnostic { fields.append(("diagnostic", try encoded(diagnostic))) }
        if !o.values.isEmpty { fields.append(("values", values(o.values))) }
        fields.append(("elapsed", value(.number(o.elapsed))))
        fields.append(("cpu", value(.number(o.cpuTime))))
        fields.append(("peak", .of(o.memoryPeak)))
        if !o.logs.isEmpty {
            fields.append(("logs", .list(o.logs.map { .list([.of($0.level.name), .base64(Array($0.text.utf8))]) })))
        }
        if !o.reloadRequests.isEmpty { fields.append(("reloads", .list(o.reloadRequests.map(reload)))) }
        if !o.deniedGroups.isEmpty { fields.append(("denied", .list(o.deniedGroups.map { .of($0) }))) }
        if o.storeConflict { fields.append(("conflict", .of(true))) }
        if !o.warnings.isEmpty { fields.append(("warnings", .list(o.warnings.map { .of($0) }))) }
        if !activityChanges.isEmpty { fields.append(("activityChanges", try encoded(activityChanges))) }
        return .record(fields)
    }

    static func outcome(_ json: JSONValue) throws -> (CallOutcome, [ActivityChange]) {
        var o = CallOutcome()
        o.diagnostic = try decoded(Diagnostic.self, json["diagnostic"])
        o.values = try values(json["values"])
        o.elapsed = try value(json["elapsed"] ?? .null).doubleValue ?? 0
        o.cpuTime = try value(json["cpu"] ?? .null).doubleValue ?? 0
        o.memoryPeak = json["peak"]?.int ?? 0
        for line in json["logs"]?.items ?? [] {
            let parts = line.items ?? []
            guard parts.count == 2, let level = parts[0].text.flatMap(logLevel), let bytes = parts[1].decodedBytes else {
                throw WorkerProtocolError("not a log line on the wire")
            }
            o.logs.append((level, String(decoding: bytes, as: UTF8.self)))
        }
        o.reloadRequests = try (json["reloads"]?.items ?? []).map(reload)
        o.deniedGroups = (json["denied"]?.items ?? []).compactMap(\.text)
        o.storeConflict = json["conflict"]?.kind == .boolean(true)
        o.warnings = (json["warnings"]?.items ?? []).compactMap(\.text)
        let changes = try decoded([ActivityChange].self, json["activityChanges"]) ?? []
        return (o, changes)
    }
}
