import LuaSandbox
import Testing
@testable import WidgetHost

@Suite("The encoded size that rule T9 measures")
struct EncodedSizeTests {
    /// About the JSON text's length: strings by bytes plus quotes, 8 per
    /// number, keys with quotes and a colon, commas between items.
    @Test func sizesAreCountedAsJSONHasThem() {
        #expect(LuaValue.nil.encodedSize == 4)
        #expect(LuaValue.boolean(false).encodedSize == 5)
        #expect(LuaValue.integer(7).encodedSize == 8)
        #expect(LuaValue.string("ab").encodedSize == 4)
        // [8, "ab", {"k": true}]: brackets 2 + commas 2, 8 + 4, and {} 2 + "k": 1 + 3, true 5.
        #expect(LuaValue.table(LuaTable(array: [8, "ab", .table(LuaTable(fields: ["k": true]))])).encodedSize == 4 + 8 + 4 + 11)
        // Both parts: { 1, name = "x" }: 2 + 1 comma, 8, and "name": 4 + 3 + 3.
        #expect(LuaValue.table(LuaTable(array: [1], fields: ["name": "x"])).encodedSize == 3 + 8 + 10)
        #expect(LuaValue.table(LuaTable()).encodedSize == 2)
    }

    /// Read in place (a call's results in process), a value measures what
    /// its `LuaValue` measures.
    @Test func aValueReadInPlaceMeasuresTheSame() throws {
        let state = try LuaState(profile: .trusted)
        let source = "return nil, false, 7, 'ab', { 8, 'ab', { k = true } }, { 1, name = 'x' }, {}, { t = { ('é'):rep(3), 1.5, deep = { {} } } }"
        let values = try state.run(source)
        let function = try state.load(source, name: "sizes")
        let inPlace = try state.call(function) { results in results.map(\.encodedSize) }
        #expect(inPlace == values.map(\.encodedSize))
        // The last: { "t": [ "ééé", 1.5, "deep": [ [] ] ] } is 2 + 4 for the
        // outer table and its key, and 4 + 8 + 8 + 7 + 4 = 31 inside.
        #expect(inPlace == [4, 5, 8, 4, 4 + 8 + 4 + 11, 3 + 8 + 10, 2, 37])
    }
}
