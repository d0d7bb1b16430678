extension JSON {
    /// The string that stands for NaN, which JSON cannot write.
    public static let nanText = "NaN"
    /// The string that stands for +∞.
    public static let infinityText = "Infinity"
    /// The string that stands for −∞.
    public static let negativeInfinityText = "-Infinity"

    /// Appends a float: the one number formatter of the project.
    ///
    /// A finite value is written in its shortest round-trip form, which
    /// always has a `.` or an exponent (`2.0`, `0.1`, `1e+20`), so a reader
    /// that keeps integers apart from floats reads a float back. NaN (of
    /// either sign) and ±infinity are the strings `"NaN"`, `"Infinity"`
    /// and `"-Infinity"`: JSON has no such numbers, and strings keep them
    /// visible instead of turning them into `null`.
    public static func writeNumber(_ value: Double, to out: inout String) {
        if value.isNaN {
            writeString(nanText, to: &out)
        } else if value.isInfinite {
            writeString(value < 0 ? negativeInfinityText : infinityText, to: &out)
        } else {
            out += value.description
        }
    }

    /// Appends an integer as its decimal digits.
    public static func writeInteger(_ value: Int64, to out: inout String) {
        out += String(value)
    }

    /// Why the decimal integer `digits` is refused: it does not fit in 64
    /// bits, the range of Lua's integers (and of the store's). Taking it as
    /// a float instead, as Lua does with such a numeral in source code,
    /// would silently lose digits of what is most likely an id or a count.
    public static func integerOutOfRange(_ digits: String) -> String {
        "the integer \(digits) does not fit in 64 bits (\(Int64.min) to \(Int64.max)); write it as a string, or with a '.0' for a float"
    }
}
