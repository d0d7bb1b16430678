import CLua

/// The body of a Swift function that scripts can call.
///
/// It reads its arguments through `LuaArguments` and returns its results as
/// plain data. Throwing raises a Lua error in the script after this Swift
/// frame has returned, so `defer` blocks always run and nothing leaks: throw
/// `LuaFunctionError` for a message like Lua's own, or rethrow a `LuaError`
/// from a nested call to pass it through unchanged.
public typealias LuaFunctionBody = (LuaArguments) throws -> [LuaValue]

/// The body of a Swift function with exactly one result, returned without
/// an array: for functions that scripts call on hot paths (a clock, a
/// store read), where the array of `LuaFunctionBody` would be allocated
/// and freed on every call. Otherwise the same as `LuaFunctionBody`.
public typealias LuaOneResultBody = (LuaArguments) throws -> LuaValue

/// A C function that answers a Swift function's common calls without
/// entering Swift (a Swift call through the trampoline costs about a
/// thousand instructions; a C function, a few dozen). It gets the same
/// arguments and returns its number of results; for any call it does not
/// answer it returns -1, with the stack as it found it, and the Swift body
/// runs in the same Lua frame, so errors, their positions and results stay
/// the body's. It must not raise and must give the body's result for every
/// call it answers. It is not called while the state closes. A call it
/// answers counts as an effect when the function is not `replayable`, as
/// the body's calls do. It reads the arguments as the body does, from 1
/// (behind a glue wrapper too: the wrapper's own arguments).
///
/// `data` is what the C function reads besides its arguments: its upvalue 3,
/// a light userdata (`lua_touserdata(L, lua_upvalueindex(3))`), such as a
/// value the host keeps up to date. The host keeps it valid for as long as
/// the state may call the function.
public struct LuaFastPath: @unchecked Sendable {
    let function: lua_CFunction
    let data: UnsafeMutableRawPointer?

    public init(_ function: lua_CFunction, data: UnsafeMutableRawPointer? = nil) {
        self.function = function
        self.data = data
    }
}

/// A named table of Swift functions, set as a global (`clock`, `store`, …).
public struct LuaModule {
    /// The global name of the table.
    public var name: String
    /// The functions, by field name.
    public var functions: [(name: String, body: LuaFunctionBody)] {
        get { entries.map { ($0.name, $0.body.results) } }
        set { entries = newValue.map { Entry(name: $0.name, body: .results($0.body)) } }
    }
    /// The functions as registered. A struct, not a tuple, holds each body:
    /// a closure kept in a tuple inside an array is stored in the generic
    /// calling convention and reached through two conversion thunks on
    /// every call, a struct field keeps its own.
    struct Entry {
        let name: String
        let body: LuaFunctionBox.Body
        var fastPath: LuaFastPath? = nil
    }
    private(set) var entries: [Entry] = []
    /// The functions whose calls a snapshot may stand in for: called again
    /// with the same arguments they answer the same, and whatever they do
    /// outside the state (recording a declaration, say) is kept along with
    /// the snapshot. A call of any other Swift function counts as an effect
    /// (`LuaState.effects`).
    public var replayable: Set<String> = []

    public init(name: String, functions: [(name: String, body: LuaFunctionBody)] = []) {
        self.name = name
        self.entries = functions.map { Entry(name: $0.name, body: .results($0.body)) }
    }

    /// Adds `name` to the module; `replayable`: see `replayable`.
    public mutating func add(_ name: String, replayable: Bool = false, _ body: @escaping LuaFunctionBody) {
        entries.append(Entry(name: name, body: .results(body)))
        if replayable { self.replayable.insert(name) }
    }

    /// Adds `name`, a function with exactly one result (`LuaOneResultBody`);
    /// `replayable`: see `replayable`.
    public mutating func addReturningOne(_ name: String, replayable: Bool = false, _ body: @escaping LuaOneResultBody) {
        entries.append(Entry(name: name, body: .one(body)))
        if replayable { self.replayable.insert(name) }
    }

    /// Adds `name`, a function with one result whose common calls
    /// `fastPath` answers in C; every other call runs `body` (`LuaFastPath`).
    /// `replayable`: see `replayable` (false unless said, as for every
    /// other function: the calls the C function answers then count as
    /// effects, as the body's do).
    public mutating func addReturningOne(_ name: String, replayable: Bool = false, fastPath: LuaFastPath,
                                         _ body: @escaping LuaOneResultBody) {
        entries.append(Entry(name: name, body: .one(body), fastPath: fastPath))
        if replayable { self.replayable.insert(name) }
    }
}

