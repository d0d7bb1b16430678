#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
#if canImport(Glibc)
import Glibc
#endif

/// Watches a folder tree and reports changed files, a batch at a time.
///
/// On Linux it uses inotify on every directory of the tree (directories
/// created later are watched as they appear); elsewhere, or when inotify
/// cannot be used, it polls every file's size and modification time. Either
/// way it sees what editors do: write in place, write a temporary file and
/// rename it over the old one, delete and create again. A burst of events
/// (one save is often several) is reported once, `settle` after the last
/// one. `relevant` filters the paths (say, only Lua files and bundle.json),
/// so an editor's swap files do not trigger anything.
public final class FileWatcher: @unchecked Sendable {
    public let root: String
    /// How the tree is watched: "inotify" or "polling".
    public private(set) var mechanism = "polling"
    private let settle: Double
    private let relevant: @Sendable (String) -> Bool
    private let onChange: @Sendable ([String]) -> Void
    private let lock = FastLock()
    private var stopped = false

    /// Starts watching `root`. `onChange` gets the changed paths (sorted,
    /// relative to `root`), on the watcher's own thread.
    public init(root: String, settle: Double = 0.02, forcePolling: Bool = false,
                relevant: @escaping @Sendable (String) -> Bool = { _ in true },
                onChange: @escaping @Sendable ([String]) -> Void) {
        self.root = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
        self.settle = settle
        self.relevant = relevant
        self.onChange = onChange
        #if os(Linux)
        if !forcePolling, let inotify = Inotify(root: self.root) {
            mechanism = "inotify"
            start { self.runInotify(inotify) }
            return
        }
        #endif
        start { self.runPolling() }
    }

    /// Stops watching (the watcher's thread ends within about 100 ms; it
    /// holds the watcher until then).
    public func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func start(_ body: @escaping @Sendable () -> Void) {
        // 8 MiB, glibc's default that Foundation's Thread had: `onChange`
        // may run Lua, which needs `LuaState.minimumStackSize` to run inline.
        HostThread.start(name: "lunette.watch", stackSize: 8 << 20, body)
    }

    /// Reports `changed` once nothing more has changed for `settle` seconds.
    private func report(_ changed: Set<String>) {
        let paths = changed.filter(relevant).sorted()
        if !paths.isEmpty && !isStopped { onChange(paths) }
    }

    // MARK: Polling

    /// Size and modification time of every file under the root.
    private func snapshot() -> [String: (size: Int, modified: Double)] {
        var files: [String: (Int, Double)] = [:]
        for relative in pathsBelow(root) {
            var info = stat()
            guard stat(root + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            #if os(Linux)
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            #else
            let modified = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
            #endif
            files[relative] = (Int(info.st_size), modified)
        }
        return files
    }

    private func runPolling() {
        var last = snapshot()
        var pending = Set<String>()
        var quietSince = Date()
        while !isStopped {
            HostThread.sleep(min(0.05, settle))
            let now = snapshot()
            var changed = Set<String>()
            for (path, info) in now where last[path].map({ $0.size != info.size || $0.modified != info.modified }) ?? true {
                changed.insert(path)
            }
            for path in last.keys where now[path] == nil { changed.insert(path) }
            last = now
            if !changed.isEmpty {
                pending.formUnion(changed)
                quietSince = Date()
            } else if !pending.isEmpty, Date().timeIntervalSince(quietSince) >= settle {
                report(pending)
                pending = []
            }
        }
    }

    // MARK: inotify

    #if os(Linux)
    private func runInotify(_ inotify: Inotify) {
        defer { inotify.close() }
        var pending = Set<String>()
        while !isStopped {
            // Wait for events: the settle time while a burst is pending, else up to 100 ms (to see stop()).
            let events = inotify.read(timeoutMs: pending.isEmpty ? 100 : Int32(max(1, settle * 1000)))
            if events.isEmpty {
                if !pending.isEmpty {
                    report(pending)
                    pending = []
                }
                continue
            }
            pending.formUnion(events)
        }
    }
    #endif
}

#if os(Linux)
/// An inotify instance watching every directory of a tree.
private final class Inotify: @unchecked Sendable {   // used by the watcher's thread only
    private let fd: Int32
    private let root: String
    /// Watch descriptors and the directory (relative to the root) each watches.
    private var directories: [Int32: String] = [:]
    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB
                                     | IN_DELETE_SELF | IN_MOVE_SELF)

    init?(root: String) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.root = root
        guard watchTree("") else {
            Glibc.close(fd)
            return nil
        }
    }

    func close() { Glibc.close(fd) }

    /// Watches `relative` and every directory under it.
    @discardableResult
    private func watchTree(_ relative: String) -> Bool {
        let path = relative.isEmpty ? root : root + "/" + relative
        let wd = inotify_add_watch(fd, path, Self.mask)
        guard wd >= 0 else { return false }
        directories[wd] = relative
        let children = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for child in children {
            let childRelative = relative.isEmpty ? child : relative + "/" + child
            if FileKind(atPath: root + "/" + childRelative) == .directory {
                watchTree(childRelative)
            }
        }
        return true
    }

    /// The files under `relative` (relative to the root).
    private func files(under relative: String) -> [String] {
        let base = relative.isEmpty ? root : root + "/" + relative
        var out: [String] = []
        for child in pathsBelow(base) {
            out.append(relative.isEmpty ? child : relative + "/" + child)
        }
        return out
    }

    /// The paths (relative to the root) that events named, waiting up to
    /// `timeoutMs` for the first; empty when none came.
    func read(timeoutMs: Int32) -> [String] {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, timeoutMs) > 0 else { return [] }
        var paths: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + 16 <= count {
                let (wd, mask, length) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                    (raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                     raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset += 16 + length
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    paths += files(under: "")   // events were lost: anything may have changed
                    continue
                }
                guard let directory = directories[wd] else { continue }
                let path = name.isEmpty ? directory : (directory.isEmpty ? name : directory + "/" + name)
                if mask & UInt32(IN_ISDIR) != 0, mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    // A new directory (made, moved in, checked out): watch it, and
                    // count the files already in it, which sent no event of their own.
                    watchTree(path)
                    paths += files(under: path)
                }
                if mask & UInt32(IN_IGNORED) != 0 { directories[wd] = nil }
                paths.append(path)
            }
        }
        return paths
    }
}
#endif
