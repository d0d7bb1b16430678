import Foundation

/// Unbuffered writes to the standard streams.
struct FileOutput {
    let handle: FileHandle

    static let standardOutput = FileOutput(handle: .standardOutput)
    static let standardError = FileOutput(handle: .standardError)

    func write(_ text: String) {
        handle.write(Data(text.utf8))
    }

    func write(bytes: [UInt8]) {
        handle.write(Data(bytes))
    }
}
