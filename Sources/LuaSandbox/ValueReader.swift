import CLuaShims

/// Reads a value off a Lua stack into a `LuaValue`.
///
/// Two walks apply the same rules (depth limit, no cycles, size budget,
/// string keys or array indices 1...n) with raw access only, so no
/// metamethod runs and no Lua error can longjmp through this code:
/// - the fast path, `lunette_tape_read` in C, flattens the value and
///   `TapeDecoder` builds it;
/// - when C refuses a value, the Swift walk here reads it again to say what
///   is wrong and where. It is the reference for the rules and stays simple.
struct ValueReader {
    let stack: LuaStack
    let limits: LuaConversionLimits
    private var budget: Int
    /// Tables on the path from the root to the table being read (cycle check).
    private var onPath: [UnsafeRawPointer] = []
    /// The state's C flattening buffers.
    let tape: UnsafeMutablePointer<lunette_tape>

    init(_ stack: LuaStack, limits: LuaConversionLimits, tape: UnsafeMutablePointer<lunette_tape>) {
        self.stack = stack
        self.limits = limits
        self.budget = limits.maxBytes
        self.tape = tape
    }

    /// The Swift walk: converts the value at `index`; the error's path is relative to it.
    private mutating func read(at index: Int32) throws(PathedValueError) -> LuaValue {
        try read(stack.absolute(index), depth: 0)
    }

    /// Converts the value at `index`; errors name their path from `root`.
    mutating func read(at index: Int32, root: String) throws(LuaValueError) -> LuaValue {
        // Only tables need the C walk; a scalar is one step of the Swift walk.
        if stack.type(at: index) == .table,
           stack.readTape(at: index, into: tape, maxDepth: limits.maxDepth, maxBytes: budget) {
            budget = Int(tape.pointee.budget)
            return TapeDecoder(tape: tape).value(at: 0)
        }
        do { return try read(at: index) } catch { throw error.rooted(at: root) }
    }

    /// Converts the values at `first...last` as the results of a call.
    mutating func readResults(_ first: Int32, _ last: Int32) throws(LuaValueError) -> [LuaValue] {
        var results: [LuaValue] = []
        results.reserveCapacity(Int(last - first + 1))
        for index in first...last {
            let root = first == last ? "result" : "result #\(index - first + 1)"
            results.append(try read(at: index, root: root))
        }
        return results
    }

    @inline(__always)
    private mutating func spend(_ bytes: Int) throws(PathedValueError) {
        budget -= bytes
        if budget < 0 {
            throw PathedValueError(reason: "value is too large (over \(limits.maxBytes) bytes)")
        }
    }

    private mutating func read(_ index: Int32, depth: Int) throws(PathedValueError) -> LuaValue {
        try spend(16)
        switch stack.type(at: index) {
        case .nil, .none:
            return .nil
        case .boolean:
            return .boolean(stack.boolean(at: index))
        case .number:
            return stack.isInteger(at: index) ? .integer(stack.integer(at: index)) : .number(stack.number(at: index))
        case .string:
            let s = stack.string(at: index)
            try spend(s.count)
            return .string(s)
        case .table:
            return .table(try readTable(index, depth: depth))
        case let type:
            throw PathedValueError(reason: "\(type.withArticle) is not plain data")
        }
    }

