import CLua

/// Tables a state is given as arguments of outermost calls again and
/// again — a widget's `ctx`, the same `LuaValue` on every reload — pushed
/// as copies of a template kept in the registry (`lunette_template_*`): a
/// Lua function compiled from a constructor that spells the table's
/// entries as constants, so a copy is one call of it. It costs a fraction
/// of converting the Swift value again: no string to hash and intern, no
/// Swift tree to walk. The script gets a new table either way, with the
/// same entries. (Not for nested calls: the constructor is Lua code, run
/// unprotected, which must not meet the hook an outer call armed.)
///
/// A table is known by its storage. The cache keeps a copy of each
/// `LuaTable` it knows, so the storage is shared: any change to the
/// caller's value makes new storage (copy on write), and a changed table is
/// never taken for the one it was. A table becomes a template the second
/// time it is seen, so arguments made afresh for every call cost a few
/// comparisons and nothing in Lua.
struct ArgumentTemplates {
    /// Tables known at once (a bundle's widget kinds × families, typically
    /// a handful); the oldest known is forgotten for a new one.
    static let capacity = 8
    /// Smaller tables are pushed as they are: a copy would save little.
    static let minimumEntries = 3
    /// Larger or deeper ones too: they are rarely the same twice, and a
    /// template of one would hold much for little.
    static let maximumEntries = 64
    static let maximumLevels = 4

    private struct Known {
        var table: LuaTable
        /// Levels of tables (1: no table inside), measured the second time
        /// the table comes; 0 before, -1 when it can have no template.
        var levels: Int32
        /// The template's registry reference; LUA_NOREF until seen twice.
        var reference: Int32
    }
    private var known: [Known] = []
    private var next = 0
    /// Tables pushed as copies of their templates (tests).
    private(set) var copies = 0

    /// Pushes `table` (of at least `minimumEntries` entries): a copy of its
    /// template when it has one; else `push()` pushes it, and a template is
    /// made from what it pushed the second time the table is seen.
    /// `maxDepth`: the state's conversion limit, which a copy keeps too.
    mutating func push<E: Error>(_ table: LuaTable, on stack: LuaStack, maxDepth: Int,
                                 orElse push: () throws(E) -> Void) throws(E) {
        for i in known.indices where Self.sameStorage(known[i].table, table) {
            if known[i].reference != LUA_NOREF, known[i].levels <= maxDepth,
               stack.pushTemplateCopy(known[i].reference) {
                copies += 1
                return
            }
            try push()
            // Measured only now: a table that never comes again costs no walk.
            if known[i].levels == 0 { known[i].levels = Self.levels(of: table) ?? -1 }
            if known[i].reference == LUA_NOREF, known[i].levels > 0, known[i].levels <= maxDepth {
                known[i].reference = stack.makeTemplate(ofTableAt: -1, levels: known[i].levels)
                // One that cannot have a template (a NaN in it, say) is not tried again.
                if known[i].reference == LUA_NOREF { known[i].levels = -1 }
            }
            return
        }
        try push()
        // A large table is not held on to (the full count comes with its levels).
        guard table.count <= Self.maximumEntries else { return }
        let entry = Known(table: table, levels: 0, reference: LUA_NOREF)
        if known.count < Self.capacity {
            known.append(entry)
        } else {
            if known[next].reference != LUA_NOREF { stack.release(known[next].reference) }
            known[next] = entry
            next = (next + 1) % Self.capacity
        }
    }

    /// The same storage (hence the same entries: see the type's note).
    private static func sameStorage(_ a: LuaTable, _ b: LuaTable) -> Bool {
        a.array.count == b.array.count
            && a.array.withUnsafeBufferPointer { x in b.array.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
            && a.fields.sharesStorage(with: b.fields)
    }

    /// The table's levels, or nil when it has more than `maximumLevels` or,
    /// with its tables, more than `maximumEntries` entries.
    private static func levels(of table: LuaTable) -> Int32? {
        var entries = 0
        func walk(_ t: LuaTable, _ level: Int32) -> Int32? {
            entries += t.count
            guard level <= maximumLevels, entries <= maximumEntries else { return nil }
            var deepest = level
            for value in t.array {
                if case .table(let inner) = value { guard let d = walk(inner, level + 1) else { return nil }; deepest = max(deepest, d) }
            }
            for field in t.fields {
                if case .table(let inner) = field.value { guard let d = walk(inner, level + 1) else { return nil }; deepest = max(deepest, d) }
            }
            return deepest
        }
        return walk(table, 1)
    }
}
