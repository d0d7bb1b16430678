import Foundation
import LuaSandbox
import Testing
@testable import WidgetHost

/// The script API's one description (`ScriptAPI.lunette`, issue 16 point 2)
/// held against the reference (docs/script-api.md, docs/testing.md) in both
/// directions, so that the editor types and the docs cannot drift apart.
@Suite("Script API: the docs")
struct ScriptAPIDocTests {
    let api = ScriptAPI.lunette

    static func doc(_ name: String) throws -> [Substring] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("docs/\(name)"), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The lines under the heading `heading` (exactly), to the next heading
    /// of the same or a higher level.
    static func section(_ lines: [Substring], _ heading: String) -> [Substring] {
        guard let start = lines.firstIndex(where: { $0 == heading }) else {
            Issue.record("no heading \(heading)")
            return []
        }
        let level = heading.prefix { $0 == "#" }.count
        var end = start + 1
        while end < lines.count {
            let hashes = lines[end].prefix { $0 == "#" }.count
            if hashes > 0 && hashes <= level && lines[end].dropFirst(hashes).hasPrefix(" ") { break }
            end += 1
        }
        return Array(lines[start + 1 ..< end])
    }

    /// The first-column cells of each table in `lines`, header and rule skipped.
    static func tables(_ lines: [Substring]) -> [[Substring]] {
        var out: [[Substring]] = []
        var current: [Substring] = []
        var row = 0
        for line in lines + [""] {
            if line.hasPrefix("|") {
                row += 1
                if row > 2 { current.append(line.split(separator: "|", omittingEmptySubsequences: false)[1]) }
            } else if row > 0 {
                out.append(current)
                current = []
                row = 0
            }
        }
        return out
    }

    /// The code spans of `text`.
    static func spans<S: StringProtocol>(_ text: S) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// The names after `prefix` in code spans (or code lines) that start with it: "store." in `store.group(id)` → group.
    static func names<S: StringProtocol>(_ texts: [S], after prefix: String) -> Set<String> {
        var out: Set<String> = []
        for text in texts {
            let trimmed = text.drop { $0 == " " }
            guard trimmed.hasPrefix(prefix) else { continue }
            let name = trimmed.dropFirst(prefix.count).prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if !name.isEmpty { out.insert(String(name)) }
        }
        return out
    }

