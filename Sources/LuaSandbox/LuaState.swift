import CLuaShims

/// One Lua state: owns a `lua_State`, loads text chunks, calls functions in
/// protected mode, and exposes Swift functions to scripts.
///
/// A `LuaState` is not thread-safe and not `Sendable`: one owner drives it.
/// Lua runs on stacks of at least 8 MiB: when a call arrives on a thread
/// with a smaller stack, it is run on a thread of `LuaThreadPool.shared`
/// while the caller waits (run your own `LuaThread`, or an actor on one,
/// to avoid that hop).
///
/// Every call into Lua is a `lua_pcall` whose message handler records a
/// traceback; every failure comes back as a typed `LuaError`. All stack work
/// goes through `LuaStack` (Boundary/), whose operations cannot raise, so
/// Lua's longjmp never crosses a Swift frame (see docs/ARCHITECTURE.md).
public final class LuaState {
    /// The underlying `lua_State *` of the main thread: an escape hatch.
    /// Never call a C API function that may raise on it from Swift. Index 1
    /// of its stack holds the message handler of the state's top-level
    /// calls: leave it there (set the top back to 1, never to 0).
    public let rawState: OpaquePointer
    let host: UnsafeMutablePointer<lunette_host>
    /// The Lua thread of the innermost call: a coroutine while a Swift
    /// function runs inside it. Nested calls run there.
    @exclusivity(unchecked) var current: OpaquePointer
    /// The stack of the innermost running thread: every stack operation of
    /// the host goes through it, never through `rawState`.
    var stack: LuaStack { LuaStack(current) }
    var boxes: [LuaFunctionBox] = []
    /// Set while `lua_close` runs finalizers: Swift functions other than the
    /// log sink refuse to run then (the state is going away).
    var isClosing = false
    /// Where print and log lines go; shared with the log sink, which must
    /// not reach the state itself while it closes.
    private let logSink = LogSink()
    /// Buffers of the C value walk, reused by every conversion.
    let tape: UnsafeMutablePointer<lunette_tape> = {
        let tape = UnsafeMutablePointer<lunette_tape>.allocate(capacity: 1)
        tape.initialize(to: lunette_tape())
        return tape
    }()

    /// The C walk's buffers for results read in place
    /// (`call(_:_:options:reading:)`), made when first needed: apart from
    /// `tape`, so nothing read during the closure (a global) overwrites
    /// them; and each result's root slot, for up to 64 results (a call
    /// with more gets a buffer of its own).
    var resultTape: UnsafeMutablePointer<lunette_tape>?
    var resultRoots: UnsafeMutablePointer<Int>?
    /// The last string a Swift function read as text (`LuaArguments.text`):
    /// the Lua string's address and the `String` made of it. The same
    /// string again (a store key read on every call) is neither validated
    /// nor copied again; its bytes are compared too, as another string may
    /// have taken the address since. (Read and set by the state's own
    /// calls, one at a time: no run-time exclusivity checks.)
    @exclusivity(unchecked) var lastText: (address: UnsafePointer<UInt8>, text: String)?
    /// The longest text kept as `lastText`, in bytes.
    static let lastTextLimit = 256
    /// Texts `LuaArguments.text` made (validated and copied) rather than found in `lastText`.
    @exclusivity(unchecked) package var textsMade = 0
    /// Counts closures of `call(_:_:options:reading:)` that returned: a
    /// view made in an earlier one no longer matches it.
    @usableFromInline @exclusivity(unchecked) var viewGeneration: UInt64 = 0

    /// Bounds on converting Lua values to `LuaValue` (depth, size).
    /// (Read by every conversion, on the state's one thread: no run-time
    /// exclusivity check.)
    @exclusivity(unchecked) public var conversionLimits: LuaConversionLimits = .default

    /// What scripts in this state get (fixed at creation).
    public let profile: SandboxProfile

    /// Limits, random seed and clock of each top-level call made without
    /// explicit options. Defaults to the profile's limits.
    public var options: LuaCallOptions {
        didSet { limitsAreOptions = false }
    }

    /// Where `print` and `log.*` go: one call per line (no newline), after
    /// the line was counted against the call's output cap. Defaults to
    /// standard output, with "[level] " before lines other than info.
    public var logHandler: (LuaLogLevel, LuaString) -> Void {
        get { logSink.handler }
        set { logSink.handler = newValue }
    }

