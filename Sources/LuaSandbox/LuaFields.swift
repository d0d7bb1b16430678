/// The string-keyed entries of a `LuaTable`, kept sorted by key bytes.
///
/// A sorted array (one allocation of its own) rather than a hash map:
/// plain-data tables are small (entries, configurations), so building one
/// costs a short sort instead of hashing every key, iteration order is
/// deterministic (JSON output, equality, descriptions), and lookups are a
/// binary search.
public struct LuaFields: @unchecked Sendable, Hashable {
    // @unchecked Sendable: its storage (a ManagedBuffer, never Sendable) is
    // shared only while no one writes it; a writer copies it first unless
    // it holds the only reference (copy on write), as arrays do.

    /// One key and its value.
    public struct Entry: Sendable, Hashable {
        public var key: LuaString
        public var value: LuaValue

        public init(key: LuaString, value: LuaValue) {
            self.key = key
            self.value = value
        }

        /// False when destroying the entry releases nothing (`package`:
        /// the bench's least-way maker copies such entries as bytes).
        @inline(__always)
        package var holdsReference: Bool { key.holdsReference || value.holdsReference }
    }

    /// The entries' one allocation: their count and capacity, then the
    /// entries. Its deinit is this module's, compiled for `Entry`: the
    /// standard array's storage class is generic, and its deinit destroyed
    /// each entry through the type's value witness (≈ 56 instructions an
    /// entry of inline strings, against a few here). A 10-field result is
    /// made and dropped on every provider call.
    ///
    /// Shared storage is never written: writers copy it first unless it is
    /// uniquely referenced (copy on write).
    final class Storage: ManagedBuffer<Storage.Header, Entry> {
        /// Sixteen bytes, as with two `Int`s: counts as `Int32` make
        /// room for `referencing` without moving the entries.
        struct Header {
            var count: Int32
            let capacity: Int32
            /// Which entries may hold a reference, bit `i` for entry `i`:
            /// what the deinit destroys. `allEntries` (every bit) when not
            /// known, or when there are more than 64 entries: every entry is
            /// then asked. Any write to the entries makes it `allEntries`.
            var referencing: UInt64
        }

        /// `Header.referencing` when every entry must be asked.
        static let allEntries = UInt64.max

        /// Room for `capacity` entries, none made yet.
        static func make(capacity: Int) -> Storage {
            precondition(capacity <= Int(Int32.max), "LuaFields holds at most \(Int32.max) entries")
            let made = Storage.create(minimumCapacity: capacity) { _ in Header(count: 0, capacity: Int32(capacity), referencing: allEntries) }
            return unsafeDowncast(made, to: Storage.self)
        }

        /// Room for `capacity` entries, holding copies of `entries`.
        static func make(copying entries: UnsafeBufferPointer<Entry>, capacity: Int) -> Storage {
            let made = make(capacity: capacity)
            made.withUnsafeMutablePointers { header, target in
                if let base = entries.baseAddress { target.initialize(from: base, count: entries.count) }
                header.pointee.count = Int32(entries.count)
            }
            return made
        }

        deinit {
            // Only entries that hold a reference are destroyed, one at a
            // time: most hold none (short keys, numbers, short strings),
            // and destroying one is a chain of outlined calls that checks
            // the same tags (≈ 60 instructions an entry; `deinitialize(count:)`
            // over all of them calls the runtime's generic array destroy,
            // which makes the same calls).
            withUnsafeMutablePointers { header, entries in
                var referencing = header.pointee.referencing
                if referencing == Storage.allEntries {
                    for i in 0..<Int(header.pointee.count) where entries[i].holdsReference {
                        (entries + i).deinitialize(count: 1)
                    }
                    return
                }
                while referencing != 0 {
                    (entries + referencing.trailingZeroBitCount).deinitialize(count: 1)
                    referencing &= referencing &- 1
                }
            }
        }
    }

    /// nil when there are no entries and never were (no allocation).
    private var storage: Storage?

    /// No entries.
    public init() { storage = nil }

    /// From a dictionary (`.nil` values are dropped: a nil field is absent).
    public init(_ dictionary: [LuaString: LuaValue]) {
        var entries = dictionary.compactMap { $0.value.isNil ? nil : Entry(key: $0.key, value: $0.value) }
        entries.sort { $0.key < $1.key }
        self.init(sorted: entries)
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
            self.init(sorted: entries)
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
        self.init(sorted: kept)
    }

    /// From entries already in ascending key order with unique keys.
    init(sorted entries: [Entry]) {
        storage = entries.isEmpty ? nil : entries.withUnsafeBufferPointer { Storage.make(copying: $0, capacity: $0.count) }
    }

    /// `count` entries in ascending key order with unique keys, which
    /// `initialize` makes in place (all of them: it must not throw or stop
    /// early). No intermediate array: what the value reader builds with.
    @inline(__always)
    package init(sortedCount count: Int, initialize: (UnsafeMutablePointer<Entry>) -> UInt64) {
        guard count > 0 else {
            storage = nil
            return
        }
        let made = Storage.make(capacity: count)
        made.withUnsafeMutablePointers { header, entries in
            let referencing = initialize(entries)
            header.pointee.count = Int32(count)
            header.pointee.referencing = count <= 64 ? referencing : Storage.allEntries
        }
        storage = made
    }

