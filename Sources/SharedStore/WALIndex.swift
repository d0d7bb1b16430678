#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A read-only view of the header of a database's WAL index (its `-shm`
/// file), to learn without a transaction whether anything was committed.
///
/// SQLite documents the file (https://www.sqlite.org/walformat.html, "The
/// WAL-Index Header"): it starts with two copies of a 48-byte header that
/// every commit rewrites (the second copy first, then the first), holding
/// a change counter, the last valid frame and the log's salts. A reader
/// reads the first copy, then the second, and trusts them only when they
/// agree; that is what SQLite's own readers do before they take a lock. So
/// two equal readings mean that no commit happened between them.
///
/// Why: a read transaction costs two `fcntl` system calls (SQLite takes and
/// drops a shared lock on a read mark), and a script call that reads the
/// store opens one. `StoreGroup` keeps a finished call's read transaction
/// open and lets the next call adopt it when the header has not changed,
/// which sees exactly what a new transaction would.
final class WALIndex {
    /// The header's 48 bytes, compared as a whole.
    struct Header: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

        static func == (a: Header, b: Header) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2
                && a.words.3 == b.words.3 && a.words.4 == b.words.4 && a.words.5 == b.words.5
        }

        /// Byte 12, `isInit`: zero until a connection has built the index.
        var isInitialized: Bool { withUnsafeBytes(of: words) { $0[12] != 0 } }
    }

    static let headerSize = 48
    private let base: UnsafeMutableRawPointer
    private let length: Int

    /// Maps the start of `databasePath`-shm; nil when there is none yet or
    /// it is too short to hold both copies. Call only while a connection of
    /// this process has the database open in WAL mode and has read from it:
    /// SQLite truncates the file only when no connection holds it open, so
    /// the mapping stays valid for that connection's life.
    init?(databasePath: String) {
        let fd = open(databasePath + "-shm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Int(info.st_size) >= 2 * Self.headerSize else { return nil }
        let length = 2 * Self.headerSize
        guard let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), mapped != MAP_FAILED else { return nil }
        base = mapped
        self.length = length
    }

    deinit { munmap(base, length) }

    /// The header, when both copies agree and the index is built; nil while
    /// a commit is rewriting it (the caller then assumes a change).
    func header() -> Header? {
        var first = Header()
        var second = Header()
        withUnsafeMutableBytes(of: &first.words) { _ = memcpy($0.baseAddress!, base, Self.headerSize) }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        withUnsafeMutableBytes(of: &second.words) { _ = memcpy($0.baseAddress!, base + Self.headerSize, Self.headerSize) }
        guard first == second, first.isInitialized else { return nil }
        return first
    }
}
