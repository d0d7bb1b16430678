import Foundation
import LuaSandbox

/// A bundle of widget scripts: a directory with bundle.json, main.lua and
/// any modules main.lua requires ("util.format" is util/format.lua).
///
/// Loading reads every file once (calls never touch the bundle's
/// directory), checks bundle.json, then runs main.lua in a sandbox to check
/// its declarations. Every error names a file and line.
public final class ScriptBundle: Sendable {
    /// The directory, as given.
    public let path: String
    public let manifest: BundleManifest
    /// main.lua's text, and its chunk name in messages ("examples/tasks/main.lua").
    public let main: Source
    /// The bundle's Lua modules by module name ("util.format").
    public let modules: [String: Source]
    /// What main.lua declares.
    public let declarations: BundleDeclarations

    /// A Lua file of the bundle.
    public struct Source: Sendable {
        public var chunkName: String
        public var bytes: [UInt8]
    }

    /// Most Lua files a bundle may hold, and most bytes of Lua in all.
    public static let maxFiles = 500
    public static let maxSourceBytes = 8 << 20

    init(path: String, manifest: BundleManifest, main: Source, modules: [String: Source], declarations: BundleDeclarations) {
        self.path = path
        self.manifest = manifest
        self.main = main
        self.modules = modules
        self.declarations = declarations
    }

    /// Loads and checks the bundle at `path`. Errors: `LocatedErrors`, one
    /// per problem found (all declaration problems are reported together).
    public static func load(_ path: String, calendar: HostCalendar = .fromEnvironment()) throws(LocatedErrors) -> ScriptBundle {
        let root = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
            throw LocatedErrors([LocatedError(file: root, message: "no such bundle directory")])
        }
        guard isDirectory.boolValue else {
            throw LocatedErrors([LocatedError(file: root, message: "a bundle is a directory with bundle.json and main.lua")])
        }
        let manifest: BundleManifest
        do { manifest = try BundleManifest.load(root + "/bundle.json") } catch { throw LocatedErrors([error]) }
        let sources: (main: Source, modules: [String: Source])
        do { sources = try readSources(root) } catch { throw LocatedErrors([error]) }
        let unchecked = ScriptBundle(path: root, manifest: manifest, main: sources.main, modules: sources.modules,
                                     declarations: BundleDeclarations())
        let recorder: DeclarationRecorder
        do {
            let sandbox = try BundleSandbox(bundle: unchecked, services: HostServices(clock: SystemClock(), calendar: calendar),
                                            role: .load)
            try sandbox.runMain()
            recorder = sandbox.recorder
        } catch {
            let names = [sources.main.chunkName] + sources.modules.values.map(\.chunkName)
            throw LocatedErrors([locate(error, in: sources.main.chunkName, names: names)])
        }
        recorder.finish()
        if !recorder.problems.isEmpty { throw LocatedErrors(recorder.problems) }
        if recorder.declarations.widgets.isEmpty && recorder.declarations.intents.isEmpty
            && recorder.declarations.controls.isEmpty && recorder.declarations.activities.isEmpty {
            throw LocatedErrors([LocatedError(file: sources.main.chunkName, message: "declares nothing: call widget { … } (or intent, control, activity) in main.lua")])
        }
        return ScriptBundle(path: root, manifest: manifest, main: sources.main, modules: sources.modules,
                            declarations: recorder.declarations)
    }

    /// Reads main.lua and every other .lua file under the bundle.
    private static func readSources(_ root: String) throws(LocatedError) -> (main: Source, modules: [String: Source]) {
        let mainPath = root + "/main.lua"
        guard let mainData = FileManager.default.contents(atPath: mainPath) else {
            throw LocatedError(file: mainPath, message: FileManager.default.fileExists(atPath: mainPath) ? "cannot read main.lua" : "missing main.lua (the bundle's entry point)")
        }
        var modules: [String: Source] = [:]
        var total = mainData.count
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let relative = enumerator?.nextObject() as? String {
            guard relative.hasSuffix(".lua"), relative != "main.lua" else { continue }
            let name = String(relative.dropLast(4)).replacingOccurrences(of: "/", with: ".")
            guard moduleNameProblem(name) == nil else { continue }   // not requirable: ignored
            guard modules.count < maxFiles else { throw LocatedError(file: root, message: "more than \(maxFiles) Lua files") }
            guard let data = FileManager.default.contents(atPath: root + "/" + relative) else {
                throw LocatedError(file: root + "/" + relative, message: "cannot read the file")
            }
            total += data.count
            guard total <= maxSourceBytes else { throw LocatedError(file: root, message: "more than \(maxSourceBytes) bytes of Lua") }
            modules[name] = Source(chunkName: root + "/" + relative, bytes: [UInt8](data))
        }
        return (Source(chunkName: mainPath, bytes: [UInt8](mainData)), modules)
    }

    /// Why `name` cannot name a bundle module, or nil: dot-separated parts
    /// of letters, digits, "_" and "-".
    static func moduleNameProblem(_ name: String) -> String? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        for part in parts {
            if part.isEmpty { return "empty part" }
            if !part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) {
                return "parts hold letters, digits, '_' and '-'"
            }
        }
        return nil
    }

    /// A load failure of main.lua as a located error. Lua shortens long
    /// chunk names to "...their/end.lua"; `names` gives them back in full.
    static func locate(_ error: LuaError, in chunk: String, names: [String]) -> LocatedError {
        func full(_ name: String) -> String {
            guard name.hasPrefix("...") else { return name }
            return names.first { $0.hasSuffix(name.dropFirst(3)) } ?? name
        }
        switch error {
        case .syntax(let e): return LocatedError(file: full(e.chunk), line: e.line, message: e.message)
        case .runtime(let e):
            if let file = e.chunk { return LocatedError(file: full(file), line: e.line, message: Self.strip(e.message)) }
            return LocatedError(file: chunk, message: e.message)
        default: return LocatedError(file: chunk, message: error.message)
        }
    }

    /// The message without its leading "chunk:line: ".
    static func strip(_ message: String) -> String {
        let parts = message.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        if parts.count == 3, Int(parts[1]) != nil { return String(parts[2].drop(while: { $0 == " " })) }
        return message
    }
}
