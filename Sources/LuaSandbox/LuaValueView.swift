import CLuaShims

extension LuaState {
    /// Calls `function` like `call(_:_:)` and hands its results to `body`
    /// read in place, without building `LuaValue`s: for a host that reads
    /// what it needs from the results and keeps none of them as they are
    /// (a plugin's answer decoded into the host's own types, a field or two
    /// of a large table). The results are checked by the same rules and
    /// limits as `call`'s (plain data, depth, size): a result that breaks
    /// them throws `LuaError.value` before `body` runs.
    ///
    /// The views are valid only inside `body`, which must not keep them:
    /// one used after `body` returned traps while the state lives (and is
    /// undefined once it is gone, as a pointer kept from
    /// `withUnsafeBufferPointer`). Running Lua in this state from `body`
    /// (a call, glue, a snapshot or its restore) traps too: the results stay
    /// on the state's stack meanwhile. The views read copies the C walk
    /// made (strings included), never Lua's memory, so what Lua frees
    /// meanwhile (a weak table's values) is not under them. Take `view.value`
    /// (a `LuaValue`) for anything to keep. As with `call`, `body` runs on
    /// a thread of `LuaThreadPool.shared` when the caller's stack is small.
    public func call<R>(_ function: LuaFunctionRef, _ arguments: [LuaValue] = [], options: LuaCallOptions? = nil,
                        reading body: (LuaResultsView) -> R) throws(LuaError) -> R {
        precondition(function.owner == ObjectIdentifier(self), "LuaFunctionRef belongs to another LuaState")
        let reference = function.reference
        if arguments.isEmpty, callsInPlace {
            arm(options)
            return try callReference(reference, nothing: { reading(count: 0, slots: nil, order: nil, roots: nil, body) }) { reader, first, last throws(LuaValueError) in
                try self.read(&reader, first, last, body)
            }
        }
        return try withLargeStack { () throws(LuaError) in
            try self.protectedCall(arguments, options: options, pushFunction: { $0.push(reference: reference) }) { reader, first, last throws(LuaValueError) in
                try self.read(&reader, first, last, body)
            }
        }
    }

    /// Flattens the results at `first...last` into the result tape, then
    /// runs `body` on them. The tape holds copies of their strings over
    /// 16 bytes (shorter ones it holds anyway), so the views read nothing
    /// of Lua's: what the collector frees meanwhile (a weak table's
    /// values, say) is not under them.
    private func read<R>(_ reader: inout ValueReader, _ first: Int32, _ last: Int32, _ body: (LuaResultsView) -> R) throws(LuaValueError) -> R {
        let count = first > last ? 0 : Int(last - first + 1)
        let tape: UnsafeMutablePointer<lunette_tape>
        if let resultTape {
            tape = resultTape
        } else {
            tape = .allocate(capacity: 1)
            tape.initialize(to: lunette_tape())
            resultTape = tape
        }
        // Up to 64 results, the roots buffer is the state's and is kept;
        // a call with more (up to Lua's stack limit) gets one of its own.
        let roots: UnsafeMutablePointer<Int>
        let ownRoots = count > 64
        if ownRoots {
            roots = .allocate(capacity: count)
        } else {
            if resultRoots == nil { resultRoots = .allocate(capacity: 64) }
            roots = resultRoots!
        }
        defer { if ownRoots { roots.deallocate() } }
        try reader.flatten(from: first, count: count, into: tape, roots: roots)
        return reading(count: count, slots: tape.pointee.slots, order: tape.pointee.order, roots: roots, body)
    }

    /// Runs `body` on `count` flattened results. While it runs the state
    /// takes no call (`callDepth` is -1: the fast path is not taken, and
    /// `protectedCall` traps; it is restored after, also inside a Swift
    /// function that a script called), and its views check `viewGeneration`.
    private func reading<R>(count: Int, slots: UnsafeMutablePointer<lunette_slot>?, order: UnsafeMutablePointer<Int>?,
                            roots: UnsafeMutablePointer<Int>?, _ body: (LuaResultsView) -> R) -> R {
        let generation = viewGeneration
        let depth = callDepth
        callDepth = -1
        defer {
            callDepth = depth
            viewGeneration &+= 1
        }
        return body(LuaResultsView(state: self, generation: generation, count: count, slots: slots, order: order, roots: roots))
    }
}

