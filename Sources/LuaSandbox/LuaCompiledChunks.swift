#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import CLuaShims

/// Chunks this process compiled from text, kept in Lua's binary form by
/// chunk name and text, so that the next state loading the same text loads
/// the binary instead of compiling it again (≈ 100 instructions a byte of
/// source against a few a byte; a widget's main.lua of 4 KB is ≈ 0.4 M
/// instructions to compile).
///
/// Only binaries `lua_dump` wrote from text Lua compiled go in, and they
/// are loaded only for that same name and text: those this process wrote,
/// and the host's glue that the build compiled (`seedCompiledGlue`: the
/// same Lua library, the same text). A binary chunk from anywhere else
/// (which Lua does not check) never reaches `lua_load`.
/// Bounded by `limit` bytes (names, texts and binaries); the oldest go first.
final class LuaCompiledChunks: @unchecked Sendable {
    /// The process's store.
    static let shared = LuaCompiledChunks(limit: 8 << 20)

    /// A chunk's name and text, hashed once, from the name, the text's
    /// length and its first and last 64 bytes: hashing a text of a few KB
    /// whole costs ≈ 6 instructions a byte, each time a state loads it.
    /// Equal hashes still compare the whole text (`memcmp`).
    struct Key: Hashable {
        let name: String
        let text: [UInt8]
        private let digest: Int

        init(name: String, text: [UInt8]) {
            self.name = name
            self.text = text
            var hasher = Hasher()
            hasher.combine(name)
            hasher.combine(text.count)
            text.withUnsafeBytes { bytes in
                let edge = min(64, bytes.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.prefix(edge)))
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.suffix(edge)))
            }
            digest = hasher.finalize()
        }

        func hash(into hasher: inout Hasher) { hasher.combine(digest) }
        static func == (a: Key, b: Key) -> Bool { a.digest == b.digest && a.name == b.name && a.text == b.text }
        var size: Int { name.utf8.count + text.count }
    }

    private struct Entry {
        var binary: [UInt8]
        /// Loads of `binary` (tests check the path runs).
        var loads = 0
    }

    // An NSLock: ThreadSanitizer builds see its ordering, which they did not for `Mutex` here.
    private let lock = FastLock()
    private var entries: [Key: Entry] = [:]
    /// Keys in the order they came, for eviction (an evicted key's slot is
    /// nil: a key holds its whole text, which must not outlive its entry).
    private var order: [Key?] = []
    private var first = 0
    private var bytes = 0
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// The binary form of `key`, counted as loaded.
    func binary(_ key: Key) -> [UInt8]? {
        lock.withLock {
            guard let index = entries.index(forKey: key) else { return nil }
            entries.values[index].loads += 1
            return entries.values[index].binary
        }
    }

    /// Keeps `binary` for `key`, dropping the oldest entries past the limit.
    func keep(_ binary: [UInt8], for key: Key) {
        let size = key.size + binary.count
        guard size <= limit / 4 else { return }   // one huge chunk would push out everything else
        lock.withLock {
            guard entries[key] == nil else { return }
            entries[key] = Entry(binary: binary)
            order.append(key)
            bytes += size
            while bytes > limit, first < order.count {
                if let old = order[first], let entry = entries.removeValue(forKey: old) { bytes -= old.size + entry.binary.count }
                order[first] = nil
                first += 1
            }
            if first > 64 && first * 2 > order.count {
                order.removeFirst(first)
                first = 0
            }
        }
    }

    /// Loads of the binary kept for `key` (tests).
    func loads(_ key: Key) -> Int { lock.withLock { entries[key]?.loads ?? 0 } }
}

extension LuaState {
    /// Hands the store the binary form of host glue compiled at build time
    /// (`lunette-glue-compiler`): `binary` compiled from a text of
    /// `textLength` bytes whose FNV-1a hash is `textHash`, by the Lua
    /// library whose `lua_ident` is `luaIdent`. It is kept for the glue
    /// named `name` (as `runGlue` names it) with text `text` only when that
    /// text is the one compiled and the linked library is the one that
    /// compiled it; then no state compiles that glue again. Returns whether
    /// it was kept.
    @discardableResult
    package static func seedCompiledGlue(_ binary: [UInt8], name: String, text: [UInt8],
                                         textLength: Int, textHash: UInt64, luaIdent: String) -> Bool {
        guard String(cString: lunette_lua_ident()) == luaIdent, text.count == textLength,
              fnv1a(text) == textHash, binary.starts(with: [0x1B, 0x4C, 0x75, 0x61]) else { return false }   // "\eLua"
        LuaCompiledChunks.shared.keep(binary, for: LuaCompiledChunks.Key(name: "[host \(name)]", text: text))
        return true
    }

    /// FNV-1a, 64 bits, as lunette-glue-compiler computes it.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// Compiles `bytes` (text only) as `load(bytes:name:)` does, or, when
    /// this process compiled the same text under the same name before, loads
    /// its binary form instead (`LuaCompiledChunks`): for sources compiled in
    /// many states, like a bundle's main.lua and modules.
    ///
    /// `chargedToScript`: from a Swift function a script called (a
    /// `require` in host glue), the load counts against the running call's
    /// memory cap and peak, as the script's own `load` would; past the cap
    /// it throws `LuaError.memory`.
    public func loadReusingCompiled(bytes: [UInt8], name: String, chargedToScript: Bool = false) throws(LuaError) -> LuaFunctionRef {
        try loadReusingCompiled(LuaCompiledChunks.Key(name: name, text: bytes), chargedToScript: chargedToScript)
    }

    /// How many loads of `bytes` named `name` came from its binary form (tests).
    package static func binaryLoads(of bytes: [UInt8], name: String) -> Int {
        LuaCompiledChunks.shared.loads(LuaCompiledChunks.Key(name: name, text: bytes))
    }

    func loadReusingCompiled(_ key: LuaCompiledChunks.Key, chargedToScript: Bool = false) throws(LuaError) -> LuaFunctionRef {
        let stack = stack
        if let binary = LuaCompiledChunks.shared.binary(key) {
            try stack.reserveOrThrow(2)
            let status = binary.withUnsafeBytes { stack.loadHostBinary($0, chunkName: "@" + key.name, chargedToScript: chargedToScript) }
            if status == LuaLifecycle.ok {
                compiledLoads += 1
                return LuaFunctionRef(state: self, popping: stack)
            }
            defer { stack.pop() }
            if status == LuaLifecycle.memoryStatus { throw .memory(memoryError()) }
            // Cannot happen otherwise (bytes this process wrote): compile the text instead.
        }
        let chunk = try load(bytes: key.text, name: key.name, chargedToScript: chargedToScript)
        try stack.reserveOrThrow(1)
        stack.push(reference: chunk.reference)
        let binary = stack.dumpFunction()
        stack.pop()
        if let binary { LuaCompiledChunks.shared.keep(binary, for: key) }
        return chunk
    }
}
