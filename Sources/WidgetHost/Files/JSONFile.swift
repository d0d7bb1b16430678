#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON file read for its settings (bundle.json, a scenario, a policy
/// file), parsed into a located tree (`JSONValue`), and the problems found
/// in it so far. Readers (`JSONObjectReader`) report every problem here and
/// carry on, so that one run names all of them; `check()` then throws them
/// together, each at the line and column of what it is about, taken from
/// the tree, never from searching the text.
final class JSONFile {
    /// The file, as the user named it.
    let path: String
    /// The parsed text.
    let root: JSONValue
    /// The text it was parsed from (empty when made from a tree).
    let bytes: [UInt8]
    /// The problems reported so far, in the order they were found.
    private(set) var problems: [LocatedError] = []

    init(path: String, root: JSONValue, bytes: [UInt8] = []) {
        self.path = path
        self.root = root
        self.bytes = bytes
    }

    /// Reads and parses `path`. A file that cannot be read, or is not JSON,
    /// is the one problem there is: nothing can be read after it.
    static func load(_ path: String) throws(LocatedErrors) -> JSONFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LocatedErrors([LocatedError(file: path, message: FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file")])
        }
        return try parse(bytes: Array(data), path: path)
    }

    /// Parses the UTF-8 text of the file at `path`; a syntax error is
    /// located by the parser's fields (line, column).
    static func parse(bytes: [UInt8], path: String) throws(LocatedErrors) -> JSONFile {
        do {
            return JSONFile(path: path, root: try JSONValue.parse(bytes: bytes), bytes: bytes)
        } catch {
            throw LocatedErrors([LocatedError(file: path, at: error.location, message: "invalid JSON: \(error.reason)")])
        }
    }

    /// An error in the file, at `location` when there is one.
    func error(_ message: String, at location: JSONLocation? = nil) -> LocatedError {
        guard let location else { return LocatedError(file: path, message: message) }
        return LocatedError(file: path, at: location, message: message)
    }

    /// Records a problem, at `location` when there is one.
    func report(_ message: String, at location: JSONLocation? = nil) {
        problems.append(error(message, at: location))
    }

    /// Whether a problem has been reported.
    var hasProblems: Bool { !problems.isEmpty }

    /// Throws every problem reported, in file order (by line and column;
    /// problems at the same place in the order they were found).
    func check() throws(LocatedErrors) {
        guard !problems.isEmpty else { return }
        let ordered = problems.enumerated().sorted { a, b in
            (a.element.line ?? 0, a.element.column ?? 0, a.offset) < (b.element.line ?? 0, b.element.column ?? 0, b.offset)
        }
        throw LocatedErrors(ordered.map(\.element))
    }
}
