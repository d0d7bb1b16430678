#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What is at a path, following symbolic links: `FileManager`'s
/// `fileExists(atPath:isDirectory:)` without Foundation's `ObjCBool`.
package enum FileKind: Sendable, Equatable {
    case directory
    /// A file, or anything else that is not a directory (a device, a socket).
    case file

    /// Nil when nothing is there (or a link leads nowhere, or a folder on
    /// the way cannot be searched).
    package init?(atPath path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self = (status.st_mode & S_IFMT) == S_IFDIR ? .directory : .file
    }
}

/// Everything under the folder `root`, as paths relative to it ("a.lua",
/// "tests", "tests/b_test.lua"), in no set order: what `FileManager`'s
/// `enumerator(atPath:)` lists. A folder that cannot be read is skipped
/// (with what is below it), not the end of the walk; links are listed but
/// not followed. Empty when `root` cannot be read.
package func pathsBelow(_ root: String) -> [String] {
    var found: [String] = []
    var pending: [String] = [""]
    while let relative = pending.popLast() {
        guard let folder = opendir(relative.isEmpty ? root : root + "/" + relative) else { continue }
        defer { closedir(folder) }
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let path = relative.isEmpty ? name : relative + "/" + name
            found.append(path)
            // The entry's own type, as the folder lists it (no call per
            // entry); `lstat` only where the file system does not say.
            let type = entry.pointee.d_type
            var status = stat()
            if type == UInt8(DT_DIR)
                || (type == UInt8(DT_UNKNOWN) && lstat(root + "/" + path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR) {
                pending.append(path)
            }
        }
    }
    return found
}

/// The bytes of the file at `path`, or nil when it cannot be read or holds
/// more than `limit` bytes. Without Foundation's `Data(contentsOf:)` (and
/// FoundationEssentials' `String(contentsOfFile:)` leaks its 4 KB buffer
/// on an empty file, as LeakSanitizer shows).
package func fileBytes(atPath path: String, limit: Int = .max) -> [UInt8]? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 << 10)
    while bytes.count <= limit {
        let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if n > 0 { bytes += chunk[0..<n]; continue }
        if n < 0 && errno == EINTR { continue }
        return n == 0 ? bytes : nil
    }
    return nil
}
