#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension LuaState {
    /// Sets the global table `module.name` holding the module's functions
    /// (a read-only view in the sandbox, which is also what `require(name)`
    /// returns). Throws when the state cannot take it (out of stack).
    public func register(_ module: LuaModule) throws(LuaError) {
        let stack = stack
        let base = stack.top
        defer { stack.setTop(base) }
        try stack.reserveOrThrow(4)
        stack.pushGlobals()
        stack.push(module.name)
        pushFunctions(of: module, viaWrapper: false, on: stack)
        stack.rawSet(-3)
        try protectInSandbox(module.name, on: stack)
    }

    /// Sets the global `module.name` to a table built by host glue code in
    /// Lua: `glue` is compiled (as chunk "[host name]") and called with one
    /// argument, a private table of the module's Swift functions; the table it
    /// returns becomes the global (a read-only view in the sandbox). Glue code
    /// is the host's own: use it to give scripts objects with methods
    /// (`store.group(id):get(key)`) on top of plain Swift functions. It runs
    /// in host mode, without the call limits, so keep it to definitions.
    ///
    /// The functions are meant to be called from method wrappers, as
    /// `return f(object, ...)` inside `function(self, ...)`: their errors
    /// take the position of the wrapper's caller, and argument numbers skip
    /// the object, as Lua's own messages do for methods ("bad argument #1 to
    /// 'set'" for the first argument after self).
    public func register(_ module: LuaModule, glue: String) throws(LuaError) {
        let stack = stack
        let base = stack.top
        defer { stack.setTop(base) }
        try runGlue(glue, name: module.name, functions: module, results: 1, on: stack)
        guard stack.type(at: -1) == .table else {
            throw .runtime(LuaRuntimeError(message: "glue of module '\(module.name)' returned \(stack.type(at: -1).name), not a table"))
        }
        try stack.reserveOrThrow(3)
        stack.pushGlobals()
        stack.push(module.name)
        stack.pushCopy(of: -3)
        stack.rawSet(-3)
        try protectInSandbox(module.name, on: stack)
    }

    /// Runs host glue code that sets globals itself (declaration functions,
    /// a `require` that knows the bundle's modules): `source` is compiled as
    /// "[host name]" and called with a private table of `functions`, which
    /// follow the conventions of `register(_:glue:)`. The glue runs with the
    /// state's own globals as its environment, in host mode and without
    /// call limits.
    ///
    /// Returns the functions the glue returns, for the host to call later
    /// (a per-call entry point, say); other results are ignored.
    @discardableResult
    public func runGlue(_ source: String, name: String, functions: LuaModule) throws(LuaError) -> [LuaFunctionRef] {
        let stack = stack
        let base = stack.top
        defer { stack.setTop(base) }
        try runGlue(source, name: name, functions: functions, results: LuaLifecycle.multipleResults, on: stack)
        var refs: [LuaFunctionRef] = []
        let top = stack.top
        guard top > base else { return refs }
        try stack.reserveOrThrow(1)
        for index in (base + 1)...top where stack.type(at: index) == .function {
            stack.pushCopy(of: index)
            refs.append(LuaFunctionRef(state: self, popping: stack))
        }
        return refs
    }

    /// Sets the global function `name`.
    public func register(function name: String, _ body: @escaping LuaFunctionBody) throws(LuaError) {
        let stack = stack
        let base = stack.top
        defer { stack.setTop(base) }
        try stack.reserveOrThrow(3)
        stack.pushGlobals()
        stack.push(name)
        pushFunction(named: name, on: stack, body)
        stack.rawSet(-3)
    }

    /// Compiles and calls a glue chunk with the function table in a host-mode
    /// protected call; leaves `results` results on the stack.
    private func runGlue(_ source: String, name: String, functions: LuaModule, results: Int32, on stack: LuaStack) throws(LuaError) {
        refuseInsideReading()
        let chunk = try loadGlue(source, name: "[host \(name)]")
        try stack.reserveOrThrow(6)
        stack.push(reference: chunk.reference)
        pushFunctions(of: functions, viaWrapper: true, on: stack)
        let status = stack.hostCall(arguments: 1, results: results)
        guard status == LuaLifecycle.ok else {
            let error = callError(status: status, stack: stack)
            throw .runtime(LuaRuntimeError(message: "glue of module '\(name)' failed: \(error.message)", traceback: error.traceback))
        }
    }

    /// How many states loaded the glue `source` named `name` from its
    /// compiled form (for tests).
    package static func binaryLoads(ofGlue source: String, name: String) -> Int {
        binaryLoads(of: Array(source.utf8), name: "[host \(name)]")
    }

    /// The glue chunk `source` as a function: from its binary form when this
    /// process compiled it before (every new state runs the same few chunks,
    /// and loading their binary form skips the compile, ≈ 290 k instructions
    /// a chunk), else compiled from text and kept (`LuaCompiledChunks`).
    private func loadGlue(_ source: String, name: String) throws(LuaError) -> LuaFunctionRef {
        try loadReusingCompiled(LuaCompiledChunks.Key(name: name, text: Array(source.utf8)))
    }

    /// In the sandbox, replaces global `name` by its read-only view.
    private func protectInSandbox(_ name: String, on stack: LuaStack) throws(LuaError) {
        guard profile.isSandbox else { return }
        let status = stack.protectGlobal(name)
        guard status == LuaLifecycle.ok else {
            let error = callError(status: status, stack: stack)
            throw .runtime(LuaRuntimeError(message: "cannot make module '\(name)' read-only: \(error.message)"))
        }
    }

    /// Pushes a table of the module's functions, named "module.name" in
    /// errors, or just "name" when they are called from glue wrappers.
    private func pushFunctions(of module: LuaModule, viaWrapper: Bool, on stack: LuaStack) {
        stack.pushTable(fieldCapacity: module.entries.count)
        for entry in module.entries {
            stack.push(entry.name)
            let replayable = module.replayable.contains(entry.name)
            pushFunction(named: viaWrapper ? entry.name : "\(module.name).\(entry.name)", viaWrapper: viaWrapper,
                         replayable: replayable, on: stack, body: entry.body, fastPath: entry.fastPath)
            stack.rawSet(-3)
        }
    }

    /// Pushes a Lua function that runs `body`; `name` is used in argument errors.
    /// The state keeps the body alive until it closes.
    func pushFunction(named name: String, viaWrapper: Bool = false, replayable: Bool = false, on stack: LuaStack,
                      _ body: @escaping LuaFunctionBody) {
        pushFunction(named: name, viaWrapper: viaWrapper, replayable: replayable, on: stack, body: .results(body))
    }

    func pushFunction(named name: String, viaWrapper: Bool = false, replayable: Bool = false, on stack: LuaStack,
                      body: LuaFunctionBox.Body, fastPath: LuaFastPath? = nil) {
        let box = LuaFunctionBox(state: self, name: name, viaWrapper: viaWrapper, replayable: replayable, body: body)
        boxes.append(box)
        stack.pushSwiftFunction(Unmanaged.passUnretained(box).toOpaque(), fastPath: fastPath, countsEffect: !replayable)
    }
}
