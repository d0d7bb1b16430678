import CLua
import CLuaShims

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

/// An error raised by a Swift function into the calling script.
public struct LuaFunctionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The message the script sees (after the caller's "chunk:line: " when `addsPosition`).
    public var message: String
    /// Prefix the calling script's position, as Lua's `error(msg)` does.
    public var addsPosition: Bool

    public init(_ message: String, addsPosition: Bool = true) {
        self.message = message
        self.addsPosition = addsPosition
    }

    /// "bad argument #n to 'name' (detail)", as Lua's own argument errors read.
    public static func badArgument(_ position: Int, to function: String, _ detail: String) -> LuaFunctionError {
        LuaFunctionError("bad argument #\(position) to '\(function)' (\(detail))")
    }

    public var description: String { message }
}

extension LuaState {
    /// Sets the global table `module.name` holding the module's functions.
    public func register(_ module: LuaModule) {
        let L = rawState
        precondition(lua_checkstack(L, 4) != 0)
        lunette_pushglobaltable(L)
        _ = lua_pushstring(L, module.name)
        pushFunctions(of: module, viaWrapper: false)
        lua_rawset(L, -3)
        lunette_pop(L, 1)
        guard profile.isSandbox else { return }
        // In the sandbox the global becomes a read-only view, which is also
        // what require(name) returns.
        let protected = lunette_protect_global(L, module.name)
        precondition(protected == LUA_OK, "out of memory registering \(module.name)")
    }

    /// Sets the global `module.name` to a table built by host glue code in
    /// Lua: `glue` is compiled (as chunk "[host name]") and called with one
    /// argument, a private table of the module's Swift functions; the table it
    /// returns becomes the global (a read-only view in the sandbox). Glue code
    /// is the host's own: use it to give scripts objects with methods
    /// (`store.group(id):get(key)`) on top of plain Swift functions. It runs
    /// without the call limits, so keep it to definitions.
    ///
    /// The functions are meant to be called from method wrappers, as
    /// `return f(object, ...)` inside `function(self, ...)`: their errors
    /// take the position of the wrapper's caller, and argument numbers skip
    /// the object, as Lua's own messages do for methods ("bad argument #1 to
    /// 'set'" for the first argument after self).
    public func register(_ module: LuaModule, glue: String) throws(LuaError) {
        let L = rawState
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        try runGlue(glue, name: module.name, functions: module, results: 1)
        guard lua_type(L, -1) == LUA_TTABLE else {
            throw .runtime(LuaRuntimeError(message: "glue of module '\(module.name)' returned \(ValueReader.typeName(lua_type(L, -1))), not a table", traceback: nil, value: nil))
        }
        lunette_pushglobaltable(L)
        _ = lua_pushstring(L, module.name)
        lua_pushvalue(L, -3)
        lua_rawset(L, -3)
        guard profile.isSandbox else { return }
        let protected = lunette_protect_global(L, module.name)
        precondition(protected == LUA_OK, "out of memory registering \(module.name)")
    }

    /// Runs host glue code that sets globals itself (declaration functions,
    /// a `require` that knows the bundle's modules): `source` is compiled as
    /// "[host name]" and called with a private table of `functions`, which
    /// follow the conventions of `register(_:glue:)`. The glue runs with the
    /// state's own globals as its environment and without call limits.
    ///
    /// Returns the functions the glue returns, for the host to call later
    /// (a per-call entry point, say); other results are ignored.
    @discardableResult
    public func runGlue(_ source: String, name: String, functions: LuaModule) throws(LuaError) -> [LuaFunctionRef] {
        let L = rawState
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        try runGlue(source, name: name, functions: functions, results: LUA_MULTRET)
        var refs: [LuaFunctionRef] = []
        let top = lua_gettop(L)
        guard top > base else { return refs }
        try reserveStack(L, 1)
        for index in (base + 1)...top where lua_type(L, index) == LUA_TFUNCTION {
            lua_pushvalue(L, index)
            refs.append(LuaFunctionRef(state: self, popping: L))
        }
        return refs
    }

    /// Compiles and calls a glue chunk with the function table; leaves
    /// `results` results on the stack.
    private func runGlue(_ source: String, name: String, functions: LuaModule, results: Int32) throws(LuaError) {
        let L = rawState
        let chunk = try load(source, name: "[host \(name)]")
        try reserveStack(L, 6)
        lua_rawgeti(L, lunette_registry_index(), Int64(chunk.reference))
        pushFunctions(of: functions, viaWrapper: true)
        guard lunette_pcall(L, 1, results) == LUA_OK else {
            throw .runtime(LuaRuntimeError(message: "glue of module '\(name)' failed: \(errorMessage(at: -1))", traceback: nil, value: nil))
        }
    }