    /// The names after `prefix` wherever it starts a word in `lines`: "a:" in `a = a:update(…)` → update.
    static func occurrences(_ lines: [Substring], of prefix: String) -> Set<String> {
        var out: Set<String> = []
        for line in lines {
            var rest = line[...]
            while let range = rest.range(of: prefix) {
                let before = range.lowerBound == line.startIndex ? nil : line[line.index(before: range.lowerBound)]
                let name = rest[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                if !(before.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false), !name.isEmpty { out.insert(String(name)) }
                rest = rest[range.upperBound...]
            }
        }
        return out
    }

    func fields(_ className: String) -> Set<String> { Set(api.class(className)?.fields.map(\.name) ?? ["(no class \(className))"]) }
    func functions(_ className: String) -> Set<String> { Set(api.class(className)?.functions.map(\.name) ?? ["(no class \(className))"]) }
    func moduleFunctions(_ name: String) -> Set<String> { Set(api.module(name)?.functions.map(\.name) ?? ["(no module \(name))"]) }

    @Test func everyDeclarationsFieldsAreTheReferencesFields() throws {
        let doc = try Self.doc("script-api.md")
        func firstColumn(_ heading: String, table: Int = 0) -> Set<String> {
            let found = Self.tables(Self.section(doc, heading))
            guard table < found.count else { return ["(no table \(table) under \(heading))"] }
            return Set(found[table].compactMap { Self.spans($0).first })
        }
        #expect(firstColumn("### `widget { … }`") == fields("lunette.WidgetDeclaration"))
        #expect(firstColumn("### `intent { … }`") == fields("lunette.IntentDeclaration"))
        #expect(firstColumn("### `intent { … }`", table: 1) == fields("lunette.Parameter"))
        #expect(firstColumn("### `query { … }`") == fields("lunette.QueryDeclaration"))
        #expect(firstColumn("### `control { … }`") == fields("lunette.ControlDeclaration"))
        #expect(firstColumn("### `activity { … }`") == fields("lunette.ActivityDeclaration"))
        #expect(firstColumn("### Entries") == fields("lunette.Entry"))
        #expect(firstColumn("### `timeline(ctx, config)`") == fields("lunette.Timeline"))
        // The declarations themselves, and the values the host's enums allow.
        let declared = Set(Self.names(Self.section(doc, "## Declarations").prefix(3).flatMap { Self.spans($0) }, after: ""))
        #expect(declared == Set(api.functions.filter { $0.scope == .bundle }.map(\.function.name)))
        let families = Set(Self.tables(Self.section(doc, "### `widget { … }`"))[1].compactMap { Self.spans($0).first })
        #expect(families == Set(WidgetFamily.allCases.map(\.rawValue)))
    }

    @Test func everyServiceFunctionIsInTheReference() throws {
        let doc = try Self.doc("script-api.md")
        let store = Self.tables(Self.section(doc, "### `store`"))[0].flatMap { Self.spans($0) }
        #expect(Self.names(store, after: "store.") == moduleFunctions("store"))
        #expect(Self.names(store, after: "g:") == functions("lunette.StoreGroup"))
        #expect(Self.names(store, after: "g.") == fields("lunette.StoreGroup"))
        let clock = Self.tables(Self.section(doc, "### `clock`"))[0].flatMap { Self.spans($0) }
        #expect(Self.names(clock, after: "clock.") == moduleFunctions("clock"))
        #expect(Self.names(Self.section(doc, "### `reload`"), after: "reload.") == moduleFunctions("reload"))
        #expect(Self.names(["host.usage()"], after: "host.") == moduleFunctions("host"))
        #expect(doc.contains("### `host.usage()`"))
        #expect(Self.names(Self.section(doc, "### `log`, `print`, `warn`"), after: "log.") == moduleFunctions("log"))
        let activities = Self.section(doc, "#### `activities`")
        #expect(Self.occurrences(activities, of: "activities.") == moduleFunctions("activities"))
        #expect(Self.occurrences(activities, of: "a:") == functions("lunette.Activity"))
        let os = Self.section(doc, "### `os`").flatMap { Self.spans($0) }
        #expect(Self.names(os, after: "os.") == moduleFunctions("os"))
    }

    @Test func theStandardLibraryRowsAreTheSandboxesGlobals() throws {
        let doc = try Self.doc("script-api.md")
        let rows = Self.section(doc, "## The standard library in the sandbox").filter { $0.hasPrefix("|") }
        func cells(_ first: String) -> [Substring] {
            rows.first { $0.split(separator: "|", omittingEmptySubsequences: false)[1].trimmingCharacters(in: .whitespaces) == first }?
                .split(separator: "|", omittingEmptySubsequences: false) ?? []
        }
        let base = cells("base")
        #expect(Set(Self.spans(base[2])) == Set(api.baseGlobals))
        #expect(Set(Self.spans(base[3])) == Set(api.removedBaseGlobals))
        #expect(Set(Self.spans(cells("`os`")[2])) == moduleFunctions("os"))
        #expect(Set(Self.spans(cells("libraries")[3])) == Set(api.removedLibraries))
        let kept = Set(api.libraries.map(\.name))
        #expect(kept == ["string", "table", "math", "utf8", "coroutine"])
    }

    @Test func theTestAPIIsTheTestingReferencesTable() throws {
        let doc = try Self.doc("testing.md")
        let cells = Self.tables(Self.section(doc, "## `t`"))[0].flatMap { Self.spans($0) }
        #expect(Self.names(cells, after: "t.") == functions("lunette.Test"))
        #expect(api.function("test") != nil)
    }
}

/// The same description held against what the sandbox really installs:
/// every global, library field and service function the types promise is
/// there, and nothing the sandbox has is missing from them; every
/// declaration field they list is one the host accepts.
@Suite("Script API: the runtime")
struct ScriptAPIRuntimeTests {
    let api = ScriptAPI.lunette

