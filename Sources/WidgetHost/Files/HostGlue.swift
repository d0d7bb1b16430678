import LuaSandbox
import LunetteSystem

/// The host's Lua glue chunks: self-contained `.lua` files beside the
/// Swift service each belongs to, embedded in the binary at build time
/// (`resources: .embedInCode` in Package.swift), so nothing is read from
/// disk at run time. Each is run with `LuaState.runGlue` and receives the
/// host's function table as `...`.
///
/// The build also compiles them (the CompileGlue plugin, `CompiledGlue`):
/// `source(_:name:)` hands each one's binary form to the sandbox's store of
/// compiled chunks, so that no process compiles the glue at run time
/// (`lunette timeline`'s start: 7.25 M → 6.56 M instructions). The sandbox keeps a
/// binary only for the same text and the Lua library that compiled it.
enum HostGlue {
    /// The text of the embedded chunk `name` (its file's name without
    /// ".lua"), its compiled form handed to the sandbox.
    static func source(_ bytes: [UInt8], name: String) -> String {
        if let chunk = CompiledGlue.chunks[name],
           LuaState.seedCompiledGlue(chunk.bytes, name: name, text: bytes, textLength: chunk.textLength,
                                     textHash: chunk.textHash, luaIdent: CompiledGlue.luaIdent) {
            seeded.insert(name)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The glue whose build-compiled form the sandbox took (tests: each
    /// glue's `static let` made means its chunk was handed over).
    static let seeded = Names()

    final class Names: @unchecked Sendable {
        private let lock = FastLock()
        private var names: Set<String> = []
        func insert(_ name: String) { lock.withLock { _ = names.insert(name) } }
        var all: Set<String> { lock.withLock { names } }
    }
}

extension CompiledGlue.Chunk {
    /// The binary chunk: the words' bytes, little-endian (on a
    /// little-endian machine, their memory as it is).
    var bytes: [UInt8] {
        if UInt64(1).littleEndian == 1 {
            return words.withUnsafeBytes { Array($0.prefix(byteCount)) }
        }
        return (0..<byteCount).map { UInt8(truncatingIfNeeded: words[$0 >> 3] >> (8 * UInt64($0 & 7))) }
    }
}
