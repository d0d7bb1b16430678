import Foundation

/// A JSON file read for its settings (bundle.json, a scenario, a policy
/// file), parsed into a located tree (`JSONValue`): every error about it
/// comes back as a `LocatedError` at the line and column of what it is
/// about, taken from the tree, never from searching the text.
struct JSONFile {
    /// The file, as the user named it.
    let path: String
    /// The parsed text.
    let root: JSONValue

    /// Reads and parses `path`.
    static func load(_ path: String) throws(LocatedError) -> JSONFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LocatedError(file: path, message: FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file")
        }
        return try parse(bytes: Array(data), path: path)
    }

    /// Parses the UTF-8 text of the file at `path`; a syntax error is
    /// located by the parser's fields (line, column).
    static func parse(bytes: [UInt8], path: String) throws(LocatedError) -> JSONFile {
        do {
            return JSONFile(path: path, root: try JSONValue.parse(bytes: bytes))
        } catch {
            throw LocatedError(file: path, at: error.location, message: "invalid JSON: \(error.reason)")
        }
    }

    /// An error in the file, at `location` when there is one.
    func error(_ message: String, at location: JSONLocation? = nil) -> LocatedError {
        guard let location else { return LocatedError(file: path, message: message) }
        return LocatedError(file: path, at: location, message: message)
    }
}
