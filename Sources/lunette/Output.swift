#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem

/// Unbuffered writes to the standard streams, straight through write(2)
/// (Foundation's FileHandle added 0.1–0.3 ms to a 2.5 ms start).
struct FileOutput {
    let descriptor: Int32

    static let standardOutput = FileOutput(descriptor: STDOUT_FILENO)
    static let standardError = FileOutput(descriptor: STDERR_FILENO)

    func write(_ text: String) {
        var text = text
        text.withUTF8 { write(buffer: UnsafeRawBufferPointer($0)) }
    }

    func write(bytes: [UInt8]) {
        bytes.withUnsafeBytes { write(buffer: $0) }
    }

    /// A write that fails ends the command. The reader of a pipe that went
    /// away (`lunette … | head -1`) ends it as SIGPIPE would, silently with
    /// status 141: a host with workers ignores SIGPIPE, so the write fails
    /// with EPIPE instead of killing the process. Any other failure (a full
    /// disk) is said on standard error, with status 1.
    private func write(buffer: UnsafeRawBufferPointer) {
        // Nothing written (0, which would loop for ever) is a failure too: EIO.
        let failure = SystemCall.writeAll(descriptor, buffer)
        guard failure != 0 else { return }
        if failure == EPIPE { exit(128 + SIGPIPE) }
        if descriptor != STDERR_FILENO {
            FileOutput.standardError.write("lunette: cannot write the output: \(String(cString: strerror(failure)))\n")
        }
        exit(1)
    }
}
