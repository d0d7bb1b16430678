/// Writes a `ScriptAPI` as a luacheck configuration (`.luacheckrc`): the
/// globals of the sandbox and no others, so that luacheck flags a global a
/// script sets by accident (rule L6 drops it before the next call), a
/// global it reads that does not exist (`dofile`, `io`, a misspelt
/// `clokc`), a library field that does not exist (`string.fromat`), and
/// unused variables. The test API's `test` is a global in test files only.
public enum LuacheckConfig {
    /// The first line of a configuration `lunette types` wrote (and may
    /// write again).
    public static let marker = "-- Lunette's globals for luacheck"

    public static func text(_ api: ScriptAPI, version: String) -> String {
        var globals: [String] = api.baseGlobals.map { "    \(quoted($0)),\n" }
        for library in api.libraries {
            globals.append("    \(library.name) = { fields = { \(library.fields.map(quoted).joined(separator: ", ")) } },\n")
        }
        for module in api.modules {
            globals.append("    \(module.name) = { fields = { \(module.functions.map { quoted($0.name) }.joined(separator: ", ")) } },\n")
        }
        for (scope, function) in api.functions where scope == .bundle {
            globals.append("    \(quoted(function.name)),\n")
        }
        let tests = api.functions.filter { $0.scope == .tests }.map { quoted($0.function.name) }.joined(separator: ", ")
        return """
            \(marker), written by `lunette types` (Lunette \(version)).
            -- Do not edit: run `lunette types` again (it replaces a file that starts
            -- with the line above). Reference: docs/authoring.md.
            std = "lunette"
            -- A provider's arguments are fixed by the host (ctx, config): not using one is fine.
            unused_args = false
            max_line_length = false
            -- The definitions of `lunette types`, here and in the bundles of a folder of bundles.
            exclude_files = { ".lunette/*", "**/.lunette/*" }
            stds.lunette = {
              read_globals = {
            \(globals.joined())  },
            }
            stds.lunette_tests = { read_globals = { \(tests) } }
            files["**/tests/*.lua"] = { std = "+lunette_tests" }
            files["**/*_test.lua"] = { std = "+lunette_tests" }

            """
    }

    static func quoted(_ name: String) -> String { "\"\(name)\"" }
}
