import LuaSandbox
import Testing

/// A table given as an argument again and again is pushed from a template
/// after its second push (`ArgumentTemplates`): every call must still get a
/// new table with the value's entries, whatever earlier calls did to theirs
/// and whatever the host did to its value.
@Suite("Tables pushed again from templates")
struct ArgumentTemplateTests {
    /// A function that returns its argument's entries as text, then changes
    /// the argument (top level and nested) so that a table shared between
    /// calls would show it.
    static let probe = """
        return function(ctx)
          local seen = string.format("%s %s %s %s %s", tostring(ctx.kind), tostring(ctx.family),
            tostring(ctx.size and ctx.size.width), tostring(ctx.size and ctx.size.height), tostring(ctx[1]))
          ctx.kind = "changed"; ctx.extra = true; ctx[1] = "changed"
          if ctx.size then ctx.size.width = -1; ctx.size.extra = true end
          return seen, getmetatable(ctx) == nil
        end
        """

    func probe(_ state: LuaState) throws -> LuaFunctionRef {
        try state.run("probe = (function()\n\(Self.probe)\nend)()", name: "probe")
        return try #require(try state.globalFunction("probe"))
    }

    static let ctx = LuaValue.table(LuaTable(array: ["first"], fields: [
        "kind": "Tasks", "family": "systemSmall",
        "size": .table(LuaTable(fields: ["width": 170, "height": 170])),
    ]))

    @Test(arguments: [SandboxProfile.sandbox, .trusted])
    func everyCallGetsAFreshTableWithTheValuesEntries(_ profile: SandboxProfile) throws {
        let state = try LuaState(profile: profile)
        let f = try probe(state)
        for call in 1...6 {
            let results = try state.call(f, [Self.ctx])
            #expect(results == ["Tasks systemSmall 170 170 first", true], "call \(call)")
        }
        #expect(state.argumentTemplateCopies == 4, "from the third call on, copies of the template")
    }

    @Test func aValueTheHostChangedIsPushedAsItIsNow() throws {
        let state = try LuaState()
        let f = try probe(state)
        var ctx = Self.ctx
        for _ in 1...3 { _ = try state.call(f, [ctx]) }
        // Changed in place by its owner: new storage (the templates keep a
        // copy of what they know), so never taken for the old table.
        guard case .table(var table) = ctx else { Issue.record("not a table"); return }
        table.fields["kind"] = "Weather"
        table.fields["size"] = .table(LuaTable(fields: ["width": 364, "height": 170]))
        table.array[0] = "second"
        ctx = .table(table)
        for _ in 1...3 {
            #expect(try state.call(f, [ctx]) == ["Weather systemSmall 364 170 second", true])
        }
        #expect(state.argumentTemplateCopies == 2, "each value's third call")
    }

    @Test func manyTablesInTurnEachGetTheirOwnEntries() throws {
        // More tables than the templates keep (8): each is forgotten, with
        // its template, and made again in turn, and every call still sees
        // its own.
        let state = try LuaState()
        let f = try probe(state)
        let tables = (0..<12).map { i in
            LuaValue.table(LuaTable(array: [.string(LuaString("n\(i)"))], fields: ["kind": .string("K\(i)"), "family": "systemMedium",
                                                             "size": .table(LuaTable(fields: ["width": .integer(Int64(i)), "height": 1]))]))
        }
        for round in 0..<3 {
            // Each table three times in a row: known, a template made, a copy.
            for (i, table) in tables.enumerated() {
                for _ in 1...3 {
                    #expect(try state.call(f, [table]) == [.string(LuaString("K\(i) systemMedium \(i) 1 n\(i)")), true], "round \(round), table \(i)")
                }
            }
        }
        #expect(state.argumentTemplateCopies == 3 * 12, "one copy a table a round: each was forgotten before it came again")
    }

    @Test func theConversionDepthLimitHoldsForACopyToo() throws {
        let state = try LuaState()
        let f = try probe(state)
        for _ in 1...3 { _ = try state.call(f, [Self.ctx]) }
        #expect(state.argumentTemplateCopies == 1)
        // A template exists now; a lower limit must refuse the nested table
        // as converting it would.
        state.conversionLimits = LuaConversionLimits(maxDepth: 1, maxBytes: 1 << 20)
        for _ in 1...2 {
            #expect(throws: LuaError.self) { try state.call(f, [Self.ctx]) }
        }
        state.conversionLimits = LuaConversionLimits()
        #expect(try state.call(f, [Self.ctx]) == ["Tasks systemSmall 170 170 first", true])
    }

    /// An array with a hole: fewer entries than its border, which a copy must
    /// not read past (the nil pushed for the hole leaves it absent).
    @Test func anArrayWithAHoleIsCopiedAsItIsPushed() throws {
        let state = try LuaState()
        try state.run("""
            count = function(t)
              local n, inner = 0, 0
              for _ in pairs(t) do n = n + 1 end
              for _ in pairs(t.list or {}) do inner = inner + 1 end
              return n, inner, t[1], t[2], t[3], t.list and t.list[3], #t, #t.list
            end
            """, name: "count")
        let f = try #require(try state.globalFunction("count"))
        let holed = LuaValue.table(LuaTable(array: [1, .nil, 3], fields: ["list": .table(LuaTable(array: ["a", .nil, "c"]))]))
        // The length of an array with a hole is any border Lua finds; the
        // copies must find the one the pushed table has (3: its array part
        // holds all three items).
        for call in 1...4 {
            #expect(try state.call(f, [holed]) == [3, 2, 1, .nil, 3, "c", 3, 3], "call \(call)")
        }
        #expect(state.argumentTemplateCopies == 2)
    }

