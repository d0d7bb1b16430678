import LuaSandbox

/// A module of the app's own Swift functions for scripts: a bundle that
/// lists `capability` in bundle.json's `"capabilities"` gets it as
/// `require(name)` (and as the global `name`); any other bundle's calls to
/// it fail with an error that names the capability to declare.
///
/// ```swift
/// var weather = HostModule(name: "app.weather", capability: "weather")
/// weather.add("today") { args in [.table(["city": .string(LuaString(try args.text(1))), "high": 21])] }
/// let services = HostServices(store: store, modules: [weather])
/// ```
///
/// The functions run in the script's call, under its deadline and memory
/// cap, on the call's thread; they read arguments through `LuaArguments`
/// and return plain data. A thrown `LuaFunctionError` is a Lua error at the
/// script's line.
public struct HostModule: Sendable {
    /// The name scripts `require`, e.g. "app.weather".
    public let name: String
    /// What bundle.json must list in `"capabilities"` to get it.
    public let capability: String
    public private(set) var functions: [(name: String, body: @Sendable (LuaArguments) throws -> [LuaValue])] = []

    public init(name: String, capability: String) {
        self.name = name
        self.capability = capability
    }

    /// Adds the function `name`.
    public mutating func add(_ name: String, _ body: @escaping @Sendable (LuaArguments) throws -> [LuaValue]) {
        functions.append((name, body))
    }

    /// Gives the module to `state` for a bundle with `capabilities`.
    func install(in state: LuaState, bundle: String, capabilities: [String]) throws(LuaError) {
        var module = LuaModule(name: name)
        if capabilities.contains(capability) {
            for function in functions { module.add(function.name, function.body) }
        } else {
            let name = self.name, capability = self.capability
            for function in functions {
                let field = function.name
                module.add(field) { _ in
                    throw LuaFunctionError("\(name).\(field): bundle \(bundle) does not have the capability '\(capability)'; list it in \"capabilities\" of bundle.json")
                }
            }
        }
        try state.register(module)
    }
}
