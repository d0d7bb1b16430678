import Foundation
import Testing
@testable import WidgetHost

/// One JSON convention everywhere (docs/json.md): plain data from Lua and
/// the same data from the store give the same text.
@Suite("One JSON convention")
struct JSONConventionTests {
    @Test func luaValuesAndStoreValuesWriteTheSameText() {
        let cases: [(LuaValue, StoreValue, String)] = [
            (.number(.nan), .double(.nan), #""NaN""#),
            (.number(.infinity), .double(.infinity), #""Infinity""#),
            (.number(-.infinity), .double(-.infinity), #""-Infinity""#),
            (.number(2), .double(2), "2.0"),
            (.integer(2), .integer(2), "2"),
            (.string(LuaString(bytes: [0xFF, 0xFE])), .bytes([0xFF, 0xFE]), #"{"$bytes":"//4="}"#),
            (.string("a\"\\\n\u{01}\u{2028}é"), .string("a\"\\\n\u{01}\u{2028}é"), #""a\"\\\n\u0001\u2028é""#),
            (["b": [1, 2.5], "a": ["x": false]], ["b": [1, 2.5], "a": ["x": false]], #"{"a":{"x":false},"b":[1,2.5]}"#),
        ]
        for (lua, store, text) in cases {
            #expect(lua.jsonText == text)
            #expect(store.json == text)
        }
    }

    @Test func storeDataCrossingIntoLuaKeepsItsText() throws {
        let values: [StoreValue] = [.double(.nan), .double(-0.0), .bytes([0, 0xC0]), ["k": [.string("\u{2029}"), .double(1e300)]]]
        for value in values {
            #expect(value.lua.jsonText == value.json)
            let back = try #require(try StoreValue(json: value.json))
            #expect(back.json == value.json, "the store reads back what it writes")
        }
    }

    @Test func aReportWritesCountsAsIntegersAndANeverFreeSlotAsNull() throws {
        let fixture = try BundleFixture(main: policyWidget("{ after = clock.add(now, { minutes = 15 }) }"))
        let (runtime, _) = try fixture.runtime()
        var policy = HostPolicy()
        policy.budget = 0
        let scenario = Scenario(start: BundleFixture.midnight, duration: 3600, widgets: [try runtime.configuration(kind: "W")], policy: policy)
        let json = Simulator(bundle: runtime.bundle, scenario: scenario, store: fixture.store).run().json
        #expect(json.contains(#""next":{"at":null,"#), "\(json)")
        #expect(json.contains(#""budget":{"limit":0,"used":0,"#), "\(json)")
        #expect(json.contains(#""id":1,"#), "\(json)")
    }
}