    /// Sets the global function `name`.
    public func register(function name: String, _ body: @escaping LuaFunctionBody) {
        let L = rawState
        precondition(lua_checkstack(L, 3) != 0)
        lunette_pushglobaltable(L)
        _ = lua_pushstring(L, name)
        pushFunction(named: name, body)
        lua_rawset(L, -3)
        lunette_pop(L, 1)
    }

    /// Pushes a table of the module's functions, named "module.name" in
    /// errors, or just "name" when they are called from glue wrappers.
    private func pushFunctions(of module: LuaModule, viaWrapper: Bool) {
        let L = rawState
        lua_createtable(L, 0, Int32(clamping: module.functions.count))
        for (name, body) in module.functions {
            _ = lua_pushstring(L, name)
            pushFunction(named: viaWrapper ? name : "\(module.name).\(name)", viaWrapper: viaWrapper, body)
            lua_rawset(L, -3)
        }
    }

    /// Pushes a Lua function that runs `body`; `name` is used in argument errors.
    /// The state keeps the body alive until it closes.
    func pushFunction(named name: String, viaWrapper: Bool = false, _ body: @escaping LuaFunctionBody) {
        let box = LuaFunctionBox(state: self, name: name, viaWrapper: viaWrapper, body: body)
        boxes.append(box)
        lunette_push_swift_function(current, Unmanaged.passUnretained(box).toOpaque())
    }
}

/// What a Swift function gets of its call: its arguments, read raw.
///
/// Valid only while the function runs; do not keep it.
public struct LuaArguments {
    /// The state the call runs in (for nested calls).
    public let state: LuaState
    let L: OpaquePointer
    /// Number of arguments passed.
    public let count: Int
    /// The qualified name used in error messages, e.g. "clock.add".
    public let functionName: String
    /// 1 for functions called from a method wrapper: argument `n` is the
    /// script's argument `n - 1` in messages.
    let argumentOffset: Int

    /// "bad argument #n to 'name' (detail)", numbered as the script sees its arguments.
    public func badArgument(_ n: Int, _ detail: String) -> LuaFunctionError {
        .badArgument(n - argumentOffset, to: functionName, detail)
    }

    /// Lua's type name of argument `n` (1-based), or "no value".
    public func typeName(_ n: Int) -> String {
        n >= 1 && n <= count ? ValueReader.typeName(lua_type(L, Int32(n))) : "no value"
    }

    /// True when argument `n` is absent or nil.
    public func isNil(_ n: Int) -> Bool {
        n > count || lua_type(L, Int32(n)) == LUA_TNIL
    }

    /// Argument `n` as plain data (`.nil` when absent).
    public func value(_ n: Int) throws(LuaFunctionError) -> LuaValue {
        guard n >= 1, n <= count else { return .nil }
        var reader = state.reader(L)
        do { return try reader.read(at: Int32(n), root: "") } catch {
            throw badArgument(n, error.description)
        }
    }

    /// Argument `n` as an integer: an integer, or a float with an exact integer value.
    public func integer(_ n: Int) throws(LuaFunctionError) -> Int64 {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TNUMBER else { throw expected("number", n) }
        if lua_isinteger(L, Int32(n)) != 0 { return lua_tointegerx(L, Int32(n), nil) }
        guard let i = Int64(exactly: lua_tonumberx(L, Int32(n), nil)) else {
            throw badArgument(n, "number has no integer representation")
        }
        return i
    }

    /// Argument `n` as a number.
    public func number(_ n: Int) throws(LuaFunctionError) -> Double {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TNUMBER else { throw expected("number", n) }
        return lua_tonumberx(L, Int32(n), nil)
    }

    /// Argument `n` as a string (numbers are converted as Lua converts them).
    public func string(_ n: Int) throws(LuaFunctionError) -> LuaString {
        guard n <= count else { throw expected("string", n) }
        switch lua_type(L, Int32(n)) {
        case LUA_TSTRING:
            return ValueReader.string(L, at: Int32(n))
        case LUA_TNUMBER:
            if lua_isinteger(L, Int32(n)) != 0 { return LuaString(String(lua_tointegerx(L, Int32(n), nil))) }
            return LuaString(LuaLiteral.number(lua_tonumberx(L, Int32(n), nil)))
        default:
            throw expected("string", n)
        }
    }