/// The results of a call, read in place (`LuaState.call(_:_:options:reading:)`):
/// valid only inside the closure that received them.
@frozen
public struct LuaResultsView: RandomAccessCollection {
    @usableFromInline unowned(unsafe) let state: LuaState
    @usableFromInline let generation: UInt64
    /// How many results the call returned.
    public let count: Int
    @usableFromInline let slots: UnsafeMutablePointer<lunette_slot>?
    @usableFromInline let order: UnsafeMutablePointer<Int>?
    @usableFromInline let roots: UnsafeMutablePointer<Int>?

    @usableFromInline
    init(state: LuaState, generation: UInt64, count: Int, slots: UnsafeMutablePointer<lunette_slot>?,
         order: UnsafeMutablePointer<Int>?, roots: UnsafeMutablePointer<Int>?) {
        self.state = state
        self.generation = generation
        self.count = count
        self.slots = slots
        self.order = order
        self.roots = roots
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { count }

    /// The result at `position` (0-based).
    @inlinable
    public subscript(position: Int) -> LuaValueView {
        precondition(state.viewGeneration == generation, "a LuaResultsView was used after its call's reading closure returned")
        precondition(position >= 0 && position < count, "result \(position) of \(count)")
        return LuaValueView(state: state, generation: generation, slots: slots!, order: order, index: roots![position])
    }
}

/// One value of a call's results, read in place: a result, an array item
/// or a field's value. Valid only inside the closure that received the
/// results; `value` copies it out as a `LuaValue`.
///
/// Its accessors are inlinable: a host reading many fields pays no call
/// for each.
@frozen
public struct LuaValueView {
    @usableFromInline unowned(unsafe) let state: LuaState
    @usableFromInline let generation: UInt64
    @usableFromInline let slots: UnsafeMutablePointer<lunette_slot>
    @usableFromInline let order: UnsafeMutablePointer<Int>?
    @usableFromInline let index: Int

    @usableFromInline
    init(state: LuaState, generation: UInt64, slots: UnsafeMutablePointer<lunette_slot>, order: UnsafeMutablePointer<Int>?, index: Int) {
        self.state = state
        self.generation = generation
        self.slots = slots
        self.order = order
        self.index = index
    }

    /// The slot, once the view is known to be current.
    @inlinable
    var slot: UnsafeMutablePointer<lunette_slot> {
        precondition(state.viewGeneration == generation, "a LuaValueView was used after its call's reading closure returned")
        return slots + index
    }

    @inlinable
    func view(_ child: Int) -> LuaValueView {
        LuaValueView(state: state, generation: generation, slots: slots, order: order, index: child)
    }

    /// The Lua type name: "nil", "boolean", "number", "string" or "table".
    @inlinable
    public var typeName: String {
        switch slot.pointee.type {
        case LuaType.boolean.rawValue: return "boolean"
        case LuaType.number.rawValue: return "number"
        case LuaType.string.rawValue: return "string"
        case LuaType.table.rawValue: return "table"
        default: return "nil"
        }
    }

    /// What the value is, with a string's length: one read of the value
    /// where asking `stringByteCount`, `doubleValue`, `boolValue` and
    /// `isTable` in turn reads it (and checks the view is still valid) four
    /// times.
    public enum Shape: Equatable {
        case `nil`, boolean, number, table
        case string(bytes: Int)
    }

    /// The value's `Shape`.
    @inlinable
    public var shape: Shape {
        let slot = slot
        switch slot.pointee.type {
        case LuaType.boolean.rawValue: return .boolean
        case LuaType.number.rawValue: return .number
        case LuaType.string.rawValue: return .string(bytes: slot.pointee.len)
        case LuaType.table.rawValue: return .table
        default: return .nil
        }
    }

    /// True for nil.
    @inlinable
    public var isNil: Bool { slot.pointee.type == LuaType.nil.rawValue }

    /// True for a table.
    @inlinable
    public var isTable: Bool { slot.pointee.type == LuaType.table.rawValue }

    /// The boolean, if this is one.
    @inlinable
    public var boolValue: Bool? {
        let slot = slot
        return slot.pointee.type == LuaType.boolean.rawValue ? slot.pointee.integer != 0 : nil
    }

