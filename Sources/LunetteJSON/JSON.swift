/// Lunette's one way of writing JSON text, shared by every JSON output
/// (`LuaValue.jsonText`, `StoreValue.json`, reports, `--json` lines), so
/// that the same data always gives the same text.
///
/// The convention (docs/json.md is its reference):
/// - strings are escaped by `writeString`: `"` `\` and the C0 controls,
///   plus U+2028 and U+2029 (JSON allows them raw, JavaScript sources did
///   not); everything else is written as it is;
/// - integers are written as their digits; floats in the shortest form that
///   reads back as the same float, always with a `.` or an exponent (`2.0`,
///   `1e+20`), so readers that keep the two apart read back the same kind;
/// - NaN and ±infinity, which JSON lacks, are the strings `"NaN"`,
///   `"Infinity"` and `"-Infinity"`;
/// - bytes that are not UTF-8 text are the one-key object
///   `{"$bytes": "<base64>"}`;
/// - keys are written in the order the writer is given them (plain data
///   sorts its keys by their bytes).
public enum JSON {}
