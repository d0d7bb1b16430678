/// Why a store operation failed. The description says what and where: the
/// group, the key or file name, the database file.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// A group id, key or file name breaks the naming rules.
        case invalidName
        /// A value the store cannot keep (a nil inside a table, a mixed table, …).
        case invalidValue
        /// One value or file is over the per-value limit.
        case valueTooLarge
        /// The group, or the call's writes, would go over their quota.
        case quotaExceeded
        /// The file at the database path is not a Lunette store (not SQLite,
        /// corrupted, another application's database, or a newer schema).
        case notAStore
        /// SQLite reported an error (I/O, a full disk, …).
        case database
        /// Other connections kept the database locked for longer than the
        /// busy timeout (5 s), while it was being opened or written.
        case busy
        /// A stored value could not be decoded.
        case corruptValue
        /// Reads found the group missing and it was not to be created.
        case noSuchGroup
        /// Concurrent writers kept changing the keys a call's updates read.
        case conflict
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Sizes the store enforces. Over a limit is an error, and nothing is written.
public struct StoreLimits: Sendable, Equatable {
    /// Largest value (its `storageSize`) or file, in bytes.
    public var valueBytes: Int
    /// Largest total of a group: keys, values, file names and file contents.
    public var groupBytes: Int
    /// Largest total a single script call may stage before it commits.
    public var callBytes: Int

    public init(valueBytes: Int = 1 << 20, groupBytes: Int = 64 << 20, callBytes: Int = 16 << 20) {
        self.valueBytes = valueBytes
        self.groupBytes = groupBytes
        self.callBytes = callBytes
    }

    /// 1 MB per value or file, 64 MB per group, 16 MB staged per call.
    public static let `default` = StoreLimits()

    /// Throws `.valueTooLarge` when `size` is over `valueBytes`; `what`
    /// names the value or file in the message ("value for key \"k\"").
    public func checkValueSize(_ size: Int, of what: @autoclosure () -> String) throws(StoreError) {
        if size > valueBytes {
            throw StoreError(.valueTooLarge, "\(what()) is \(size) bytes, over the limit of \(valueBytes) bytes per value or file; nothing was written")
        }
    }
}

/// How hard each commit works to survive a crash.
public enum StoreDurability: Sendable, Equatable {
    /// WAL with synchronous=NORMAL: a commit survives the process being
    /// killed at any moment; a power loss may undo the last commits.
    case processCrash
    /// WAL with synchronous=FULL: every commit is on disk (fsync) before it returns.
    case powerLoss
}