    /// A valid value for each declaration field, by "Class.field".
    static let samples: [String: String] = [
        "lunette.WidgetDeclaration.kind": #""W""#, "lunette.WidgetDeclaration.displayName": #""W""#,
        "lunette.WidgetDeclaration.description": #""d""#, "lunette.WidgetDeclaration.families": #"{ "systemSmall" }"#,
        "lunette.WidgetDeclaration.configuration": #""Cfg""#,
        "lunette.WidgetDeclaration.placeholder": "function() return {} end",
        "lunette.WidgetDeclaration.snapshot": "function() return {} end",
        "lunette.WidgetDeclaration.timeline": "timeline",
        "lunette.IntentDeclaration.id": #""Cfg""#, "lunette.IntentDeclaration.title": #""t""#,
        "lunette.IntentDeclaration.description": #""d""#, "lunette.IntentDeclaration.configuration": "true",
        "lunette.IntentDeclaration.parameters": "{ parameter }", "lunette.IntentDeclaration.perform": "function() end",
        "lunette.Parameter.name": #""p""#, "lunette.Parameter.type": #""entity""#, "lunette.Parameter.title": #""t""#,
        "lunette.Parameter.description": #""d""#, "lunette.Parameter.default": #""x""#, "lunette.Parameter.optional": "true",
        "lunette.Parameter.values": #"{ "x" }"#, "lunette.Parameter.query": #""Q""#,
        "lunette.QueryDeclaration.id": #""Q""#, "lunette.QueryDeclaration.suggested": "function() return {} end",
        "lunette.QueryDeclaration.entities": "function() return {} end",
        "lunette.ControlDeclaration.kind": #""C""#, "lunette.ControlDeclaration.type": #""toggle""#,
        "lunette.ControlDeclaration.displayName": #""c""#, "lunette.ControlDeclaration.preview": "function() return false end",
        "lunette.ControlDeclaration.value": "function() return false end", "lunette.ControlDeclaration.action": #""Act""#,
        "lunette.ActivityDeclaration.type": #""A""#, "lunette.ActivityDeclaration.attributes": #"{ n = "string" }"#,
        "lunette.ActivityDeclaration.state": #"{ s = "int?" }"#, "lunette.ActivityDeclaration.tick": "60",
        "lunette.ActivityDeclaration.updater": "function() end",
    ]

    /// A declaration call with every field the types list for it.
    func declaration(_ name: String, _ className: String) -> String {
        let fields = api.class(className)!.fields.map { field -> String in
            let key = "\(className).\(field.name)"
            guard let value = Self.samples[key] else {
                Issue.record("no sample value for \(key): add one to ScriptAPIRuntimeTests.samples")
                return ""
            }
            return "\(field.name) = \(value)"
        }
        return "\(name) { \(fields.joined(separator: ", ")) }"
    }

    /// Lua that fails with a list of differences when a table's keys are not `expected`.
    /// `optional` names may be absent (math's Lua 5.3 compatibility
    /// functions, which a Lua built without LUA_COMPAT_MATHLIB lacks).
    static func sameKeys(_ table: String, _ expected: [String], optional: [String] = []) -> String {
        """
        do
          local expected, problems = { \(expected.map { "[\"\($0)\"] = \(optional.contains($0) ? "false" : "true")" }.joined(separator: ", ")) }, {}
          for k in pairs(\(table)) do if expected[k] == nil then problems[#problems + 1] = "\(table) has " .. tostring(k) .. ", the types do not" end end
          for k, required in pairs(expected) do if required and \(table)[k] == nil then problems[#problems + 1] = "\(table) lacks " .. k end end
          if #problems > 0 then table.sort(problems); error(table.concat(problems, "; ")) end
        end
        """
    }

