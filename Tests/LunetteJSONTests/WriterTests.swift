import LunetteJSON
import Testing

@Suite("The streaming writer")
struct WriterTests {
    @Test func writesCompactJSONWithCommasInPlace() {
        let o = JSONWriter()
        o.object {
            o.field("name", string: "a\"b")
            o.field("missing", string: nil)
            o.field("count", integer: 3)
            o.field("ratio", number: 0.5)
            o.field("whole", number: 2)
            o.field("never", number: nil)
            o.field("on", bool: true)
            o.key("items")
            o.array([1, 2]) { o.integer($0) }
            o.key("empty")
            o.array([Int]()) { o.integer($0) }
            o.key("raw")
            o.bytes([0xFF])
            o.key("nested")
            o.object { o.key("x"); o.null() }
        }
        #expect(o.text == #"{"name":"a\"b","missing":null,"count":3,"ratio":0.5,"whole":2.0,"never":null,"on":true,"items":[1,2],"empty":[],"raw":{"$bytes":"/w=="},"nested":{"x":null}}"#)
    }

    @Test func aParsedTreeIsWrittenBackInFileOrder() throws {
        let text = #"{"b":[1,2.5,"x",null,true],"a":{"$bytes":"/w=="},"b":false}"#
        #expect(try JSONValue.parse(text).jsonText == text)
    }
}
