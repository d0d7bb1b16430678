/// Writes a `ScriptAPI` as LuaLS definitions: one `---@meta` file that an
/// editor running the Lua language server reads for completion, hover
/// documentation and type checks (docs/authoring.md).
public enum LuaTypesWriter {
    /// The definitions file's text.
    public static func definitions(_ api: ScriptAPI, version: String) -> String {
        var out = """
            ---@meta lunette
            -- Lunette's script API for the Lua language server (LuaLS), written by
            -- `lunette types` (Lunette \(version)). Do not edit: run `lunette types` again.
            -- The reference: docs/script-api.md and docs/testing.md.
            -- A definition file only: it is never run.

            """
        for alias in api.aliases {
            out += "\n" + comment(alias.doc) + "---@alias \(alias.name) \(alias.type)\n"
        }
        for declared in api.classes {
            out += "\n" + classText(declared)
        }
        for (scope, function) in api.functions {
            let note = scope == .tests ? " (Test files only: tests/*.lua, *_test.lua.)" : ""
            out += "\n" + functionText(function, doc: function.doc + note, owner: nil)
        }
        for module in api.modules {
            out += "\n" + comment(module.doc) + "\(module.name) = {}\n"
            for function in module.functions {
                out += "\n" + functionText(function, doc: function.doc, owner: module.name)
            }
        }
        return out
    }

    /// `---@class`, its fields, and its functions on a local table.
    static func classText(_ declared: ScriptAPI.Class) -> String {
        var out = comment(declared.doc) + "---@class \(declared.name)\n"
        for field in declared.fields {
            out += "---@field \(field.name)\(field.optional ? "?" : "") \(field.type)\(field.doc.isEmpty ? "" : " " + field.doc)\n"
        }
        if declared.open { out += "---@field [string] any\n" }
        guard !declared.functions.isEmpty else { return out }
        let local = localName(declared.name)
        out += "local \(local) = {}\n"
        for function in declared.functions {
            out += "\n" + functionText(function, doc: function.doc, owner: local)
        }
        return out
    }

    /// A function's doc lines, parameters, returns and its empty body.
    static func functionText(_ function: ScriptAPI.Function, doc: String, owner: String?) -> String {
        var out = comment(doc)
        for parameter in function.parameters {
            let name = parameter.name + (parameter.optional && parameter.name != "..." ? "?" : "")
            out += "---@param \(name) \(parameter.type)\(parameter.doc.isEmpty ? "" : " " + parameter.doc)\n"
        }
        for value in function.returns {
            out += "---@return \(value.type)" + (value.name.isEmpty ? "" : " \(value.name)") + (value.doc.isEmpty ? "" : " # \(value.doc)") + "\n"
        }
        let separator = function.isMethod ? ":" : "."
        let name = owner.map { $0 + separator + function.name } ?? function.name
        return out + "function \(name)(\(function.parameters.map(\.name).joined(separator: ", "))) end\n"
    }

    /// `lunette.StoreGroup` → `StoreGroup`.
    static func localName(_ className: String) -> String {
        String(className.split(separator: ".").last ?? Substring(className))
    }

    static func comment(_ text: String) -> String {
        text.isEmpty ? "" : text.split(separator: "\n", omittingEmptySubsequences: false).map { "---" + $0 }.joined(separator: "\n") + "\n"
    }

    /// The LuaLS settings a bundle needs (`.luarc.json`): Lua 5.4, the
    /// libraries the sandbox removes switched off (the sandbox's three `os`
    /// functions come from the definitions), and the definitions' folder as
    /// a library. Merged into `existing` (the bundle's own file, when it has
    /// one): every other setting is kept.
    public static func settings(merging existing: JSONValue?, library: String, api: ScriptAPI) -> String {
        var builtin: [(String, Setting)] = api.removedLibraries.map { ($0, .string("disable")) }
        builtin.append(("os", .string("disable")))
        let ours: [(String, Setting)] = [
            ("$schema", .string("https://raw.githubusercontent.com/LuaLS/vscode-lua/master/setting/schema.json")),
            ("runtime", .object([("version", .string("Lua 5.4")), ("builtin", .object(builtin))])),
            ("workspace", .object([("library", .array([.string(library)])), ("checkThirdParty", .bool(false))])),
        ]
        let merged = Setting.merge(Setting.unfolded(existing.map(Setting.init) ?? .object([])), .object(ours))
        return merged.text(indent: "") + "\n"
    }

    /// A JSON value as `.luarc.json` holds it, to merge and print.
    indirect enum Setting: Equatable {
        case null
        case bool(Bool)
        case integer(Int64)
        case double(Double)
        case string(String)
        case array([Setting])
        case object([(String, Setting)])

        init(_ value: JSONValue) {
            switch value.kind {
            case .null: self = .null
            case .boolean(let b): self = .bool(b)
            case .integer(let i): self = .integer(i)
            case .double(let d): self = .double(d)
            case .string(let s): self = .string(s)
            case .array(let items): self = .array(items.map(Setting.init))
            case .object(let members): self = .object(members.map { ($0.key, Setting($0.value)) })
            }
        }

        static func == (a: Setting, b: Setting) -> Bool { a.text(indent: "") == b.text(indent: "") }

        /// The settings with dotted keys (`"runtime.version"`, `"Lua.runtime.version"`,
        /// which LuaLS reads too) written as nested objects, so that ours
        /// replace them instead of standing beside them.
        static func unfolded(_ settings: Setting) -> Setting {
            guard case .object(let members) = settings else { return settings }
            var out = Setting.object([])
            for (key, value) in members {
                var path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                if path.count > 1, path[0] == "Lua" { path.removeFirst() }
                if key == "$schema" || path.count == 1 || path.contains(where: \.isEmpty) { path = [key] }
                var nested = value
                for part in path.dropFirst().reversed() { nested = .object([(part, nested)]) }
                out = merge(out, .object([(path[0], nested)]))
            }
            return out
        }

        /// `ours` over `base`: objects merge key by key (ours win), arrays
        /// of library folders gain ours, other values are replaced.
        static func merge(_ base: Setting, _ ours: Setting) -> Setting {
            switch (base, ours) {
            case (.object(let a), .object(let b)):
                var out = a
                for (key, value) in b {
                    if let i = out.firstIndex(where: { $0.0 == key }) { out[i].1 = merge(out[i].1, value) } else { out.append((key, value)) }
                }
                return .object(out)
            case (.array(let a), .array(let b)):
                return .array(a + b.filter { !a.contains($0) })
            default:
                return ours
            }
        }

        func text(indent: String) -> String {
            let inner = indent + "  "
            switch self {
            case .null: return "null"
            case .bool(let b): return b ? "true" : "false"
            case .integer(let i): return String(i)
            case .double(let d): return JSONValue(.double(d), at: JSONLocation(offset: 0, line: 1, column: 1)).jsonText
            case .string(let s): return JSONValue(.string(s), at: JSONLocation(offset: 0, line: 1, column: 1)).jsonText
            case .array(let items):
                if items.isEmpty { return "[]" }
                return "[\n" + items.map { inner + $0.text(indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
            case .object(let members):
                if members.isEmpty { return "{}" }
                return "{\n" + members.map { key, value in
                    inner + Setting.string(key).text(indent: inner) + ": " + value.text(indent: inner)
                }.joined(separator: ",\n") + "\n\(indent)}"
            }
        }
    }
}
