import Foundation
import Logging
import Testing
import WidgetHost

/// Log lines kept in memory, for tests of what reaches the host's log.
final class CollectedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    var all: [String] { lock.withLock { lines } }

    func handler(label: String) -> LogHandler { Handler(log: self) }

    struct Handler: LogHandler {
        let log: CollectedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.lock.withLock { log.lines.append("\(event.level) \(event.message) \(fields)") }
        }
    }
}

@Suite("Store failures: neutral for scripts, complete in the host's log")
struct StoreHostLogTests {
    @Test func aBrokenDatabaseIsNeutralForTheScriptAndLoggedInFullForTheHost() throws {
        let h = try StoreHarness()
        let collected = CollectedLog()
        h.binding.logger = Logger(label: "test.store", factory: collected.handler)
        let path = h.store.databasePath(of: "group.t")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try (Data("not a database".utf8) + Data(repeating: 7, count: 4000)).write(to: URL(fileURLWithPath: path))

        let message = luaFailure { try h.run("return store.group('group.t'):get('k')") } ?? ""
        #expect(message.contains("the store of app group \"group.t\" is unavailable"), "\(message)")
        #expect(!message.contains(h.root), "the script saw a host path: \(message)")
        let logged = collected.all
        #expect(logged.count == 1)
        #expect(logged.first?.contains(path) == true, "\(logged)")
        #expect(logged.first?.contains("group=group.t") == true, "\(logged)")
    }

    @Test func aScriptStillSeesItsOwnMistakesInFull() throws {
        let h = try StoreHarness(limits: StoreLimits(valueBytes: 10))
        let message = luaFailure { try h.run("store.group('group.t'):set('k', string.rep('x', 100))") } ?? ""
        #expect(message.contains("over the limit of 10 bytes per value"), "\(message)")
    }
}