    @Test func everyGlobalAndFunctionTheTypesListIsThereAndNoOther() throws {
        var checks = ["local g = store.group(\"group.test\")"]
        for module in api.modules { checks.append(Self.sameKeys(module.name, module.functions.map(\.name))) }
        for library in api.libraries {
            let compatibility = api.compatibilityFields.first { $0.name == library.name }?.fields ?? []
            checks.append(Self.sameKeys(library.name, library.fields + compatibility, optional: compatibility))
        }
        for name in api.baseGlobals { checks.append("assert(\(name) ~= nil, \"no global \(name)\")") }
        for name in api.removedBaseGlobals + api.removedLibraries { checks.append("assert(\(name) == nil, \"\(name) is there\")") }
        for f in api.class("lunette.StoreGroup")!.functions { checks.append("assert(type(g.\(f.name)) == \"function\", \"no g:\(f.name)\")") }
        for f in api.class("lunette.StoreGroup")!.fields { checks.append("assert(g.\(f.name) ~= nil, \"no g.\(f.name)\")") }
        for (_, f) in api.functions where f.name != "test" { checks.append("assert(type(\(f.name)) == \"function\", \"no \(f.name)\")") }
        let main = """
            local function timeline()
            \(checks.joined(separator: "\n"))
              return { entries = { { date = clock.now() } } }
            end
            local parameter = { \(api.class("lunette.Parameter")!.fields.map { "\($0.name) = \(Self.samples["lunette.Parameter.\($0.name)"] ?? "nil")" }.joined(separator: ", ")) }
            \(declaration("widget", "lunette.WidgetDeclaration"))
            \(declaration("intent", "lunette.IntentDeclaration"))
            \(declaration("query", "lunette.QueryDeclaration"))
            intent { id = "Act", perform = function() end }
            \(declaration("control", "lunette.ControlDeclaration"))
            \(declaration("activity", "lunette.ActivityDeclaration"))
            """
        let testFile = """
            test("the runtime has what the types say", function(t)
              t.timeline("W")
              \(Self.sameKeys("t", api.class("lunette.Test")!.functions.map(\.name)))
            end)
            """
        let fixture = try BundleFixture(main: main, files: ["tests/api_test.lua": testFile])
        #expect(fixture.loadErrors() == [], "every field the types list is accepted by the host")
        let results = ScriptTestRunner(bundle: try fixture.load()).run()
        #expect(results.count == 1)
        #expect(results.first?.failure == nil, "\(results.first?.failure?.text ?? "")")
    }

    @Test func everyTypeTheDefinitionsNameIsDefined() throws {
        let defined = Set(api.classes.map(\.name) + api.aliases.map(\.name))
        var used: [String] = []
        func scan(_ type: String) {
            var rest = type[...]
            while let range = rest.range(of: "lunette.") {
                let name = "lunette." + rest[range.upperBound...].prefix { $0.isLetter || $0.isNumber }
                used.append(name)
                rest = rest[range.upperBound...]
            }
        }
        let functions = api.functions.map(\.function) + api.modules.flatMap(\.functions) + api.classes.flatMap(\.functions)
        for f in functions { f.parameters.forEach { scan($0.type) }; f.returns.forEach { scan($0.type) } }
        for c in api.classes { c.fields.forEach { scan($0.type) } }
        for a in api.aliases { scan(a.type) }
        #expect(used.count > 40)
        #expect(Set(used).subtracting(defined).isEmpty, "undefined: \(Set(used).subtracting(defined).sorted())")
        #expect(defined.subtracting(used).isEmpty, "never used: \(defined.subtracting(used).sorted())")
    }

