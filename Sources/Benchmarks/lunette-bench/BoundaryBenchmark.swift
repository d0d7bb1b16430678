import LuaSandbox

/// The same Lua function as the C baseline (entry_source.h), called through
/// LuaSandbox with its result converted into a `LuaValue`.
enum BoundaryBenchmark {
    static let entrySource = """
        local n = 0
        return function()
          n = n + 1
          return { date = 1795254600 + n, title = 'Groceries', subtitle = '3 left', remaining = 3, total = 7,
                   progress = 0.42857142857143, done = false, color = 'blue', url = 'lunette://tasks/1', relevance = 0.5 }
        end
        """

    /// Median ns per call over `batches` batches of `batchSize` calls, on
    /// one state (what `--only-calls` runs, for instruction counts); with
    /// `reading`, its result read in place (`call(_:_:options:reading:)`)
    /// and every key and value touched, as the C baseline's loop touches
    /// them: no `LuaValue` is made (`--only-reading-calls`).
    static func callNanoseconds(batches: Int, batchSize: Int = 1000, reading: Bool = false) throws -> Double {
        let state = try LuaState()
        return try loop(state, try functionRef(state), reading: reading, warmup: 10, batches: batches, batchSize: batchSize)
    }

    /// A figure over several states: the mean of the states' medians, and
    /// the fastest and slowest state's.
    struct OverStates {
        var nanoseconds: Double
        var fastest: Double
        var slowest: Double
    }

    /// The same call on `states` states, each with addresses and so a hash
    /// seed of its own, as the C baseline runs it (`calls_over_states`,
    /// which says why). Each state runs 3 warm-up batches, then `batches`
    /// timed ones. The states stay open until all have run, so that no two
    /// share an address.
    static func callOverStates(states: Int, batches: Int, reading: Bool = false) throws -> OverStates {
        var open: [LuaState] = []
        var medians: [Double] = []
        for _ in 0..<states {
            let state = try LuaState()
            open.append(state)
            medians.append(try loop(state, try functionRef(state), reading: reading, warmup: 3, batches: batches, batchSize: 1000))
        }
        return OverStates(nanoseconds: mean(medians), fastest: medians.min()!, slowest: medians.max()!)
    }

    /// The call's loop on `state`: into `[LuaValue]`, or read in place.
    private static func loop(_ state: LuaState, _ function: LuaFunctionRef, reading: Bool, warmup: Int, batches: Int, batchSize: Int) throws -> Double {
        if reading {
            return try entryCallNanoseconds(warmup: warmup, batches: batches, batchSize: batchSize) {
                try state.call(function) { results in touch(results[0]) }
            }
        }
        return try entryCallNanoseconds(warmup: warmup, batches: batches, batchSize: batchSize) {
            Double(try state.call(function)[0].tableValue?.count ?? 0)
        }
    }

    /// Median ns to make and drop, in Swift alone, the `[LuaValue]` the
    /// 10-field call returns, the least way it can be made, and how many
    /// heap objects it has: the results array, the table's fields, and
    /// each string longer than `LuaString`'s inline capacity, made anew;
    /// every other entry copied in as bytes, with no Lua call, no read and
    /// no check. The bench prints it beside the call, and what the call
    /// does beneath the value (the call's time less this).
    static func valueNanoseconds(batches: Int, batchSize: Int = 1000) throws -> (nanoseconds: Double, heapObjects: Int) {
        let (template, long) = try valueTemplate()
        let entries = Array(template.fields)
        let ns = try entries.withUnsafeBufferPointer { entries in
            try entryCallNanoseconds(warmup: 10, batches: batches, batchSize: batchSize) {
                Double(makeEntry(entries, long)[0].tableValue?.count ?? 0)
            }
        }
        return (ns, 2 + long.count)
    }

    /// The call's result, and its string values over `LuaString`'s inline
    /// capacity by position. makeEntry copies every other entry as bytes:
    /// sound only while those hold no reference (no long key, no table),
    /// which this checks, stopping the bench if the entry's shape changes.
    private static func valueTemplate() throws -> (table: LuaTable, long: [(index: Int, bytes: [UInt8])]) {
        let state = try LuaState()
        guard let template = try state.call(try functionRef(state))[0].tableValue, template.array.isEmpty, !template.fields.isEmpty else {
            fatalError("the entry's shape changed: valueNanoseconds expects a table of fields")
        }
        var long: [(index: Int, bytes: [UInt8])] = []
        for (index, entry) in template.fields.enumerated() where entry.holdsReference {
            guard entry.key.count <= LuaString.inlineCapacity, case .string(let value) = entry.value else {
                fatalError("the entry's shape changed: valueNanoseconds makes anew only string values over the inline capacity")
            }
            long.append((index, value.bytes))
        }
        return (template, long)
    }

    /// The entry as the call returns it, made anew: the entries copied as
    /// bytes, each long string's made fresh over its copy (never owned),
    /// out of line as the call is, so that no allocation is promoted to
    /// the stack.
    @inline(never)
    private static func makeEntry(_ entries: UnsafeBufferPointer<LuaFields.Entry>, _ long: [(index: Int, bytes: [UInt8])]) -> [LuaValue] {
        let fields = LuaFields(sortedCount: entries.count) { target in
            UnsafeMutableRawPointer(target).copyMemory(from: entries.baseAddress!, byteCount: entries.count * MemoryLayout<LuaFields.Entry>.stride)
            var referencing: UInt64 = 0
            for string in long {
                (target + string.index).initialize(to: LuaFields.Entry(key: entries[string.index].key, value: .string(LuaString(bytes: string.bytes))))
                referencing |= 1 << UInt64(string.index)
            }
            return referencing
        }
        return [.table(LuaTable(fields: fields))]
    }

