#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a file operation failed, in the system's words ("Permission
/// denied"), for a message that names the file itself: Foundation's
/// `localizedDescription` without Foundation's error bridging.
/// FoundationEssentials' file errors are a `CocoaError` that carries the
/// system's error number; others describe themselves.
package func errorText(_ error: any Error) -> String {
    if let error = error as? CocoaError {
        if let posix = error.underlying as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        switch error.code {
        case .fileNoSuchFile, .fileReadNoSuchFile: return "No such file or directory"
        case .fileReadNoPermission, .fileWriteNoPermission: return "Permission denied"
        case .fileWriteFileExists: return "File exists"
        case .fileWriteOutOfSpace: return "No space left on device"
        case .fileWriteVolumeReadOnly: return "Read-only file system"
        default: return "file error \(error.code.rawValue)"
        }
    }
    if let error = error as? POSIXError { return String(cString: strerror(error.code.rawValue)) }
    return String(describing: error)
}
