import CSQLite
import Foundation
import SharedStore
import Testing

/// Runs the `store-stress` writer (built next to the test bundle).
enum StressTool {
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("store-stress")
    }

    static func process(_ arguments: [String], stdout: Pipe? = nil) -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardOutput = stdout ?? FileHandle.nullDevice
        process.standardError = FileHandle.standardError
        return process
    }
}

/// `PRAGMA integrity_check` through a plain SQLite connection.
func integrityCheck(_ path: String) -> String {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return "cannot open" }
    defer { sqlite3_close(db) }
    var stmt: OpaquePointer?
    guard sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nil) == SQLITE_OK else { return String(cString: sqlite3_errmsg(db)) }
    defer { sqlite3_finalize(stmt) }
    var lines: [String] = []
    while sqlite3_step(stmt) == SQLITE_ROW { lines.append(String(cString: sqlite3_column_text(stmt, 0))) }
    return lines.joined(separator: "\n")
}

@Suite("The store under real processes", .serialized)
struct ReliabilityTests {
    @Test func fourProcessesOfAtomicUpdatesLoseNoIncrement() throws {
        let temp = TemporaryStore()
        let writers = (0..<4).map { _ in StressTool.process(["increment", temp.root, "group.count", "n", "2500"]) }
        for writer in writers { try writer.run() }
        for writer in writers { writer.waitUntilExit() }
        #expect(writers.allSatisfy { $0.terminationStatus == 0 })
        #expect(try temp.store.group("group.count").get("n") == .integer(10_000))
    }

    @Test func aWriterKilledAtRandomMomentsLosesNoAcknowledgedWrite() throws {
        let temp = TemporaryStore()
        var generator = SystemRandomNumberGenerator()
        var acknowledged: [Int] = []
        for round in 0..<100 {
            let out = Pipe()
            let writer = StressTool.process(["acks", temp.root, "group.kill", String(round * 1_000_000)], stdout: out)
            try writer.run()
            // From 0 to 60 ms: some kills land while the process starts or
            // creates the database, most while it writes.
            usleep(UInt32.random(in: 0..<60_000, using: &generator))
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            #expect(writer.terminationReason == .uncaughtSignal, "round \(round) ended by itself: \(writer.terminationStatus)")
            // Every line was written after its commit returned.
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in text.split(separator: "\n") where line.hasPrefix("ack ") {
                if let n = Int(line.dropFirst(4)) { acknowledged.append(n) }
            }
        }
        let path = temp.store.databasePath(of: "group.kill")
        #expect(integrityCheck(path) == "ok")
        let group = try temp.reopen().group("group.kill")
        var missing: [Int] = []
        for n in acknowledged {
            if try group.get("k\(n)") != .integer(Int64(n)) { missing.append(n) }
            if n % 10 == 0, try group.readFile("f\(n)") != [UInt8](repeating: UInt8(n % 251), count: 4096) { missing.append(n) }
        }
        #expect(missing.isEmpty, "lost \(missing.count) acknowledged writes, e.g. \(missing.prefix(5))")
        #expect(acknowledged.count > 100, "only \(acknowledged.count) writes were acknowledged; the test did not exercise much")
        // The usage the store keeps matches its contents.
        let keys = try group.keys()
        var expected = 0
        for key in keys { expected += key.utf8.count + (try group.get(key)?.storageSize ?? 0) }
        for name in try group.files() { expected += name.utf8.count + (try group.readFile(name)?.count ?? 0) }
        #expect(try group.usage() == expected)
    }
}
