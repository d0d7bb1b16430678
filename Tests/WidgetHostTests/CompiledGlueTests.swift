import Foundation
import Testing
import LuaSandbox
@testable import WidgetHost

/// The host's glue compiled at build time (the CompileGlue plugin) is what
/// every state loads, for the same text and Lua library only.
@Suite("The host's glue compiled at build time")
struct CompiledGlueTests {
    static let texts: [String: [UInt8]] = [
        "bundle": PackageResources.bundle_lua, "declarations": PackageResources.declarations_lua,
        "store": PackageResources.store_lua, "activities": PackageResources.activities_lua,
    ]

    /// The words' bytes, little-endian, spelled out (`Chunk.bytes` copies memory where it can).
    static func binary(_ chunk: CompiledGlue.Chunk) -> [UInt8] {
        let spelled = (0..<chunk.byteCount).map { UInt8(truncatingIfNeeded: chunk.words[$0 >> 3] >> (8 * UInt64($0 & 7))) }
        #expect(chunk.bytes == spelled)
        return spelled
    }

    @Test func everyGlueFileIsCompiledAndAcceptedForItsOwnTextOnly() throws {
        #expect(Set(CompiledGlue.chunks.keys) == Set(Self.texts.keys))
        for (name, text) in Self.texts {
            let chunk = try #require(CompiledGlue.chunks[name])
            let binary = Self.binary(chunk)
            #expect(binary.starts(with: [0x1B, 0x4C, 0x75, 0x61]), "\(name): Lua's binary signature")
            #expect(LuaState.seedCompiledGlue(binary, name: name, text: text, textLength: chunk.textLength,
                                              textHash: chunk.textHash, luaIdent: CompiledGlue.luaIdent), "\(name)")
            var edited = text
            edited[edited.count / 2] ^= 0x20
            #expect(!LuaState.seedCompiledGlue(binary, name: name, text: edited, textLength: chunk.textLength,
                                               textHash: chunk.textHash, luaIdent: CompiledGlue.luaIdent), "\(name): another text")
            #expect(!LuaState.seedCompiledGlue(binary, name: name, text: text, textLength: chunk.textLength,
                                               textHash: chunk.textHash, luaIdent: "$LuaVersion: Lua 5.4.0 $"), "\(name): another Lua")
            #expect(!LuaState.seedCompiledGlue(Array("return 1".utf8), name: name, text: text, textLength: chunk.textLength,
                                               textHash: chunk.textHash, luaIdent: CompiledGlue.luaIdent), "\(name): not a binary chunk")
        }
    }

    /// Each glue's text, as its service takes it, hands the sandbox the
    /// build's compiled form; a state then loads that form, which keeps its
    /// debug information (its chunk name and lines, for errors).
    @Test func everyServiceHandsOverItsGlueAndStatesLoadIt() throws {
        let glue = BundleSandbox.glue
        _ = (DeclarationRecorder.glue, StoreBinding.glue, ActivityBinding.glue)
        #expect(HostGlue.seeded.all == Set(Self.texts.keys), "every glue handed over when its text was first taken")
        // Counted on this state: the process-wide count of the "bundle"
        // glue's loads also moves with every widget test running beside
        // this one (CI once saw 104 where 103 was expected).
        let state = try LuaState(profile: .sandbox)
        let before = state.compiledLoads
        var module = LuaModule(name: "bundle")
        module.add("probe") { _ in [] }
        _ = try? state.runGlue(glue, name: "bundle", functions: module)
        #expect(state.compiledLoads == before + 1, "loaded from its binary form")
        for (name, chunk) in CompiledGlue.chunks {
            let binary = Self.binary(chunk)
            let source = Array("@[host \(name)]".utf8)
            #expect(binary.indices.contains { binary[$0...].starts(with: source) }, "\(name): dumped with its chunk name (not stripped)")
        }
    }
}