    /// A template is a constructor compiled from the table's entries
    /// spelled as constants: every value must come back as it was pushed,
    /// of the same subtype — the extremes of integers, floats that are
    /// whole, negative zero, infinities, NaN, and strings of any bytes.
    @Test func everyKindOfValueComesBackExactlyFromTheTemplate() throws {
        let state = try LuaState(profile: .sandbox)
        try state.run("""
            describe = function(t)
              local function one(v)
                if type(v) == "number" then
                  if v ~= v then return "nan" end
                  return math.type(v) .. ":" .. string.format(math.type(v) == "integer" and "%d" or "%a", v)
                elseif type(v) == "string" then return "s:" .. string.format("%q", v)
                elseif type(v) == "table" then
                  local keys = {}
                  for k in pairs(v) do keys[#keys + 1] = k end
                  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
                  local parts = {}
                  for _, k in ipairs(keys) do parts[#parts + 1] = one(k) .. "=" .. one(v[k]) end
                  return "{" .. table.concat(parts, ",") .. "}"
                end
                return tostring(v)
              end
              return one(t)
            end
            """, name: "describe")
        let f = try #require(try state.globalFunction("describe"))
        let bytes = LuaString(bytes: [0, 1, 9, 10, 13, 34, 39, 92, 127, 128, 200, 255] + Array("é\u{1F600}]]=".utf8))
        let value = LuaValue.table(LuaTable(array: [.integer(.min), .integer(.max), .nil, 0], fields: [
            "whole": .number(170), "negativeZero": .number(-0.0), "tiny": .number(.leastNonzeroMagnitude),
            "big": .number(.greatestFiniteMagnitude), "up": .number(.infinity), "down": .number(-.infinity),
            "third": .number(1.0 / 3), "yes": true, "no": false,
            "bytes": .string(bytes), "empty": "", "key \"with\" \\ quotes\n": 1,
            "nested": .table(LuaTable(array: ["a"], fields: ["deeper": .table(LuaTable(fields: ["n": -1]))])),
        ]))
        let first = try state.call(f, [value])
        for call in 2...4 {
            #expect(try state.call(f, [value]) == first, "call \(call)")
        }
        #expect(state.argumentTemplateCopies == 2, "the third and fourth calls were given copies of the template")
        guard case .string(let described)? = first.first else { Issue.record("not a string: \(first)"); return }
        let text = String(decoding: described.bytes, as: UTF8.self)   // the string's bytes, some not UTF-8
        for part in ["integer:-9223372036854775808", "integer:9223372036854775807", "s:\"negativeZero\"=float:-0x0p+0",
                     "s:\"whole\"=float:0x1.54p+7", "s:\"up\"=float:inf", "s:\"down\"=float:-inf"] {
            #expect(text.contains(part), "\(part) in \(text)")
        }
    }

    /// NaN has no literal of its own sign (a division makes the machine's
    /// NaN, whose sign `tostring` shows): a table holding one is pushed as
    /// it is on every call, and gets no template.
    @Test func aTableHoldingNaNIsPushedAsItIsEveryTime() throws {
        let state = try LuaState(profile: .sandbox)
        try state.run("show = function(t) return tostring(t.x), t.x ~= t.x, t.kind end", name: "show")
        let f = try #require(try state.globalFunction("show"))
        let value = LuaValue.table(LuaTable(fields: ["x": .number(.nan), "kind": "K", "family": "systemSmall"]))
        let first = try state.call(f, [value])
        #expect(first.count == 3 && first[1] == true && first[2] == "K", "\(first)")
        for call in 2...4 {
            #expect(try state.call(f, [value]) == first, "call \(call)")
        }
        #expect(state.argumentTemplateCopies == 0)
    }

    /// A nested call (a Swift function calling back into Lua) pushes its
    /// arguments as they are: a template's constructor is Lua code, which
    /// must not run under the hook the outer call armed.
    @Test func aNestedCallPushesItsTablesAsTheyAre() throws {
        let state = try LuaState(profile: .sandbox)
        try state.run("reads = function(ctx) return ctx.kind end", name: "reads")
        let reads = try #require(try state.globalFunction("reads"))
        try state.register(function: "callBack") { args in try args.call(1, [Self.ctx]) }
        try state.run("outer = function() local r; for i = 1, 4 do r = callBack(reads) end return r end", name: "outer")
        let outer = try #require(try state.globalFunction("outer"))
        #expect(try state.call(outer) == ["Tasks"])
        #expect(state.argumentTemplateCopies == 0, "no template copy in a nested call")
        for _ in 1...3 { #expect(try state.call(reads, [Self.ctx]) == ["Tasks"]) }
        #expect(state.argumentTemplateCopies == 1, "an outermost call's third push is a copy")
    }

    @Test func aFailedCallLeavesTheNextOneItsTable() throws {
        let state = try LuaState()
        try state.run("""
            fails = function(ctx) ctx.size.width = 0; error("no") end
            reads = function(ctx) return ctx.size.width, ctx.kind end
            """, name: "pair")
        let fails = try #require(try state.globalFunction("fails"))
        let reads = try #require(try state.globalFunction("reads"))
        for _ in 1...3 {
            #expect(throws: LuaError.self) { try state.call(fails, [Self.ctx]) }
            #expect(try state.call(reads, [Self.ctx]) == [170, "Tasks"])
        }
    }
}
