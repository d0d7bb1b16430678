import LuaSandbox

/// A reload asked for by a script (`reload.timelines(kind)`, `reload.all()`,
/// `reload.controls(kind)`, `reload.allControls()`). Requests are not
/// acknowledged: the timeline engine decides when they happen (rule B4).
public enum ReloadRequest: Sendable, Equatable, CustomStringConvertible {
    case timelines(kind: String)
    case allTimelines
    case controls(kind: String)
    case allControls

    public var description: String {
        switch self {
        case .timelines(let kind): return "reload.timelines(\"\(kind)\")"
        case .allTimelines: return "reload.all()"
        case .controls(let kind): return "reload.controls(\"\(kind)\")"
        case .allControls: return "reload.allControls()"
        }
    }

    /// True for `reload.timelines` and `reload.all`.
    public var isForTimelines: Bool {
        switch self {
        case .timelines, .allTimelines: return true
        case .controls, .allControls: return false
        }
    }

    /// True when the request reloads the widget `kind`.
    public func reloads(kind: String) -> Bool {
        switch self {
        case .timelines(let k): return k == kind
        case .allTimelines: return true
        case .controls, .allControls: return false
        }
    }
}

/// The `reload` module of scripts: records each request in the call's list.
struct ReloadBinding {
    /// Widget and control kinds the bundle declares (nil while main.lua
    /// is first loaded, when nothing is checked).
    let widgetKinds: [String]?
    let controlKinds: [String]?

    func install(in state: LuaState, record: @escaping (ReloadRequest) -> Void) throws(LuaError) {
        var module = LuaModule(name: "reload")
        module.add("timelines") { args in
            record(.timelines(kind: try Self.kind(args, among: widgetKinds, what: "widget")))
            return []
        }
        module.add("all") { _ in
            record(.allTimelines)
            return []
        }
        module.add("controls") { args in
            record(.controls(kind: try Self.kind(args, among: controlKinds, what: "control")))
            return []
        }
        module.add("allControls") { _ in
            record(.allControls)
            return []
        }
        try state.register(module)
    }

    private static func kind(_ args: LuaArguments, among kinds: [String]?, what: String) throws(LuaFunctionError) -> String {
        guard args.typeName(1) == "string" else { throw args.badArgument(1, "\(what) kind expected, got \(args.typeName(1))") }
        let kind = try args.text(1)
        if let kinds, !kinds.contains(kind) {
            let known = kinds.isEmpty ? "it declares none" : "kinds: " + kinds.joined(separator: ", ")
            throw args.badArgument(1, "no \(what) kind '\(kind)' in this bundle (\(known))")
        }
        return kind
    }
}
