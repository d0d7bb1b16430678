import PackagePlugin

/// Compiles the host's Lua glue (the target's `.lua` files) at build time
/// with `lunette-glue-compiler`, into a Swift file declaring `CompiledGlue`:
/// no process compiles the glue at run time (`lunette timeline`'s start:
/// 7.25 M → 6.56 M instructions). `HostGlue` hands the binaries to
/// `LuaState.seedCompiledGlue`, which uses them only with the Lua library
/// that wrote them and for the same text; otherwise the text is compiled
/// as before.
@main
struct CompileGlue: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let glue = target.sourceFiles.map(\.url).filter { $0.pathExtension == "lua" }.sorted { $0.path < $1.path }
        guard !glue.isEmpty else { return [] }
        let output = context.pluginWorkDirectoryURL.appending(path: "CompiledGlue.swift")
        return [.buildCommand(displayName: "Compiling \(target.name)'s Lua glue",
                              executable: try context.tool(named: "lunette-glue-compiler").url,
                              arguments: [output.path] + glue.map(\.path),
                              inputFiles: glue, outputFiles: [output])]
    }
}
