import CSQLite
import Foundation
import SharedStore
import Testing

/// A fresh store root under the temporary directory, removed at the end.
final class TemporaryStore {
    let root: String
    let store: SharedStore

    init(limits: StoreLimits = .default) {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-store-\(UUID().uuidString)").path
        store = SharedStore(root: root, limits: limits)
    }

    /// Another `SharedStore` on the same root: another connection, as another process would have.
    func reopen(limits: StoreLimits = .default) -> SharedStore { SharedStore(root: root, limits: limits) }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

/// The error `body` threw; records an issue when it did not throw one.
func storeError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> StoreError? {
    do {
        try body()
        Issue.record("expected a StoreError", sourceLocation: sourceLocation)
    } catch let error as StoreError {
        return error
    } catch {
        Issue.record("expected a StoreError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite("The shared store (app side)")
struct StoreTests {
    let temp = TemporaryStore()

    @Test func valuesKeepTheirType() throws {
        let g = try temp.store.group("group.test")
        let values: [String: StoreValue] = [
            "int": .integer(-42), "max": .integer(.max), "double": .double(1.0), "tiny": .double(5e-324),
            "yes": .boolean(true), "no": .boolean(false), "text": "héllo\0world", "empty": "",
            "bytes": .bytes([0xFF, 0x00, 0xC0, 0xAF]),
            "array": [1, 2.5, "three", [true]],
            "map": ["b": 1, "a": ["nested": .bytes([1, 2])], "é": 3, "e\u{301}": 4],
            "emptyArray": [], "emptyMap": .map(StoreMap()),
        ]
        for (key, value) in values { try g.set(key, value) }
        // Read back through another connection, as another process would.
        let other = try temp.reopen().group("group.test")
        for (key, value) in values {
            let read = try other.get(key)
            #expect(read == value, "\(key): \(String(describing: read))")
            #expect(read?.kindName == value.kindName, "\(key)")
        }
        #expect(try other.get("missing") == nil)
        // Canonically equivalent keys are two keys, byte for byte.
        #expect(try other.get("map")?.mapValue?.count == 4)
    }

    @Test func aValueOfExactlyTheLimitIsKept() throws {
        let g = try temp.store.group("group.test")
        let big = [UInt8]((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try g.set("big", .bytes(big))
        try g.writeFile("big.bin", big)
        #expect(try temp.reopen().group("group.test").get("big") == .bytes(big))
        #expect(try g.readFile("big.bin") == big)
        #expect(storeError { try g.set("big", .bytes(big + [0])) }?.code == .valueTooLarge)
        #expect(try g.usage() == 2 * (1 << 20) + 3 + 7)
    }

    @Test func theRootComesFromTheArgumentTheEnvironmentOrHome() {
        #expect(SharedStore.resolveRoot("/x", environment: ["LUNETTE_STORE": "/y", "HOME": "/h"]) == "/x")
        #expect(SharedStore.resolveRoot(nil, environment: ["LUNETTE_STORE": "/y", "HOME": "/h"]) == "/y")
        #expect(SharedStore.resolveRoot(nil, environment: ["HOME": "/h"]) == "/h/.lunette/store")
        #expect(SharedStore(root: "/r").databasePath(of: "group.a") == "/r/group.a/store.sqlite")
    }

    @Test func keysAreSortedByBytesAndFilteredByPrefix() throws {
        let g = try temp.store.group("group.test")
        for key in ["b", "a/2", "a/1", "a", "a0", "é", "Z", "a/10"] { try g.set(key, 1) }
        #expect(try g.keys() == ["Z", "a", "a/1", "a/10", "a/2", "a0", "b", "é"])
        #expect(try g.keys(prefix: "a/") == ["a/1", "a/10", "a/2"])
        #expect(try g.keys(prefix: "é") == ["é"])
        #expect(try g.keys(prefix: "zz") == [])
        try g.remove("a")
        try g.set("a0", nil)
        try g.remove("never-there")
        #expect(try g.keys(prefix: "a") == ["a/1", "a/10", "a/2"])
    }

    @Test func namesAreChecked() throws {
        let g = try temp.store.group("group.test")
        #expect(storeError { try g.set("", 1) }?.code == .invalidName)
        #expect(storeError { try g.set(String(repeating: "k", count: 257), 1) }?.message.contains("at most 256 bytes") == true)
        #expect(storeError { try g.set("a\0b", 1) }?.message.contains("NUL") == true)
        try g.set(String(repeating: "k", count: 256), 1)
        for bad in ["", ".", "..", "a/b", "/etc", "a\0"] {
            #expect(storeError { try g.writeFile(bad, [1]) }?.code == .invalidName, "\(bad)")
        }
        for bad in ["", ".hidden", "a/b", "../x", "group test", "g\0"] {
            #expect(storeError { _ = try temp.store.group(bad) }?.code == .invalidName, "\(bad)")
        }
        // KELVIN SIGN is canonically equivalent to "K", so equal as a
        // String: with "group.K" open it must still be refused.
        _ = try temp.store.group("group.K")
        #expect(storeError { _ = try temp.store.group("group.\u{212A}") }?.code == .invalidName)
        #expect(storeError { _ = try temp.store.group("group.absent", create: false) }?.code == .noSuchGroup)
        #expect(!temp.store.exists("group.absent"))
    }

    @Test func filesRoundTripAndList() throws {
        let g = try temp.store.group("group.test")
        try g.writeFile("b.bin", [0, 1, 2, 255])
        try g.writeFile("a.txt", Array("hi".utf8))
        try g.writeFile("empty", [])
        #expect(try g.files() == ["a.txt", "b.bin", "empty"])
        #expect(try g.readFile("b.bin") == [0, 1, 2, 255])
        #expect(try g.readFile("empty") == [])
        #expect(try g.readFile("nope") == nil)
        try g.removeFile("a.txt")
        #expect(try g.files() == ["b.bin", "empty"])
        #expect(try g.usage() == 4 + 5 + 5)
    }

    @Test func overQuotaIsAnErrorAndWritesNothing() throws {
        let temp = TemporaryStore(limits: StoreLimits(valueBytes: 100, groupBytes: 250))
        let g = try temp.store.group("group.test")
        let big = storeError { try g.set("big", .string(String(repeating: "x", count: 101))) }
        #expect(big?.code == .valueTooLarge)
        #expect(big?.message.contains("\"big\"") == true)
        #expect(storeError { try g.writeFile("f", [UInt8](repeating: 1, count: 101)) }?.code == .valueTooLarge)
        try g.set("a", .string(String(repeating: "x", count: 100)))
        try g.set("b", .string(String(repeating: "x", count: 100)))
        // A batch that would pass the group's quota is refused as a whole.
        let quota = storeError {
            try g.commit(StoreBatch(values: [("c", "small"), ("d", .string(String(repeating: "x", count: 60)))]))
        }
        #expect(quota?.code == .quotaExceeded)
        #expect(try g.keys() == ["a", "b"])
        #expect(try g.usage() == 202)
        // Replacing a value counts only the difference.
        try g.set("a", .string(String(repeating: "y", count: 100)))
        try g.set("a", 1)
        #expect(try g.usage() == 9 + 101)
    }

    @Test func usageFollowsEveryWriteOfABatchInOrder() throws {
        let temp = TemporaryStore()
        let g = try temp.store.group("group.test")
        try g.set("kept", "abc")                                  // 4 + 3
        try g.writeFile("f", [1, 2, 3, 4])                        // 1 + 4
        // One batch writes a key three times, removes a key that exists and
        // one that does not, and replaces and removes files.
        try g.commit(StoreBatch(values: [("a", "xx"), ("a", .string(String(repeating: "y", count: 10))), ("kept", nil),
                                         ("a", 5), ("never", nil), ("b", "b")],
                                files: [("f", [9]), ("g", [1, 2]), ("g", nil), ("nothing", nil)]))
        #expect(try g.keys() == ["a", "b"])
        #expect(try g.files() == ["f"])
        #expect(try g.usage() == (1 + 8) + (1 + 1) + (1 + 1))
        // Removing what is absent changes nothing: the sequence stays.
        #expect(try g.commit(StoreBatch(values: [("never", nil)], files: [("nothing", nil)])) == 3)
    }

    @Test func updateIsAtomicAcrossConnections() async throws {
        let roots = (0..<4).map { _ in temp.reopen() }
        await withTaskGroup(of: Void.self) { tasks in
            for store in roots {
                tasks.addTask {
                    let g = try! store.group("group.test")
                    for _ in 0..<250 {
                        try! g.update("n") { old in .integer((old?.integerValue ?? 0) + 1) }
                    }
                }
            }
        }
        #expect(try temp.store.group("group.test").get("n") == .integer(1000))
    }

    @Test func aConditionalCommitRefusesMovedKeys() throws {
        let g = try temp.store.group("group.test")
        try g.set("n", 1)
        let (_, version) = try g.entry("n")
        #expect(version > 0)
        #expect(try g.entry("absent").version == 0)
        try temp.reopen().group("group.test").set("n", 2)
        let outcome = try g.commit(StoreBatch(values: [("n", 10), ("other", 1)]), expecting: [("n", version), ("absent", 0)])
        #expect(outcome == .conflict(["n"]))
        #expect(try g.get("other") == nil)
        let ok = try g.commit(StoreBatch(values: [("n", 10)]), expecting: [("n", try g.entry("n").version)])
        guard case .committed(let sequence) = ok else { Issue.record("expected a commit"); return }
        #expect(try g.entry("n").version == sequence)
    }

    @Test func codableValuesAreTablesToScripts() throws {
        struct Task: Codable, Equatable { var title: String; var done: Bool; var count: Int; var score: Double; var data: Data }
        let g = try temp.store.group("group.test")
        let task = Task(title: "Buy milk", done: false, count: 3, score: 2.5, data: Data([1, 2]))
        try g.set(task, forKey: "task")
        #expect(try g.get(Task.self, forKey: "task") == task)
        let stored = try g.get("task")
        #expect(stored?["title"] == "Buy milk")
        #expect(stored?["count"] == .integer(3))
        #expect(stored?["score"] == .double(2.5))
        // JSONEncoder writes 2.0 as "2": through Codable, integral doubles arrive as integers.
        try g.set(["score": 2.0], forKey: "plain")
        #expect(try g.get("plain")?["score"] == .integer(2))
        // A UInt64 beyond Int64 arrives as digits too; through Codable it is a float, not an error.
        try g.set(["big": UInt64.max], forKey: "big")
        #expect(try g.get("big")?["big"] == .double(Double(UInt64.max)))
        try g.set(Optional<Task>.none, forKey: "task")
        #expect(try g.get("task") == nil)
    }

    @Test func jsonKeepsIntegersApartFromDoubles() throws {
        #expect(try StoreValue(json: "42") == .integer(42))
        #expect(try StoreValue(json: "42.0") == .double(42))
        #expect(try StoreValue(json: "1e3") == .double(1000))
        #expect(try StoreValue(json: "9007199254740993") == .integer(9_007_199_254_740_993), "above 2^53: exact")
        #expect(storeError { _ = try StoreValue(json: "99999999999999999999") }?.message.contains("does not fit in 64 bits") == true,
                "an integer beyond 64 bits is refused, not taken as a float")
        #expect(try StoreValue(json: "99999999999999999999.0") == .double(1e20))
        #expect(try StoreValue(json: " {\"a\": [1, \"\\u00e9\\ud83d\\ude00\", false]} ") == ["a": [1, "é😀", false]])
        #expect(try StoreValue(json: "null") == nil)
        for bad in ["", "[1,]", "{\"a\" 1}", "[null]", "01", "\"\\ud800\"", "tru", "1 2", "\"a\nb\""] {
            #expect(storeError { _ = try StoreValue(json: bad) }?.code == .invalidValue, "\(bad)")
        }
        let value: StoreValue = ["i": 1, "d": 2.0, "s": "q\"\n", "b": .bytes([0xFF])]
        #expect(value.json == #"{"b":{"$bytes":"/w=="},"d":2.0,"i":1,"s":"q\"\n"}"#)
    }

    @Test func aFileThatIsNotAStoreIsLeftAlone() throws {
        let path = temp.store.databasePath(of: "group.bad")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let junk = Data("this is not a database, just some text that is long enough".utf8) + Data(repeating: 7, count: 4000)
        try junk.write(to: URL(fileURLWithPath: path))
        let error = storeError { _ = try temp.store.group("group.bad") }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains(path) == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == junk)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func anotherApplicationsDatabaseIsLeftAlone() throws {
        let path = temp.store.databasePath(of: "group.other")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, "CREATE TABLE people (name TEXT)", nil, nil, nil)
        sqlite3_close(db)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = storeError { _ = try temp.store.group("group.other") }
        #expect(error?.code == .notAStore)
        #expect(error?.message.contains("not a Lunette store") == true)
        // Not even switched to WAL mode (bytes 18 and 19 of the header).
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aNewerSchemaIsRefused() throws {
        try temp.store.group("group.new").set("k", 1)
        var db: OpaquePointer?
        sqlite3_open(temp.store.databasePath(of: "group.new"), &db)
        sqlite3_exec(db, "PRAGMA user_version = 99", nil, nil, nil)
        sqlite3_close(db)
        let error = storeError { _ = try temp.reopen().group("group.new") }
        #expect(error?.message.contains("newer Lunette (schema 99") == true)
    }

    @Test func observersHearLocalAndOtherWriters() async throws {
        let g = try temp.store.group("group.test")
        let heard = Heard()
        let token = try g.observe { change in heard.add(change) }
        try g.set("local", 1)
        let first = heard.changes.first
        #expect(first?.group == "group.test" && first?.sequence == 1 && first?.keys == ["local"])
        #expect(first?.files == [] && first?.isComplete == true && first?.isLocal == true)
        let other = try temp.reopen().group("group.test")
        try other.commit(StoreBatch(values: [("x", 1), ("y", nil)], files: [("f", [1])]))
        // Polled every 10 ms; allow a slow machine plenty of time.
        for _ in 0..<400 where heard.changes.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(heard.changes.count == 2)
        #expect(heard.changes.last.map { ($0.keys, $0.files, $0.isLocal, $0.isComplete) } ?? ([], [], true, false) == (["x"], ["f"], false, true))   // removing an absent key changes nothing
        token.cancel()
        try other.set("after", 1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(heard.changes.count == 2)
    }
}

/// Changes collected from an observer's thread.
final class Heard: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [StoreChange] = []
    func add(_ change: StoreChange) { lock.lock(); list.append(change); lock.unlock() }
    var changes: [StoreChange] { lock.lock(); defer { lock.unlock() }; return list }
}