    private mutating func readTable(_ t: Int32, depth: Int) throws(PathedValueError) -> LuaTable {
        guard let identity = stack.identity(at: t) else { return LuaTable() }
        if onPath.contains(identity) {
            throw PathedValueError(reason: "a table that contains itself (a cycle) is not plain data")
        }
        if depth >= limits.maxDepth {
            throw PathedValueError(reason: "tables are nested more than \(limits.maxDepth) deep")
        }
        guard stack.reserve(3) else {
            throw PathedValueError(reason: "out of Lua stack space while reading the value")
        }
        onPath.append(identity)
        defer { onPath.removeLast() }
        let top = stack.top
        var entries: [LuaFields.Entry] = []
        var integerKeys: Int64 = 0
        var largestKey: Int64 = 0
        stack.pushNil()
        while stack.next(t) {
            // key at -2, value at -1
            switch stack.type(at: -2) {
            case .string:
                let key = stack.string(at: -2)
                try spend(key.count)
                do {
                    entries.append(LuaFields.Entry(key: key, value: try read(top + 2, depth: depth + 1)))
                } catch {
                    stack.setTop(top)
                    throw error.adding(.field(key))
                }
            case .number where stack.isInteger(at: -2):
                let key = stack.integer(at: -2)
                if key < 1 {
                    stack.setTop(top)
                    throw PathedValueError(reason: "array index \(key) is not plain data (arrays run from 1 to n)").adding(.index(key))
                }
                integerKeys += 1
                largestKey = max(largestKey, key)
            case let type:
                let description = type == .number ? "\(LuaLiteral.number(stack.number(at: -2)))" : type.name
                stack.setTop(top)
                throw PathedValueError(reason: "a \(type.name) key is not plain data (keys are strings or array indices 1..n)")
                    .adding(.key(description))
            }
            stack.pop()
        }

        var array: [LuaValue] = []
        if integerKeys > 0 {
            if largestKey != integerKeys {
                // Sparse: report the first missing index; never allocate by the largest key.
                var missing: Int64 = 1
                while missing <= integerKeys, stack.rawGet(t, index: missing) != .nil {
                    stack.pop()
                    missing += 1
                }
                stack.setTop(top)
                throw PathedValueError(
                    reason: "array has a hole at [\(missing)] (\(integerKeys) integer keys, largest \(largestKey)); arrays must run from 1 to n without nil"
                )
            }
            array.reserveCapacity(Int(integerKeys))
            for i in 1...integerKeys {
                stack.rawGet(t, index: i)
                do {
                    array.append(try read(top + 1, depth: depth + 1))
                } catch {
                    stack.setTop(top)
                    throw error.adding(.index(i))
                }
                stack.pop()
            }
        }
        entries.sort { $0.key < $1.key }
        return LuaTable(array: array, fields: LuaFields(sorted: entries))
    }
}

/// Builds `LuaValue`s from a tape filled by `lunette_tape_read`.
struct TapeDecoder {
    let slots: UnsafeMutablePointer<lunette_slot>
    /// Children of tables; nil when no table in the value has any.
    let order: UnsafeMutablePointer<Int>?

    init(tape: UnsafeMutablePointer<lunette_tape>) {
        slots = tape.pointee.slots
        order = tape.pointee.order
    }

    func value(at index: Int) -> LuaValue {
        let slot = slots + index
        switch LuaType(rawValue: slot.pointee.type) {
        case .boolean:
            return .boolean(slot.pointee.integer != 0)
        case .number:
            return slot.pointee.is_integer != 0 ? .integer(slot.pointee.integer) : .number(slot.pointee.number)
        case .string:
            return .string(string(slot.pointee.str, slot.pointee.len))
        case .table:
            return .table(table(slot))
        default:
            return .nil
        }
    }

    private func string(_ pointer: UnsafePointer<CChar>?, _ length: Int) -> LuaString {
        guard let pointer, length > 0 else { return LuaString("") }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            LuaString(copying: UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private func table(_ slot: UnsafeMutablePointer<lunette_slot>) -> LuaTable {
        let count = slot.pointee.count
        let nfields = slot.pointee.nfields
        // Empty tables list no children, and a tape of only empty tables has no order array.
        guard count + nfields > 0, let order else { return LuaTable() }
        let arrayAt = slot.pointee.array_at
        let fieldsAt = slot.pointee.fields_at
        let array = count == 0 ? [] : [LuaValue](unsafeUninitializedCapacity: count) { buffer, initialized in
            for k in 0..<count {
                (buffer.baseAddress! + k).initialize(to: value(at: order[arrayAt + k]))
            }
            initialized = count
        }
        if nfields == 0 { return LuaTable(array: array) }
        let entries = [LuaFields.Entry](unsafeUninitializedCapacity: nfields) { buffer, initialized in
            for k in 0..<nfields {
                let child = order[fieldsAt + k]
                let key = string(slots[child].key, slots[child].key_len)
                (buffer.baseAddress! + k).initialize(to: LuaFields.Entry(key: key, value: value(at: child)))
            }
            initialized = nfields
        }
        return LuaTable(array: array, fields: LuaFields(sorted: entries))
    }
}
