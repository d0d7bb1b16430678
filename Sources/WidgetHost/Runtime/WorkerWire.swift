#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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

    // MARK: The policy

    /// One field of `HostPolicy` in an `open` request: its name, and how
    /// it is written and read.
    private struct PolicyField: Sendable {
        let name: String
        let write: @Sendable (HostPolicy) -> JSONValue
        let read: @Sendable (inout HostPolicy, JSONValue.Kind) -> Bool

        static func number(_ name: String, _ path: WritableKeyPath<HostPolicy, Double> & Sendable) -> PolicyField {
            PolicyField(name: name, write: { JSONValue(.double($0[keyPath: path]), at: JSONValue.here) }) { policy, kind in
                guard let value = number(kind) else { return false }
                policy[keyPath: path] = value
                return true
            }
        }
        static func optionalNumber(_ name: String, _ path: WritableKeyPath<HostPolicy, Double?> & Sendable) -> PolicyField {
            PolicyField(name: name, write: { $0[keyPath: path].map { JSONValue(.double($0), at: JSONValue.here) } ?? .null }) { policy, kind in
                if kind == .null { policy[keyPath: path] = nil; return true }
                guard let value = number(kind) else { return false }
                policy[keyPath: path] = value
                return true
            }
        }
        static func integer(_ name: String, _ path: WritableKeyPath<HostPolicy, Int> & Sendable) -> PolicyField {
            PolicyField(name: name, write: { .of($0[keyPath: path]) }) { policy, kind in
                guard case .integer(let value) = kind, let int = Int(exactly: value) else { return false }
                policy[keyPath: path] = int
                return true
            }
        }
        static func flag(_ name: String, _ path: WritableKeyPath<HostPolicy, Bool> & Sendable) -> PolicyField {
            PolicyField(name: name, write: { .of($0[keyPath: path]) }) { policy, kind in
                guard case .boolean(let value) = kind else { return false }
                policy[keyPath: path] = value
                return true
            }
        }
        static func deadline(_ name: String, _ path: WritableKeyPath<HostPolicy, HostPolicy.Deadline> & Sendable) -> PolicyField {
            PolicyField(name: name, write: { policy in
                let d = policy[keyPath: path]
                return .list([JSONValue(.double(d.soft), at: JSONValue.here), JSONValue(.double(d.hard), at: JSONValue.here)])
            }) { policy, kind in
                guard case .array(let items) = kind, items.count == 2, let soft = number(items[0].kind), let hard = number(items[1].kind) else { return false }
                policy[keyPath: path] = HostPolicy.Deadline(soft: soft, hard: hard)
                return true
            }
        }
        static func scope(_ name: String, _ path: WritableKeyPath<HostPolicy, BudgetScope> & Sendable) -> PolicyField {
            PolicyField(name: name, write: { .of($0[keyPath: path].rawValue) }) { policy, kind in
                guard case .string(let raw) = kind, let scope = BudgetScope(rawValue: raw) else { return false }
                policy[keyPath: path] = scope
                return true
            }
        }
        /// A float as `JSONWriter` writes one (`2.0`, `"NaN"`, `"Infinity"`), or an integer.
        private static func number(_ kind: JSONValue.Kind) -> Double? {
            switch kind {
            case .double(let d): return d
            case .integer(let i): return Double(i)
            case .string("NaN"): return .nan
            case .string("Infinity"): return .infinity
            case .string("-Infinity"): return -.infinity
            default: return nil
            }
        }
    }

    /// Every field of `HostPolicy` (WorkerWireTests fails when one is missing).
    private static let policyFields: [PolicyField] = [
        .deadline("placeholderDeadline", \.placeholderDeadline), .deadline("snapshotDeadline", \.snapshotDeadline),
        .deadline("timelineDeadline", \.timelineDeadline), .number("minimumReloadInterval", \.minimumReloadInterval),
        .integer("entriesWarning", \.entriesWarning), .integer("entriesLimit", \.entriesLimit),
        .integer("timelineBytesWarning", \.timelineBytesWarning), .integer("timelineBytesLimit", \.timelineBytesLimit),
        .integer("budget", \.budget), .number("budgetWindow", \.budgetWindow), .scope("budgetScope", \.budgetScope),
        .flag("developerMode", \.developerMode), .optionalNumber("callCap", \.callCap), .integer("widgetMemoryMB", \.widgetMemoryMB),
        .integer("activityMemoryMB", \.activityMemoryMB), .number("intentDeadline", \.intentDeadline),
        .deadline("controlDeadline", \.controlDeadline), .integer("activityPushBudget", \.activityPushBudget),
        .integer("activityFrequentPushBudget", \.activityFrequentPushBudget), .integer("activityPayloadBytes", \.activityPayloadBytes),
        .integer("maxActiveActivities", \.maxActiveActivities), .number("activityActiveLimit", \.activityActiveLimit),
        .number("activityDismissLimit", \.activityDismissLimit), .number("activityRetention", \.activityRetention),
        .integer("outputBytes", \.outputBytes),
    ]

    /// How many fields the policy's wire form has (for the test that
    /// checks it against `HostPolicy`'s stored properties).
    static var policyFieldCount: Int { policyFields.count }

    /// The policy in an `open` request: an object of its fields, by name.
    /// Written and read by hand: Foundation's JSON coders were the largest
    /// part of a forked worker's `open` that a warm-up cannot do for it.
    static func policy(_ policy: HostPolicy) -> JSONValue {
        .record(policyFields.map { ($0.name, $0.write(policy)) })
    }

    /// The policy of an `open` request; nil when there is none. Throws,
    /// naming it, for a field that is missing or not of its type.
    static func policy(from json: JSONValue?) throws -> HostPolicy? {
        guard let json, case .object = json.kind else { return nil }
        var policy = HostPolicy()
        for field in policyFields {
            guard let value = json[field.name], field.read(&policy, value.kind) else {
                throw WorkerProtocolError("the policy's '\(field.name)' is missing or not of its type")
            }
        }
        return policy
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
