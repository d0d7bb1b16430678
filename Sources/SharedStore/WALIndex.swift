import CSQLite
import Synchronization

/// The header of a connection's WAL index (the `-shm` file), read in
/// place, to learn without a transaction whether anything was committed.
///
/// SQLite documents the index (https://www.sqlite.org/walformat.html, "The
/// WAL-Index Header"): it starts with two copies of a 48-byte header that
/// every commit rewrites, the second copy first, then the first. It holds
/// a change counter, the last valid frame (`mxFrame`) and the log's salts.
/// Read the first copy, then the second, as SQLite's own readers do before
/// they take a lock: when they agree, that is the header at that moment;
/// when two such readings agree, nothing was committed between them.
///
/// The view is SQLite's own mapping of the index, asked of the connection's
/// file through its VFS (`xShmMap`), not a mapping of our own: opening and
/// closing the `-shm` file would release every POSIX lock this process
/// holds on it (SQLite's read marks and the lock that keeps other processes
/// from rebuilding the index under us). SQLite keeps the mapping until the
/// connection closes.
///
/// Why: a read transaction costs two `fcntl` system calls (SQLite takes and
/// drops a shared lock on a read mark), and a script call that reads the
/// store opens one. `StoreGroup` keeps a finished call's read transaction
/// open and lets the next call adopt it when the header has not changed.
final class WALIndex {
    /// The header's 48 bytes, compared as a whole.
    struct Header: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

        static func == (a: Header, b: Header) -> Bool { a.words == b.words }

        /// Byte 12, `isInit`: zero until a connection has built the index.
        var isInitialized: Bool { withUnsafeBytes(of: words) { $0[12] != 0 } }
        /// Bytes 16–19, `mxFrame`: the frames in the log (native byte order).
        var frames: UInt32 { withUnsafeBytes(of: words) { $0.loadUnaligned(fromByteOffset: 16, as: UInt32.self) } }
    }

    static let headerSize = 48
    /// SQLite's WAL-index regions are 32 KB; the header is at the start of the first.
    private static let regionSize: Int32 = 32_768
    private let base: UnsafeRawPointer

    /// The index `connection` has mapped; nil before its first read of a
    /// database in WAL mode, or when its VFS cannot say (`xShmMap` is from
    /// version 2 of the I/O methods). Valid while the connection is open.
    init?(connection: OpaquePointer) {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(connection, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
              let file, let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2,
              let map = methods.pointee.xShmMap else { return nil }
        var region: UnsafeMutableRawPointer?
        // bExtend 0: only a region that exists; this connection has read, so region 0 does.
        guard map(file, 0, Self.regionSize, 0, &region) == SQLITE_OK, let region else { return nil }
        base = UnsafeRawPointer(region)
    }

    /// The header, when both copies agree and the index is built; nil while
    /// a commit is rewriting it (the caller then assumes a change).
    func header() -> Header? {
        var first = Header()
        var second = Header()
        withUnsafeMutableBytes(of: &first.words) { $0.copyMemory(from: UnsafeRawBufferPointer(start: base, count: Self.headerSize)) }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        withUnsafeMutableBytes(of: &second.words) {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: base + Self.headerSize, count: Self.headerSize))
        }
        guard first == second, first.isInitialized else { return nil }
        return first
    }
}
