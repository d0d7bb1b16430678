import ArgumentParser
import DevPage
import Dispatch
import Foundation
import LunetteCommandLine
import SharedStore
import WidgetHost

/// `lunette-dev`: the hot-reload loop and its page, which `lunette dev`
/// becomes once it has checked its options (`DevCommand` in `lunette`). An
/// executable of its own, so that no other command links the page's HTTP
/// server (docs/cli.md, "How release binaries are built").
struct DevLoop: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lunette dev", abstract: DevHelp.abstract, discussion: DevHelp.discussion)

    @OptionGroup var options: DevOptions

    func run() throws {
        let bundle = options.bundle, storeDir = options.storeDir, scenario = options.scenario
        let noPage = options.noPage, polling = options.polling, seconds = options.seconds
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
        let port = options.port
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

/// Exit statuses as `lunette`'s: 0, 1 when the loop failed (its page could
/// not be served), 2 for usage errors.
@main
enum Main {
    static func main() {
        HostLog.bootstrapFromEnvironment()
        do {
            var command = try DevLoop.parseAsRoot()
            try command.run()
        } catch {
            if DevLoop.exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((DevLoop.fullMessage(for: error) + "\n").utf8))
                DevLoop.exit(withError: ExitCode(2))
            }
            DevLoop.exit(withError: error)
        }
    }
}
