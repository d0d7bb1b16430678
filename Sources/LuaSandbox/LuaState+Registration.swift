import Foundation

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

    /// Glue compiled in this process, by chunk name and source: every new
    /// state runs the same few chunks, and loading their binary form skips
    /// the compile (≈ 290 k instructions a chunk, most of a glue's cost).
    private static let compiledGlue = CompiledGlueCache()
    private static let compiledGlueLimit = 64

    private struct CompiledGlue {
        var binary: [UInt8]
        /// States that loaded it from `binary` (tests check the path runs).
        var binaryLoads = 0
    }

    /// The compiled glue, behind a lock (an `NSLock`: ThreadSanitizer
    /// builds see its ordering, which they did not for `Mutex` here).
    private final class CompiledGlueCache: @unchecked Sendable {
        private let lock = NSLock()
        private var chunks: [String: CompiledGlue] = [:]

        func withLock<R>(_ body: (inout [String: CompiledGlue]) -> R) -> R {
            lock.withLock { body(&chunks) }
        }
    }

    /// How many states loaded the glue `source` named `name` from its
    /// compiled form (for tests).
    package static func binaryLoads(ofGlue source: String, name: String) -> Int {
        compiledGlue.withLock { $0["[host \(name)]\u{0}" + source]?.binaryLoads ?? 0 }
    }

    /// The glue chunk `source` as a function: from its binary form when this
    /// process compiled it before, else compiled from text and kept. Only
    /// the host's own glue goes this way; script code is loaded as text.
    private func loadGlue(_ source: String, name: String) throws(LuaError) -> LuaFunctionRef {
        let key = name + "\u{0}" + source
        let stack = stack
        if let cached = Self.compiledGlue.withLock({ $0[key]?.binary }) {
            try stack.reserveOrThrow(2)
            let status = cached.withUnsafeBytes { stack.loadHostBinary($0, chunkName: "@" + name) }
            if status == LuaLifecycle.ok {
                Self.compiledGlue.withLock { $0[key]?.binaryLoads += 1 }
                return LuaFunctionRef(state: self, popping: stack)
            }
            stack.pop()   // cannot happen (bytes this process wrote); compile from text instead
        }
        let chunk = try load(source, name: name)
        try stack.reserveOrThrow(1)
        stack.push(reference: chunk.reference)
        let binary = stack.dumpFunction()
        stack.pop()
        // `runGlue` is public: a host passing ever new sources would grow the
        // cache without end, so it keeps the first few (the host's glue is
        // a handful of chunks).
        if let binary {
            Self.compiledGlue.withLock { if $0[key] == nil && $0.count < Self.compiledGlueLimit { $0[key] = CompiledGlue(binary: binary) } }
        }
        return chunk
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
