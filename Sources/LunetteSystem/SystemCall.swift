#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library's calls whose names a type of ours shadows (`close`,
/// `write`, `exit` inside a type that has its own), reached without naming
/// the C library's module, which differs by system (Glibc, Darwin).
package enum SystemCall {
    @discardableResult
    package static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #elseif canImport(Musl)
        Musl.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }

    private static func write(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(descriptor, bytes, count)
        #elseif canImport(Musl)
        Musl.write(descriptor, bytes, count)
        #else
        Darwin.write(descriptor, bytes, count)
        #endif
    }

    package static func exit(_ status: Int32) -> Never {
        #if canImport(Glibc)
        Glibc.exit(status)
        #elseif canImport(Musl)
        Musl.exit(status)
        #else
        Darwin.exit(status)
        #endif
    }

    /// Writes all of `buffer` to `descriptor`, unbuffered, again after an
    /// interruption: 0 when all is written, else the errno of the write
    /// that failed (EIO for one that wrote nothing).
    package static func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> Int32 {
        guard let base = buffer.baseAddress else { return 0 }
        var written = 0
        while written < buffer.count {
            let n = write(descriptor, base + written, buffer.count - written)
            if n > 0 { written += n; continue }
            if n < 0 && errno == EINTR { continue }
            return n == 0 ? EIO : errno
        }
        return 0
    }

    /// Writes all of `text` to standard error; what cannot be written
    /// (standard error closed) is dropped.
    package static func writeToStandardError(_ text: String) {
        var text = text
        _ = text.withUTF8 { writeAll(2, UnsafeRawBufferPointer($0)) }
    }
}