    @Test func theDefinitionsAreLuaAndNameEveryGlobal() throws {
        let text = LuaTypesWriter.definitions(api, version: "test")
        #expect(text.hasPrefix("---@meta lunette\n"))
        let state = try LuaState()
        _ = try state.load(text, name: "lunette.d.lua")   // compiles
        for name in api.globals(.tests) where !api.baseGlobals.contains(name) && !api.libraries.contains(where: { $0.name == name }) {
            #expect(text.contains("function \(name)(") || text.contains("\n\(name) = {}\n"), "\(name) is defined")
        }
        #expect(text.contains("function StoreGroup:get(key) end"))
        #expect(text.contains("function Test.eq(got, expected, message) end"))
        #expect(text.contains("---@param message? string"))
        #expect(text.contains("---@field families? lunette.Family[]"))
        #expect(text.contains(#"---@alias lunette.Family "systemSmall"|"systemMedium""#))
    }
}

/// `lunette types` and the lint (issue 16, points 2 and 3).
@Suite("Editor files and lint")
struct EditorFilesTests {
    static var repository: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-types-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func writesThreeFilesAndASecondRunChangesNothing() throws {
        let dir = try folder()
        let files = EditorFiles(directory: dir, version: "test")
        let first = try files.write()
        #expect(first.map(\.path) == [".lunette/lunette.d.lua", ".luarc.json", ".luacheckrc"])
        #expect(first.allSatisfy { $0.changes })
        #expect(try files.write().allSatisfy { !$0.changes })
        let rc = try JSONValue.parse(String(contentsOfFile: dir + "/.luarc.json", encoding: .utf8))
        #expect(rc.members(named: "runtime").first?.value.members(named: "version").first?.value.kind == .string("Lua 5.4"))
    }

    @Test func theUsersOwnSettingsAreKeptAndTheirLuacheckrcIsNotReplaced() throws {
        let dir = try folder()
        try #"{ "diagnostics": { "globals": ["mine"] }, "workspace": { "library": ["lib"] } }"#.write(toFile: dir + "/.luarc.json", atomically: true, encoding: .utf8)
        try "std = 'max'\n".write(toFile: dir + "/.luacheckrc", atomically: true, encoding: .utf8)
        let files = EditorFiles(directory: dir, version: "test")
        #expect(throws: EditorFiles.Failure.foreignLuacheckConfig(dir + "/.luacheckrc")) { try files.write() }
        #expect(!FileManager.default.fileExists(atPath: dir + "/.lunette"), "nothing is written when one file is refused")
        try files.write(force: true)
        let rc = try String(contentsOfFile: dir + "/.luarc.json", encoding: .utf8)
        #expect(rc.contains(#""mine""#) && rc.contains(#""lib""#) && rc.contains(#""library": [\#n      "lib",\#n      ".lunette"\#n    ]"#))
        #expect(try String(contentsOfFile: dir + "/.luacheckrc", encoding: .utf8).hasPrefix(LuacheckConfig.marker))
        // Dotted keys, as LuaLS also reads them, become the nested settings they mean.
        try #"{ "runtime.version": "Lua 5.1", "Lua.workspace.library": ["/x"], "diagnostics.globals": ["g"] }"#
            .write(toFile: dir + "/.luarc.json", atomically: true, encoding: .utf8)
        try files.write(force: true)
        let unfolded = try JSONValue.parse(String(contentsOfFile: dir + "/.luarc.json", encoding: .utf8))
        #expect(unfolded.members?.map(\.key) == ["runtime", "workspace", "diagnostics", "$schema"])
        #expect(unfolded.members(named: "runtime").first?.value.members(named: "version").first?.value.kind == .string("Lua 5.4"))
        let library = unfolded.members(named: "workspace").first?.value.members(named: "library").first?.value
        #expect(library?.jsonText == #"["/x",".lunette"]"#)
        try "{ not json".write(toFile: dir + "/.luarc.json", atomically: true, encoding: .utf8)
        #expect(throws: EditorFiles.Failure.self) { try files.write() }
        #expect(try String(contentsOfFile: dir + "/.luarc.json", encoding: .utf8) == "{ not json", "a file that is not JSON is left as it is")
    }

    @Test(arguments: ["tasks", "weather", "wallpaper", "delivery"])
    func everyExampleCarriesCurrentEditorFiles(_ example: String) throws {
        let files = EditorFiles(directory: Self.repository + "/examples/" + example, version: LunetteVersion.current)
        let stale = try files.plan().filter(\.changes).map(\.path)
        #expect(stale == [], "run `lunette types examples/\(example)` and commit the result")
    }

