import ArgumentParser
import DevPage
import Dispatch
import Foundation
import SharedStore
import WidgetHost

/// `lunette dev BUNDLE`: the hot-reload loop.
struct DevCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run a bundle and reload it on every save (developer mode: no budget, no floor).",
        discussion: """
            Puts the bundle's widgets (the scenario's, or one of each kind) and controls on \
            screen, then watches every file of the bundle. On each save the new version is \
            loaded and checked in fresh states (its declarations, one run of each widget's \
            placeholder and timeline, each control's value); if it passes it is swapped in and \
            every widget's timeline and every control's value run again, and a line per widget \
            says what changed. If it fails, the error is printed with file:line and traceback, \
            and the last good version goes on running. Any number of failing saves are fine. \
            The store (and Live Activities) persist across reloads and runs, in the dev store \
            printed at start. A page on 127.0.0.1 (--port, default 4800) shows every widget's \
            timeline, the entry shown now, controls (with buttons), activities, the last error \
            and recent logs, updated on every change; it can step the clock ahead. Ctrl-C ends it.
            """)

    @Argument(help: ArgumentHelp("The bundle directory.", valueName: "bundle"))
    var bundle: String

    @Option(help: ArgumentHelp("A scenario file whose widgets and controls to show (its events are not played).", valueName: "file"))
    var scenario: String?

    @Option(name: .customLong("store-dir"), help: ArgumentHelp("The dev store (default ~/.lunette/dev/<bundle folder name>).", valueName: "dir"))
    var storeDir: String?

    @Flag(help: "Poll the files instead of using inotify (for file systems that send no events).")
    var polling = false

    @Option(help: ArgumentHelp("The page's port on 127.0.0.1 (0: any free one).", valueName: "n"))
    var port = 4800

    @Flag(name: .customLong("no-page"), help: "Serve no page: the loop in the terminal only.")
    var noPage = false

    @Option(help: ArgumentHelp("Stop after this many seconds (for scripts and tests; default: until Ctrl-C).", valueName: "seconds"))
    var seconds: Double?

    func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: bundle, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(bundle): no such bundle directory")
        }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be positive, not \(seconds)") }
        if !(0...65535).contains(port) { throw ValidationError("--port must be 0…65535, not \(port)") }
    }

    func run() throws {
        let root = bundle.count > 1 && bundle.hasSuffix("/") ? String(bundle.dropLast()) : bundle
        let name = URL(fileURLWithPath: root).standardizedFileURL.lastPathComponent
        let storeRoot = storeDir ?? (NSHomeDirectory() + "/.lunette/dev/" + name)
        Self.say("lunette dev \(root)")
        Self.say("dev store: \(storeRoot)")
        let session = DevSession(path: root, store: SharedStore(root: storeRoot), scenario: scenario, output: Self.say)
        let done = DispatchSemaphore(value: 0)
        Task {
            await session.start()
            await session.runInBackground()
            done.signal()
        }
        done.wait()
        let port = self.port
        let pageFailed = Latch()
        let page: Task<Void, Never>? = noPage ? nil : Task {
            do {
                try await DevPageServer.run(session: session, port: port) { port in Self.say("page: http://127.0.0.1:\(port)/") }
            } catch is CancellationError {
            } catch {
                Self.say("✗ the page cannot be served on 127.0.0.1:\(port): \(error) (try --port, or --no-page)")
                pageFailed.set()
                done.signal()
            }
        }

        // Saves are handled one after another, in order.
        let changes = AsyncStream<[String]>.makeStream()
        let watcher = FileWatcher(root: root, forcePolling: polling, relevant: Self.isBundleFile) { paths in
            changes.continuation.yield(paths)
        }
        Self.say("watching \(root) (\(watcher.mechanism)); Ctrl-C to stop")
        let loop = Task {
            for await paths in changes.stream { await session.filesChanged(paths) }
        }

        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler { done.signal() }
        interrupt.resume()
        if let seconds {
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done.signal() }
        }
        done.wait()
        watcher.stop()
        changes.continuation.finish()
        loop.cancel()
        let stopped = DispatchSemaphore(value: 0)
        Task {
            await session.stop()
            page?.cancel()
            _ = await page?.result
            stopped.signal()
        }
        _ = stopped.wait(timeout: .now() + 5)
        Self.say("stopped")
        if pageFailed.isSet { throw ExitCode.failure }
    }

    /// A flag set from another thread.
    final class Latch: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    /// A line on standard output, at once (not buffered: a watcher of the output sees it now).
    static let say: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The files a bundle is made of: Lua files and bundle.json (an
    /// editor's swap and backup files are not).
    static let isBundleFile: @Sendable (String) -> Bool = { path in
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return !name.hasPrefix(".") && (name.hasSuffix(".lua") || name == "bundle.json")
    }
}
