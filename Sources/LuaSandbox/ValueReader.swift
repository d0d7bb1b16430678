import CLuaShims

/// Reads a value off a Lua stack into a `LuaValue`.
///
/// Two walks apply the same rules (depth limit, no cycles, size budget,
/// string keys or array indices 1...n) with raw access only, so no
/// metamethod runs and no Lua error can longjmp through this code:
/// - the fast path, `lunette_tape_read` in C, flattens the value and
///   `TapeDecoder` builds it (a table whose keys are the same string
///   objects, in the same order, as a table read before is read against
///   that table's remembered keys: shims.c, "Remembered keys");
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

    /// Converts the value at `index` to plain data; errors name their path from `root`.
    mutating func read(at index: Int32, root: String) throws(LuaValueError) -> LuaValue {
        try read(at: index, root: root, as: PlainData.self)
    }

    /// Converts the value at `index` for showing (`LuaDisplayValue`): as
    /// `read`, but functions, userdata and threads are described, not refused.
    mutating func readForDisplay(at index: Int32, root: String) throws(LuaValueError) -> LuaDisplayValue {
        try read(at: index, root: root, as: DisplayData.self)
    }

    /// Flattens the `count` values from `first` into `into` (a tape other
    /// than the reader's own), their root slots in `roots`, charging the
    /// reader's budget; when C refuses one, the Swift walk reads the values
    /// again up to it and says what is wrong and where. For reading results
    /// in place (`LuaValueView`).
    mutating func flatten(from first: Int32, count: Int, into other: UnsafeMutablePointer<lunette_tape>,
                          roots: UnsafeMutablePointer<Int>) throws(LuaValueError) {
        let read = stack.readTape(from: first, count: count, into: other, maxDepth: limits.maxDepth, maxBytes: budget, roots: roots)
        if read == count {
            budget = Int(other.pointee.budget)
            return
        }
        for i in 0...read {
            _ = try self.read(at: first + Int32(i), root: count == 1 ? "result" : "result #\(i + 1)")
        }
        // The Swift walk took what C refused: only C's own buffers failing
        // to grow can do that.
        throw LuaValueError(path: count == 1 ? "result" : "result #\(read + 1)", reason: "out of memory reading the value")
    }

    /// Converts the values at `first...last` as the results of a call.
    mutating func readResults(_ first: Int32, _ last: Int32) throws(LuaValueError) -> [LuaValue] {
        try readResults(first, last, as: PlainData.self)
    }

    /// Converts the values at `first...last` as the results of a call, for showing.
    mutating func readResultsForDisplay(_ first: Int32, _ last: Int32) throws(LuaValueError) -> [LuaDisplayValue] {
        try readResults(first, last, as: DisplayData.self)
    }

    private mutating func readResults<B: ValueBuilder>(_ first: Int32, _ last: Int32, as builder: B.Type) throws(LuaValueError) -> [B.Value] {
        // One result, the usual case: an array literal is allocated at its
        // size at once (reserving then appending costs ≈ 100 instructions more).
        if first == last { return [try read(at: first, root: "result", as: builder)] }
        var results: [B.Value] = []
        results.reserveCapacity(Int(last - first + 1))
        for index in first...last {
            results.append(try read(at: index, root: "result #\(index - first + 1)", as: builder))
        }
        return results
    }

    private mutating func read<B: ValueBuilder>(at index: Int32, root: String, as builder: B.Type) throws(LuaValueError) -> B.Value {
        // The C walk takes plain data only, and reads its type itself
        // (asking it here first was one more Lua API call a result).
        if stack.readTape(at: index, into: tape, maxDepth: limits.maxDepth, maxBytes: budget) {
            budget = Int(tape.pointee.budget)
            return B.plain(TapeDecoder(tape: tape).value(at: 0))
        }
        do { return try read(stack.absolute(index), depth: 0, as: builder) } catch { throw error.rooted(at: root) }
    }

    /// What every value costs against the size budget, before its string
    /// bytes (the C walk charges the same).
    static let valueBytes = 16

    /// The nil, boolean or number at `index`, read in place, as a fresh
    /// reader's walk would read it; nil for other types, and when the
    /// limits allow no value at all. For callers that read one argument,
    /// where making a reader costs more than the value.
    static func scalar(at index: Int32, on stack: LuaStack, limits: LuaConversionLimits) -> LuaValue? {
        guard limits.maxBytes >= valueBytes else { return nil }
        switch stack.type(at: index) {
        case .nil: return .nil
        case .boolean: return .boolean(stack.boolean(at: index))
        case .number: return stack.isInteger(at: index) ? .integer(stack.integer(at: index)) : .number(stack.number(at: index))
        default: return nil
        }
    }

    @inline(__always)
    private mutating func spend(_ bytes: Int) throws(PathedValueError) {
        budget -= bytes
        if budget < 0 {
            throw PathedValueError(reason: "value is too large (over \(limits.maxBytes) bytes)")
        }
    }

    /// The Swift walk: raw access only, bounded depth and size, no cycles,
    /// string keys or array indices 1...n. The reference for the rules, and
    /// what says why and where C refused a value.
    private mutating func read<B: ValueBuilder>(_ index: Int32, depth: Int, as builder: B.Type) throws(PathedValueError) -> B.Value {
        try spend(Self.valueBytes)
        switch stack.type(at: index) {
        case .nil, .none:
            return B.plain(.nil)
        case .boolean:
            return B.plain(.boolean(stack.boolean(at: index)))
        case .number:
            return B.plain(stack.isInteger(at: index) ? .integer(stack.integer(at: index)) : .number(stack.number(at: index)))
        case .string:
            let s = stack.string(at: index)
            try spend(s.count)
            return B.plain(.string(s))
        case .table:
            return try readTable(index, depth: depth, as: builder)
        case let type:
            return try B.other(type, at: index, on: stack)
        }
    }

    private mutating func readTable<B: ValueBuilder>(_ t: Int32, depth: Int, as builder: B.Type) throws(PathedValueError) -> B.Value {
        guard let identity = stack.identity(at: t) else { return B.plain(.table(LuaTable())) }
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
        var fields: [(key: LuaString, value: B.Value)] = []
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
                    fields.append((key, try read(top + 2, depth: depth + 1, as: builder)))
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

        var array: [B.Value] = []
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
                    array.append(try read(top + 1, depth: depth + 1, as: builder))
                } catch {
                    stack.setTop(top)
                    throw error.adding(.index(i))
                }
                stack.pop()
            }
        }
        fields.sort { $0.key < $1.key }
        return B.table(array: array, fields: fields)
    }
}

