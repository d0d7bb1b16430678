import LunetteJSON
import Testing

@Suite("The located parser")
struct ParserTests {
    @Test func valuesKeepTheirKinds() throws {
        #expect(try JSONValue.parse("42").kind == .integer(42))
        #expect(try JSONValue.parse("42.0").kind == .double(42))
        #expect(try JSONValue.parse("1e3").kind == .double(1000))
        #expect(try JSONValue.parse("-0").kind == .integer(0))
        #expect(try JSONValue.parse("9223372036854775807").kind == .integer(.max))
        #expect(try JSONValue.parse("-9223372036854775808").kind == .integer(.min))
        #expect(try JSONValue.parse("9007199254740993").kind == .integer(9_007_199_254_740_993), "above 2^53: exact")
        #expect(try JSONValue.parse("99999999999999999999.0").kind == .double(1e20))
        #expect(try JSONValue.parse("99999999999999999999", largeIntegers: .floats).kind == .double(1e20))
        #expect(try JSONValue.parse(" \"\\u00e9\\ud83d\\ude00\\/\" ").kind == .string("é😀/"))
        #expect(try JSONValue.parse("true").kind == .boolean(true))
    }

    @Test func nullIsAValue() throws {
        #expect(try JSONValue.parse("null").isNull)
        let object = try JSONValue.parse(#"{"timezone": null, "list": [null]}"#)
        #expect(object.members(named: "timezone").first?.value.isNull == true)
        #expect(object.members(named: "list").first?.value.kind == .array([JSONValue(.null, at: JSONLocation(offset: 28, line: 1, column: 29))]))
    }

    @Test func nestedKeysKnowTheirLineAndColumn() throws {
        let text = """
            {
              "policy": {
                "budget": 40,
                "deadline": { "soft": 1.5 }
              },
              "widgets": [
                { "kind": "A" },
                { "kind": "B" }
              ]
            }
            """
        let root = try JSONValue.parse(text)
        let policy = try #require(root.members(named: "policy").first)
        #expect(policy.keyLocation == JSONLocation(offset: 4, line: 2, column: 3))
        #expect(policy.value.location.line == 2 && policy.value.location.column == 13)
        let budget = try #require(policy.value.members(named: "budget").first)
        #expect(budget.keyLocation.line == 3 && budget.value.location == JSONLocation(offset: 30, line: 3, column: 15))
        let soft = try #require(policy.value.members(named: "deadline").first?.value.members(named: "soft").first)
        #expect(soft.value.location.line == 4 && soft.value.location.column == 27)
        guard case .array(let widgets) = root.members(named: "widgets").first?.value.kind else { Issue.record("no widgets"); return }
        #expect(widgets.map { $0.members(named: "kind").first?.value.location.line } == [7, 8])
    }

    @Test func everyOccurrenceOfARepeatedKeyIsKeptWithItsLine() throws {
        let root = try JSONValue.parse("{\n  \"a\": 1,\n  \"b\": 2,\n  \"a\": \"x\"\n}")
        let a = root.members(named: "a")
        #expect(a.map(\.keyLocation.line) == [2, 4])
        #expect(a.map(\.value.kind) == [.integer(1), .string("x")])
        #expect(root.members?.map(\.key) == ["a", "b", "a"])
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let root = try JSONValue.parse(#"{"é😀": "ü", "k": 1}"#)
        #expect(root.members(named: "k").first?.keyLocation == JSONLocation(offset: 17, line: 1, column: 13))
    }

    @Test func syntaxErrorsHaveALineAndAColumn() {
        let cases: [(String, Int, Int, String)] = [
            ("{\n  \"a\": 1,\n  \"b\" 2\n}", 3, 7, "expected ':', got '2'"),
            ("[1,\n 2,\n]", 3, 1, "expected a value, got ']'"),
            ("{\"a\": tru}", 1, 7, "expected a value, got 't'"),
            ("\"abc", 1, 5, "unterminated string"),
            ("01", 1, 1, "a number must not start with 0"),
            ("1 2", 1, 3, "unexpected text after the value"),
            ("", 1, 1, "a value is missing at the end of the text"),
            ("\"a\nb\"", 1, 3, "a control character inside a string (write it as an escape)"),
            ("\"\\ud800\"", 1, 2, "a lone surrogate"),
            ("\"\\q\"", 1, 2, "unknown escape '\\q'"),
            ("\"é\" x", 1, 5, "unexpected text after the value"),
        ]
        for (text, line, column, reason) in cases {
            do {
                _ = try JSONValue.parse(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.location.line == line && error.location.column == column, "\(text): \(error)")
                #expect(error.reason == reason, "\(text): \(error)")
            }
        }
    }

    @Test func textThatIsNotUTF8IsAnErrorAtItsString() {
        do {
            _ = try JSONValue.parse(bytes: Array("{\n \"k\": \"".utf8) + [0xFF] + Array("\"}".utf8))
            Issue.record("accepted")
        } catch {
            #expect(error == JSONError("a string that is not UTF-8", at: JSONLocation(offset: 8, line: 2, column: 7)))
        }
    }

    @Test func deepNestingIsRefused() {
        let deep = String(repeating: "[", count: 10_000)
        #expect(throws: JSONError.self) { try JSONValue.parse(deep) }
        #expect((try? JSONValue.parse(String(repeating: "[", count: 150) + String(repeating: "]", count: 150))) != nil)
    }

    @Test func anIntegerBeyond64BitsIsAnErrorAtTheNumber() {
        for text in ["99999999999999999999", "9223372036854775808", "-9223372036854775809"] {
            do {
                _ = try JSONValue.parse("{\n  \"n\": [1, \(text)] }")
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.location.line == 2 && error.location.column == 12, "\(error)")
                #expect(error.reason == "the integer \(text) does not fit in 64 bits (-9223372036854775808 to 9223372036854775807); write it as a string, or with a '.0' for a float", "\(error)")
            }
        }
    }
}