    /// Argument `n` as text: a string of valid UTF-8.
    public func text(_ n: Int) throws(LuaFunctionError) -> String {
        guard let text = try string(n).string else {
            throw badArgument(n, "string is not valid UTF-8")
        }
        return text
    }

    /// Argument `n` as a boolean.
    public func boolean(_ n: Int) throws(LuaFunctionError) -> Bool {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TBOOLEAN else { throw expected("boolean", n) }
        return lua_toboolean(L, Int32(n)) != 0
    }

    /// Argument `n` as a table of plain data.
    public func table(_ n: Int) throws(LuaFunctionError) -> LuaTable {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TTABLE else { throw expected("table", n) }
        guard case .table(let t) = try value(n) else { throw expected("table", n) }
        return t
    }

    /// Table argument `n` as named numbers (`{ minutes = 15 }`, at most
    /// `limit` fields), read in place without converting the table: option
    /// tables are read on hot paths. Anything else in the table is an
    /// argument error that names the field.
    public func numberFields(_ n: Int, limit: Int = 8) throws(LuaFunctionError) -> [(key: String, value: Double)] {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TTABLE else { throw expected("table", n) }
        guard lua_checkstack(L, 2) != 0 else { throw LuaFunctionError("stack overflow") }
        var fields: [(key: String, value: Double)] = []
        lua_pushnil(L)
        while lua_next(L, Int32(n)) != 0 {
            guard lua_type(L, -2) == LUA_TSTRING, let key = ValueReader.string(L, at: -2).string else {
                let type = ValueReader.typeName(lua_type(L, -2))
                lunette_pop(L, 2)
                throw badArgument(n, "expected { name = number, ... }, got a \(type) key")
            }
            guard lua_type(L, -1) == LUA_TNUMBER else {
                let type = ValueReader.typeName(lua_type(L, -1))
                lunette_pop(L, 2)
                throw badArgument(n, "'\(key)' must be a number, got \(type)")
            }
            guard fields.count < limit else {
                lunette_pop(L, 2)
                throw badArgument(n, "more than \(limit) fields")
            }
            fields.append((key, lua_tonumberx(L, -1, nil)))
            lunette_pop(L, 1)
        }
        return fields
    }

    /// Argument `n` when present and not nil, read by `read`; nil otherwise.
    public func optional<T>(_ n: Int, _ read: (Int) throws(LuaFunctionError) -> T) throws(LuaFunctionError) -> T? {
        isNil(n) ? nil : try read(n)
    }

    /// Argument `n`, which must be a function, kept for later: call it with
    /// `state.call(_:_:options:)` after this Swift function has returned
    /// (e.g. to run it again). The reference lives until it is released.
    public func function(_ n: Int) throws(LuaFunctionError) -> LuaFunctionRef {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TFUNCTION else { throw expected("function", n) }
        guard lua_checkstack(L, 1) != 0 else { throw LuaFunctionError("stack overflow") }
        lua_pushvalue(L, Int32(n))
        return LuaFunctionRef(state: state, popping: L)
    }

    /// The chunk and line of the function `level` calls up the stack (0 is
    /// this Swift function, 1 its caller…), or nil when there is no such
    /// Lua function. Chunk names are as loaded, without Lua's "@".
    public func location(level: Int) -> (chunk: String, line: Int)? {
        var ar = lua_Debug()
        guard lua_getstack(L, Int32(level), &ar) != 0, lua_getinfo(L, "Sl", &ar) != 0,
              ar.currentline > 0, let source = ar.source else { return nil }
        var chunk = String(cString: source)
        if chunk.hasPrefix("@") || chunk.hasPrefix("=") { chunk.removeFirst() }
        return (chunk, Int(ar.currentline))
    }

