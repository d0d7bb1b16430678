import Foundation
import LuaSandbox
import Testing
@testable import WidgetHost

/// Integers stay integers (issue 16): exact to 64 bits, as Lua's are, from
/// the command line and JSON files to the script; an integer beyond 64
/// bits is an error that says where, not a float that lost digits.
@Suite("Large integers")
struct LargeIntegerTests {
    static let above53 = "9007199254740993"   // 2^53 + 1: a Double cannot hold it

    func parameter(_ type: ParameterType) -> IntentParameter {
        IntentParameter(name: "n", type: type, title: nil, defaultValue: nil, isOptional: false, values: [], query: nil)
    }

    @Test func configTextKeepsIntegersExactAndFloatsFloats() throws {
        for type in [ParameterType.int, .number, .date] {
            #expect(try ParameterValues.parse(Self.above53, for: parameter(type), calendar: .utc) == .integer(9_007_199_254_740_993), "\(type)")
            #expect(try ParameterValues.parse("-9223372036854775808", for: parameter(type), calendar: .utc) == .integer(.min), "\(type)")
        }
        #expect(try ParameterValues.parse("2.0", for: parameter(.number), calendar: .utc) == .number(2), "a float stays a float")
        #expect(try ParameterValues.check(.number(2), for: parameter(.number)) == .number(2))
        #expect(try ParameterValues.check(.number(2), for: parameter(.int)) == .integer(2), "an int takes a whole float, as an integer")
        for type in [ParameterType.int, .number, .date] {
            #expect(throws: ParameterError(message: "parameter 'n': the integer 9223372036854775808 does not fit in 64 bits (-9223372036854775808 to 9223372036854775807); write it as a string, or with a '.0' for a float")) {
                try ParameterValues.parse("9223372036854775808", for: parameter(type), calendar: .utc)
            }
        }
        #expect(throws: ParameterError.self) { try ParameterValues.parse("0x10", for: parameter(.number), calendar: .utc) }
    }

    @Test func aScenarioKeepsIntegersExactAndRefusesOnesBeyond64BitsAtTheirPlace() throws {
        let fixture = try BundleFixture(main: """
            intent { id = "C", configuration = true, parameters = { { name = "n", type = "number", default = 1 } } }
            widget { kind = "W", configuration = "C", placeholder = function() return {} end,
              timeline = function() return { entries = {} } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-int-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let good = directory.appendingPathComponent("good.json").path
        try """
            { "widgets": [ { "kind": "W", "config": { "n": \(Self.above53) } } ],
              "events": [ { "at": "+1h", "type": "storeSet", "group": "group.test", "key": "k", "value": [\(Self.above53)] } ] }
            """.write(toFile: good, atomically: true, encoding: .utf8)
        let scenario = try Scenario.load(good, runtime: runtime, start: BundleFixture.midnight)
        #expect(scenario.widgets.first?.values?[LuaString("n")] == .integer(9_007_199_254_740_993))
        guard case .storeSet(_, _, let value) = scenario.events.first?.kind else { Issue.record("no storeSet"); return }
        #expect(value == .array([.integer(9_007_199_254_740_993)]))
        let bad = directory.appendingPathComponent("bad.json").path
        try "{ \"widgets\": [ { \"kind\": \"W\" } ],\n  \"events\": [ { \"at\": 18446744073709551616, \"type\": \"reloadAll\" } ] }"
            .write(toFile: bad, atomically: true, encoding: .utf8)
        do {
            _ = try Scenario.load(bad, runtime: runtime, start: BundleFixture.midnight)
            Issue.record("accepted")
        } catch {
            #expect(error.errors.map(\.locatedMessage) == [
                "\(bad):2:23: invalid JSON: the integer 18446744073709551616 does not fit in 64 bits (-9223372036854775808 to 9223372036854775807); write it as a string, or with a '.0' for a float",
            ])
        }
    }

    @Test func theStoreCommandKeepsIntegersExactAndRefusesOnesBeyond64Bits() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-int-\(UUID().uuidString)").path
        let set = try CLI.run(["store", "set", "n", Self.above53, "--group", "group.a", "--store-dir", root])
        #expect(set.status == 0, "\(set.stderr)")
        let get = try CLI.run(["store", "get", "n", "--group", "group.a", "--store-dir", root, "--json"])
        #expect(get.stdout == "{\"group\":\"group.a\",\"key\":\"n\",\"type\":\"integer\",\"value\":\(Self.above53)}\n", "\(get.stdout)")
        let big = try CLI.run(["store", "set", "n", "9223372036854775808", "--group", "group.a", "--store-dir", root])
        #expect(big.status == 2 && big.stderr.contains("the integer 9223372036854775808 does not fit in 64 bits"), "\(big.stderr)")
    }
}
