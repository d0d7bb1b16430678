import LunetteJSON
import Testing

@Suite("Bytes that are not text")
struct BytesTests {
    @Test func bytesAreABase64Object() throws {
        var out = ""
        JSON.writeBytes([0xFF, 0x00, 0x41], to: &out)
        #expect(out == #"{"$bytes":"/wBB"}"#)
        #expect(try JSONValue.parse(out).bytesValue == [0xFF, 0x00, 0x41])
    }

    @Test func base64RoundTripsEveryLength() {
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        for n in 0..<20 {
            let slice = Array(bytes.prefix(n))
            #expect(Base64.decode(Base64.encode(slice)) == slice)
        }
        #expect(Base64.encode(Array("Man".utf8)) == "TWFu")
        #expect(Base64.encode(Array("Ma".utf8)) == "TWE=")
        #expect(Base64.encode(Array("M".utf8)) == "TQ==")
    }

    @Test func onlyExactBase64Decodes() {
        for bad in ["TQ=", "T===", "TQ=A", "TR==", "TWE", "TW!u", "=TWE"] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }

    @Test func onlyAOneKeyObjectWithExactBase64IsBytes() throws {
        #expect(try JSONValue.parse(#"{"$bytes": "TQ=="}"#).bytesValue == [0x4D])
        #expect(try JSONValue.parse(#"{"$bytes": "TQ==", "x": 1}"#).bytesValue == nil)
        #expect(try JSONValue.parse(#"{"$bytes": "not base64"}"#).bytesValue == nil)
        #expect(try JSONValue.parse(#"{"$bytes": 1}"#).bytesValue == nil)
        #expect(try JSONValue.parse(#""TQ==""#).bytesValue == nil)
    }
}
