#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// C's `printf` formatting (`"%g"`, `"%.*f"`), as Foundation's
/// `String(format:)` gave it, without Foundation.
package func cFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    withVaList(arguments) { list in
        var buffer = [CChar](repeating: 0, count: 64)
        // vsnprintf consumes its list: a second pass needs a list of its own.
        let needed = Int(vsnprintf(&buffer, buffer.count, format, list))
        if needed < buffer.count { return String(cString: buffer) }
        buffer = [CChar](repeating: 0, count: needed + 1)
        return withVaList(arguments) { again in
            _ = vsnprintf(&buffer, buffer.count, format, again)
            return String(cString: buffer)
        }
    }
}

extension StringProtocol {
    /// Without the white space (spaces, tabs, line ends) at either end.
    package func trimmingWhitespace() -> SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }) else { return self[endIndex...] }
        let last = lastIndex(where: { !$0.isWhitespace })!
        return self[first...last]
    }
}