/// What the Swift walk makes of the values it reads.
protocol ValueBuilder {
    associatedtype Value
    /// Plain data.
    static func plain(_ value: LuaValue) -> Value
    /// A function, userdata or thread at `index`.
    static func other(_ type: LuaType, at index: Int32, on stack: LuaStack) throws(PathedValueError) -> Value
    /// A table, its fields sorted by key.
    static func table(array: [Value], fields: [(key: LuaString, value: Value)]) -> Value
}

/// The walk for hosts: plain data, anything else refused.
enum PlainData: ValueBuilder {
    static func plain(_ value: LuaValue) -> LuaValue { value }

    static func other(_ type: LuaType, at index: Int32, on stack: LuaStack) throws(PathedValueError) -> LuaValue {
        throw PathedValueError(reason: "\(type.withArticle) is not plain data")
    }

    static func table(array: [LuaValue], fields: [(key: LuaString, value: LuaValue)]) -> LuaValue {
        .table(LuaTable(array: array, fields: LuaFields(sorted: fields.map { LuaFields.Entry(key: $0.key, value: $0.value) })))
    }
}

/// The walk for developer tools: what is not plain data is described.
enum DisplayData: ValueBuilder {
    static func plain(_ value: LuaValue) -> LuaDisplayValue { .data(value) }

