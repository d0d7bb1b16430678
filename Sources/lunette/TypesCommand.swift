import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHost

/// `lunette types [DIR]`: the editor's view of the script API.
struct TypesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Write editor types (LuaLS) and the lint's configuration into a bundle.",
        discussion: """
            Writes three files into DIR (default: the current directory): \
            .lunette/lunette.d.lua, LuaLS ---@meta definitions of every global a \
            script sees (widget, intent, query, control, activity with their \
            fields; store, clock, reload, activities, log, host, os; test and the \
            t API in test files); .luarc.json, which points the Lua language \
            server at them, sets Lua 5.4 and switches off the libraries the \
            sandbox removes (settings already in the file are kept); and \
            .luacheckrc, the globals for luacheck (`lunette check` runs it when \
            it is installed). Files that would not change are left alone. A \
            .luacheckrc that lunette did not write is not replaced without \
            --force. Run it again after upgrading Lunette. See docs/authoring.md.
            """)

    @Argument(help: ArgumentHelp("The folder to write into (a bundle, or a folder of bundles).", valueName: "dir"), completion: .directory)
    var directory: String = "."

    @Flag(help: "Replace a .luacheckrc that lunette did not write.")
    var force = false

    @Flag(help: "Print the definitions to standard output instead of writing files.")
    var print = false

    func run() throws {
        let files = EditorFiles(directory: directory, version: LunetteVersion.current)
        if print {
            FileOutput.standardOutput.write(LuaTypesWriter.definitions(files.api, version: LunetteVersion.current))
            return
        }
        try requireDirectory(directory, what: "directory")
        do {
            for file in try files.write(force: force) {
                let shown = directory == "." ? file.path : (directory.hasSuffix("/") ? directory : directory + "/") + file.path
                FileOutput.standardOutput.write((file.changes ? "wrote " : "unchanged ") + shown + "\n")
            }
        } catch {
            throw CLIFailure("error: \(error)")
        }
    }
}
