import Foundation
import Testing
@testable import WidgetHost

/// The JSON settings files (scenarios, policy files, bundle.json) read
/// through the located tree: null means "not set", every error sits where
/// its value is, a repeated key is an error at its second occurrence.
@Suite("JSON settings files")
struct SettingsFileTests {
    func file(_ json: String, named name: String = "settings") throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func runtime() throws -> WidgetRuntime {
        try BundleFixture(main: policyWidget("\"never\"")).runtime().0
    }

    /// The problems of loading `json` as a scenario (empty when it loads).
    func scenarioErrors(_ json: String) throws -> [LocatedError] {
        let runtime = try runtime()
        let path = try file(json, named: "scenario")
        do {
            _ = try Scenario.load(path, runtime: runtime, start: BundleFixture.midnight)
            return []
        } catch {
            return error.errors
        }
    }

    /// The one problem of loading `json` as a scenario (nil when it loads);
    /// a second problem fails the test.
    func scenarioError(_ json: String) throws -> LocatedError? {
        let errors = try scenarioErrors(json)
        #expect(errors.count <= 1, "one mistake, one problem: \(errors)")
        return errors.first
    }

    @Test func nullMeansNotSet() throws {
        let runtime = try runtime()
        let scenario = try Scenario.load(try file("""
            { "timezone": null, "duration": null, "start": null, "policy": null,
              "widgets": [ { "kind": "W", "family": null, "config": null } ],
              "events": [ { "at": "+1h", "type": "storeSet", "group": "group.test", "key": "k", "value": null } ] }
            """), runtime: runtime, start: BundleFixture.midnight)
        #expect(scenario.timeZone == nil, "\"timezone\": null keeps the host's zone")
        #expect(scenario.duration == 86_400)
        #expect(scenario.start == BundleFixture.midnight)
        #expect(scenario.widgets.first?.family == .systemSmall)
        guard case .storeSet(_, _, let value) = scenario.events.first?.kind else { Issue.record("no storeSet"); return }
        #expect(value == nil, "a null value removes the key")
        let policy = try HostPolicy.load(try file(#"{ "budget": null, "developerMode": null }"#))
        #expect(policy == .standard)
    }

    @Test func aBadValueIsReportedAtTheLineOfThatValue() throws {
        let at = try #require(try scenarioError("""
            {
              "widgets": [ { "kind": "W" } ],
              "events": [
                { "at": "+1h", "type": "reloadAll" },
                { "at": "soon", "type": "reloadAll" }
              ]
            }
            """))
        #expect(at.line == 5 && at.column == 13, "\(at)")
        #expect(at.message.hasPrefix("'events[2].at' must be an ISO date"), "\(at)")
        let kind = try #require(try scenarioError("""
            {
              "widgets": [
                { "kind": "W" },
                { "kind": "Nope" }
              ]
            }
            """))
        #expect(kind.line == 4, "\(kind)")
        #expect(kind.message.contains("no widget kind 'Nope'"), "\(kind)")
    }

    @Test func aMissingKeyIsReportedAtItsObject() throws {
        let error = try #require(try scenarioError("""
            {
              "widgets": [ { "kind": "W" } ],
              "events": [
                { "at": "+1h", "type": "reloadAll" },
                { "at": "+2h" }
              ]
            }
            """))
        #expect(error.line == 5 && error.column == 5, "\(error)")
        #expect(error.message.hasPrefix("'events[2].type' is missing"), "\(error)")
    }

    @Test func aKeyGivenTwiceIsAnErrorAtTheSecond() throws {
        let top = try #require(try scenarioError("""
            {
              "timezone": "Europe/Paris",
              "widgets": [ { "kind": "W" } ],
              "timezone": "Mars/Olympus"
            }
            """))
        #expect(top.line == 4 && top.column == 3, "\(top)")
        #expect(top.message == "duplicate key 'timezone' (first at line 2)", "\(top)")
        let nested = try #require(try scenarioError("{ \"widgets\": [ { \"kind\": \"W\" } ],\n  \"policy\": { \"budget\": 4,\n    \"budget\": -1 } }"))
        #expect(nested.line == 3 && nested.message == "duplicate key 'policy.budget' (first at line 2)", "\(nested)")
    }

    @Test func syntaxErrorsCarryTheirLineAndColumnAsFields() throws {
        let path = try file("{\n  \"budget\": 4\n  \"budgetScope\": \"kind\"\n}")
        do {
            _ = try HostPolicy.load(path)
            Issue.record("accepted")
        } catch {
            #expect(error.errors == [LocatedError(file: path, line: 3, column: 3, message: "invalid JSON: expected ',' or '}', got '\"'")])
            #expect(error.description == "invalid: \(path):3:3: invalid JSON: expected ',' or '}', got '\"'")
        }
    }

    @Test func aNullInsideAStoreValueIsReportedAtTheNull() throws {
        let error = try #require(try scenarioError("""
            { "widgets": [ { "kind": "W" } ],
              "events": [ { "at": "+1h", "type": "storeSet", "group": "group.test", "key": "k",
                            "value": [ 1,
                                       null ] } ] }
            """))
        #expect(error.line == 4 && error.column == 28, "\(error)")
        #expect(error.message.hasPrefix("'events[1].value': null inside an array or object"), "\(error)")
    }

    @Test func anInvalidAppGroupIsReportedAtItsItem() throws {
        let bundle = try BundleFixture(main: "", manifest: "{\n  \"id\": \"x\",\n  \"appGroups\": [\n    \"group.ok\",\n    \"a/b\"\n  ]\n}")
        #expect(bundle.loadErrors().first?.hasPrefix(bundle.path + "/bundle.json:5:5: 'appGroups' has an invalid group id \"a/b\"") == true, "\(bundle.loadErrors())")
    }

    @Test func everyProblemOfABundleJSONIsReportedAtItsOwnLine() throws {
        let bundle = try BundleFixture(main: "", manifest: """
            {
              "id": "com example",
              "appgroups": ["group.a"],
              "limits": { "memoryMB": 0 }
            }
            """)
        let json = bundle.path + "/bundle.json"
        #expect(bundle.loadErrors() == [
            "\(json):2:9: 'id' must be a non-empty reverse-DNS name without spaces or '/', got \"com example\"",
            "\(json):3:3: unknown key 'appgroups' (did you mean 'appGroups'?)",
            "\(json):4:27: 'limits.memoryMB' must be at least 1, got 0",
        ])
    }

    @Test func aMisspelledEventTypeAndAnUnknownKeyAreBothReportedWithTheNameTheyMeant() throws {
        let errors = try scenarioErrors("""
            {
              "widgets": [ { "kind": "W" } ],
              "duraton": "2h",
              "events": [
                { "at": "+1h", "type": "appForegrund", "kidn": "W" },
                { "at": "+2h", "type": "storeSet", "group": "group.test", "key": "k", "valeu": 1 }
              ]
            }
            """)
        let messages = errors.map { "\($0.line ?? 0):\($0.column ?? 0): \($0.message)" }
        #expect(messages == [
            "3:3: unknown key 'duraton' (did you mean 'duration'?)",
            "5:28: 'events[1].type' is not an event type: \"appForegrund\" (did you mean 'appForeground'? types: \(ScenarioEvent.typeNames))",
            "5:44: unknown key 'events[1].kidn' (did you mean 'kind'?)",
            "6:75: unknown key 'events[2].valeu' (did you mean 'value'?)",
        ], "\(messages)")
    }

    @Test func anUnknownKeyWithNoCloseNameListsTheKnownOnes() throws {
        let error = try #require(try scenarioError(#"{ "widgets": [ { "kind": "W" } ], "events": [ { "at": "+1h", "type": "reloadAll", "why": 1 } ] }"#))
        #expect(error.message == "unknown key 'events[1].why' (known: at, type)", "\(error)")
    }

    @Test func aBadEventDoesNotHideTheNextOnesNorMakeTheScenarioEmpty() throws {
        let errors = try scenarioErrors("""
            {
              "events": [
                { "at": "soon", "type": "widgetAdded", "kind": "W" },
                { "at": "+1h", "type": "reloadTimelines", "kind": "Nope" },
                { "at": "+2h", "type": "storeSet", "group": "group.test", "key": "k", "value": [ null ] }
              ]
            }
            """)
        #expect(errors.map(\.line) == [3, 4, 5], "\(errors)")
        #expect(!errors.contains { $0.message.contains("nothing to simulate") }, "the widgetAdded event was not read for its own problem: \(errors)")
    }

    @Test func everyBadConfigurationValueIsReportedAtItsValue() throws {
        let runtime = try BundleFixture(main: """
            intent { id = "C", configuration = true, parameters = {
              { name = "size", type = "enum", values = { "small", "big" }, default = "small" },
              { name = "count", type = "int", default = 1 } } }
            widget { kind = "W", configuration = "C", placeholder = function() return {} end,
              timeline = function() return { entries = {} } end }
            """).runtime().0
        let path = try file("""
            { "widgets": [ { "kind": "W", "config": {
                "size": "huge",
                "count": "three",
                "sise": "big" } } ] }
            """, named: "scenario")
        do {
            _ = try Scenario.load(path, runtime: runtime, start: BundleFixture.midnight)
            Issue.record("accepted")
        } catch {
            #expect(error.errors.map { "\($0.line ?? 0):\($0.column ?? 0): \($0.message)" } == [
                "2:13: widgets[1]: parameter 'size': \"huge\" is not one of small, big",
                "3:14: widgets[1]: parameter 'count' expects a whole number, got string \"three\"",
                "4:13: widgets[1]: intent 'C' has no parameter 'sise' (did you mean 'size'? parameters: size, count)",
            ], "\(error)")
        }
    }

    @Test func everyProblemOfAPolicyFileIsReported() throws {
        let path = try file("""
            {
              "budget": -1,
              "budgetScope": "galaxy",
              "timelineDeadline": { "soft": 1, "hrad": 2 }
            }
            """)
        do {
            _ = try HostPolicy.load(path)
            Issue.record("accepted")
        } catch {
            #expect(error.errors.map(\.line) == [2, 3, 4], "\(error)")
            #expect(error.errors.last?.message == "unknown key 'timelineDeadline.hrad' (did you mean 'hard'?)", "\(error)")
            #expect(error.text.split(separator: "\n").count == 3, "one line per problem: \(error.text)")
        }
    }

    /// The event types and fields the reader knows are those docs/scenarios.md
    /// lists: the fields an event of an unknown type may have without being
    /// called unknown, and the types a misspelled one is matched against.
    @Test func theEventTypesAndFieldsAreTheDocumentedOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/scenarios.md"), encoding: .utf8)
        let table = try #require(text.components(separatedBy: "| type | fields | what happens |").last?.components(separatedBy: "\n\n").first)
        var types: [String] = []
        var fields: Set<String> = ["at", "type"]
        for row in table.split(separator: "\n").dropFirst() {   // the |---| line
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map { String($0) }
            guard cells.count > 3 else { continue }
            types.append(cells[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")))
            let named = cells[2].replacingOccurrences(of: #"\([^)]*\)"#, with: "", options: .regularExpression)
            for match in named.matches(of: /`([A-Za-z]+)`/) { fields.insert(String(match.1)) }
        }
        #expect(types == ScenarioEvent.types)
        #expect(fields == ScenarioEvent.fieldNames, "documented but unknown to the reader: \(fields.subtracting(ScenarioEvent.fieldNames)); the other way: \(ScenarioEvent.fieldNames.subtracting(fields))")
    }
}
