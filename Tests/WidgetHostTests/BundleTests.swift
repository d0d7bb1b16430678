import Foundation
import Testing
import LuaSandbox
@testable import WidgetHost

@Suite("Bundles and their declarations")
struct BundleTests {
    @Test func aBundleLoadsItsDeclarationsAndRequiresItsOwnModules() throws {
        let fixture = try BundleFixture(main: """
            local fmt = require("util.fmt")
            intent { id = "Config", configuration = true, parameters = {
              { name = "filter", type = "enum", values = { "a", "b" }, default = "a" },
              { name = "project", type = "entity", query = "Projects" } } }
            query { id = "Projects", suggested = function() return {} end }
            widget { kind = "K", families = { "systemMedium" }, configuration = "Config",
              placeholder = function() return {} end,
              timeline = function(ctx, config) return { entries = { { date = 0, text = fmt.shout(config.filter) } } } end }
            """, files: ["util/fmt.lua": "return { shout = function(s) return s:upper() .. '!' end }"])
        let bundle = try fixture.load()
        #expect(bundle.manifest.id == "com.example.test")
        #expect(bundle.declarations.widgets.map(\.kind) == ["K"])
        #expect(bundle.declarations.widgets[0].families == [.systemMedium])
        #expect(bundle.declarations.widgets[0].location.line == 6)
        #expect(bundle.declarations.intents[0].parameters.map(\.name) == ["filter", "project"])
        let (runtime, _) = try fixture.runtime()
        let widget = try runtime.configuration(kind: "K", values: ["filter": "b"])
        let result = runtime.timeline(widget)
        #expect(result.value?.entries.first?.content["text"] == "B!")
    }

