/// A conversion failure on its way out of nested tables: each level adds the
/// key it was reading, so the final message names the full path.
struct PathedValueError: Error {
    var reason: String
    /// Innermost component first.
    var reversedComponents: [PathComponent] = []

    func adding(_ component: PathComponent) -> PathedValueError {
        var copy = self
        copy.reversedComponents.append(component)
        return copy
    }

    /// The public error, with the path written from `root` (may be empty).
    func rooted(at root: String) -> LuaValueError {
        var path = root
        for component in reversedComponents.reversed() {
            path += component.text(first: path.isEmpty)
        }
        return LuaValueError(path: path, reason: reason)
    }
}

enum PathComponent {
    case field(LuaString)
    case index(Int64)
    case key(String)  // a key that is not plain data, described

    func text(first: Bool) -> String {
        switch self {
        case .index(let i):
            return "[\(i)]"
        case .key(let description):
            return "[\(description)]"
        case .field(let name):
            if let text = name.string, PathComponent.isIdentifier(text) {
                return first ? text : "." + text
            }
            return "[" + LuaLiteral.quoted(name) + "]"
        }
    }

    private static let keywords: Set<String> = [
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ]

    static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
        for c in s.utf8 {
            let ok = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
            if !ok { return false }
        }
        return !keywords.contains(s)
    }
}
