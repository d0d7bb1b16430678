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
