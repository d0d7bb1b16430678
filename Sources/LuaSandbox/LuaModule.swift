/// The body of a Swift function that scripts can call.
///
/// It reads its arguments through `LuaArguments` and returns its results as
/// plain data. Throwing raises a Lua error in the script after this Swift
/// frame has returned, so `defer` blocks always run and nothing leaks: throw
/// `LuaFunctionError` for a message like Lua's own, or rethrow a `LuaError`
/// from a nested call to pass it through unchanged.
public typealias LuaFunctionBody = (LuaArguments) throws -> [LuaValue]

/// A named table of Swift functions, set as a global (`clock`, `store`, …).
public struct LuaModule {
    /// The global name of the table.
    public var name: String
    /// The functions, by field name.
    public var functions: [(name: String, body: LuaFunctionBody)]

    public init(name: String, functions: [(name: String, body: LuaFunctionBody)] = []) {
        self.name = name
        self.functions = functions
    }

    /// Adds `name` to the module.
    public mutating func add(_ name: String, _ body: @escaping LuaFunctionBody) {
        functions.append((name, body))
    }
}

