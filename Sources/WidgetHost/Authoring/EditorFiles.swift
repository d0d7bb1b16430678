#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// What `lunette types DIR` writes into a bundle (or any folder of Lua
/// files): the LuaLS definitions in `.lunette/lunette.d.lua` (a hidden
/// folder, so the bundle never loads it as a module), `.luarc.json`
/// pointing the language server at them, and `.luacheckrc` for the lint.
public struct EditorFiles: Sendable {
    public static let definitionsFolder = ".lunette"
    public static let definitionsFile = ".lunette/lunette.d.lua"

    public let directory: String
    public let version: String
    public let api: ScriptAPI

    public init(directory: String, version: String, api: ScriptAPI = .lunette) {
        self.directory = directory
        self.version = version
        self.api = api
    }

    /// A file and what it will hold.
    public struct Planned: Sendable, Equatable {
        /// Relative to the directory.
        public var path: String
        public var text: String
        /// Whether the file exists with other text.
        public var changes: Bool
    }

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// `.luacheckrc` exists and was not written by `lunette types`.
        case foreignLuacheckConfig(String)
        /// `.luarc.json` is not JSON: merging would lose it.
        case unreadableSettings(String, String)
        case cannotWrite(String, String)

        public var description: String {
            switch self {
            case .foreignLuacheckConfig(let path):
                return "\(path): not written by `lunette types` (its first line is not \"\(LuacheckConfig.marker)…\"); "
                    + "nothing was written. Move it away, or pass --force to replace it"
            case .unreadableSettings(let path, let why):
                return "\(path): \(why); nothing was written. Fix it or remove it, and run `lunette types` again"
            case .cannotWrite(let path, let why):
                return "\(path): cannot write: \(why)"
            }
        }
    }

    /// The three files, with their new text; nothing is written. Fails,
    /// before anything is written, on a `.luacheckrc` of the user's own
    /// (unless `force`) or a `.luarc.json` that is not JSON.
    public func plan(force: Bool = false) throws(Failure) -> [Planned] {
        let rc = path(".luarc.json")
        var existing: JSONValue? = nil
        if let data = FileManager.default.contents(atPath: rc) {
            do { existing = try JSONValue.parse(bytes: Array(data)) } catch {
                throw .unreadableSettings(rc, "invalid JSON at \(error.location): \(error.reason)")
            }
            if existing?.members == nil { throw .unreadableSettings(rc, "the top level is not an object") }
        }
        let check = path(".luacheckrc")
        if !force, let data = FileManager.default.contents(atPath: check),
           !String(decoding: data, as: UTF8.self).hasPrefix(LuacheckConfig.marker) {
            throw .foreignLuacheckConfig(check)
        }
        return [
            planned(Self.definitionsFile, LuaTypesWriter.definitions(api, version: version)),
            planned(".luarc.json", LuaTypesWriter.settings(merging: existing, library: Self.definitionsFolder, api: api)),
            planned(".luacheckrc", LuacheckConfig.text(api, version: version)),
        ]
    }

    /// Writes the files of `plan` that change (each atomically).
    @discardableResult
    public func write(force: Bool = false) throws(Failure) -> [Planned] {
        let files = try plan(force: force)
        do {
            try FileManager.default.createDirectory(atPath: path(Self.definitionsFolder), withIntermediateDirectories: true)
        } catch { throw .cannotWrite(path(Self.definitionsFolder), "\(errorText(error))") }
        for file in files where file.changes {
            do { try Data(file.text.utf8).write(to: URL(fileURLWithPath: path(file.path)), options: .atomic) } catch {
                throw .cannotWrite(path(file.path), "\(errorText(error))")
            }
        }
        return files
    }

    func path(_ relative: String) -> String {
        (directory.hasSuffix("/") ? directory : directory + "/") + relative
    }

    private func planned(_ relative: String, _ text: String) -> Planned {
        let old = FileManager.default.contents(atPath: path(relative))
        return Planned(path: relative, text: text, changes: old != Data(text.utf8))
    }
}
