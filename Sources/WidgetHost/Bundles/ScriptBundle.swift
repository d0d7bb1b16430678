#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LuaSandbox

/// A bundle of widget scripts: a directory with bundle.json, main.lua and
/// any modules main.lua requires ("util.format" is util/format.lua).
///
/// Loading (`ScriptBundle.load`, in Runtime/BundleLoader.swift, since it
/// runs main.lua) reads every file once (calls never touch the bundle's
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
    /// Which version of the bundle this is: a digest of bundle.json and
    /// every Lua file (16 hex digits, FNV-1a 64), so two loads of the same
    /// files give the same version and any edit gives another. Each call's
    /// outcome names the version it ran (`CallOutcome.bundleVersion`).
    public let version: String
    /// The capabilities it was loaded under, as a plugin
    /// (`ScriptBundle.load(…grants:)`); nil: no plugin policy, every service.
    public let grants: Set<String>?

    /// A Lua file of the bundle.
    public struct Source: Sendable {
        public var chunkName: String
        public var bytes: [UInt8]
    }

    /// Most Lua files a bundle may hold, and most bytes of Lua in all.
    public static let maxFiles = 500
    public static let maxSourceBytes = 8 << 20

    /// bundle.json's bytes (sent to a worker process with the sources).
    let manifestBytes: [UInt8]

    init(path: String, manifest: BundleManifest, main: Source, modules: [String: Source], declarations: BundleDeclarations,
         manifestBytes: [UInt8] = [], grants: Set<String>? = nil) {
        self.path = path
        self.manifestBytes = manifestBytes
        self.grants = grants
        self.manifest = manifest
        self.main = main
        self.modules = modules
        self.declarations = declarations
        var digest = VersionDigest()
        digest.add("bundle.json", manifestBytes)
        digest.add("main.lua", main.bytes)
        for name in modules.keys.sorted() { digest.add(name, modules[name]!.bytes) }
        version = digest.hex
    }

    /// FNV-1a 64 over named parts (each name and its bytes, with separators).
    struct VersionDigest {
        private var hash: UInt64 = 0xcbf2_9ce4_8422_2325

        mutating func add(_ name: String, _ bytes: [UInt8]) {
            for byte in name.utf8 { mix(byte) }
            mix(0)
            var count = UInt64(bytes.count)
            for _ in 0..<8 { mix(UInt8(truncatingIfNeeded: count)); count >>= 8 }
            for byte in bytes { mix(byte) }
        }

        private mutating func mix(_ byte: UInt8) {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }

        var hex: String {
            let digits = String(hash, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
    }

    /// Reads main.lua and every other .lua file under the bundle.
    static func readSources(_ root: String) throws(LocatedError) -> (main: Source, modules: [String: Source]) {
        let mainPath = root + "/main.lua"
        guard let mainData = FileManager.default.contents(atPath: mainPath) else {
            throw LocatedError(file: mainPath, message: FileManager.default.fileExists(atPath: mainPath) ? "cannot read main.lua" : "missing main.lua (the bundle's entry point)")
        }
        var modules: [String: Source] = [:]
        var total = mainData.count
        for relative in relativePaths(under: root) {
            guard relative.hasSuffix(".lua"), relative != "main.lua" else { continue }
            let name = String(relative.dropLast(4).map { $0 == "/" ? "." : $0 })
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

    /// The paths under `root`, relative to it ("util/fmt.lua"): every entry,
    /// hidden ones too, entering directories but not symbolic links to
    /// them, as FileManager's enumerator does. Read with `readdir`: the
    /// enumerator costs ≈ 2.7 M instructions for a small bundle, a tenth of
    /// a `lunette timeline` process's own work.
    static func relativePaths(under root: String) -> [String] {
        var paths: [String] = []
        var directories = [""]
        while let directory = directories.popLast() {
            guard let handle = opendir(directory.isEmpty ? root : root + "/" + directory) else { continue }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                if name == "." || name == ".." { continue }
                let relative = directory.isEmpty ? name : directory + "/" + name
                paths.append(relative)
                var isDirectory = entry.pointee.d_type == UInt8(DT_DIR)
                if entry.pointee.d_type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    isDirectory = lstat(root + "/" + relative, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
                }
                if isDirectory { directories.append(relative) }
            }
        }
        return paths
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
}
