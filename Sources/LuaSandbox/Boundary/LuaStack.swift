import CLua
import CLuaShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The stack of one Lua thread: the only Swift code that calls the Lua C API.
///
/// Lua reports errors with `longjmp`, which must never cross a Swift frame.
/// Every operation here is therefore one that cannot raise, and its comment
/// names the C function it wraps and why it cannot: either it never raises
/// (raw access, type tests, conversions of values already of the right type),
/// or it can only fail by allocating, and Swift code always runs in host mode
/// (inside the C trampoline, or with no call armed), where the allocator
/// never refuses by policy and a real out-of-memory aborts instead of raising.
/// Anything else (metamethods, script code, host helpers that can fail) runs
/// through a protected call: `call` for script code, `hostCall` for the
/// host's own work. `Tests/LuaSandboxTests/BoundaryRuleTests.swift` fails
/// when `lua_`/`luaL_` calls appear in Swift outside this folder.
///
/// A `LuaStack` is bound to one thread: `LuaState.stack` gives the stack of
/// the innermost running thread (a coroutine while a Swift function runs
/// inside one), so an operation never mixes the main thread's stack with a
/// coroutine's.
struct LuaStack {
    let L: OpaquePointer

    init(_ L: OpaquePointer) { self.L = L }

    /// The allocator's bookkeeping of the state this thread belongs to
    /// (`lunette_host_of`: reads the thread's extra space; never raises).
    var host: UnsafeMutablePointer<lunette_host> { lunette_host_of(L) }

    /// Swift code runs in host mode or with no call armed: the invariant
    /// that makes allocating operations here unable to raise.
    @inline(__always)
    private func assertHostMode() {
        assert(host.pointee.in_host > 0 || host.pointee.limit == 0, "Lua C API used from Swift while the script's memory cap is armed")
    }

    // MARK: Size

    /// The index of the top slot (`lua_gettop`; reads a field, never raises).
    var top: Int32 { lua_gettop(L) }

    /// Sets the top (`lua_settop`). Shrinking runs no `__close` handler because
    /// Swift never marks a slot to-be-closed; growing pushes nils into slots
    /// reserved with `reserve`. Never raises.
    func setTop(_ index: Int32) { lua_settop(L, index) }

    /// Pops `n` values (`lua_settop`, as `lua_pop` does).
    func pop(_ n: Int32 = 1) { lunette_pop(L, n) }

    /// `index` as an absolute index (`lua_absindex`; arithmetic, never raises).
    func absolute(_ index: Int32) -> Int32 { lua_absindex(L, index) }

    /// Makes room for `n` more slots (`lua_checkstack`: returns 0 instead of
    /// raising when the stack cannot grow). False when there is no room.
    func reserve(_ n: Int) -> Bool {
        n < 1_000_000 && lua_checkstack(L, Int32(n)) != 0
    }

    /// `reserve` as a thrown `LuaError`.
    func reserveOrThrow(_ n: Int) throws(LuaError) {
        guard reserve(n) else { throw Self.overflowError(slots: n) }
    }

    /// The error of a stack that cannot grow by `slots`.
    static func overflowError(slots: Int) -> LuaError {
        .runtime(LuaRuntimeError(message: "Lua stack overflow (cannot reserve \(slots) slots)"))
    }

    /// Moves the top value to `index`, shifting the values above it up
    /// (`lua_rotate`, as `lua_insert` does; moves slots, never raises).
    func insert(at index: Int32) { lua_rotate(L, index, 1) }

    /// Removes the value at `index`, shifting the values above it down
    /// (`lua_rotate` then `lua_settop`, as `lua_remove` does; never raises).
    func remove(at index: Int32) {
        lua_rotate(L, index, -1)
        lunette_pop(L, 1)
    }

    // MARK: Reading values

    /// The type of the value at `index` (`lua_type`; never raises).
    func type(at index: Int32) -> LuaType { LuaType(rawValue: lua_type(L, index)) ?? .none }

    /// The boolean at `index`, Lua's truth otherwise (`lua_toboolean`; never raises).
    func boolean(at index: Int32) -> Bool { lua_toboolean(L, index) != 0 }

    /// True when the number at `index` is an integer (`lua_isinteger`; never raises).
    func isInteger(at index: Int32) -> Bool { lua_isinteger(L, index) != 0 }

    /// The integer at `index`, which must be an integer number
    /// (`lua_tointegerx`; no conversion, never raises).
    func integer(at index: Int32) -> Int64 { lua_tointegerx(L, index, nil) }