    @Test func declarationProblemsAreAllReportedWithFileAndLine() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "A", placeholder = function() end, timeline = function() end }
            widget { kind = "A", placeholder = function() end, timeline = function() end }
            widget { kind = "B", families = { "systemHuge" }, placeholder = function() end, timeline = function() end }
            widget { kind = "C", displayName = 42, placeholder = function() end, timeline = function() end }
            widget { kind = "D", configuration = "Nope", placeholder = function() end, timeline = function() end }
            intent { id = "Cfg", configuration = true, parameters = { { name = "n", type = "int" } } }
            intent { id = "Ent", configuration = true, parameters = { { name = "p", type = "entity" } } }
            widget { kind = "E", placeholder = function() end, timline = function() end }
            intent { id = "Q", configuration = true, parameters = { { name = "p", type = "entity", query = "Missing" } } }
            """)
        let errors = fixture.loadErrors()
        let main = fixture.path + "/main.lua"
        let expected = [
            "\(main):2: widget 'A': duplicate kind 'A': already declared at \(main):1",
            "\(main):3: widget 'B': unknown family 'systemHuge'",
            "\(main):4: widget 'C': 'displayName' must be a string, got number",
            "\(main):6: intent 'Cfg': parameter 'n' is not optional and has no default",
            "\(main):7: intent 'Ent': parameter 'p': an entity parameter needs query",
            "\(main):8: widget 'E': missing function 'timeline'",
            "\(main):5: widget 'D': configuration intent 'Nope' is not declared",
            "\(main):9: intent 'Q': parameter 'p' uses query 'Missing', which is not declared",
        ]
        #expect(errors.count == expected.count, "\(errors)")
        for (error, prefix) in zip(errors, expected) {
            #expect(error.hasPrefix(prefix), "\(error)\n  expected to start with\n\(prefix)")
        }
    }

    @Test func anUnknownFieldIsAnError() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "A", placeholder = function() end, timeline = function() end, refresh = 5 }
            """)
        #expect(fixture.loadErrors().first?.hasSuffix("main.lua:1: widget 'A': unknown field 'refresh'") == true, "\(fixture.loadErrors())")
    }

    @Test func aMisspelledFieldIsNamedWithTheFieldItMeant() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "A", placeholder = function() end, timline = function() end }
            widget { kind = "B", placeholder = function() end, timeline = function() end, familes = { "systemSmall" } }
            intent { id = "X", perfom = function() end }
            """)
        let errors = fixture.loadErrors()
        #expect(errors.count == 3, "every problem in one run: \(errors)")
        #expect(errors.contains { $0.hasSuffix("main.lua:1: widget 'A': missing function 'timeline' (is 'timline' a misspelling of it?)") }, "\(errors)")
        #expect(errors.contains { $0.hasSuffix("main.lua:2: widget 'B': unknown field 'familes' (did you mean 'families'?)") }, "\(errors)")
        #expect(errors.contains { $0.hasSuffix("main.lua:3: intent 'X': missing function 'perform' (is 'perfom' a misspelling of it?)") }, "\(errors)")
    }

    @Test func aDeclarationWithSeveralProblemsReportsEachOfThem() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "A", displayName = 42, families = { "systemHuge" }, placeholder = function() end, timeline = function() end }
            intent { id = "I", parameters = { { name = "n", type = "strng", optional = "yes" } }, perform = 1 }
            """)
        let errors = fixture.loadErrors()
        let main = fixture.path + "/main.lua"
        #expect(errors == [
            "\(main):1: widget 'A': unknown family 'systemHuge' (families: \(WidgetFamily.names))",
            "\(main):1: widget 'A': 'displayName' must be a string, got number",
            "\(main):2: intent 'I': parameter 'n': unknown type 'strng' (did you mean 'string'? types: string, int, number, bool, date, enum, entity)",
            "\(main):2: intent 'I': parameter 'n': 'optional' must be true or false, got string",
            "\(main):2: intent 'I': 'perform' must be a function, got number",
        ], "\(errors)")
    }

    @Test func aRejectedDeclarationCausesNoFollowOnErrors() throws {
        let fixture = try BundleFixture(main: """
            intent { id = "Cfg", configuration = true, parameters = { { name = "n", type = "int" } } }
            widget { kind = "W", configuration = "Cfg", placeholder = function() end, timeline = function() end }
            query { id = "Q", suggested = 5 }
            intent { id = "Pick", parameters = { { name = "p", type = "entity", query = "Q" } }, perform = function() end }
            intent { id = "Act", perform = function() end, colour = "red" }
            control { kind = "C", type = "button", value = function() end, action = "Act" }
            widget { kind = "V", families = {}, configuration = "Nope", placeholder = function() end, timeline = function() end }
            """)
        let errors = fixture.loadErrors()
        let main = fixture.path + "/main.lua"
        #expect(errors == [
            "\(main):1: intent 'Cfg': parameter 'n' is not optional and has no default: a configuration intent needs one for new widgets (add default = … or optional = true)",
            "\(main):3: query 'Q': 'suggested' must be a function, got number",
            "\(main):5: intent 'Act': unknown field 'colour'",
            "\(main):7: widget 'V': 'families' is empty: list at least one of \(WidgetFamily.names)",
            "\(main):7: widget 'V': configuration intent 'Nope' is not declared",
        ], "a reference to a declaration left out for its own problems is not reported again; a left-out declaration's own references are still checked: \(errors)")
    }

    @Test func aDuplicateOfADeclarationLeftOutIsStillADuplicate() throws {
        let fixture = try BundleFixture(main: """
            intent { id = "C", configuration = true, parameters = { { name = "n", type = "nmber", default = 1 } } }
            widget { kind = "W", configuration = "C", placeholder = function() end, timeline = function() end }
            intent { id = "C", perform = function() end }
            widget { kind = "V", families = { "x" }, placeholder = function() end, timeline = function() end }
            widget { kind = "V", placeholder = function() end, timeline = function() end }
            """)
        let errors = fixture.loadErrors()
        let main = fixture.path + "/main.lua"
        #expect(errors == [
            "\(main):1: intent 'C': parameter 'n': unknown type 'nmber' (did you mean 'number'? types: string, int, number, bool, date, enum, entity)",
            "\(main):3: intent 'C': duplicate id 'C': already declared at \(main):1",
            "\(main):4: widget 'V': unknown family 'x' (families: \(WidgetFamily.names))",
            "\(main):5: widget 'V': duplicate kind 'V': already declared at \(main):4",
        ], "\(errors)")
    }

    @Test func aMisspelledReferenceNamesTheDeclarationItMeant() throws {
        let fixture = try BundleFixture(main: """
            intent { id = "Config", configuration = true }
            intent { id = "Toggle", perform = function() end }
            widget { kind = "W", configuration = "Confg", placeholder = function() end, timeline = function() end }
            control { kind = "C", type = "button", value = function() end, action = "Togle" }
            """)
        let main = fixture.path + "/main.lua"
        #expect(fixture.loadErrors() == [
            "\(main):3: widget 'W': configuration intent 'Confg' is not declared (did you mean 'Config'? configuration intents: Config)",
            "\(main):4: control 'C': action intent 'Togle' is not declared (did you mean 'Toggle'?)",
        ], "\(fixture.loadErrors())")
    }

    @Test func bundleJSONErrorsNameTheFileAndLine() throws {
        let syntax = try BundleFixture(main: "", manifest: "{\n  \"id\": \"x\",\n  \"appGroups\": [\"group.x\",]\n}")
        #expect(syntax.loadErrors().first?.hasPrefix(syntax.path + "/bundle.json:3:27: invalid JSON: expected a value, got ']'") == true, "\(syntax.loadErrors())")
        let unknown = try BundleFixture(main: "", manifest: "{\n  \"id\": \"x\",\n  \"appgroups\": []\n}")
        #expect(unknown.loadErrors().first?.hasPrefix(unknown.path + "/bundle.json:3:3: unknown key 'appgroups'") == true, "\(unknown.loadErrors())")
        let type = try BundleFixture(main: "", manifest: "{ \"id\": 7 }")
        #expect(type.loadErrors().first?.contains("'id' must be a string, got integer") == true, "\(type.loadErrors())")
        let group = try BundleFixture(main: "", manifest: "{ \"id\": \"x\", \"appGroups\": [\"a/b\"] }")
        #expect(group.loadErrors().first?.contains("invalid group id \"a/b\"") == true, "\(group.loadErrors())")
    }

    @Test func mainLuaSyntaxAndRuntimeErrorsNameTheLine() throws {
        let syntax = try BundleFixture(main: "widget {\n  kind = 'A'\n  placeholder = 1 }")
        #expect(syntax.loadErrors().first?.hasPrefix(syntax.path + "/main.lua:3:") == true, "\(syntax.loadErrors())")
        let runtime = try BundleFixture(main: "local x = nil\nx.y = 1")
        #expect(runtime.loadErrors().first?.hasPrefix(runtime.path + "/main.lua:2: attempt to index") == true, "\(runtime.loadErrors())")
        let empty = try BundleFixture(main: "-- nothing")
        #expect(empty.loadErrors().first?.contains("declares nothing") == true)
    }

    @Test func requireLoadsOnlyBundleAndHostModules() throws {
        let fixture = try BundleFixture(main: """
            local ok, message = pcall(require, "util.missing")
            assert(not ok and message:find("no util/missing.lua in the bundle", 1, true), message)
            local ok2, message2 = pcall(require, "../etc/passwd")
            assert(not ok2, "a path must not load")
            assert(require("string") == string, "host modules load")
            local a = require("cycle.a")
            widget { kind = "A", placeholder = function() end, timeline = function() end }
            """, files: ["cycle/a.lua": "return require('cycle.b')", "cycle/b.lua": "return require('cycle.a')"])
        let errors = fixture.loadErrors()
        #expect(errors.count == 1)
        #expect(errors.first?.contains("module 'cycle.a' is required while it loads (a require cycle)") == true, "\(errors)")
    }

    @Test func aModulesSyntaxErrorNamesItsFileAndLine() throws {
        let fixture = try BundleFixture(main: """
            local ok, message = pcall(require, "util.bad")
            assert(not ok)
            widget { kind = "A", placeholder = function() return { message = message } end, timeline = function() end }
            """, files: ["util/bad.lua": "local x =\nreturn x +"])
        let (runtime, _) = try fixture.runtime()
        let widget = try runtime.configuration(kind: "A")
        let message = runtime.placeholder(widget).value?.content["message"].stringValue ?? ""
        #expect(message.hasPrefix(fixture.path + "/util/bad.lua:2:"), "\(message)")
        #expect(message.contains("unexpected symbol"), "\(message)")
    }

    /// main.lua and the modules are compiled once a process: the load's
    /// sandbox compiles them, the call's loads their binary form.
    @Test func aBundlesChunksAreCompiledOncePerProcess() throws {
        let token = UUID().uuidString   // texts no other test compiled
        let module = "return { token = '\(token)' }"
        let fixture = try BundleFixture(main: """
            local m = require("util.m")
            widget { kind = "A", placeholder = function() return { token = m.token } end, timeline = function() end }
            """ + "\n-- \(token)", files: ["util/m.lua": module])
        let (runtime, _) = try fixture.runtime()
        let bundle = runtime.bundle
        let moduleSource = try #require(bundle.modules["util.m"])
        #expect(LuaState.binaryLoads(of: bundle.main.bytes, name: bundle.main.chunkName) == 1, "the glue loads what the syntax check compiled")
        #expect(LuaState.binaryLoads(of: moduleSource.bytes, name: moduleSource.chunkName) == 0)
        let widget = try runtime.configuration(kind: "A")
        #expect(runtime.placeholder(widget).value?.content["token"].stringValue == token)
        #expect(LuaState.binaryLoads(of: bundle.main.bytes, name: bundle.main.chunkName) == 2, "the placeholder's sandbox loads the binary form")
        #expect(LuaState.binaryLoads(of: moduleSource.bytes, name: moduleSource.chunkName) == 1)
    }

    /// A module is compiled when a script requires it, under the call's
    /// memory cap (as Lua's `load` from the script would be): one whose
    /// compile alone needs ≈ 11 MB ends a 4 MB call with a memory error,
    /// and the state never holds more than the cap.
    @Test func aModulesCompileIsChargedToTheCallThatRequiresIt() throws {
        var constants = "return function() return {\n"
        for i in 0..<200_000 { constants += "'k\(i)',\n" }
        constants += "} end\n"
        let fixture = try BundleFixture(main: """
            widget { kind = "A", placeholder = function() return {} end,
              timeline = function()
                local big = require("util.big")
                return { entries = { { date = clock.now(), n = #big() } } }
              end }
            """, manifest: #"{ "id": "com.example.test", "appGroups": ["group.test"], "limits": { "memoryMB": 4 } }"#,
            files: ["util/big.lua": constants])
        let (runtime, _) = try fixture.runtime()
        let outcome = runtime.timeline(try runtime.configuration(kind: "A")).outcome
        #expect(outcome.status == .memory, "\(outcome.status) \(outcome.message ?? "")")
        let state = try #require(runtime.pool.sandbox(for: .timeline)).state
        #expect(state.memoryUsed <= 5 << 20, "the state holds \(state.memoryUsed) bytes")
    }
}
