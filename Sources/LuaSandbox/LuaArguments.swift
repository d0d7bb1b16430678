#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a Swift function gets of its call: its arguments, read raw.
///
/// Valid only while the function runs; do not keep it.
public struct LuaArguments {
    /// The state the call runs in (for nested calls). Not retained: the
    /// state runs the call, so it outlives the arguments.
    public unowned(unsafe) let state: LuaState
    /// The stack of the thread that called the function.
    let stack: LuaStack
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
        n >= 1 && n <= count ? stack.type(at: Int32(n)).name : "no value"
    }

    /// True when argument `n` is a string (not a number, which `string(_:)` would convert).
    public func isString(_ n: Int) -> Bool {
        n >= 1 && n <= count && stack.type(at: Int32(n)) == .string
    }

    /// True when argument `n` is absent or nil.
    public func isNil(_ n: Int) -> Bool {
        n > count || stack.type(at: Int32(n)) == .nil
    }

    /// Argument `n` as plain data (`.nil` when absent).
    public func value(_ n: Int) throws(LuaFunctionError) -> LuaValue {
        guard n >= 1, n <= count else { return .nil }
        // Scalars in place: a reader costs more than the value.
        if let scalar = ValueReader.scalar(at: Int32(n), on: stack, limits: state.conversionLimits) { return scalar }
        var reader = state.reader(stack)
        do { return try reader.read(at: Int32(n), root: "") } catch {
            throw badArgument(n, error.description)
        }
    }

    /// Argument `n` as an integer: an integer, or a float with an exact integer value.
    public func integer(_ n: Int) throws(LuaFunctionError) -> Int64 {
        guard n <= count, stack.type(at: Int32(n)) == .number else { throw expected("number", n) }
        if stack.isInteger(at: Int32(n)) { return stack.integer(at: Int32(n)) }
        guard let i = Int64(exactly: stack.number(at: Int32(n))) else {
            throw badArgument(n, "number has no integer representation")
        }
        return i
    }

    /// Argument `n` as a number.
    public func number(_ n: Int) throws(LuaFunctionError) -> Double {
        guard n <= count, stack.type(at: Int32(n)) == .number else { throw expected("number", n) }
        return stack.number(at: Int32(n))
    }

    /// Argument `n` as a string (numbers are converted as Lua converts them).
    public func string(_ n: Int) throws(LuaFunctionError) -> LuaString {
        guard n <= count else { throw expected("string", n) }
        switch stack.type(at: Int32(n)) {
        case .string:
            return stack.string(at: Int32(n))
        case .number:
            if stack.isInteger(at: Int32(n)) { return LuaString(String(stack.integer(at: Int32(n)))) }
            return LuaString(LuaLiteral.number(stack.number(at: Int32(n))))
        default:
            throw expected("string", n)
        }
    }

    /// Argument `n` as text: a string of valid UTF-8.
    public func text(_ n: Int) throws(LuaFunctionError) -> String {
        if isString(n) {
            let bytes = stack.stringBytes(at: Int32(n))
            if let last = state.lastText, let address = bytes.baseAddress, last.address == address,
               last.text.utf8.withContiguousStorageIfAvailable({
                   $0.count == bytes.count && (bytes.count == 0 || memcmp($0.baseAddress!, address, bytes.count) == 0)
               }) == true {
                return last.text
            }
            guard let text = LuaString.text(of: bytes) else { throw badArgument(n, "string is not valid UTF-8") }
            state.textsMade += 1
            // Short ones only (keys, names): a long text kept here would be
            // memory outside the state's cap.
            if let address = bytes.baseAddress, bytes.count <= LuaState.lastTextLimit { state.lastText = (address, text) }
            return text
        }
        guard let text = try string(n).string else {
            throw badArgument(n, "string is not valid UTF-8")
        }
        return text
    }

    /// Argument `n` as a boolean.
    public func boolean(_ n: Int) throws(LuaFunctionError) -> Bool {
        guard n <= count, stack.type(at: Int32(n)) == .boolean else { throw expected("boolean", n) }
        return stack.boolean(at: Int32(n))
    }

    /// Argument `n` as a table of plain data.
    public func table(_ n: Int) throws(LuaFunctionError) -> LuaTable {
        guard n <= count, stack.type(at: Int32(n)) == .table else { throw expected("table", n) }
        guard case .table(let t) = try value(n) else { throw expected("table", n) }
        return t
    }

    /// Table argument `n` as named numbers (`{ minutes = 15 }`, at most
    /// `limit` fields), read in place without converting the table: option
    /// tables are read on hot paths. Anything else in the table is an
    /// argument error that names the field.
    public func numberFields(_ n: Int, limit: Int = 8) throws(LuaFunctionError) -> [(key: String, value: Double)] {
        var fields: [(key: String, value: Double)] = []
        try forEachNumberField(n, limit: limit) { key, value in fields.append((key.displayText, value)) }
        return fields
    }

    /// `numberFields` without building an array: `body` gets each field as
    /// it is read, its key as the raw Lua string (no `String` is made), in
    /// the table's traversal order. The same checks and errors.
    public func forEachNumberField(_ n: Int, limit: Int = 8,
                                   _ body: (LuaString, Double) throws(LuaFunctionError) -> Void) throws(LuaFunctionError) {
        guard n <= count, stack.type(at: Int32(n)) == .table else { throw expected("table", n) }
        guard stack.reserve(2) else { throw LuaFunctionError("stack overflow") }
        var seen = 0
        stack.pushNil()
        while stack.next(Int32(n)) {
            guard stack.type(at: -2) == .string, case let key = stack.string(at: -2), key.isValidUTF8 else {
                let type = stack.type(at: -2).name
                stack.pop(2)
                throw badArgument(n, "expected { name = number, ... }, got a \(type) key")
            }
            guard stack.type(at: -1) == .number else {
                let type = stack.type(at: -1).name
                stack.pop(2)
                throw badArgument(n, "'\(key.displayText)' must be a number, got \(type)")
            }
            guard seen < limit else {
                stack.pop(2)
                throw badArgument(n, "more than \(limit) fields")
            }
            seen += 1
            let value = stack.number(at: -1)
            stack.pop()
            do { try body(key, value) } catch {
                stack.pop()
                throw error
            }
        }
    }

    /// Argument `n` when present and not nil, read by `read`; nil otherwise.
    public func optional<T>(_ n: Int, _ read: (Int) throws(LuaFunctionError) -> T) throws(LuaFunctionError) -> T? {
        isNil(n) ? nil : try read(n)
    }

    /// Argument `n`, which must be a function, kept for later: call it with
    /// `state.call(_:_:options:)` after this Swift function has returned
    /// (e.g. to run it again). The reference lives until it is released.
    public func function(_ n: Int) throws(LuaFunctionError) -> LuaFunctionRef {
        guard n <= count, stack.type(at: Int32(n)) == .function else { throw expected("function", n) }
        guard stack.reserve(1) else { throw LuaFunctionError("stack overflow") }
        stack.pushCopy(of: Int32(n))
        return LuaFunctionRef(state: state, popping: stack)
    }

    /// Sets field `key` of table argument `n` to `function` (raw), which
    /// must belong to this state: for host glue that receives functions the
    /// host compiled (`LuaState.loadReusingCompiled`), which a Swift
    /// function cannot return as a value.
    public func set(_ function: LuaFunctionRef, as key: String, inTable n: Int) throws(LuaFunctionError) {
        guard n <= count, stack.type(at: Int32(n)) == .table else { throw expected("table", n) }
        guard function.owner == ObjectIdentifier(state) else { throw LuaFunctionError("the function belongs to another Lua state") }
        guard stack.reserve(2) else { throw LuaFunctionError("stack overflow") }
        stack.push(key)
        stack.push(reference: function.reference)
        stack.rawSet(Int32(n))
    }

    /// The chunk and line of the function `level` calls up the stack (0 is
    /// this Swift function, 1 its caller…), or nil when there is no such
    /// Lua function. Chunk names are as loaded, without Lua's "@".
    public func location(level: Int) -> (chunk: String, line: Int)? {
        stack.location(level: level)
    }

    /// Makes table argument `m` the globals of Lua function argument `n`:
    /// sets its first upvalue, which must be its `_ENV` (as in any chunk
    /// compiled from text). For host glue that runs one compiled chunk with
    /// fresh globals on each call; never give it to scripts.
    public func setEnvironment(ofFunction n: Int, to m: Int) throws(LuaFunctionError) {
        guard n <= count, stack.type(at: Int32(n)) == .function, !stack.isCFunction(at: Int32(n)) else {
            throw badArgument(n, "Lua function expected, got \(typeName(n))")
        }
        guard m <= count, stack.type(at: Int32(m)) == .table else { throw expected("table", m) }
        guard stack.reserve(1) else { throw LuaFunctionError("stack overflow") }
        guard let name = stack.pushUpvalue(of: Int32(n), 1) else { throw badArgument(n, "the function has no _ENV") }
        stack.pop()
        guard name == "_ENV" else { throw badArgument(n, "the function's first upvalue is not _ENV") }
        stack.pushCopy(of: Int32(m))
        stack.setUpvalue(of: Int32(n), 1)
    }

    /// Makes table argument `n` refuse `rawset` in a sandboxed state, as
    /// the library views do (`name` stands for it); its metatable must
    /// refuse every other write and be out of reach (`__metatable`). For
    /// host glue whose objects outlive a call: sealed, they can carry
    /// nothing from one call to the next. Never give it to scripts.
    public func seal(table n: Int, name: String) throws(LuaFunctionError) {
        guard n <= count, stack.type(at: Int32(n)) == .table else { throw expected("table", n) }
        guard stack.reserve(3) else { throw LuaFunctionError("stack overflow") }
        stack.seal(tableAt: Int32(n), name: name)
    }

    /// Calls argument `n`, which must be a function, in protected mode.
    /// Errors come back as `LuaError`; rethrow them to pass them on.
    public func call(_ n: Int, _ arguments: [LuaValue] = []) throws -> [LuaValue] {
        guard n <= count, stack.type(at: Int32(n)) == .function else { throw expected("function", n) }
        return try state.protectedCall(arguments) { stack in stack.pushCopy(of: Int32(n)) }
    }

    private func expected(_ type: String, _ n: Int) -> LuaFunctionError {
        badArgument(n, "\(type) expected, got \(typeName(n))")
    }
}