    @Test func theAuthoringGuidesBundleLoadsAndItsTestPasses() throws {
        let doc = try String(contentsOfFile: Self.repository + "/docs/authoring.md", encoding: .utf8)
        let blocks = doc.components(separatedBy: "```lua\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(blocks.count == 2)
        let fixture = try BundleFixture(main: blocks[0], manifest: #"{ "id": "com.example.commute", "appGroups": ["group.com.example.commute"] }"#,
                                        files: ["tests/commute_test.lua": blocks[1]])
        let results = ScriptTestRunner(bundle: try fixture.load()).run()
        #expect(results.map(\.name) == ["the next departure counts down"])
        #expect(results.allSatisfy { $0.passed })
    }

    @Test func luacheckOutputIsRead() {
        let found = LuaLint.parse("""
            ./main.lua:3:7: (W211) unused variable 'x'
            tests/a_test.lua:10:1: (W113) accessing undefined variable 'io'
            Total: 2 warnings / 0 errors in 2 files
            """)
        #expect(found == [
            LintFinding(file: "main.lua", line: 3, column: 7, code: "W211", message: "unused variable 'x'"),
            LintFinding(file: "tests/a_test.lua", line: 10, column: 1, code: "W113", message: "accessing undefined variable 'io'"),
        ])
        #expect(!found[0].isError && found[1].isError)
    }

    @Test func lintFindingsSayWhatTheyMeanHere() {
        let found = LuaLint.explain(LuaLint.parse("""
            main.lua:3:5: (W111) setting non-standard global variable 'entries'
            main.lua:4:9: (W113) accessing undefined variable 'entries'
            main.lua:5:9: (W113) accessing undefined variable 'clokc'
            main.lua:6:9: (W143) accessing undefined field 'nwo' of global 'clock'
            main.lua:7:9: (W143) accessing undefined field 'fromat' of global 'string'
            main.lua:8:9: (W113) accessing undefined variable 'zzzzzz'
            util/fmt.lua:2:9: (W113) accessing undefined variable 'entries'
            main.lua:9:9: (W143) accessing undefined field 'pow' of global 'math'
            """), api: .lunette)
        #expect(found.map(\.isError) == [false, false, true, true, true, true, false, false])
        #expect(found[0].hint?.contains("rule L6") == true)
        #expect(found[1].hint == "'entries' is a global set at main.lua:3 (it lasts one call, rule L6): prefer a local, or a module")
        #expect(found[6].hint == found[1].hint, "main.lua's globals are there in every file's call")
        #expect(found[7].hint?.hasPrefix("a Lua 5.3 leftover") == true)
        #expect(found[2].hint == "no such global in Lunette's sandbox (did you mean 'clock'?)")
        #expect(found[3].hint == "no such field of 'clock' in the sandbox (did you mean 'now'?)")
        #expect(found[4].hint == "no such field of 'string' in the sandbox (did you mean 'format'?)")
        #expect(found[5].hint == "no such global in Lunette's sandbox (docs/script-api.md lists them)")
    }