    /// The number at `index`, which must be a number (`lua_tonumberx`; never raises).
    func number(at index: Int32) -> Double { lua_tonumberx(L, index, nil) }

    /// The bytes of the string at `index`, which must be of type string
    /// (`lua_tolstring` on a string converts nothing and allocates nothing;
    /// on a number it would convert the slot in place, so callers check the
    /// type first). The pointer lives as long as the string is on the stack.
    func stringBytes(at index: Int32) -> UnsafeBufferPointer<UInt8> {
        assert(lua_type(L, index) == LUA_TSTRING, "stringBytes on a non-string")
        var length = 0
        guard let pointer = lua_tolstring(L, index, &length) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: length)
    }

    /// The string at `index` (which must be of type string), copied.
    func string(at index: Int32) -> LuaString { LuaString(copying: stringBytes(at: index)) }

    /// The string at `index` (which must be of type string) as Swift text,
    /// copied once; nil when it is not valid UTF-8.
    func text(at index: Int32) -> String? { LuaString.text(of: stringBytes(at: index)) }

    /// The identity of the table, function, thread or userdata at `index`
    /// (`lua_topointer`; never raises).
    func identity(at index: Int32) -> UnsafeRawPointer? { lua_topointer(L, index) }

    /// True when the function at `index` is a C function (`lua_iscfunction`; never raises).
    func isCFunction(at index: Int32) -> Bool { lua_iscfunction(L, index) != 0 }

    // MARK: Pushing values

    /// Pushes nil (`lua_pushnil`; no allocation).
    func pushNil() { lua_pushnil(L) }

    /// Pushes a boolean (`lua_pushboolean`; no allocation).
    func push(_ value: Bool) { lua_pushboolean(L, value ? 1 : 0) }

    /// Pushes an integer (`lua_pushinteger`; no allocation).
    func push(_ value: Int64) { lua_pushinteger(L, value) }

    /// Pushes a float (`lua_pushnumber`; no allocation).
    func push(_ value: Double) { lua_pushnumber(L, value) }

    /// Pushes bytes as a string (`lua_pushlstring`: allocates, in host mode only).
    func push(bytes: UnsafeBufferPointer<UInt8>) {
        assertHostMode()
        if let base = bytes.baseAddress {
            _ = UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                lua_pushlstring(L, $0, bytes.count)
            }
        } else {
            _ = lua_pushstring(L, "")
        }
    }

    /// Pushes a Lua string (see `push(bytes:)`).
    func push(_ value: LuaString) { value.withBytes { push(bytes: $0) } }

    /// Pushes text as a string (`lua_pushlstring`: allocates, in host mode only).
    func push(_ text: String) {
        var text = text
        text.withUTF8 { push(bytes: $0) }
    }

    /// Pushes a copy of the value at `index` (`lua_pushvalue`; no allocation).
    func pushCopy(of index: Int32) { lua_pushvalue(L, index) }

    /// Pushes a new table (`lua_createtable`: allocates, in host mode only).
    func pushTable(arrayCapacity: Int = 0, fieldCapacity: Int = 0) {
        assertHostMode()
        lua_createtable(L, Int32(clamping: arrayCapacity), Int32(clamping: fieldCapacity))
    }

    /// Pushes the global table (`lua_rawgeti` on the registry; raw, never raises).
    func pushGlobals() { lunette_pushglobaltable(L) }

    /// Pushes a C closure that runs the Swift function behind `box` through
    /// the trampoline (`lunette_push_swift_function`: allocates, host mode only).
    func pushSwiftFunction(_ box: UnsafeMutableRawPointer, fastPath: LuaFastPath? = nil, countsEffect: Bool = false) {
        assertHostMode()
        if let fastPath {
            lunette_push_swift_function_with(L, box, fastPath.function, fastPath.data, countsEffect ? 1 : 0)
        } else {
            lunette_push_swift_function(L, box)
        }
    }

    // MARK: Tables, raw

    /// Pushes `t[k]` with the key on top replaced (`lua_rawget`: raw, no
    /// metamethod, never raises).
    func rawGet(_ table: Int32) { lua_rawget(L, table) }

    /// Pushes `t[i]` (`lua_rawgeti`: raw, never raises). Returns its type.
    @discardableResult
    func rawGet(_ table: Int32, index: Int64) -> LuaType {
        LuaType(rawValue: lua_rawgeti(L, table, index)) ?? .none
    }

    /// `t[k] = v` with the key and value on top, popped (`lua_rawset`: raw;
    /// keys here are strings or integers, never nil or NaN, and growing the
    /// table happens in host mode, so it never raises).
    func rawSet(_ table: Int32) {
        assertHostMode()
        lua_rawset(L, table)
    }

    /// `t[i] = v` with the value on top, popped (`lua_rawseti`; as `rawSet`).
    func rawSet(_ table: Int32, index: Int64) {
        assertHostMode()
        lua_rawseti(L, table, index)
    }

    /// Pushes the key and value after the key on top, popping it
    /// (`lua_next`: raw; raises only for a key changed during the walk,
    /// which the walks here never do). False at the end, nothing pushed.
    func next(_ table: Int32) -> Bool { lua_next(L, table) != 0 }

    // MARK: References

    /// Pops the value on top into the registry and returns its reference
    /// (`luaL_ref`: raw access to the registry; allocates in host mode only).
    func reference() -> Int32 {
        assertHostMode()
        return luaL_ref(L, lunette_registry_index())
    }

    /// Releases a registry reference (`luaL_unref`: raw access; never raises).
    func release(_ reference: Int32) { luaL_unref(L, lunette_registry_index(), reference) }

    /// Makes `rawset` refuse the table at `index` in a sandboxed state, as
    /// it refuses the library views (`lunette_seal_table`: raw access;
    /// allocates, in host mode only).
    func seal(tableAt index: Int32, name: String) {
        assertHostMode()
        lunette_seal_table(L, index, name)
    }

    // MARK: Table templates (ArgumentTemplates)

    /// Keeps a template of the table at `index` (`levels` of tables at most)
    /// in the registry and returns its reference, or LUA_NOREF when the
    /// table does not qualify (`lunette_template_make`: raw access;
    /// allocates, in host mode only).
    func makeTemplate(ofTableAt index: Int32, levels: Int32) -> Int32 {
        assertHostMode()
        return lunette_template_make(L, index, levels)
    }

    /// Pushes a new table made by the template at registry `reference`, its
    /// constructor (`lunette_template_push`: allocates, in host mode only,
    /// between calls); false, with nothing pushed, when the stack cannot grow.
    func pushTemplateCopy(_ reference: Int32) -> Bool {
        assertHostMode()
        return lunette_template_push(L, reference) != 0
    }

    /// Pushes the value of a registry reference (`lua_rawgeti`; raw, never raises).
    func push(reference: Int32) { lua_rawgeti(L, lunette_registry_index(), Int64(reference)) }

    // MARK: Functions

    /// The name of upvalue `n` of the function at `index`, pushing its value
    /// (`lua_getupvalue`; never raises). Nil, nothing pushed, when there is none.
    func pushUpvalue(of function: Int32, _ n: Int32) -> String? {
        lua_getupvalue(L, function, n).map { String(cString: $0) }
    }

    /// Pops the value on top into upvalue `n` of the function at `index`
    /// (`lua_setupvalue`; never raises).
    func setUpvalue(of function: Int32, _ n: Int32) { _ = lua_setupvalue(L, function, n) }

    /// The chunk and line of the function `level` calls up this thread's
    /// stack (`lua_getstack` and `lua_getinfo` with "Sl": they read the call
    /// info, never raise). Nil when there is no such Lua function.
    func location(level: Int) -> (chunk: String, line: Int)? {
        var ar = lua_Debug()
        guard lua_getstack(L, Int32(level), &ar) != 0, lua_getinfo(L, "Sl", &ar) != 0,
              ar.currentline > 0, let source = ar.source else { return nil }
        var chunk = String(cString: source)
        if chunk.hasPrefix("@") || chunk.hasPrefix("=") { chunk.removeFirst() }
        return (chunk, Int(ar.currentline))
    }

    /// "chunk:line" where the Lua function at `index` was defined, the
    /// chunk's name for a main chunk, nil for a C function (`lua_getinfo`
    /// with ">S" on a copy; reads the prototype, never raises).
    func functionDefinition(at index: Int32) -> String? {
        guard reserve(1) else { return nil }
        var ar = lua_Debug()
        lua_pushvalue(L, index)
        guard lua_getinfo(L, ">S", &ar) != 0, let what = ar.what, String(cString: what) != "C" else { return nil }
        let source = withUnsafeBytes(of: &ar.short_src) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return ar.linedefined > 0 ? "\(source):\(ar.linedefined)" : source
    }

    /// The string `__name` of the metatable of the value at `index`, read
    /// raw (`lua_getmetatable`, `lua_rawget`: no metamethod, never raise).
    func metatableName(at index: Int32) -> String? {
        guard reserve(2), lua_getmetatable(L, index) != 0 else { return nil }
        defer { pop(2) }
        push("__name")
        rawGet(-2)
        guard type(at: -1) == .string else { return nil }
        return string(at: -1).displayText
    }

    // MARK: Loading and calling

    /// Compiles a text chunk and pushes it, or the error message
    /// (`lunette_load`: `luaL_loadbufferx` with mode "t" catches its own
    /// errors; runs in host mode). Returns the status.
    func load(_ buffer: UnsafeBufferPointer<UInt8>, chunkName: String, chargedToScript: Bool = false) -> Int32 {
        chargedToScript ? lunette_load_charged(L, UnsafeRawPointer(buffer.baseAddress), buffer.count, chunkName, 0)
            : lunette_load(L, UnsafeRawPointer(buffer.baseAddress), buffer.count, chunkName)
    }

    /// Loads a binary chunk that `dumpFunction` made in this process from
    /// text Lua compiled (mode "b"; `LuaCompiledChunks`), never bytes from
    /// anywhere else.
    func loadHostBinary(_ buffer: UnsafeRawBufferPointer, chunkName: String, chargedToScript: Bool = false) -> Int32 {
        chargedToScript ? lunette_load_charged(L, buffer.baseAddress, buffer.count, chunkName, 1)
            : lunette_load_host_binary(L, buffer.baseAddress, buffer.count, chunkName)
    }

    /// The function on top as a binary chunk with its debug information;
    /// nil when it cannot be written (`lua_dump` allocates no Lua memory:
    /// it only hands the prototype's bytes to the writer, so it cannot raise).
    func dumpFunction() -> [UInt8]? {
        var length = 0
        guard let bytes = lunette_dump_function(L, &length) else { return nil }
        defer { free(bytes) }
        return Array(UnsafeRawBufferPointer(start: bytes, count: length))
    }

    /// Calls the function below `arguments` values in protected mode, as
    /// script code (`lunette_pcall`: the cap is armed, a kill stays a kill).
    /// Returns the status; the error object is on top when it is not OK.
    func call(arguments: Int32, results: Int32) -> Int32 { lunette_pcall(L, arguments, results) }

    /// Pushes the message handler of `callHandled` (`lunette_push_message_handler`: a C function, no allocation).
    func pushMessageHandler() { lunette_push_message_handler(L) }

    /// As `call`, with the message handler pushed by the caller just below
    /// the function, at absolute index `handler` (`lunette_pcall_at`); it
    /// stays there.
    func callHandled(handler: Int32, arguments: Int32, results: Int32) -> Int32 {
        lunette_pcall_at(L, arguments, results, handler)
    }

    /// As `call`, for the host's own work (`lunette_host_pcall`: host mode,
    /// nothing charged to the script).
    func hostCall(arguments: Int32, results: Int32) -> Int32 { lunette_host_pcall(L, arguments, results) }

    /// Pushes the traceback recorded by the last failed call (a string) or
    /// nil (`lunette_take_traceback`: raw registry access, never raises).
    func pushTraceback() { lunette_take_traceback(L) }

    /// Pops a traceback and keeps it as the traceback of the error object on
    /// top, for re-raising a nested error (`lunette_keep_traceback`: raw).
    func keepTraceback() { lunette_keep_traceback(L) }

    /// As `callHandled` with the message handler at absolute index
    /// `handler`, for a top-level call: arms `limits` before and disarms
    /// them after (`lunette_call_outermost`; arming runs no script code,
    /// though seeding a trusted state's generator runs Lua's own
    /// `randomseed` under its own protected call).
    func callOutermost(_ limits: inout lunette_limits, handler: Int32, arguments: Int32, results: Int32) -> Int32 {
        lunette_call_outermost(L, &limits, handler, arguments, results)
    }

    /// The whole of a top-level call of the function at `reference` with no
    /// arguments (`lunette_call_reference`: pushes the function, and a
    /// message handler unless the state's resting one serves; arms, calls,
    /// disarms; raises nothing). Stores the top before it in the host's
    /// `call_base`; returns `LUNETTE_CALL_RETURNED_NOTHING` with the stack
    /// back there, `LUNETTE_CALL_STACK_FULL`, or the call's status with the
    /// results or the error from the host's `call_first` to the top.
    func callReference(_ limits: inout lunette_limits, reference: Int32) -> Int32 {
        lunette_call_reference(L, &limits, reference)
    }

    /// Nanoseconds since the last top-level call began (`lunette_call_elapsed`).
    func callElapsed() -> UInt64 { lunette_call_elapsed(L) }

    // MARK: Host helpers (each runs in its own host-mode protected call)

    /// Replaces global `name` by a read-only view (`lunette_protect_global`).
    func protectGlobal(_ name: String) -> Int32 { lunette_protect_global(L, name) }

    /// Installs print, warn and log.* over the sink function on top (`lunette_install_log`).
    func installLog() -> Int32 { lunette_install_log(L) }

    /// Opens the sandbox profile (`lunette_open_sandbox`).
    func openSandbox() -> Int32 { lunette_open_sandbox(L) }

    /// Leaves the message handler at index 1 of a new state's empty stack,
    /// for the state's top-level calls (`lunette_rest_handler`).
    func restHandler() { lunette_rest_handler(L) }

    /// Opens the standard libraries in `mask` (`lunette_open_libraries`).
    func openLibraries(_ mask: UInt32) -> Int32 { lunette_open_libraries(L, mask) }

    /// Keeps math.randomseed for seeding calls (`lunette_remember_randomseed`).
    func rememberRandomSeed() -> Int32 { lunette_remember_randomseed(L) }

    /// Snapshots what the `count` values on top (popped) reach, the globals
    /// and the `hostCount` values below them being the host's; pushes the
    /// snapshot when it returns `LUNETTE_SNAPSHOT_TAKEN` (`lunette_snapshot_take`).
    func takeSnapshot(hostCount: Int32, count: Int32, maxSlots: Int) -> Int32 {
        lunette_snapshot_take(L, hostCount, count, maxSlots)
    }

    /// Puts back what the snapshot at `index` holds (`lunette_snapshot_restore`).
    func restoreSnapshot(at index: Int32) -> Int32 { lunette_snapshot_restore(L, index) }

    // MARK: The C value walk

    /// Flattens the table at `index` into `tape` with raw access
    /// (`lunette_tape_read`: never raises). False when C refuses the value.
    func readTape(at index: Int32, into tape: UnsafeMutablePointer<lunette_tape>, maxDepth: Int, maxBytes: Int) -> Bool {
        lunette_tape_read(L, index, tape, Int32(clamping: maxDepth), maxBytes) != 0
    }

    /// Flattens the `count` values from absolute index `first` into one
    /// tape, their root slots in `roots`, strings over 16 bytes copied into
    /// the tape (`lunette_tape_read_range`, raw access only, raises
    /// nothing); the position of the first value it refused, or `count`.
    func readTape(from first: Int32, count: Int, into tape: UnsafeMutablePointer<lunette_tape>, maxDepth: Int, maxBytes: Int,
                  roots: UnsafeMutablePointer<Int>) -> Int {
        Int(lunette_tape_read_range(L, first, Int32(count), tape, Int32(clamping: maxDepth), maxBytes, roots))
    }
}

