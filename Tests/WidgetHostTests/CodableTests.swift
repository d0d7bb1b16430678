import Foundation
import Testing
@testable import WidgetHost

/// Values, timelines, diagnostics and events are Codable (issue 14, point 5).
@Suite("Codable values")
struct CodableTests {
    func roundTrip<T: Codable>(_ value: T) throws -> (T, String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let data = try encoder.encode(value)
        return (try JSONDecoder().decode(T.self, from: data), String(decoding: data, as: UTF8.self))
    }

    @Test func plainLuaDataRoundTrips() throws {
        let value: LuaValue = .table(LuaTable(fields: [
            "n": .integer(3), "x": .number(2.5), "ok": .boolean(true), "title": "Buy milk",
            "tags": .table(LuaTable(array: ["home", "today"])), "empty": .table(LuaTable()),
            "raw": .string(LuaString(bytes: [0xff, 0x00, 0x41])),
        ]))
        let (back, json) = try roundTrip(value)
        #expect(back == value, "\(json)")
        #expect(json.contains(#""raw":{"$bytes":"/wBB"}"#), "\(json)")
    }

    @Test func timelinesAndPoliciesRoundTrip() throws {
        let entry = TimelineEntry(date: 1_795_219_200, content: LuaTable(fields: ["date": .integer(1_795_219_200), "n": 1]),
                                  relevance: (score: 2, duration: 600))
        for policy in [ReloadPolicy.atEnd, .never, .after(1_795_220_000)] {
            let timeline = Timeline(entries: [entry, TimelineEntry(date: 1_795_219_800, content: LuaTable(fields: ["n": 2]), relevance: nil)],
                                    policy: policy)
            let (back, json) = try roundTrip(timeline)
            #expect(back == timeline, "\(json)")
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ReloadPolicy.self, from: Data(#""sometimes""#.utf8)) }
    }

    @Test func diagnosticsKeepTheirLimits() throws {
        let limits: [Diagnostic.Limit] = [.deadline(limit: .milliseconds(300), elapsed: .milliseconds(302)),
                                          .instructions(limit: 1000, elapsed: .milliseconds(5)),
                                          .memory(cap: 30 << 20, peak: 31 << 20), .output(cap: 65_536)]
        for limit in limits {
            let diagnostic = Diagnostic(.timeout, "main.lua:3: boom", file: "main.lua", line: 3, traceback: "stack traceback:", limit: limit)
            let (back, json) = try roundTrip(diagnostic)
            #expect(back == diagnostic, "\(json)")
        }
    }

    @Test func serviceEventsRoundTrip() throws {
        let id = WidgetID(bundle: "com.example.tasks", number: 2)
        let events: [HostEvent] = [
            .reloaded(id, at: 10, reason: .request, counted: true, deferredFrom: 5, status: .ok),
            .shown(id, at: 10, entry: TimelineEntry(date: 10, content: LuaTable(fields: ["n": 1]), relevance: nil), isPlaceholder: false),
            .failed(id, at: 11, role: .timeline, diagnostic: Diagnostic(.error, "boom")),
            .budgetExhausted(id, at: 12, until: 99),
        ]
        let (back, json) = try roundTrip(events)
        #expect(back.count == 4, "\(json)")
        guard case .reloaded(let backID, _, let reason, let counted, let deferredFrom, _) = back[0],
              case .failed(_, _, let role, let diagnostic) = back[2] else { Issue.record("\(json)"); return }
        #expect(backID == id && reason == .request && counted && deferredFrom == 5)
        #expect(role == .timeline && diagnostic.message == "boom")
    }
}
