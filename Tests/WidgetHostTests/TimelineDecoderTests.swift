import Foundation
import Testing
import LuaSandbox
@testable import WidgetHost

@Suite("What a provider may return")
struct TimelineDecoderTests {
    /// Decodes the value `lua` both ways the host does: from `LuaValue`s
    /// (what a worker process sends) and read in place (a call in
    /// process). The two must agree, result and warnings, or error.
    func decode(_ lua: String, policy: HostPolicy = .standard) throws -> Result<TimelineDecoder.Decoded<Timeline>, DecodeError> {
        let state = try LuaState(profile: .trusted)
        let plain = TimelineDecoder.timeline(try state.run("return " + lua).first, policy: policy)
        let function = try state.load("return " + lua, name: "result")
        let inPlace = try state.call(function) { results in TimelineDecoder.timeline(results.first, policy: policy) }
        switch (plain, inPlace) {
        case (.success(let a), .success(let b)):
            #expect(a.value == b.value && a.warnings == b.warnings, "\(lua): decoded differently in place")
        case (.failure(let a), .failure(let b)):
            #expect(a.message == b.message, "\(lua): refused differently in place")
        default:
            Issue.record("\(lua): \(plain) from values, \(inPlace) in place")
        }
        return plain
    }

    @Test("T5, T8: entries are sorted with a warning, and entries closer than 5 minutes draw a warning") func entriesAreSortedWithAWarningAndCloseOnesAreFlagged() throws {
        let decoded = try decode("{ entries = { { date = 900 }, { date = 0 }, { date = 60 } }, policy = { after = 1000 } }").get()
        #expect(decoded.value.entries.map(\.date) == [0, 60, 900])
        #expect(decoded.value.policy == .after(1000))
        #expect(decoded.warnings.contains { $0.contains("not in date order") })
        #expect(decoded.warnings.contains { $0.contains("60 s apart, closer than 300 s (rule T8)") })
    }

    @Test func badResultsAreRefusedWithAReason() throws {
        let cases: [(String, String)] = [
            ("42", "timeline must return { entries"),
            ("{ entries = { { text = 'x' } } }", "entries[1] has no date"),
            ("{ entries = { { date = 'soon' } } }", "entries[1].date must be a number"),
            ("{ entries = {}, policy = 'sometimes' }", "policy must be \"atEnd\", \"never\" or { after = <date> }"),
            ("{ entries = {}, refresh = 5 }", "unknown field 'refresh'"),
            ("{ entries = { { date = 1, relevance = { duration = 5 } } } }", "relevance.score must be a number"),
        ]
        for (lua, message) in cases {
            guard case .failure(let error) = try decode(lua) else {
                Issue.record("\(lua) was accepted")
                continue
            }
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test("T9: too many entries draw a warning, then are refused") func tooManyEntriesWarnThenAreRejected() throws {
        var policy = HostPolicy()
        policy.entriesWarning = 3
        policy.entriesLimit = 5
        let four = try decode("{ entries = { {date=0}, {date=300}, {date=600}, {date=900} } }", policy: policy).get()
        #expect(four.warnings.contains { $0.contains("4 entries, over 3 (rule T9)") })
        guard case .failure(let error) = try decode("{ entries = { {date=0}, {date=1}, {date=2}, {date=3}, {date=4}, {date=5} } }", policy: policy) else {
            Issue.record("6 entries were accepted")
            return
        }
        #expect(error.message.contains("6 entries, over the limit of 5"))
    }

    /// The decoder counts the entries' bytes in the pass that reads their
    /// fields: the count must be `encodedSize`'s, and the byte limit must
    /// still win over an entry's error, as when the list was measured first.
    @Test("T9: the bytes counted are the list's encodedSize, and the byte limit comes before an entry's error")
    func bytesAreTheListsEncodedSizeAndTheLimitComesFirst() throws {
        var policy = HostPolicy()
        policy.timelineBytesWarning = 0
        let lists = [
            "{ { date = 0, title = 'é', n = 1.5, tags = { 'a', 'bc', { deep = true } } }, { date = 300, [1] = 'x', [2] = 2 } }",
            "{ { date = 0, relevance = { score = 1, duration = 60 } }, { date = 600, done = false, note = ('y'):rep(40) } }",
            "{}",
        ]
        for list in lists {
            let state = try LuaState(profile: .trusted)
            let value = try #require(try state.run("return " + list).first)
            let decoded = try decode("{ entries = \(list) }", policy: policy).get()
            #expect(decoded.warnings.contains("the timeline is \(value.encodedSize) bytes encoded, over 0 (rule T9)"), "\(list): \(decoded.warnings)")
        }
        // entries[2] is not a table; with room, that is the error; over the limit, the size is.
        let bad = "{ entries = { { date = 0, text = ('z'):rep(500) }, 42, { text = 'no date' } } }"
        guard case .failure(let entryError) = try decode(bad) else { Issue.record("accepted"); return }
        #expect(entryError.message == "entries[2] must be a table, got number")
        policy.timelineBytesLimit = 100
        guard case .failure(let sizeError) = try decode(bad, policy: policy) else { Issue.record("accepted"); return }
        #expect(sizeError.message.contains("bytes encoded, over the limit of 100 (rule T9)"), "\(sizeError.message)")
    }

    @Test("T4: the shown entry is the latest dated at or before now, else the first") func theShownEntryIsTheLatestStartedOrTheFirst() {
        let timeline = Timeline(entries: [0, 100, 200].map { TimelineEntry(date: $0, content: LuaTable()) }, policy: .atEnd)
        #expect(timeline.entryIndex(at: -5) == 0)
        #expect(timeline.entryIndex(at: 0) == 0)
        #expect(timeline.entryIndex(at: 150) == 1)
        #expect(timeline.entryIndex(at: 200) == 2)
        #expect(timeline.eligibleAt == 200)
        #expect(Timeline(entries: [], policy: .never).entryIndex(at: 0) == nil)
    }
}
