import Foundation
import Testing

/// scripts/lua-testes, on a small stand-in for Lua's test files and skip
/// lists: it comments out listed lines, skips listed files, runs the rest
/// under both profiles with _port and _soft, and sums up.
@Suite("scripts/lua-testes")
struct LuaTestesScriptTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-testes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("testes"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("lists"), withIntermediateDirectories: true)
    }

    func write(_ path: String, _ text: String) throws {
        try text.write(to: directory.appendingPathComponent(path), atomically: true, encoding: .utf8)
    }

    func run(_ environment: [String: String], _ arguments: [String] = []) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [Self.root.appendingPathComponent("scripts/lua-testes").path] + arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "LUA_TESTES")
        env["LUNETTE"] = CLI.binary.path
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func withoutTheFilesItSaysHowToGetThemAndSucceeds() throws {
        let result = try run([:])
        #expect(result.status == 0)
        #expect(result.output.contains("LUA_TESTES is not set"))
        #expect(result.output.contains("v5.4.4"))
    }

    @Test func skipsListedLinesAndFilesRunsTheRestAndCounts() throws {
        try write("testes/strings.lua", "assert(_port == true and _soft == true)\nprint('OK')\n")
        try write("testes/partial.lua", "local x = 1\nerror('needs a removed library')\nreturn x\n")
        try write("testes/driver.lua", "error('never run')\n")
        try write("testes/broken.lua", "error('a real failure')\n")
        let lists = directory.appendingPathComponent("lists").path
        try write("lists/skip-trusted.txt", "# comment\ndriver.lua      the driver\npartial.lua:2   a removed library\n")
        try write("lists/skip-sandbox.txt", "driver.lua      the driver\npartial.lua:2-2 a removed library\nbroken.lua      broken here too\n")
        let result = try run(["LUA_TESTES": directory.appendingPathComponent("testes").path, "SKIP_LISTS": lists])
        #expect(result.status == 1, "\(result.output)")
        let lines = result.output.split(separator: "\n").map { String($0) }
        #expect(lines.contains { $0.hasPrefix("trusted  strings.lua      pass") })
        #expect(lines.contains { $0.hasPrefix("trusted  partial.lua      pass") })
        #expect(lines.contains { $0.hasPrefix("trusted  driver.lua       skipped") })
        #expect(lines.contains { $0.hasPrefix("trusted  broken.lua       FAIL") })
        #expect(result.output.contains("error: broken.lua:1: a real failure"))
        #expect(lines.contains { $0.hasPrefix("sandbox  broken.lua       skipped") })
        #expect(lines.contains { $0.hasPrefix("sandbox  partial.lua      pass") })
        #expect(lines.suffix(2) == ["3 files skipped whole", "4 passed, 1 failed"])
    }

    @Test func anEntryWithoutAReasonOrOutsideTheFileFails() throws {
        try write("testes/strings.lua", "print('OK')\n")
        let lists = directory.appendingPathComponent("lists").path
        try write("lists/skip-trusted.txt", "strings.lua:1\n")
        try write("lists/skip-sandbox.txt", "strings.lua:5-9   past the end\nnone.lua   no such file\n")
        let result = try run(["LUA_TESTES": directory.appendingPathComponent("testes").path, "SKIP_LISTS": lists])
        #expect(result.status == 1)
        #expect(result.output.contains("'strings.lua:1' has no reason"))
        #expect(result.output.contains("'strings.lua:5-9' is not a line range of strings.lua (1 lines)"))
        #expect(result.output.contains("no file none.lua"))
        #expect(result.output.contains("3 skip entries do not fit these files"))
    }
}