    /// The entries in ascending key order, keys unique, as an array (a
    /// copy: iterating the fields themselves copies nothing).
    public var entries: [Entry] { withUnsafeBufferPointer { Array($0) } }

    /// Calls `body` with the entries in place, in ascending key order.
    public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Entry>) throws -> R) rethrows -> R {
        guard let storage else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try storage.withUnsafeMutablePointers { header, entries in
            try body(UnsafeBufferPointer(start: entries, count: Int(header.pointee.count)))
        }
    }

    /// True when both hold the same allocation (so the same entries), or
    /// both have none.
    func sharesStorage(with other: LuaFields) -> Bool { storage === other.storage }

    // Through the header's pointer: `header` is a class's stored property,
    // whose every read is checked for exclusive access at run time.
    public var count: Int { storage?.withUnsafeMutablePointerToHeader { Int($0.pointee.count) } ?? 0 }
    public var isEmpty: Bool { count == 0 }
    /// The keys in ascending byte order.
    public var keys: [LuaString] { map(\.key) }
    /// The values in key order.
    public var values: [LuaValue] { map(\.value) }

    /// The value for `key`, or nil. Setting nil (or `.nil`) removes the entry.
    public subscript(key: LuaString) -> LuaValue? {
        get {
            let (index, found) = position(of: key)
            // `.none` spelled out: LuaValue is ExpressibleByNilLiteral, so a
            // bare `nil` here became `.some(.nil)`, a field that is there.
            return found ? self[index].value : Optional<LuaValue>.none
        }
        set {
            let (index, found) = position(of: key)
            switch (newValue, found) {
            case (nil, true), (.nil?, true): remove(at: index)
            case (nil, false), (.nil?, false): break
            case (let value?, true): withUniqueEntries(room: 0) { entries, _ in entries[index].value = value }
            case (let value?, false): insert(Entry(key: key, value: value), at: index)
            }
        }
    }

    /// Binary search: where `key` is, or where it would go.
    private func position(of key: LuaString) -> (Int, Bool) {
        // Over the buffer: no bounds check or retain at each step.
        withUnsafeBufferPointer { buffer in
            Self.position(of: key, count: buffer.count) { buffer[$0].key }
        }
    }

    /// Calls `body` with the entries and their count, in storage this value
    /// alone holds with room for `room` more entries: the same storage when
    /// it is unshared and has the room, else a copy (copy on write).
    private mutating func withUniqueEntries<R>(room: Int, _ body: (UnsafeMutablePointer<Entry>, inout Int) -> R) -> R {
        let needed = count + room
        let capacity = storage?.withUnsafeMutablePointerToHeader { Int($0.pointee.capacity) } ?? 0
        // (No storage is never uniquely referenced.)
        if !isKnownUniquelyReferenced(&storage) || capacity < needed {
            // Doubling, up to the most entries a header counts (make traps beyond).
            let grown = needed > Int(Int32.max) / 2 ? Swift.max(needed, Int(Int32.max)) : Swift.max(4, 2 * needed)
            storage = withUnsafeBufferPointer { Storage.make(copying: $0, capacity: capacity < needed ? grown : capacity) }
        }
        return storage!.withUnsafeMutablePointers { header, entries in
            header.pointee.referencing = Storage.allEntries   // the entries change: every one is asked
            var count = Int(header.pointee.count)
            defer { header.pointee.count = Int32(count) }
            return body(entries, &count)
        }
    }

    private mutating func insert(_ entry: Entry, at index: Int) {
        withUniqueEntries(room: 1) { entries, count in
            (entries + index + 1).moveInitialize(from: entries + index, count: count - index)
            (entries + index).initialize(to: entry)
            count += 1
        }
    }

    private mutating func remove(at index: Int) {
        withUniqueEntries(room: 0) { entries, count in
            (entries + index).deinitialize(count: 1)
            (entries + index).moveInitialize(from: entries + index + 1, count: count - index - 1)
            count -= 1
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
    public var endIndex: Int { count }
    public subscript(position: Int) -> Entry {
        precondition(position >= 0 && position < count, "LuaFields index out of range")
        return storage!.withUnsafeMutablePointerToElements { $0[position] }
    }

    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<Entry>) throws -> R) rethrows -> R? {
        try withUnsafeBufferPointer(body)
    }
}

extension LuaFields {
    /// Equal entries in the same order (keys are sorted and unique, so the
    /// same fields).
    public static func == (lhs: LuaFields, rhs: LuaFields) -> Bool {
        if lhs.sharesStorage(with: rhs) { return true }
        return lhs.withUnsafeBufferPointer { a in rhs.withUnsafeBufferPointer { b in a.elementsEqual(b) } }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBufferPointer { entries in
            hasher.combine(entries.count)
            for entry in entries { hasher.combine(entry) }
        }
    }
}

extension LuaFields: ExpressibleByDictionaryLiteral {
    /// Sorted straight from the literal, with no dictionary made (a
    /// literal's fields are few). Of a repeated key the last one wins, and
    /// `.nil` values are dropped, as from a dictionary (`init(_:)`).
    public init(dictionaryLiteral elements: (LuaString, LuaValue)...) {
        self.init(elements.map { Entry(key: $0.0, value: $0.1) })
    }
}