    /// True for a number that is an integer (`LuaValue.integer`).
    @inlinable
    public var isInteger: Bool {
        let slot = slot
        return slot.pointee.type == LuaType.number.rawValue && slot.pointee.is_integer != 0
    }

    /// The integer, if this is an integer or a float with an exact integer value.
    @inlinable
    public var integerValue: Int64? {
        let slot = slot
        guard slot.pointee.type == LuaType.number.rawValue else { return nil }
        return slot.pointee.is_integer != 0 ? slot.pointee.integer : Int64(exactly: slot.pointee.number)
    }

    /// The number as a Double, for integers and floats.
    @inlinable
    public var doubleValue: Double? {
        let slot = slot
        guard slot.pointee.type == LuaType.number.rawValue else { return nil }
        return slot.pointee.is_integer != 0 ? Double(slot.pointee.integer) : slot.pointee.number
    }

    /// The string's length in bytes, if this is a string (nothing copied).
    @inlinable
    public var stringByteCount: Int? {
        let slot = slot
        return slot.pointee.type == LuaType.string.rawValue ? slot.pointee.len : nil
    }

    /// The string (any bytes), if this is one: a copy, made without
    /// allocating for strings of up to 16 bytes.
    public var luaStringValue: LuaString? {
        let slot = slot
        guard slot.pointee.type == LuaType.string.rawValue else { return nil }
        return TapeDecoder(slots: slots, order: order).string(slot.pointee.str, slot.pointee.len, packed: slot.pointee.str_words)
    }

    /// The text, if this is a string of valid UTF-8.
    public var stringValue: String? { luaStringValue?.string }

    /// Array items (`t[1]` … `t[n]`), if this is a table; else 0.
    @inlinable
    public var arrayCount: Int {
        let slot = slot
        return slot.pointee.type == LuaType.table.rawValue ? slot.pointee.count : 0
    }

    /// String-keyed fields, if this is a table; else 0.
    @inlinable
    public var fieldCount: Int {
        let slot = slot
        return slot.pointee.type == LuaType.table.rawValue ? slot.pointee.nfields : 0
    }

    /// `t[index]` with Lua's 1-based indexing; nil outside 1...arrayCount.
    @inlinable
    public subscript(index: Int) -> LuaValueView? {
        let slot = slot
        guard slot.pointee.type == LuaType.table.rawValue, index >= 1, index <= slot.pointee.count, let order else { return nil }
        return view(order[slot.pointee.array_at + index - 1])
    }

    /// The field at `position` (0-based) in ascending key byte order, as
    /// `LuaFields` keeps them.
    @inlinable
    public func field(at position: Int) -> LuaFieldView {
        let slot = slot
        precondition(slot.pointee.type == LuaType.table.rawValue && position >= 0 && position < slot.pointee.nfields,
                     "field \(position) of \(fieldCount)")
        return LuaFieldView(value: view(order![slot.pointee.fields_at + position]))
    }

    /// `t[key]` for a string key; nil when the table has no such field or
    /// this is not a table (a binary search over the sorted keys).
    public subscript(key: LuaString) -> LuaValueView? {
        let slot = slot
        guard slot.pointee.type == LuaType.table.rawValue, let order else { return nil }
        let fieldsAt = slot.pointee.fields_at
        let (position, found) = LuaFields.position(of: key, count: slot.pointee.nfields) {
            LuaFieldView(value: view(order[fieldsAt + $0])).key
        }
        return found ? view(order[fieldsAt + position]) : nil
    }

    /// The value as a `LuaValue`, copied out: what `call(_:_:)` would have
    /// returned for it.
    public var value: LuaValue {
        _ = slot
        return TapeDecoder(slots: slots, order: order).value(at: index)
    }
}

/// A string-keyed field of a table read in place.
@frozen
public struct LuaFieldView {
    /// The field's value.
    public let value: LuaValueView

    @usableFromInline
    init(value: LuaValueView) { self.value = value }

    /// The key: a copy, made without allocating for keys of up to 16 bytes.
    public var key: LuaString {
        let slot = value.slot
        return TapeDecoder(slots: value.slots, order: value.order).string(slot.pointee.key, slot.pointee.key_len, packed: slot.pointee.key_words)
    }

    /// The key's length in bytes (nothing copied).
    @inlinable
    public var keyByteCount: Int { value.slot.pointee.key_len }
}
