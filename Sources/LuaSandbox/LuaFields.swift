/// The string-keyed entries of a `LuaTable`, kept sorted by key bytes.
///
/// A sorted array rather than a hash map: plain-data tables are small
/// (entries, configurations), so building one costs a short sort instead of
/// hashing every key, iteration order is deterministic (JSON output, equality,
/// descriptions), and lookups are a binary search.
public struct LuaFields: Sendable, Hashable {
    /// One key and its value.
    public struct Entry: Sendable, Hashable {
        public var key: LuaString
        public var value: LuaValue

        public init(key: LuaString, value: LuaValue) {
            self.key = key
            self.value = value
        }
    }

    /// The entries in ascending key order, keys unique.
    public private(set) var entries: [Entry]

    /// No entries.
    public init() { entries = [] }

    /// From a dictionary (`.nil` values are dropped: a nil field is absent).
    public init(_ dictionary: [LuaString: LuaValue]) {
        entries = dictionary.compactMap { $0.value.isNil ? nil : Entry(key: $0.key, value: $0.value) }
        entries.sort { $0.key < $1.key }
    }

    /// From entries in any order, as if set one by one: a repeated key
    /// keeps its last value and `.nil` values are dropped. Entries already
    /// in ascending key order with no `.nil` (what a writer of sorted
    /// fields sends) are taken in one pass, without a sort.
    public init(_ entries: [Entry]) {
        var ascending = true
        for i in entries.indices {
            if entries[i].value.isNil || (i > 0 && LuaString.compare(entries[i - 1].key, entries[i].key) >= 0) {
                ascending = false
                break
            }
        }
        if ascending {
            self.entries = entries
            return
        }
        // A stable sort by key, then the last of each run of equal keys.
        let order = entries.indices.sorted { a, b in
            let c = LuaString.compare(entries[a].key, entries[b].key)
            return c != 0 ? c < 0 : a < b
        }
        var kept: [Entry] = []
        kept.reserveCapacity(entries.count)
        for (n, i) in order.enumerated() {
            if n + 1 < order.count, LuaString.compare(entries[order[n + 1]].key, entries[i].key) == 0 { continue }
            if !entries[i].value.isNil { kept.append(entries[i]) }
        }
        self.entries = kept
    }

    /// From entries already in ascending key order with unique keys.
    init(sorted entries: [Entry]) {
        self.entries = entries
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    /// The keys in ascending byte order.
    public var keys: [LuaString] { entries.map(\.key) }
    /// The values in key order.
    public var values: [LuaValue] { entries.map(\.value) }

    /// The value for `key`, or nil. Setting nil (or `.nil`) removes the entry.
    public subscript(key: LuaString) -> LuaValue? {
        get {
            let (index, found) = position(of: key)
            // `.none` spelled out: LuaValue is ExpressibleByNilLiteral, so a
            // bare `nil` here became `.some(.nil)`, a field that is there.
            return found ? entries[index].value : Optional<LuaValue>.none
        }
        set {
            let (index, found) = position(of: key)
            switch (newValue, found) {
            case (nil, true), (.nil?, true): entries.remove(at: index)
            case (nil, false), (.nil?, false): break
            case (let value?, true): entries[index].value = value
            case (let value?, false): entries.insert(Entry(key: key, value: value), at: index)
            }
        }
    }

    /// Binary search: where `key` is, or where it would go.
    private func position(of key: LuaString) -> (Int, Bool) {
        // Over the buffer: no bounds check or array retain at each step.
        entries.withUnsafeBufferPointer { buffer in
            Self.position(of: key, count: buffer.count) { buffer[$0].key }
        }
    }

    /// Where `key` is among `count` keys in ascending byte order (`keyAt`
    /// gives the key at a position), or where it would go: the search of
    /// `LuaFields` and of `LuaValueView`'s fields.
    @inline(__always)
    static func position(of key: LuaString, count: Int, keyAt: (Int) -> LuaString) -> (Int, Bool) {
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            let order = LuaString.compare(keyAt(mid), key)
            if order == 0 { return (mid, true) }
            if order < 0 { low = mid + 1 } else { high = mid }
        }
        return (low, false)
    }
}

extension LuaFields: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { entries.count }
    public subscript(position: Int) -> Entry { entries[position] }
}

extension LuaFields: ExpressibleByDictionaryLiteral {
    /// Sorted straight from the literal, with no dictionary made (a
    /// literal's fields are few). Of a repeated key the last one wins, and
    /// `.nil` values are dropped, as from a dictionary (`init(_:)`).
    public init(dictionaryLiteral elements: (LuaString, LuaValue)...) {
        self.init(elements.map { Entry(key: $0.0, value: $0.1) })
    }
}