    /// Nesting of calls into Lua: limits are armed by the outermost one;
    /// -1 while a `call(_:_:options:reading:)` closure runs.
    /// (Touched twice per call, by this state's one owner: no run-time
    /// exclusivity check.)
    @exclusivity(unchecked) var callDepth = 0
    /// Tables given as arguments again and again, pushed from templates
    /// (used only while arguments are pushed, on the calling thread).
    @exclusivity(unchecked) var argumentTemplates = ArgumentTemplates()
    /// Chunks this state loaded from their compiled form
    /// (`loadReusingCompiled`, glue included), for tests: unlike the
    /// process-wide `binaryLoads`, no other state's load moves it.
    package internal(set) var compiledLoads = 0
    /// Arguments pushed as copies of their templates so far (tests).
    package var argumentTemplateCopies: Int { argumentTemplates.copies }
    /// The C limits of the last outermost call, and the options they were
    /// made from (converting a `Duration` to nanoseconds is 128-bit
    /// arithmetic: done again only when the options change).
    @exclusivity(unchecked) private var limits = lunette_limits()
    @exclusivity(unchecked) private var limitsSource: LuaCallOptions?
    /// True while `limits` were made from `options` and it has not been set
    /// since: a call without explicit options then compares nothing.
    @exclusivity(unchecked) private var limitsAreOptions = false

    /// Stacks smaller than this make calls hop to a thread of
    /// `LuaThreadPool.shared` (calls of different callers run in parallel): 8 MiB,
    /// less 64 KiB for guard pages (a main thread with `ulimit -s 8192`
    /// reports 8 MiB less one page).
    public static let minimumStackSize = (8 << 20) - (64 << 10)

    /// Creates a state with the given profile: `.sandbox` (the default) for
    /// scripts, `.trusted` for tools and tests.
    public init(profile: SandboxProfile = .sandbox) throws(LuaError) {
        LuaFunctionBox.installDispatcher
        self.profile = profile
        self.options = LuaCallOptions(limits: profile.defaultLimits)
        host = .allocate(capacity: 1)
        host.initialize(to: lunette_host())
        guard let L = LuaLifecycle.newState(host) else {
            host.deallocate()
            throw .memory(LuaMemoryError(limit: nil, peak: 0))
        }
        rawState = L
        current = L
        let stack = LuaStack(L)
        var status: Int32
        switch profile.kind {
        case .sandbox:
            status = stack.openSandbox()
        case .trusted(let libraries):
            status = stack.openLibraries(libraries.rawValue)
            if status == LuaLifecycle.ok { status = stack.rememberRandomSeed() }
        }
        if status == LuaLifecycle.ok { status = installLog() }
        if status != LuaLifecycle.ok {
            stack.setTop(0)
            throw .memory(LuaMemoryError(limit: nil, peak: Int(host.pointee.peak)))
        }
        stack.restHandler()
    }

    /// A trusted state with only the given standard libraries.
    public convenience init(libraries: LuaLibraries) throws(LuaError) {
        try self.init(profile: .trusted(libraries))
    }

    /// Whether a state is still open, for objects that must not keep it
    /// alive and must not hold a weak reference to it (`LuaFunctionRef`):
    /// weak references give an object a side table, and every retain and
    /// release of it then takes the runtime's slow path.
    public final class Life {
        fileprivate unowned(unsafe) var open: LuaState?
        /// The state, while it has not begun to go away.
        public var state: LuaState? { open }
        fileprivate init(_ state: LuaState) { open = state }
    }

    /// This state's `Life`; cleared as the state begins to go away.
    public var life: Life {
        if let made = madeLife { return made }
        let made = Life(self)
        madeLife = made
        return made
    }
    private var madeLife: Life?

    deinit {
        madeLife?.open = nil
        cancelHandle.invalidate()
        lunette_tape_free(tape)
        tape.deallocate()
        if let resultTape {
            lunette_tape_free(resultTape)
            resultTape.deallocate()
        }
        resultRoots?.deallocate()
        // Finalizers of a trusted state run now and may print: the log sink
        // still works, other Swift functions refuse (see LuaFunctionBox).
        isClosing = true
        current = rawState
        LuaLifecycle.close(rawState)
        host.deinitialize(count: 1)
        host.deallocate()
    }

