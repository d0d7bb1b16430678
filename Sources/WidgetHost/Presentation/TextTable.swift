/// Columns of text, padded to their widest cell.
struct TextTable {
    let headers: [String]
    private(set) var rows: [[String]] = []

    init(_ headers: [String]) { self.headers = headers }

    mutating func add(_ row: [String]) { rows.append(row) }

    func render(indent: String, maxRows: Int = .max) -> String {
        guard !rows.isEmpty else { return "" }
        var shownRows = rows
        var omitted = 0
        if rows.count > maxRows {
            omitted = rows.count - maxRows
            shownRows = Array(rows.prefix(maxRows / 2)) + Array(rows.suffix(maxRows / 2))
        }
        var widths = headers.map(\.count)
        for row in shownRows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (i, cell) in cells.enumerated() {
                parts.append(i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0))
            }
            return indent + parts.joined(separator: "  ") + "\n"
        }
        var out = line(headers)
        for (i, row) in shownRows.enumerated() {
            if omitted > 0 && i == maxRows / 2 { out += indent + "… \(omitted) more rows …\n" }
            out += line(row)
        }
        return out
    }
}
