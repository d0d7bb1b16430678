import Foundation
import Testing
import WidgetHost

/// The store through the `lunette` binary: scripts in several processes,
/// and the app's side from a shell.
@Suite("The store through lunette processes", .serialized)
struct StoreProcessTests {
    let directory: URL
    var root: String { directory.appendingPathComponent("store").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-store-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func file(_ name: String, _ source: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try source.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func fourScriptProcessesOfUpdatesEndAtExactlyTenThousand() throws {
        // Each call reads the counter, works a little, and commits ten
        // increments; calls of the other processes commit in between, so
        // commits conflict and the transforms run again.
        let script = try file("count.lua", """
            local g = store.group("group.count")
            for i = 1, 10 do
              g:update("n", function(n) print("run") return (n or 0) + 1 end)
              for _ = 1, 2000 do end
            end
            """)
        // Each transform run prints a line: about 10 KB a process, well under a pipe's buffer.
        let pipes = (0..<4).map { _ in Pipe() }
        let processes = pipes.map { pipe in
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["eval", "--app-group", "group.count", "--store-dir", root] + Array(repeating: script, count: 250)
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            return process
        }
        for process in processes { try process.run() }
        for process in processes { process.waitUntilExit() }
        #expect(processes.map(\.terminationStatus) == [0, 0, 0, 0])
        // More runs than increments: commits conflicted and transforms ran
        // again, so the test went through the replay it is meant to check.
        let runs = pipes.map { String(decoding: $0.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
            .reduce(0) { $0 + $1.split(separator: "\n").count }
        #expect(runs > 10_000, "\(runs) transform runs: no commit conflicted")
        let read = try CLI.run(["store", "get", "--group", "group.count", "--store-dir", root, "n"])
        #expect(read.stdout == "10000\n")
    }

    @Test func aScriptThatWritesThenTimesOutCommitsNothing() throws {
        let script = try file("late.lua", "local g = store.group('group.t')\ng:set('step1', 'half')\ng:writeFile('f', 'x')\nwhile true do end")
        let run = try CLI.run(["eval", "--json", "--timeout-ms", "100", "--app-group", "group.t", "--store-dir", root, script])
        #expect(run.status == 1)
        #expect(run.stdout.contains("\"status\":\"timeout\""))
        let keys = try CLI.run(["store", "keys", "--group", "group.t", "--store-dir", root])
        let files = try CLI.run(["store", "files", "--group", "group.t", "--store-dir", root])
        #expect(keys.status == 0 && keys.stdout.isEmpty)
        #expect(files.status == 0 && files.stdout.isEmpty)
    }

    @Test func theAppSideFromAShell() throws {
        let base = ["--group", "group.t", "--store-dir", root]
        #expect(try CLI.run(["store", "set"] + base + ["count", "3"]).status == 0)
        #expect(try CLI.run(["store", "set"] + base + ["title", "--string", "Buy milk"]).status == 0)
        #expect(try CLI.run(["store", "set"] + base + ["tags", "[\"a\", 2.0]"]).status == 0)
        let script = try file("read.lua", "local g = store.group('group.t')\ng:set('seen', g:get('count') + 1)\nreturn math.type(g:get('count')), g:get('title'), math.type(g:get('tags')[2])")
        let run = try CLI.run(["eval", "--app-group", "group.t", "--store-dir", root, script])
        #expect(run.stdout == "\"integer\"\t\"Buy milk\"\t\"float\"\n")
        #expect(try CLI.run(["store", "get"] + base + ["seen"]).stdout == "4\n")
        #expect(try CLI.run(["store", "get", "--json"] + base + ["tags"]).stdout == "{\"group\":\"group.t\",\"key\":\"tags\",\"type\":\"array\",\"value\":[\"a\",2.0]}\n")
        #expect(try CLI.run(["store", "keys"] + base).stdout == "count\nseen\ntags\ntitle\n")
        #expect(try CLI.run(["store", "keys"] + base + ["t"]).stdout == "tags\ntitle\n")
        #expect(try CLI.run(["store", "remove"] + base + ["seen"]).status == 0)
        let missing = try CLI.run(["store", "get"] + base + ["seen"])
        #expect(missing.status == 1 && missing.stderr == "lunette store: no key \"seen\" in group group.t\n")
        let notJSON = try CLI.run(["store", "set"] + base + ["x", "Buy milk"])
        #expect(notJSON.status == 2 && notJSON.stderr.contains("--string"))
        let badGroup = try CLI.run(["store", "keys", "--group", "../etc", "--store-dir", root])
        #expect(badGroup.status == 2 && badGroup.stderr.contains("--group ../etc"))
        // Reading a group that does not exist creates nothing.
        #expect(try CLI.run(["store", "keys", "--group", "group.none", "--store-dir", root]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: root + "/group.none"))
    }

    @Test func aFileThatIsNotAStoreGivesAClearErrorAndStaysAsItWas() throws {
        let path = root + "/group.bad/store.sqlite"
        try FileManager.default.createDirectory(atPath: root + "/group.bad", withIntermediateDirectories: true)
        let junk = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try junk.write(to: URL(fileURLWithPath: path))
        let get = try CLI.run(["store", "get", "--group", "group.bad", "--store-dir", root, "k"])
        #expect(get.status == 1)
        #expect(get.stderr.contains(path) && get.stderr.contains("not a database"), "\(get.stderr)")
        let script = try file("bad.lua", "store.group('group.bad'):set('k', 1)")
        let eval = try CLI.run(["eval", "--app-group", "group.bad", "--store-dir", root, script])
        #expect(eval.status == 1)
        #expect(eval.stderr.contains("bad.lua:1: store.group:") && eval.stderr.contains(path), "\(eval.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == junk)
    }
}