    /// Ends this state's running call from another thread, as its deadline
    /// would (see `LuaCancelHandle`).
    public private(set) lazy var cancelHandle = LuaCancelHandle(host)

    // MARK: Memory figures

    /// Bytes the state holds now.
    public var memoryUsed: Int { Int(host.pointee.used) }
    /// The most bytes the state held at once since it was created or `resetPeak()`.
    public var memoryPeak: Int { Int(host.pointee.peak) }
    /// Starts a new peak measurement from the current use.
    public func resetPeak() { host.pointee.peak = host.pointee.used }

    // MARK: Loading

    /// Compiles `source` (text only; binary chunks are refused). `name`
    /// appears in error messages as given, e.g. "tasks/main.lua:3: …"; Lua
    /// shortens names over 59 bytes to their last part, "...s/main.lua:3: …".
    public func load(_ source: String, name: String) throws(LuaError) -> LuaFunctionRef {
        var source = source
        let result = source.withUTF8 { buffer in
            Result { () throws(LuaError) -> LuaFunctionRef in try load(buffer, name: name, chargedToScript: false) }
        }
        return try result.get()
    }

    /// Compiles a chunk given as bytes (text only).
    public func load(bytes: [UInt8], name: String) throws(LuaError) -> LuaFunctionRef {
        try load(bytes: bytes, name: name, chargedToScript: false)
    }

