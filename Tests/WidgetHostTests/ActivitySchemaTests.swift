import Foundation
import Testing
@testable import WidgetHost

/// Activity declarations (issue 13, point 1): the schemas of attributes and
/// content state, checked at load with file and line, and values checked
/// against them.
@Suite("Activity declarations and schemas")
struct ActivitySchemaTests {
    static let widget = """
        widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
        """

    @Test func schemasAreReadWithTheirTypesAndOptionals() throws {
        let fixture = try BundleFixture(main: Self.widget + """

            activity { type = "Delivery",
              attributes = { orderNumber = "string", items = "int" },
              state = { status = "string", eta = "date", driver = "string?", extra = "table?" },
              tick = 60, updater = function(activity, event) end }
            """)
        let activity = try #require(try fixture.load().declarations.activities.first)
        #expect(activity.tick == 60)
        #expect(activity.attributes.fields.map(\.name) == ["items", "orderNumber"])
        #expect(activity.state.fields.first { $0.name == "driver" } == SchemaField(name: "driver", type: .string, isOptional: true))
        #expect(activity.state.fields.first { $0.name == "eta" }?.type == .date)
    }

    @Test func mistakesAreReportedAtTheirLine() throws {
        let cases: [(String, String)] = [
            (#"activity { type = "A", state = { eta = "time" }, updater = function() end }"#,
             "activity 'A': state.eta: unknown type 'time' (types: string, int, number, bool, date, table, each with a trailing ? for optional)"),
            (#"activity { type = "A", attributes = { "string" }, updater = function() end }"#, "activity 'A': 'attributes' must be a table of name = \"type\""),
            (#"activity { type = "A", state = { n = 3 }, updater = function() end }"#, "activity 'A': state.n must be a type name as a string, got number"),
            (#"activity { type = "A", tick = 0, updater = function() end }"#, "activity 'A': 'tick' must be a positive number of seconds, got 0.0"),
            (#"activity { type = "A", state = {} }"#, "activity 'A': missing function 'updater'"),
        ]
        for (source, message) in cases {
            let fixture = try BundleFixture(main: Self.widget + "\n" + source)
            let errors = fixture.loadErrors()
            #expect(errors.count == 1, "\(errors)")
            #expect(errors.first?.hasPrefix(fixture.path + "/main.lua:2: " + message) == true, "\(errors)")
        }
    }

    @Test func everyMistakeOfASchemaIsReported() throws {
        let fixture = try BundleFixture(main: Self.widget + """

            activity { type = "A", attributes = { n = 3 }, state = { eta = "time", who = "strng?" }, tick = -1, updater = function() end }
            """)
        let prefix = fixture.path + "/main.lua:2: activity 'A': "
        let types = "types: string, int, number, bool, date, table, each with a trailing ? for optional"
        #expect(fixture.loadErrors() == [
            prefix + "attributes.n must be a type name as a string, got number",
            prefix + "state.eta: unknown type 'time' (\(types))",
            prefix + "state.who: unknown type 'strng?' (did you mean 'string?'? \(types))",
            prefix + "'tick' must be a positive number of seconds, got -1.0",
        ], "\(fixture.loadErrors())")
    }

    @Test func valuesAreCheckedAgainstTheSchema() throws {
        let fixture = try BundleFixture(main: Self.widget + """

            activity { type = "D", state = { status = "string", eta = "date", count = "int", driver = "string?" },
              updater = function() end }
            """)
        let schema = try #require(try fixture.load().declarations.activities.first).state
        #expect(schema.problem(in: ["status": "placed", "eta": 1_795_219_200, "count": 2], what: "state") == nil)
        #expect(schema.problem(in: ["status": "placed", "eta": 1.5, "count": 2.0, "driver": "Ann"], what: "state") == nil)
        #expect(schema.problem(in: ["status": "placed", "count": 2], what: "state") == "state.eta is missing (date; add ? to the type to make it optional)")
        #expect(schema.problem(in: ["status": "placed", "eta": "soon", "count": 2], what: "state") == "state.eta must be a date (seconds since the epoch), got string")
        #expect(schema.problem(in: ["status": "placed", "eta": 1, "count": 2.5], what: "state") == "state.count must be an int, got number")
        #expect(schema.problem(in: ["status": "x", "eta": 1, "count": 1, "colour": "red"], what: "state")?.hasPrefix("state.colour is not a field of the schema") == true)
        #expect(schema.problem(in: .string("x"), what: "state") == "state must be a table of its fields, got string")
    }
}
