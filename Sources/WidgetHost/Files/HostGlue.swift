/// The host's Lua glue chunks: self-contained `.lua` files beside the
/// Swift service each belongs to, embedded in the binary at build time
/// (`resources: .embedInCode` in Package.swift), so nothing is read from
/// disk at run time. Each is run with `LuaState.runGlue` and receives the
/// host's function table as `...`.
enum HostGlue {
    /// The text of an embedded chunk.
    static func source(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
