import LuaSandbox

/// The `activities` module of scripts, over an `ActivityManager`: requests
/// return the activity, or nil and the refusal's name (`denied`,
/// `attributesTooLarge`, `targetMaximumExceeded`, `unknownType`,
/// `invalidState`, `visibility`) and a message; `a:update` and `a:finish`
/// raise an error the script can read when the activity cannot take them.
struct ActivityBinding {
    let manager: ActivityManager
    /// Who the calls count as: an intent may request, anything else is `visibility`.
    let origin: ActivityOrigin

    static let glue = HostGlue.source(PackageResources.activities_lua, name: "activities")

    func install(in state: LuaState) throws(LuaError) {
        var module = LuaModule(name: "activities")
        let manager = self.manager, origin = self.origin
        module.add("request") { args in
            let type = try args.text(1)
            let attributes = try args.table(2)
            let state = try args.table(3)
            let options = try args.optional(4) { n throws(LuaFunctionError) in try args.table(n) } ?? LuaTable()
            let staleDate = options[LuaString("staleDate")].doubleValue
            let relevance = options[LuaString("relevance")].doubleValue ?? 0
            switch manager.request(type: type, attributes: attributes, state: state, staleDate: staleDate, relevance: relevance, from: origin) {
            case .success(let record): return [Self.lua(record, at: manager.clock.now())]
            case .failure(let error): return [.nil, .string(LuaString(error.refusal?.rawValue ?? "error")), .string(LuaString(error.message))]
            }
        }
        module.add("update") { args in
            let id = try args.text(1)
            let state = try args.table(2)
            let options = try args.optional(3) { n throws(LuaFunctionError) in try args.table(n) } ?? LuaTable()
            let alert = options[LuaString("alert")]
            do {
                let record = try manager.update(id, state: state, staleDate: options[LuaString("staleDate")].doubleValue,
                                                relevance: options[LuaString("relevance")].doubleValue, alert: alert.isNil ? Optional.none : alert)
                return [Self.lua(record, at: manager.clock.now())]
            } catch let error as ActivityError { throw LuaFunctionError(error.message) }
        }
        module.add("finish") { args in
            let id = try args.text(1)
            let state = try args.optional(2) { n throws(LuaFunctionError) in try args.table(n) }
            let options = try args.optional(3) { n throws(LuaFunctionError) in try args.table(n) } ?? LuaTable()
            let dismissal: ActivityManager.Dismissal
            switch options[LuaString("dismissal")] {
            case .nil, "default": dismissal = .standard
            case "immediate": dismissal = .immediate
            case .table(let t) where t[LuaString("after")].doubleValue != nil: dismissal = .after(t[LuaString("after")].doubleValue!)
            case let other: throw args.badArgument(3, "dismissal must be \"default\", \"immediate\" or { after = <date> }, got \(other.typeName)")
            }
            do {
                return [Self.lua(try manager.finish(id, state: state, dismissal: dismissal), at: manager.clock.now())]
            } catch let error as ActivityError { throw LuaFunctionError(error.message) }
        }
        module.add("list") { args in
            let type = try args.optional(1) { n throws(LuaFunctionError) in try args.text(n) }
            let now = manager.clock.now()
            do {
                return [.table(LuaTable(array: try manager.list(type: type).map { Self.lua($0, at: now) }))]
            } catch let error as ActivityError { throw LuaFunctionError(error.message) }
        }
        module.add("get") { args in
            let id = try args.text(1)
            do {
                guard let record = try manager.get(id) else { return [.nil] }
                return [Self.lua(record, at: manager.clock.now())]
            } catch let error as ActivityError { throw LuaFunctionError(error.message) }
        }
        module.add("enabled") { _ in
            do { return [.boolean(try manager.isEnabled())] } catch let error as ActivityError { throw LuaFunctionError(error.message) }
        }
        try state.register(module, glue: Self.glue)
    }

    /// `activities` for a bundle that declares activities in a host that
    /// gives it no manager (no store): every function raises an error that
    /// says so, instead of scripts meeting a nil global.
    static func installUnavailable(in state: LuaState, bundleID: String) throws(LuaError) {
        var module = LuaModule(name: "activities")
        for name in ["request", "update", "finish", "list", "get", "enabled"] {
            module.add(name) { _ in
                throw LuaFunctionError("activities.\(name): this host gives bundle \(bundleID) no Live Activities (they need the app group's store: HostServices.activities)")
            }
        }
        try state.register(module, glue: glue)
    }

    /// An activity as scripts see it.
    static func lua(_ record: ActivityRecord, at t: Double) -> LuaValue {
        var content: LuaFields = ["state": .table(record.content.state)]
        if let stale = record.content.staleDate { content["staleDate"] = ClockBinding.date(stale) }
        return .table(LuaTable(fields: [
            "id": .string(LuaString(record.id)), "type": .string(LuaString(record.type)),
            "state": .string(LuaString(record.phase(at: t).rawValue)), "attributes": .table(record.attributes),
            "content": .table(LuaTable(fields: content)), "relevance": ClockBinding.date(record.relevance),
        ]))
    }
}