    func load(bytes: [UInt8], name: String, chargedToScript: Bool) throws(LuaError) -> LuaFunctionRef {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(LuaError) -> LuaFunctionRef in try load(buffer, name: name, chargedToScript: chargedToScript) }
        }
        return try result.get()
    }

    private func load(_ buffer: UnsafeBufferPointer<UInt8>, name: String, chargedToScript: Bool) throws(LuaError) -> LuaFunctionRef {
        let stack = stack
        try stack.reserveOrThrow(2)
        // "@name": Lua prints the name as given, and when it is longer than
        // LUA_IDSIZE keeps its end ("...dir/file.lua"), where file and line are.
        let status = stack.load(buffer, chunkName: "@" + name, chargedToScript: chargedToScript)
        if status != LuaLifecycle.ok {
            defer { stack.pop() }
            if status == LuaLifecycle.memoryStatus { throw .memory(memoryError()) }
            let message = errorMessage(at: -1, stack: stack)
            if let (_, line, rest) = Self.splitLocation(message) {
                throw .syntax(LuaSyntaxError(chunk: name, line: line, message: rest))
            }
            throw .syntax(LuaSyntaxError(chunk: name, line: nil, message: message))
        }
        return LuaFunctionRef(state: self, popping: stack)
    }

    // MARK: Calling

    /// Calls `function` with `arguments` in protected mode and returns all
    /// its results as plain data.
    @discardableResult
    public func call(_ function: LuaFunctionRef, _ arguments: [LuaValue] = []) throws(LuaError) -> [LuaValue] {
        precondition(function.owner == ObjectIdentifier(self), "LuaFunctionRef belongs to another LuaState")
        if arguments.isEmpty, callsInPlace {
            armOwnLimits()
            return try callReference(function.reference)
        }
        return try call(function, arguments, explicitOptions: nil)
    }

    /// Calls `function` with the given limits, random seed and clock (when
    /// it is the outermost call; nested calls share the outer call's).
    @discardableResult
    public func call(_ function: LuaFunctionRef, _ arguments: [LuaValue] = [], options: LuaCallOptions) throws(LuaError) -> [LuaValue] {
        precondition(function.owner == ObjectIdentifier(self), "LuaFunctionRef belongs to another LuaState")
        if arguments.isEmpty, callsInPlace {
            armLimits(options)
            return try callReference(function.reference)
        }
        return try call(function, arguments, explicitOptions: options)
    }

    /// Whether the next call is a top-level one on a thread whose stack is
    /// large enough: a call of no arguments then goes through `callReference`.
    var callsInPlace: Bool {
        callDepth == 0 && lunette_thread_stack_size() >= LuaState.minimumStackSize
    }

    /// `call` with `options`, or with the state's own when nil.
    private func call(_ function: LuaFunctionRef, _ arguments: [LuaValue], explicitOptions options: LuaCallOptions?) throws(LuaError) -> [LuaValue] {
        // The closures capture the reference's number, not the object: that
        // spares a retain and a release (atomic, ~6 ns each here) per call.
        let reference = function.reference
        return try withLargeStack { () throws(LuaError) in
            try self.protectedCall(arguments, options: options) { stack in
                stack.push(reference: reference)
            }
        }
    }

    /// A top-level call of the function at `reference` with no arguments,
    /// its limits armed in `limits`: pushing, arming, calling, disarming
    /// and, when it returned nothing, restoring the stack are one C call
    /// (`lunette_call_reference`).
    @inline(__always)
    private func callReference(_ reference: Int32) throws(LuaError) -> [LuaValue] {
        try callReference(reference, nothing: { [] }, finish: Self.readResultsOutOfLine)
    }

    /// The same, with `nothing()` when the call returned nothing, else
    /// what `finish` makes of its results (as `finishCall`).
    @inline(__always)
    func callReference<Result>(_ reference: Int32, nothing: () -> Result,
                               finish: (inout ValueReader, Int32, Int32) throws(LuaValueError) -> Result) throws(LuaError) -> Result {
        callDepth = 1
        let status = stack.callReference(&limits, reference: reference)
        callDepth = 0
        if status == LUNETTE_CALL_RETURNED_NOTHING { return nothing() }
        return try finishReferenceCall(status: status, finish: finish)
    }

    /// `callReference`'s results or error, out of line: the call that
    /// returned nothing keeps a small frame.
    @inline(never)
    func finishReferenceCall<Result>(status: Int32,
                                     finish: (inout ValueReader, Int32, Int32) throws(LuaValueError) -> Result) throws(LuaError) -> Result {
        if status == LUNETTE_CALL_STACK_FULL { throw LuaStack.overflowError(slots: 3) }
        return try finishCall(status: status, base: host.pointee.call_base, first: host.pointee.call_first, stack: stack, outermost: true, finish: finish)
    }

    /// The results as `LuaValue`s, out of line: a call that returned
    /// nothing never gets here, and the hot path stays small.
    @inline(never)
    private static func readResultsOutOfLine(_ reader: inout ValueReader, _ first: Int32, _ last: Int32) throws(LuaValueError) -> [LuaValue] {
        first > last ? [] : try reader.readResults(first, last)
    }

    /// Loads and runs a chunk; returns what it returned.
    @discardableResult
    public func run(_ source: String, name: String = "chunk") throws(LuaError) -> [LuaValue] {
        try withLargeStack { () throws(LuaError) in
            let chunk = try self.load(source, name: name)
            return try self.call(chunk)
        }
    }

    /// Pushes the function (via `pushFunction`), then the arguments; calls
    /// with the traceback handler; converts the results.
    func protectedCall(_ arguments: [LuaValue], options: LuaCallOptions? = nil,
                       pushFunction: (LuaStack) -> Void) throws(LuaError) -> [LuaValue] {
        try protectedCall(arguments, options: options, pushFunction: pushFunction) { reader, first, last throws(LuaValueError) in
            first > last ? [] : try reader.readResults(first, last)
        }
    }

    /// The same, with the results at `first...last` (none when `first >
    /// last`) handed to `finish`, which runs while they are on the stack.
    @inline(__always)
    func protectedCall<Result>(_ arguments: [LuaValue], options: LuaCallOptions? = nil, pushFunction: (LuaStack) -> Void,
                               finish: (inout ValueReader, Int32, Int32) throws(LuaValueError) -> Result) throws(LuaError) -> Result {
        refuseInsideReading()
        let stack = stack
        let base = stack.top
        try stack.reserveOrThrow(arguments.count + 3)
        // The message handler first, so nothing moves on the stack for the call.
        stack.pushMessageHandler()
        pushFunction(stack)
        let outermost = callDepth == 0
        if !arguments.isEmpty {
            let pusher = ValuePusher(stack: stack, maxDepth: conversionLimits.maxDepth)
            // Over the buffer: an iterator's element is a copy, and a
            // table's copy retains and releases both its parts.
            try arguments.withUnsafeBufferPointer { (arguments) throws(LuaError) in
                for i in arguments.indices {
                    do throws(PathedValueError) {
                        // Templates only for an outermost call: a copy runs the
                        // template's constructor, Lua code, unprotected, which must
                        // not meet a hook or a deadline an outer call armed.
                        if outermost, case .table(let table) = arguments[i], table.count >= ArgumentTemplates.minimumEntries {
                            try argumentTemplates.push(table, on: stack, maxDepth: pusher.maxDepth) { () throws(PathedValueError) in
                                try pusher.push(arguments[i])
                            }
                        } else {
                            try pusher.push(arguments[i])
                        }
                    } catch {
                        stack.setTop(base)
                        throw Self.argumentError(error, i)
                    }
                }
            }
        }
        let status: Int32
        if outermost {
            arm(options)
            callDepth = 1
            status = stack.callOutermost(&limits, handler: base + 1, arguments: Int32(arguments.count), results: LuaLifecycle.multipleResults)
            callDepth = 0
        } else {
            callDepth += 1
            status = stack.callHandled(handler: base + 1, arguments: Int32(arguments.count), results: LuaLifecycle.multipleResults)
            callDepth -= 1
        }
        return try finishCall(status: status, base: base, first: base + 2, stack: stack, outermost: outermost, finish: finish)
    }

    /// Argument `i`'s conversion error, named by its position (out of
    /// line: the call path inlines `protectedCall`).
    @inline(never)
    static func argumentError(_ error: PathedValueError, _ i: Int) -> LuaError {
        .value(error.rooted(at: "argument #\(i + 1)"))
    }

    /// Traps inside a `call(_:_:options:reading:)` closure of this state:
    /// what runs Lua code (a call, glue, a snapshot's roots) or changes
    /// tables wholesale (a snapshot's restore) could change the results
    /// under the closure's views.
    @inline(__always)
    func refuseInsideReading() {
        precondition(callDepth >= 0, "a LuaState was used from inside a call(_:_:options:reading:) closure of its own")
    }

    /// `armLimits(options)`, or `armOwnLimits()` when there are none.
    @inline(__always)
    func arm(_ options: LuaCallOptions?) {
        if let options { armLimits(options) } else { armOwnLimits() }
    }

    /// Makes `limits` those of `options` for a top-level call (converted
    /// again only when they changed).
    @inline(__always)
    func armLimits(_ options: LuaCallOptions) {
        if options != limitsSource {
            limitsSource = options
            limits = options.cLimits
        }
        limitsAreOptions = false
    }

    /// Makes `limits` those of the state's own `options` for a top-level
    /// call (nothing to do while they are).
    @inline(__always)
    func armOwnLimits() {
        if !limitsAreOptions { makeLimitsOptions() }
    }

    /// `armOwnLimits`' work, out of line: the call's own frame stays small.
    @inline(never)
    private func makeLimitsOptions() {
        armLimits(options)
        limitsAreOptions = true
    }

    /// After a protected call whose results (or error object) begin at
    /// `first`: the error, or what `finish` makes of the results (`first`
    /// to the top; none when the top is below `first`); the stack goes back
    /// to `base` either way. An error reports the limits that were armed
    /// (`limitsSource`: the outermost call's).
    @inline(__always)
    func finishCall<Result>(status: Int32, base: Int32, first: Int32, stack: LuaStack, outermost: Bool,
                            finish: (inout ValueReader, Int32, Int32) throws(LuaValueError) -> Result) throws(LuaError) -> Result {
        defer { stack.setTop(base) }
        if status != LuaLifecycle.ok {
            throw callError(status: status, stack: stack, limits: limitsSource?.limits,
                            elapsedNanoseconds: outermost ? stack.callElapsed() : 0)
        }
        var reader = reader(stack)
        do { return try finish(&reader, first, stack.top) } catch { throw .value(error) }
    }

    // MARK: Globals

    /// The global `name`, read raw (no metamethod runs).
    public func global(_ name: String) throws(LuaError) -> LuaValue {
        let stack = stack
        try stack.reserveOrThrow(3)
        stack.pushGlobals()
        stack.push(name)
        stack.rawGet(-2)
        defer { stack.pop(2) }
        var reader = reader(stack)
        do { return try reader.read(at: -1, root: name) } catch { throw .value(error) }
    }

    /// Sets the global `name`, raw.
    public func setGlobal(_ name: String, _ value: LuaValue) throws(LuaError) {
        let stack = stack
        try stack.reserveOrThrow(4)
        stack.pushGlobals()
        stack.push(name)
        do { try ValuePusher(stack: stack, maxDepth: conversionLimits.maxDepth).push(value) } catch {
            stack.pop(2)
            throw .value(error.rooted(at: name))
        }
        stack.rawSet(-3)
        stack.pop()
    }

    /// A reference to the global function `name`, or nil when it is not a function.
    public func globalFunction(_ name: String) throws(LuaError) -> LuaFunctionRef? {
        let stack = stack
        try stack.reserveOrThrow(3)
        stack.pushGlobals()
        stack.push(name)
        stack.rawGet(-2)
        stack.remove(at: -2)
        guard stack.type(at: -1) == .function else {
            stack.pop()
            return nil
        }
        return LuaFunctionRef(state: self, popping: stack)
    }

    // MARK: Internals

    /// A converter for values on `stack`, with this state's limits.
    func reader(_ stack: LuaStack) -> ValueReader {
        ValueReader(stack, limits: conversionLimits, tape: tape)
    }

    /// Reads the calling thread's stack size now, for its later calls (on
    /// Linux, a thread other than the main one is measured from
    /// /proc/self/maps): a process that will lose the right to open files
    /// (a locked-down worker) calls it first, or each of its calls would go
    /// through a thread of the pool.
    public static func measureStack() {
        _ = lunette_thread_stack_size()
    }

    /// Runs `body` with no deadline watchdog thread allowed to start: its
    /// calls' deadlines are checked by the count hook alone, and the
    /// process keeps the threads it had (a fork server rehearsing a
    /// worker's first calls before it forks; a fork copies only the
    /// forking thread). A thread that already made its watchdog slot keeps
    /// using it. Not for concurrent use with calls on other threads.
    public static func withoutWatchdogThread<T>(_ body: () throws -> T) rethrows -> T {
        lunette_watch_hold_thread(1)
        defer { lunette_watch_hold_thread(0) }
        return try body()
    }

    /// Runs `body` on a thread with a large enough stack.
    func withLargeStack<T>(_ body: () throws(LuaError) -> T) throws(LuaError) -> T {
        if lunette_thread_stack_size() >= LuaState.minimumStackSize {
            return try body()
        }
        return try LuaThreadPool.shared.sync(body)
    }

    /// The memory error of the last call: the cap when the cap refused an
    /// allocation, none when the system did.
    func memoryError(cap: Int? = nil) -> LuaMemoryError {
        let h = host.pointee
        let capped = h.hit_limit != 0 || h.killed == LUNETTE_KILL_MEMORY
        host.pointee.hit_limit = 0
        return LuaMemoryError(limit: capped ? cap : nil, peak: Int(h.peak))
    }

    /// Where the script was when the host ended its call (nil: nowhere
    /// known). Only after a timeout or an instruction budget's kill: the
    /// place is written with those kills, and not cleared between calls.
    func killPlace() -> (chunk: String, line: Int)? {
        let line = Int(host.pointee.kill_line)
        guard line > 0 else { return nil }
        let chunk = withUnsafeBytes(of: host.pointee.kill_source) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return chunk.isEmpty ? nil : (chunk, line)
    }

    /// Turns a failed protected call (error object on top) into a LuaError:
    /// a kill by its reason, otherwise by the status.
    func callError(status: Int32, stack: LuaStack, limits: LuaLimits? = nil, elapsedNanoseconds: UInt64 = 0) -> LuaError {
        stack.pushTraceback()
        var traceback: String?
        if stack.type(at: -1) == .string {
            traceback = LuaTraceback.scriptFrames(stack.string(at: -1).displayText)
        }
        stack.pop()
        let elapsed = Duration.nanoseconds(Int64(clamping: elapsedNanoseconds))
        switch host.pointee.killed {
        case LUNETTE_KILL_TIMEOUT:
            let place = killPlace()
            return .timeout(LuaTimeoutError(limit: limits?.timeout ?? .zero, elapsed: elapsed, cancelled: lunette_call_was_cancelled(host) != 0,
                                            chunk: place?.chunk, line: place?.line))
        case LUNETTE_KILL_INSTRUCTIONS:
            let place = killPlace()
            return .timeout(LuaTimeoutError(limit: limits?.timeout, elapsed: elapsed, instructionLimit: limits?.instructions,
                                            chunk: place?.chunk, line: place?.line))
        case LUNETTE_KILL_MEMORY:
            return .memory(memoryError(cap: limits?.memory))
        case LUNETTE_KILL_OUTPUT:
            let cap = limits?.output ?? 0
            return .runtime(LuaRuntimeError(message: "output limit exceeded: the call printed or logged more than \(cap) bytes",
                                            traceback: traceback, outputLimit: cap))
        default:
            break
        }
        if status == LuaLifecycle.memoryStatus {
            return .memory(memoryError(cap: limits?.memory))
        }
        var error = runtimeError(at: -1, stack: stack)
        error.traceback = traceback
        return .runtime(error)
    }

    /// Describes the error object at `index` without running any script code.
    func runtimeError(at index: Int32, stack: LuaStack) -> LuaRuntimeError {
        let type = stack.type(at: index)
        var value: LuaValue?
        let message: String
        switch type {
        case .string:
            message = errorMessage(at: index, stack: stack)
        case .number:
            var reader = reader(stack)
            value = try? reader.read(at: index, root: "")
            switch value {
            case .integer(let i): message = String(i)
            case .number(let d): message = LuaLiteral.number(d)
            default: message = "(error object is a number value)"
            }
        default:
            var reader = reader(stack)
            value = try? reader.read(at: index, root: "")
            message = "(error object is \(type.withArticle) value)"
        }
        var error = LuaRuntimeError(message: message, value: value)
        if let (chunk, line, _) = Self.splitLocation(message) {
            error.chunk = chunk
            error.line = line
        }
        return error
    }

    /// The string at `index` as a message: invalid UTF-8 replaced, cut to
    /// `LuaRuntimeError.maxMessageBytes`.
    func errorMessage(at index: Int32, stack: LuaStack) -> String {
        guard stack.type(at: index) == .string else { return "" }
        let bytes = stack.stringBytes(at: index)
        let limit = LuaRuntimeError.maxMessageBytes
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes.prefix(limit)), as: UTF8.self)
        return bytes.count > limit ? text + "… (message cut: \(bytes.count) bytes in all)" : text
    }

    /// Splits "chunk:12: message" into its parts.
    static func splitLocation(_ message: String) -> (chunk: String, line: Int, rest: String)? {
        let bytes = Array(message.utf8.prefix(4096))
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: ":") {
                var j = i + 1
                var line = 0
                while j < bytes.count, bytes[j] >= 0x30, bytes[j] <= 0x39, j - i < 10 {
                    line = line * 10 + Int(bytes[j] - 0x30)
                    j += 1
                }
                if j > i + 1, j < bytes.count, bytes[j] == UInt8(ascii: ":") {
                    let chunk = String(decoding: bytes[0..<i], as: UTF8.self)
                    var restStart = j + 1
                    if restStart < bytes.count, bytes[restStart] == UInt8(ascii: " ") { restStart += 1 }
                    let rest = String(decoding: Array(message.utf8.dropFirst(restStart)), as: UTF8.self)
                    return (chunk, line, rest)
                }
            }
            i += 1
        }
        return nil
    }

    // MARK: print and log

    /// Installs print, warn and log.*, which count output in C and hand each
    /// line to the log sink.
    private func installLog() -> Int32 {
        let sink = logSink
        let box = LuaFunctionBox(state: self, name: "log", viaWrapper: false, runsWhileClosing: true, body: .results { args in
            let level = LuaLogLevel(rawValue: Int(try args.integer(1))) ?? .info
            sink.handler(level, try args.string(2))
            return []
        })
        boxes.append(box)
        let stack = LuaStack(rawState)
        stack.pushSwiftFunction(Unmanaged.passUnretained(box).toOpaque())
        var status = stack.installLog()
        if status == LuaLifecycle.ok, profile.isSandbox { status = stack.protectGlobal("log") }
        return status
    }

    /// The default log handler: the line on standard output, with
    /// "[level] " before lines other than info.
    public static func writeToStandardOutput(_ level: LuaLogLevel, _ line: LuaString) {
        var bytes = Array(level.linePrefix.utf8)
        bytes.append(contentsOf: line.bytes)
        bytes.withUnsafeBufferPointer { lunette_write_line($0.baseAddress, $0.count) }
    }
}

@available(*, unavailable)
extension LuaState: Sendable {}

/// Where a state's print and log lines go. A separate object, so the sink
/// works while the state itself is being destroyed (finalizers at close).
final class LogSink {
    var handler: (LuaLogLevel, LuaString) -> Void = LuaState.writeToStandardOutput
}