    /// The loop of each: `warmup` warming batches, then the median ns per
    /// call; `call` returns what it read, which must add up to more than 0.
    @inline(__always)
    private static func entryCallNanoseconds(warmup: Int, batches: Int, batchSize: Int, _ call: () throws -> Double) throws -> Double {
        var perCall: [Double] = []
        var sink = 0.0
        for round in -warmup..<batches {
            let ns = try measureNanoseconds {
                for _ in 0..<batchSize { sink += try call() }
            }
            if round >= 0 { perCall.append(ns / Double(batchSize)) }
        }
        precondition(sink > 0)
        return median(perCall)
    }

    /// What the C baseline's `walk` does with a table: each key's length,
    /// and each value (numbers, string lengths, booleans) added up.
    static func touch(_ table: LuaValueView) -> Double {
        var sink = 0.0
        for i in 0..<table.fieldCount {
            let field = table.field(at: i)
            sink += Double(field.keyByteCount)
            let value = field.value
            if let number = value.doubleValue {
                sink += number
            } else if let length = value.stringByteCount {
                sink += Double(length)
            } else if let flag = value.boolValue {
                sink += flag ? 1 : 0
            }
        }
        return sink
    }

    /// Median ns per call of a function of no arguments that returns
    /// nothing, as the C baseline's trivial call: by default on a
    /// sandboxed state with its limits armed (deadline, memory and output
    /// caps); with `.trusted`, on a state with every library and no limits,
    /// as the peers' states are (none of them enforces a limit).
    static func trivialCallNanoseconds(batches: Int, batchSize: Int = 1000, profile: SandboxProfile = .sandbox) throws -> Double {
        let state = try LuaState(profile: profile)
        try state.run("trivialFunction = function() end", name: "trivial")
        guard let function = try state.globalFunction("trivialFunction") else { fatalError("trivial function missing") }
        var perCall: [Double] = []
        var results = 0
        for round in -10..<batches {
            let ns = try measureNanoseconds {
                for _ in 0..<batchSize { results &+= try state.call(function).count }
            }
            if round >= 0 { perCall.append(ns / Double(batchSize)) }
        }
        precondition(results == 0)
        return median(perCall)
    }

    /// The function the source returns, kept through a global.
    private static func functionRef(_ state: LuaState) throws -> LuaFunctionRef {
        try state.run("entryFunction = (function()\n\(entrySource)\nend)()", name: "entry")
        guard let function = try state.globalFunction("entryFunction") else {
            fatalError("entry function missing")
        }
        return function
    }

    /// Instructions one more call costs, C's and Lunette's, as callgrind
    /// counts them (`WidgetBenchmark.perCallInstructions`): the 10-field
    /// call (into `LuaValue`s, and read in place) and the trivial call (on a
    /// sandboxed state, and on a trusted one), each loop alone
    /// (`--only-calls`, `--only-reading-calls`, `--only-trivial-calls`,
    /// `--only-trusted-trivial-calls` here, `--only-call` and `--only-trivial` in
    /// the C baseline) at 5 and 10 batches of 1,000 calls. Lua seeds its
    /// string hashes from the time and from addresses, which moves a
    /// table-making count from seed to seed: both sizes of a difference
    /// run with one fixed clock (`WidgetBenchmark.perCallInstructions`),
    /// and the 10-field calls' counts come back one a seed.
    static func callInstructions(bench: String, baseline: String, repeats: Int) throws -> Result<CallInstructions, WidgetBenchmark.InstructionsUnavailable> {
        func loop(_ flag: String) -> (small: [String], large: [String]) { ([flag, "5"], [flag, "10"]) }
        let calls = 5_000.0
        let lunette = try WidgetBenchmark.perCallInstructionsBySeed(of: bench, loops: [loop("--only-calls"), loop("--only-reading-calls"), loop("--only-trivial-calls"),
                                                                                      loop("--only-trusted-trivial-calls")],
                                                                    calls: calls, repeats: repeats)
        let c = try WidgetBenchmark.perCallInstructionsBySeed(of: baseline, loops: [loop("--only-call"), loop("--only-trivial")], calls: calls, repeats: repeats)
        return lunette.flatMap { l in c.map { c in
            CallInstructions(call: l[0], reading: l[1], trivial: median(l[2]), trustedTrivial: median(l[3]), cCall: c[0], cTrivial: median(c[1]))
        } }
    }

    /// One more call's instructions: the 10-field calls' for each seed
    /// (their count moves with it, by ±3%), the trivial calls' as the
    /// median over seeds (a trivial call's does not move).
    struct CallInstructions {
        var call: [Double]
        var reading: [Double]
        var trivial: Double
        var trustedTrivial: Double
        var cCall: [Double]
        var cTrivial: Double
    }

    /// Median µs for a new sandboxed state with its libraries and, when
    /// `functions` > 0, a Swift module of that many functions, then closing
    /// it. With 0 it is the C baseline's work (`luaL_newstate`, the
    /// libraries, `lua_close`) done the sandbox's way.
    static func freshStateMicroseconds(iterations: Int, functions: Int) throws -> Double {
        var module = LuaModule(name: "bench")
        for i in 0..<functions { module.add("f\(i)") { _ in [] } }
        var samples: [Double] = []
        for i in -50..<iterations {
            let ns = try measureNanoseconds {
                let state = try LuaState()
                if functions > 0 { try state.register(module) }
            }
            if i >= 0 { samples.append(ns / 1000) }
        }
        return median(samples)
    }
}
