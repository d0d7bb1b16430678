import Foundation
import LuaSandbox

/// How a bundle call's data crosses the worker protocol, losing nothing
/// (docs/plugins.md, "The protocol"): a call, its outcome, and the app
/// modules' calls made in its middle are binary messages (`WireWriter`:
/// floats as their bits, strings as their bytes, a table's array part
/// apart from its keys). The bundle's `open` is JSON.
enum WorkerWire {
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

    // MARK: App modules

    /// A module call, worker → host.
    static func module(_ name: String, _ function: String, _ arguments: [LuaValue]) -> [UInt8] {
        var w = WireWriter(.module)
        w.string(name); w.string(function); w.values(arguments)
        return w.bytes
    }

    static func module(_ bytes: [UInt8]) throws -> (name: String, function: String, arguments: [LuaValue]) {
        var r = WireReader(bytes)
        guard r.tag == .module else { throw WorkerProtocolError("not a module call") }
        return (try r.string(), try r.string(), try r.values())
    }

    /// The host's answer to a module call: its values, or its error.
    static func reply(_ result: Result<[LuaValue], ModuleError>) -> [UInt8] {
        var w = WireWriter(.reply)
        switch result {
        case .success(let values): w.bool(true); w.values(values)
        case .failure(let error): w.bool(false); w.string(error.message)
        }
        return w.bytes
    }

    static func reply(_ bytes: [UInt8]) throws -> Result<[LuaValue], ModuleError> {
        var r = WireReader(bytes)
        guard r.tag == .reply else { throw WorkerProtocolError("the host did not answer a module call") }
        return try r.bool() ? .success(try r.values()) : .failure(ModuleError(message: try r.string()))
    }

    /// A module call's failure, as the script sees it.
    struct ModuleError: Error, Equatable { var message: String }

    // MARK: Live Activity events

    static func write(_ prepared: (mark: ActivityEventMark, source: String), to w: inout WireWriter) {
        w.string(prepared.mark.activity)
        switch prepared.mark.kind {
        case .push(let n): w.byte(0); w.count(n)
        case .tick(let t): w.byte(1); w.double(t)
        case .stale(let t): w.byte(2); w.double(t)
        case .signal: w.byte(3)
        }
        w.string(prepared.source)
    }

    static func mark(from r: inout WireReader) throws -> (mark: ActivityEventMark, source: String) {
        let activity = try r.string()
        let kind: ActivityEventMark.Kind
        switch try r.byte() {
        case 0: kind = .push(try r.count())
        case 1: kind = .tick(try r.double())
        case 2: kind = .stale(try r.double())
        case 3: kind = .signal
        case let other: throw WorkerProtocolError("an activity event of kind \(other)")
        }
        return (ActivityEventMark(activity: activity, kind: kind), try r.string())
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
        if let prepared = c.prepared { write(prepared, to: &w) }
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
        if try r.bool() { c.prepared = try mark(from: &r) }
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
