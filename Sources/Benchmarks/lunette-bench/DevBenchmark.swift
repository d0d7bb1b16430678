import Foundation
import SharedStore
import WidgetHost

/// The dev loop (issue 15): a save of examples/tasks' main.lua → its new
/// timeline available to the page (the watcher sees the save, the version
/// is loaded, checked and swapped in, the widget reloads), over many saves;
/// beside it, the same new version swapped in by a direct
/// `WidgetService.update` call (no watcher): what the watcher adds.
enum DevBenchmark {
    struct Figures {
        var saveToPage: [Double]
        var directUpdate: [Double]
    }

    static func measure(saves: Int) throws -> Figures {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bench-dev-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let bundle = dir + "/tasks"
        try FileManager.default.copyItem(atPath: FileManager.default.currentDirectoryPath + "/examples/tasks", toPath: bundle)
        let main = bundle + "/main.lua"
        let original = try String(contentsOfFile: main, encoding: .utf8)
        let anchor = "remaining = n, title = fmt.title(config.filter)"
        guard original.contains(anchor) else { throw failure("examples/tasks/main.lua no longer holds \(anchor)") }
        func save(_ n: Int) throws {
            // As editors do: a temporary file renamed over the old one.
            try original.replacingOccurrences(of: anchor, with: "remaining = n, title = \"Bench \(n)\"")
                .write(toFile: main + ".tmp~", atomically: false, encoding: .utf8)
            _ = rename(main + ".tmp~", main)
        }

        let session = DevSession(path: bundle, store: SharedStore(root: dir + "/store")) { _ in }
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        Task {
            await session.start()
            let (changes, continuation) = AsyncStream.makeStream(of: [String].self)
            let watcher = FileWatcher(root: bundle, relevant: { $0.hasSuffix(".lua") && !$0.hasPrefix(".") }) { continuation.yield($0) }
            let loop = Task { for await paths in changes { await session.filesChanged(paths) } }
            do {
                for n in 0..<saves {
                    let swapsBefore = await session.swaps
                    let start = ContinuousClock.now
                    try save(n)
                    while await session.swaps == swapsBefore {
                        if ContinuousClock.now - start > .seconds(5) { throw failure("save \(n) was not swapped in after 5 s") }
                        try await Task.sleep(for: .microseconds(200))
                    }
                    box.saveToPage.append(milliseconds(since: start))
                    guard let widget = await session.widgetIDs.first,
                          try await session.service.widget(widget).timeline?.entries.first?.content["title"] == .string(.init("Bench \(n)")) else {
                        throw failure("save \(n): the new timeline is not there")
                    }
                }
                watcher.stop()
                continuation.finish()
                loop.cancel()
                // The baseline: the same swaps, called directly.
                let service = session.service
                let id = await session.bundle ?? "com.example.tasks"
                for n in saves..<(2 * saves) {
                    try save(n)
                    let start = ContinuousClock.now
                    try await service.update(bundle: id)
                    box.directUpdate.append(milliseconds(since: start))
                }
            } catch {
                box.error = "\(error)"
            }
            done.signal()
        }
        done.wait()
        if let error = box.error { throw failure(error) }
        return Figures(saveToPage: box.saveToPage, directUpdate: box.directUpdate)
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 1000
    }

    static func failure(_ message: String) -> NSError {
        NSError(domain: "lunette-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "dev: \(message)"])
    }

    final class ResultBox: @unchecked Sendable {
        var saveToPage: [Double] = []
        var directUpdate: [Double] = []
        var error: String?
    }
}
