import Foundation
import LuaSandbox

/// How a bundle call's data crosses the worker protocol, losing nothing
/// (docs/plugins.md, "The protocol"). A call and its outcome are binary
/// messages (`WireWriter`: floats as their bits, strings as their bytes, a
/// table's array part apart from its keys). The app modules' calls, which
/// are rare, are JSON, with Lua values in this form:
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

    // MARK: Calls and outcomes, in binary (`WireWriter`): most of the traffic

    /// A call, as the host sends it.
    struct Call {
        var role: CallRole
        var what: String
        var id: String
        var field: String
        var arguments: [LuaValue]
        var budget: (used: Int, remaining: Int)?
        /// The host's time (nil: the worker reads the system's clock).
        var now: Double?
        /// An updater's event, to mark handled with the call's changes.
        var prepared: (mark: ActivityEventMark, source: String)?
    }

    static func call(_ c: Call) -> [UInt8] {
        var w = WireWriter(.call)
        w.string(c.role.rawValue); w.string(c.what); w.string(c.id); w.string(c.field)
        w.values(c.arguments)
        w.bool(c.budget != nil)
        if let budget = c.budget { w.count(budget.used); w.count(budget.remaining) }
        w.bool(c.now != nil)
        if let now = c.now { w.double(now) }
        w.bool(c.prepared != nil)
        if let prepared = c.prepared { w.string(BundleWorkers.text(mark(prepared.mark, source: prepared.source))) }
        return w.bytes
    }

    static func call(_ bytes: [UInt8]) throws -> Call {
        var r = WireReader(bytes)
        guard r.tag == .call else { throw WorkerProtocolError("not a call") }
        let roleName = try r.string()
        guard let role = CallRole(rawValue: roleName) else { throw WorkerProtocolError("a call of role '\(roleName)'") }
        var c = Call(role: role, what: try r.string(), id: try r.string(), field: try r.string(), arguments: try r.values())
        if try r.bool() { c.budget = (try r.count(), try r.count()) }
        if try r.bool() { c.now = try r.double() }
        if try r.bool() { c.prepared = try mark(try WorkerChannel.json(Array(try r.string().utf8))) }
        return c
    }

    /// A call's outcome, with the Live Activity changes it committed.
    static func outcome(_ o: CallOutcome, activityChanges: [ActivityChange]) throws -> [UInt8] {
        var w = WireWriter(.done)
        w.bool(o.diagnostic != nil)
        if let diagnostic = o.diagnostic, let text = try encoded(diagnostic).text { w.string(text) }
        w.values(o.values)
        w.double(o.elapsed)
        w.double(o.cpuTime)
        w.count(o.memoryPeak)
        w.count(o.logs.count)
        for line in o.logs { w.byte(UInt8(line.level.rawValue)); w.string(line.text) }
        w.count(o.reloadRequests.count)
        for request in o.reloadRequests {
            switch request {
            case .timelines(let kind): w.byte(0); w.string(kind)
            case .allTimelines: w.byte(1)
            case .controls(let kind): w.byte(2); w.string(kind)
            case .allControls: w.byte(3)
            }
        }
        w.count(o.deniedGroups.count)
        for group in o.deniedGroups { w.string(group) }
        w.bool(o.storeConflict)
        w.count(o.warnings.count)
        for warning in o.warnings { w.string(warning) }
        w.bool(!activityChanges.isEmpty)
        if !activityChanges.isEmpty, let text = try encoded(activityChanges).text { w.string(text) }
        return w.bytes
    }

    static func outcome(_ bytes: [UInt8]) throws -> (CallOutcome, [ActivityChange]) {
        var r = WireReader(bytes)
        guard r.tag == .done else { throw WorkerProtocolError("not an outcome") }
        var o = CallOutcome()
        if try r.bool() { o.diagnostic = try decoded(Diagnostic.self, .of(try r.string())) }
        o.values = try r.values()
        o.elapsed = try r.double()
        o.cpuTime = try r.double()
        o.memoryPeak = try r.count()
        for _ in 0..<(try r.count(each: 2)) {
            guard let level = LuaLogLevel(rawValue: Int(try r.byte())) else { throw WorkerProtocolError("a log line of no level") }
            o.logs.append((level, try r.string()))
        }
        for _ in 0..<(try r.count(each: 1)) {
            switch try r.byte() {
            case 0: o.reloadRequests.append(.timelines(kind: try r.string()))
            case 1: o.reloadRequests.append(.allTimelines)
            case 2: o.reloadRequests.append(.controls(kind: try r.string()))
            case 3: o.reloadRequests.append(.allControls)
            default: throw WorkerProtocolError("not a reload request")
            }
        }
        for _ in 0..<(try r.count(each: 1)) { o.deniedGroups.append(try r.string()) }
        o.storeConflict = try r.bool()
        for _ in 0..<(try r.count(each: 1)) { o.warnings.append(try r.string()) }
        let changes = try r.bool() ? try decoded([ActivityChange].self, .of(try r.string())) ?? [] : []
        return (o, changes)
    }
}
