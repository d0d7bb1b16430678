import LunetteJSON
import Testing

@Suite("Numbers")
struct NumberTests {
    func number(_ value: Double) -> String {
        var out = ""
        JSON.writeNumber(value, to: &out)
        return out
    }

    @Test func floatsAreShortestRoundTripAndStayFloats() throws {
        #expect(number(2) == "2.0")
        #expect(number(-0.0) == "-0.0")
        #expect(number(0.1) == "0.1")
        #expect(number(1e20) == "1e+20")
        #expect(number(.leastNonzeroMagnitude) == "5e-324")
        for value in [2.0, 0.1, 1e20, -1.5e-7, 1.7976931348623157e308, 9_999_999_999_999_998] {
            let parsed = try JSONValue.parse(number(value))
            #expect(parsed.kind == .double(value), "\(value) must read back as the same float")
        }
    }

    @Test func integersAreTheirDigits() throws {
        var out = ""
        JSON.writeInteger(.min, to: &out)
        #expect(out == "-9223372036854775808")
        #expect(try JSONValue.parse(out).kind == .integer(.min))
    }

    @Test func nonFiniteNumbersAreNamedStrings() {
        #expect(number(.nan) == #""NaN""#)
        #expect(number(-.nan) == #""NaN""#, "the sign of a NaN is not kept")
        #expect(number(.infinity) == #""Infinity""#)
        #expect(number(-.infinity) == #""-Infinity""#)
    }
}