    /// luacheck (and the benchmarks' tools) are found along `$PATH`, in its
    /// order, skipping folders that lack the program; without `PATH`, in
    /// /usr/bin then /bin.
    @Test func programsAreFoundAlongThePathInOrder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-path-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: folder + "/luacheck", contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        FileManager.default.createFile(atPath: folder + "/sh", contents: Data(), attributes: [.posixPermissions: 0o644])   // not executable
        #expect(LuaLint.installed(environment: ["PATH": "/nonexistent:\(folder):/bin"])?.executable == folder + "/luacheck")
        #expect(executableOnPath("sh", environment: ["PATH": "\(folder):/bin"]) == "/bin/sh")
        #expect(executableOnPath("sh", environment: [:]) == "/usr/bin/sh" || executableOnPath("sh", environment: [:]) == "/bin/sh")
        #expect(executableOnPath("no-such-program-\(getpid())", environment: ["PATH": folder]) == nil)
        #expect(LuaLint.installed(environment: ["PATH": "/nonexistent"]) == nil)
    }

    @Test(.enabled(if: LuaLint.installed() != nil, "luacheck is not installed (scripts/bootstrap lint installs Debian's lua-check)"))
    func theLintFindsAccidentalGlobalsAndTheExamplesAreClean() throws {
        let lint = try #require(LuaLint.installed())
        let fixture = try BundleFixture(main: """
            local unused = 1
            cache = {}
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function(ctx, config) return { entries = { { date = clokc.now(), s = string.fromat("x") } } } end }
            """, files: ["tests/w_test.lua": "test(\"x\", function(t) t.ok(true) end)\n"])
        let found = try lint.run(bundle: fixture.path, version: "test")
        #expect(found.map(\.code) == ["W211", "W111", "W113", "W143"])
        #expect(found.map(\.line) == [1, 2, 4, 4])
        for example in ["tasks", "weather", "wallpaper", "delivery"] {
            #expect(try lint.run(bundle: Self.repository + "/examples/" + example, version: "test") == [], "examples/\(example)")
        }
        // A folder of bundles, typed at the top and in one bundle: the definitions are not linted, tests know `test`.
        let parent = try folder()
        try FileManager.default.copyItem(atPath: Self.repository + "/examples/tasks", toPath: parent + "/tasks")
        try FileManager.default.removeItem(atPath: parent + "/tasks/.luacheckrc")
        try "test(\"plain\", function(t) t.ok(true) end)\n".write(toFile: parent + "/tasks/tests/plain.lua", atomically: true, encoding: .utf8)
        try EditorFiles(directory: parent, version: "test").write()
        #expect(try lint.run(bundle: parent, version: "test") == [])
    }

    @Test func lunetteTypesWritesThenLeavesAloneAndRefusesAForeignLuacheckrc() throws {
        let dir = try folder()
        let first = try CLI.run(["types", dir])
        #expect(first.status == 0 && first.stdout == "wrote \(dir)/.lunette/lunette.d.lua\nwrote \(dir)/.luarc.json\nwrote \(dir)/.luacheckrc\n",
                "\(first.stdout)\(first.stderr)")
        let second = try CLI.run(["types", dir])
        #expect(second.stdout == "unchanged \(dir)/.lunette/lunette.d.lua\nunchanged \(dir)/.luarc.json\nunchanged \(dir)/.luacheckrc\n", "\(second.stdout)")
        try "std = 'max'\n".write(toFile: dir + "/.luacheckrc", atomically: true, encoding: .utf8)
        let refused = try CLI.run(["types", dir])
        #expect(refused.status == 1 && refused.stderr.contains(".luacheckrc: not written by `lunette types`") && refused.stderr.contains("--force"),
                "\(refused.stderr)")
        let missing = try CLI.run(["types", dir + "/nope"])
        #expect(missing.status == 2 && missing.stderr == "error: \(dir)/nope: no such directory\n", "\(missing.stderr)")
        let printed = try CLI.run(["types", "--print"])
        #expect(printed.stdout.hasPrefix("---@meta lunette"))
    }

    @Test func checkSaysWhetherTheLintRan() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() local unused = 1; return { entries = { { date = clock.now() } }, policy = "never" } end }
            """)
        let off = try CLI.run(["check", fixture.path, "--json", "--no-lint"])
        #expect(off.stdout.contains(#""lint":"off""#) && !off.stdout.contains("W211"), "\(off.stdout)")
    }

    @Test(.enabled(if: LuaLint.installed() != nil, "luacheck is not installed (scripts/bootstrap lint installs Debian's lua-check)"))
    func checkReportsTheLintsFindingsWithTheirPlace() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() local unused = 1; return { entries = { { date = clock.now() } }, policy = "never" } end }
            """)
        let ran = try CLI.run(["check", fixture.path, "--json"])
        #expect(ran.stdout.contains(#""lint":"ran""#) && ran.stdout.contains("main.lua:2:31: (W211) unused variable 'unused'"), "\(ran.stdout)")
        #expect(ran.status == 0, "a warning does not fail the check")
        #expect(ran.stdout.contains(#""location":{"file":"\#(fixture.path)/main.lua","line":2,"column":31}"#), "\(ran.stdout)")
    }
}
