/// Where something is in a JSON text: what errors about a file's settings
/// point at, carried as fields so nobody has to read it back from a message.
public struct JSONLocation: Sendable, Hashable, CustomStringConvertible {
    /// Bytes of UTF-8 before it, from the start of the text (0-based).
    public var offset: Int
    /// Its line, from 1 (lines end at `\n`).
    public var line: Int
    /// Its column, from 1, counted in Unicode scalars from the start of the
    /// line (what an editor shows for text without combining marks).
    public var column: Int

    /// A location; `offset` 0-based, `line` and `column` 1-based.
    public init(offset: Int, line: Int, column: Int) {
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// "line 3, column 7".
    public var description: String { "line \(line), column \(column)" }
}