    /// Makes table argument `m` the globals of Lua function argument `n`:
    /// sets its first upvalue, which must be its `_ENV` (as in any chunk
    /// compiled from text). For host glue that runs one compiled chunk with
    /// fresh globals on each call; never give it to scripts.
    public func setEnvironment(ofFunction n: Int, to m: Int) throws(LuaFunctionError) {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TFUNCTION, lua_iscfunction(L, Int32(n)) == 0 else {
            throw badArgument(n, "Lua function expected, got \(typeName(n))")
        }
        guard m <= count, lua_type(L, Int32(m)) == LUA_TTABLE else { throw expected("table", m) }
        guard lua_checkstack(L, 1) != 0 else { throw LuaFunctionError("stack overflow") }
        guard let name = lua_getupvalue(L, Int32(n), 1) else { throw badArgument(n, "the function has no _ENV") }
        lunette_pop(L, 1)
        guard String(cString: name) == "_ENV" else { throw badArgument(n, "the function's first upvalue is not _ENV") }
        lua_pushvalue(L, Int32(m))
        _ = lua_setupvalue(L, Int32(n), 1)
    }

    /// Calls argument `n`, which must be a function, in protected mode.
    /// Errors come back as `LuaError`; rethrow them to pass them on.
    public func call(_ n: Int, _ arguments: [LuaValue] = []) throws -> [LuaValue] {
        guard n <= count, lua_type(L, Int32(n)) == LUA_TFUNCTION else { throw expected("function", n) }
        return try state.protectedCall(arguments) { L in lua_pushvalue(L, Int32(n)) }
    }

    private func expected(_ type: String, _ n: Int) -> LuaFunctionError {
        badArgument(n, "\(type) expected, got \(typeName(n))")
    }
}

/// Keeps a Swift function body alive for its state and routes calls to it.
final class LuaFunctionBox {
    unowned(unsafe) let state: LuaState
    let name: String
    let body: LuaFunctionBody
    /// Called from a host glue wrapper (see `register(_:glue:)`).
    let viaWrapper: Bool

    init(state: LuaState, name: String, viaWrapper: Bool, body: @escaping LuaFunctionBody) {
        self.state = state
        self.name = name
        self.viaWrapper = viaWrapper
        self.body = body
    }

    /// Installs the C trampoline's entry point (once per process).
    static let installDispatcher: Void = {
        lunette_set_dispatch { L, raw in
            let box = Unmanaged<LuaFunctionBox>.fromOpaque(raw!).takeUnretainedValue()
            return box.invoke(L!)
        }
    }()

    /// Runs the body; returns the number of results pushed, or a LUNETTE_RAISE
    /// code with the error value on top. Never raises itself.
    func invoke(_ L: OpaquePointer) -> Int32 {
        let saved = state.current
        state.current = L
        defer { state.current = saved }
        let arguments = LuaArguments(state: state, L: L, count: Int(lua_gettop(L)), functionName: name, argumentOffset: viaWrapper ? 1 : 0)
        let results: [LuaValue]
        do {
            results = try body(arguments)
        } catch let error as LuaFunctionError {
            return raise(L, error.message, where: error.addsPosition)
        } catch let error as LuaError {
            return reraise(L, error)
        } catch {
            return raise(L, String(describing: error), where: true)
        }
        let base = lua_gettop(L)
        guard lua_checkstack(L, Int32(clamping: results.count + 1)) != 0 else {
            return raise(L, "'\(name)' returned too many results (\(results.count))", where: true)
        }
        let pusher = ValuePusher(L: L, maxDepth: state.conversionLimits.maxDepth)
        for (i, result) in results.enumerated() {
            do { try pusher.push(result) } catch {
                lua_settop(L, base)
                let root = results.count == 1 ? "result" : "result #\(i + 1)"
                return raise(L, "'\(name)' returned a bad value: \(error.rooted(at: root))", where: true)
            }
        }
        return Int32(results.count)
    }

    private func raise(_ L: OpaquePointer, _ message: String, where: Bool) -> Int32 {
        _ = lua_pushstring(L, message)
        return `where` ? (viaWrapper ? LUNETTE_RAISE_WHERE_CALLER : LUNETTE_RAISE_WHERE) : LUNETTE_RAISE
    }

    /// Passes an error from a nested call on to the script, keeping its
    /// innermost traceback and, for non-string errors, the error object.
    private func reraise(_ L: OpaquePointer, _ error: LuaError) -> Int32 {
        switch error {
        case .runtime(let e):
            if let value = e.value, (try? ValuePusher(L: L, maxDepth: state.conversionLimits.maxDepth).push(value)) != nil {
                // pushed the original error object
            } else {
                _ = lua_pushstring(L, e.message)
            }
            if let traceback = e.traceback {
                _ = lua_pushstring(L, traceback)
                lunette_keep_traceback(L)
            }
            return LUNETTE_RAISE
        default:
            _ = lua_pushstring(L, error.message)
            return LUNETTE_RAISE
        }
    }
}
