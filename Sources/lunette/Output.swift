import Foundation

/// Unbuffered writes to the standard streams.
struct FileOutput {
    let handle: FileHandle

    static let standardOutput = FileOutput(handle: .standardOutput)
    static let standardError = FileOutput(handle: .standardError)

    func write(_ text: String) {
        write(data: Data(text.utf8))
    }

    func write(bytes: [UInt8]) {
        write(data: Data(bytes))
    }

    /// A write that fails ends the command. The reader of a pipe that went
    /// away (`lunette … | head -1`) ends it as SIGPIPE would, silently with
    /// status 141: a host with workers ignores SIGPIPE, so the write fails
    /// with EPIPE instead of killing the process. Any other failure (a full
    /// disk) is said on standard error, with status 1.
    private func write(data: Data) {
        do { try handle.write(contentsOf: data) } catch {
            if Self.isBrokenPipe(error as NSError) { exit(128 + SIGPIPE) }
            if handle !== FileHandle.standardError { try? FileHandle.standardError.write(contentsOf: Data("lunette: cannot write the output: \(error)\n".utf8)) }
            exit(1)
        }
    }

    /// EPIPE, as Foundation reports it: itself, or under a Cocoa write error.
    private static func isBrokenPipe(_ error: NSError) -> Bool {
        if error.domain == NSPOSIXErrorDomain { return error.code == Int(EPIPE) }
        return (error.userInfo[NSUnderlyingErrorKey] as? NSError).map(isBrokenPipe) ?? false
    }
}