    static func other(_ type: LuaType, at index: Int32, on stack: LuaStack) throws(PathedValueError) -> LuaDisplayValue {
        switch type {
        case .function: return .function(definedAt: stack.functionDefinition(at: index))
        case .userdata, .lightUserdata: return .userdata(name: stack.metatableName(at: index))
        default: return .thread
        }
    }

    /// Plain data when every entry is: the same value the plain walk gives.
    static func table(array: [LuaDisplayValue], fields: [(key: LuaString, value: LuaDisplayValue)]) -> LuaDisplayValue {
        let plainArray = array.compactMap(\.data)
        let plainFields = fields.compactMap { field in field.value.data.map { (key: field.key, value: $0) } }
        if plainArray.count == array.count, plainFields.count == fields.count {
            return .data(PlainData.table(array: plainArray, fields: plainFields))
        }
        return .table(LuaDisplayTable(array: array, fields: fields.map { LuaDisplayTable.Field(key: $0.key, value: $0.value) }))
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

    init(slots: UnsafeMutablePointer<lunette_slot>, order: UnsafeMutablePointer<Int>?) {
        self.slots = slots
        self.order = order
    }

    func value(at index: Int) -> LuaValue {
        let slot = slots + index
        // Raw type codes: this runs once per value on the hot path. A chain
        // of tests, most common first, each through lunette_opaque_int so
        // that they are not merged into a jump table: its one indirect jump
        // mispredicted as the type changed from field to field.
        let type = slot.pointee.type
        if type == LuaType.number.rawValue {
            return slot.pointee.is_integer != 0 ? .integer(slot.pointee.integer) : .number(slot.pointee.number)
        }
        if lunette_opaque_int(type) == LuaType.string.rawValue {
            return .string(string(slot.pointee.str, slot.pointee.len, packed: slot.pointee.str_words))
        }
        if lunette_opaque_int(type) == LuaType.boolean.rawValue {
            return .boolean(slot.pointee.integer != 0)
        }
        if lunette_opaque_int(type) == LuaType.table.rawValue {
            return .table(table(slot))
        }
        return .nil
    }

    /// A string of the tape: from the words C packed it into when it is
    /// short (no bytes copied), else copied from the bytes its pointer
    /// gives (Lua's, or the tape's arena after lunette_tape_read_range).
    func string(_ pointer: UnsafePointer<CChar>?, _ length: Int, packed words: (UInt64, UInt64)) -> LuaString {
        if length <= LuaString.inlineCapacity { return LuaString(inlineWords: words.0, words.1, count: length) }
        guard let pointer else { return LuaString("") }
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
        // reserveCapacity and append, not Array(unsafeUninitializedCapacity:):
        // that one allocates through a stdlib function that is never
        // specialised, which looks up the array's storage type at run time
        // (≈ 680 instructions an array instead of ≈ 150).
        var array: [LuaValue] = []
        if count > 0 {
            array.reserveCapacity(count)
            for k in 0..<count { array.append(value(at: order[arrayAt + k])) }
        }
        if nfields == 0 { return LuaTable(array: array) }
        // Made in place in the fields' own storage: no array to grow.
        let children = order + fieldsAt
        let fields = LuaFields(sortedCount: nfields) { entries in
            var referencing: UInt64 = 0
            for k in 0..<nfields {
                let child = children[k]
                let field = slots + child
                let key = string(field.pointee.key, field.pointee.key_len, packed: field.pointee.key_words)
                (entries + k).initialize(to: LuaFields.Entry(key: key, value: value(at: child)))
                // C marked the fields whose entries hold a reference
                // (`holds`). Past 64 entries the bits wrap: LuaFields then
                // asks every entry.
                let bit = UInt64(truncatingIfNeeded: field.pointee.holds)
                assert(bit == 1 || !entries[k].holdsReference, "a field that holds a reference must be marked, or its deinit leaks it")
                referencing |= bit << UInt64(k & 63)
            }
            return referencing
        }
        return LuaTable(array: array, fields: fields)
    }
}
