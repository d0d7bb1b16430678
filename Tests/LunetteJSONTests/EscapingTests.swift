import LunetteJSON
import Testing

@Suite("Escaping strings")
struct EscapingTests {
    @Test func quotesBackslashesAndNamedControlsUseShortEscapes() {
        #expect(JSON.string("say \"hi\"") == #""say \"hi\"""#)
        #expect(JSON.string(#"a\b"#) == #""a\\b""#)
        #expect(JSON.string("\n\r\t\u{08}\u{0C}") == #""\n\r\t\b\f""#)
    }

    @Test func otherControlCharactersAreUnicodeEscapes() {
        #expect(JSON.string("\u{00}\u{01}\u{1B}\u{1F}") == #""\u0000\u0001\u001b\u001f""#)
        #expect(JSON.string("\u{7F}") == "\"\u{7F}\"", "DEL is not a JSON control character")
    }

    @Test func lineAndParagraphSeparatorsAreEscaped() {
        #expect(JSON.string("a\u{2028}b\u{2029}c") == #""a\u2028b\u2029c""#)
        #expect(JSON.string("→ €") == "\"→ €\"", "other characters that start with 0xE2 stay as they are")
    }

    @Test func plainTextIsWrittenAsItIs() {
        #expect(JSON.string("") == "\"\"")
        #expect(JSON.string("héllo 😀 /") == "\"héllo 😀 /\"")
    }

    @Test func everyEscapedStringParsesBackToTheSameText() throws {
        let texts = ["", "plain", "\u{00}\u{1F}\"\\/\u{2028}\u{2029}\u{7F}é😀", String((0..<0x80).map { Character(Unicode.Scalar(UInt8($0))) })]
        for text in texts {
            let parsed = try JSONValue.parse(JSON.string(text))
            #expect(parsed.kind == .string(text))
        }
    }
}
