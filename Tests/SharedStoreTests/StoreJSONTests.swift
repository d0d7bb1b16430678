import Foundation
import LunetteJSON
@testable import SharedStore
import Testing

/// The store's JSON (`lunette store`, Codable) on the one JSON layer, and
/// its stored format, which must not change with it.
@Suite("The store's JSON")
struct StoreJSONTests {
    @Test func bytesAreWrittenAndReadAsABytesObject() throws {
        let value: StoreValue = ["raw": .bytes([0xFF, 0x00]), "text": "/w=="]
        #expect(value.json == #"{"raw":{"$bytes":"/wA="},"text":"/w=="}"#)
        #expect(try StoreValue(json: value.json) == value)
        #expect(try StoreValue(json: #"{"$bytes":"not base64"}"#) == ["$bytes": "not base64"], "only exact base64 is bytes")
    }

    @Test func invalidJSONSaysTheLineAndColumn() {
        do {
            _ = try StoreValue(json: "[1,\n 2,,3]")
            Issue.record("accepted")
        } catch {
            #expect(error == StoreError(.invalidValue, "invalid JSON at line 2, column 4: expected a value, got ','"))
        }
        do {
            _ = try StoreValue(json: "[1,\n null]")
            Issue.record("accepted")
        } catch {
            #expect(error.message == "invalid JSON at line 2, column 2: null inside an array or object (the store keeps no nil in a table)")
        }
    }

    @Test func aRepeatedKeyKeepsItsLastValue() throws {
        #expect(try StoreValue(json: #"{"a": 1, "a": 2}"#) == ["a": 2])
    }

    @Test func codableReadsBytesAsData() throws {
        let temp = TemporaryStore()
        let g = try temp.store.group("group.json")
        try g.set("blob", .bytes([1, 2, 0xFF]))
        #expect(try g.get(Data.self, forKey: "blob") == Data([1, 2, 0xFF]))
        struct Attachment: Codable, Equatable { var data: Data; var ratio: Double }
        let attachment = Attachment(data: Data([9, 8]), ratio: .infinity)
        try g.set(attachment, forKey: "attachment")
        #expect(try g.get("attachment")?["data"] == "CQg=", "Data is stored as base64 text, as before")
        #expect(try g.get("attachment")?["ratio"] == "Infinity")
        #expect(try g.get(Attachment.self, forKey: "attachment") == attachment)
    }

    @Test func theStoredFormatIsUnchanged() {
        let value: StoreValue = ["a": [1, 2.5, true, "é", .bytes([0xFF])]]
        let expected: [UInt8] = [
            0x08, 0x01, 0x01, 0x61,                          // map of 1: key "a"
            0x07, 0x05,                                      // array of 5
            0x01, 0x01, 0, 0, 0, 0, 0, 0, 0,                 // integer 1
            0x02, 0, 0, 0, 0, 0, 0, 0x04, 0x40,              // double 2.5
            0x04,                                            // true
            0x05, 0x02, 0xC3, 0xA9,                          // string "é"
            0x06, 0x01, 0xFF,                                // bytes FF
        ]
        #expect(value.encoded() == expected)
    }
}
