/// Columns of text, padded to their widest cell. The last column is never
/// cut: with a `width`, a line longer than it wraps onto indented lines
/// under the last column's start.
struct TextTable {
    let headers: [String]
    private(set) var rows: [[String]] = []

    init(_ headers: [String]) { self.headers = headers }

    mutating func add(_ row: [String]) { rows.append(row) }

    /// The table; `width` (nil: no wrapping) is the line length the last
    /// column wraps at.
    func render(indent: String, maxRows: Int = .max, width: Int? = nil) -> String {
        guard !rows.isEmpty else { return "" }
        var shownRows = rows
        var omitted = 0
        if rows.count > maxRows {
            omitted = rows.count - maxRows
            shownRows = Array(rows.prefix(maxRows / 2)) + Array(rows.suffix(maxRows / 2))
        }
        var widths = headers.map(\.count)
        for row in shownRows { for (i, cell) in row.enumerated() where i < widths.count - 1 { widths[i] = max(widths[i], cell.count) } }
        let lastColumn = indent.count + widths.dropLast().reduce(0) { $0 + $1 + 2 }
        // (Strings are appended in loops, not `joined`: the first `joined` of
        // a process costs the Swift runtime ≈ 0.27 M instructions of lookups.)
        func line(_ cells: [String]) -> String {
            var head = indent
            for (i, cell) in cells.enumerated() where i < cells.count - 1 {
                // Padded by characters, as the widths were measured (NSString's
                // padding counts UTF-16 units, which misaligned cells with emoji).
                head += cell
                head += String(repeating: " ", count: max(0, widths[i] - cell.count) + 2)
            }
            let last = cells.last ?? ""
            guard let width, !last.isEmpty else { return (head + last).trimmingTrailingSpaces + "\n" }
            let lines = TextWrap.lines(last, width: max(20, width - lastColumn))
            let margin = "\n" + String(repeating: " ", count: lastColumn)
            for (i, piece) in lines.enumerated() {
                if i > 0 { head += margin }
                head += piece
            }
            return head + "\n"
        }
        var out = line(headers)
        for (i, row) in shownRows.enumerated() {
            if omitted > 0 && i == maxRows / 2 { out += indent + "… \(omitted) more rows …\n" }
            out += line(row)
        }
        return out
    }
}

/// Wrapping long text (an entry's JSON, a message) without cutting any of it.
enum TextWrap {
    /// `text` in pieces of at most `width` characters, broken after a
    /// comma, else a space, in the second half of a piece, else hard.
    static func lines(_ text: String, width: Int) -> [String] {
        var out: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var rest = Substring(paragraph)
            while rest.count > width {
                let piece = rest.prefix(width)
                var cut = piece.endIndex
                // At the end when a space follows; after a comma (between JSON fields) if there is one in the second half, else after a space.
                for breaks in [",", " "] as [Character] where rest[piece.endIndex] != " " {
                    if let i = piece.lastIndex(of: breaks), piece.distance(from: piece.startIndex, to: i) >= width / 2 {
                        cut = piece.index(after: i)
                        break
                    }
                }
                out.append(String(rest[..<cut]).trimmingTrailingSpaces)
                rest = rest[cut...].drop { $0 == " " }   // a space at a break is the break
            }
            out.append(String(rest))
        }
        return out
    }

    /// `text` wrapped at `width` (nil: as it is), every line after the first
    /// starting with `indent`.
    static func block(_ text: String, width: Int?, firstColumn: Int, indent: String) -> String {
        guard let width else { return text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent) }
        return lines(text, width: max(20, width - max(firstColumn, indent.count))).joined(separator: "\n" + indent)
    }
}

private extension String {
    var trimmingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