/// The type of a Lua value, as `lua_type` reports it.
@usableFromInline
enum LuaType: Int32 {
    case none = -1, `nil` = 0, boolean, lightUserdata, number, string, table, function, userdata, thread

    /// Lua's name of the type ("no value" for an absent argument).
    var name: String {
        switch self {
        case .nil: return "nil"
        case .boolean: return "boolean"
        case .lightUserdata, .userdata: return "userdata"
        case .number: return "number"
        case .string: return "string"
        case .table: return "table"
        case .function: return "function"
        case .thread: return "thread"
        case .none: return "no value"
        }
    }

    /// The name with its article: "a table", "an integer"….
    var withArticle: String {
        (name.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + name
    }
}

/// The `lua_State` of a state's main thread, for the lifecycle functions
/// that take it (`lunette_newstate`, `lua_close`).
enum LuaLifecycle {
    /// Creates a state counted in `host` (`lunette_newstate`). Nil when out of memory.
    static func newState(_ host: UnsafeMutablePointer<lunette_host>) -> OpaquePointer? { lunette_newstate(host) }

    /// Closes a state (`lua_close`: runs pending finalizers, each in its own
    /// protected call inside Lua; never raises to the caller).
    static func close(_ L: OpaquePointer) { lunette_close(L) }

    /// Installs the trampoline's single entry point (`lunette_set_dispatch`).
    static func setDispatch(_ dispatch: lunette_dispatch_fn) { lunette_set_dispatch(dispatch) }

    /// The status codes of `lua_pcall`, as Swift constants.
    static let ok = LUA_OK
    static let memoryStatus = LUA_ERRMEM
    static let multipleResults = LUA_MULTRET
}
