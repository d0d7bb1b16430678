import Foundation
import Testing
import WidgetHost

/// The hostile scripts: the project's copies in Tests/Fixtures/attacks
/// (always there, so a fresh clone runs them), plus any others in
/// ../shared/attacks beside the project or in $LUNETTE_ATTACKS (extras: a
/// file of the same name there replaces the copy). They run the way the
/// sample's README asks: all in one `lunette eval --json` process, then a
/// normal script that must still work.
enum Attacks {
    static let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The project's own copies.
    static let fixtures = projectRoot.appendingPathComponent("Tests/Fixtures/attacks")

    /// Where extra attack scripts come from, when present.
    static var extras: URL? {
        if let path = ProcessInfo.processInfo.environment["LUNETTE_ATTACKS"] {
            return URL(fileURLWithPath: path)
        }
        let shared = projectRoot.deletingLastPathComponent().appendingPathComponent("shared/attacks")
        return FileManager.default.fileExists(atPath: shared.path) ? shared : nil
    }

    /// Every attack script by file name, extras over fixtures.
    static var byName: [String: URL] {
        var found: [String: URL] = [:]
        for directory in [fixtures] + [extras].compactMap({ $0 }) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names where name.hasSuffix(".lua") { found[name] = directory.appendingPathComponent(name) }
        }
        return found
    }

    static var files: [URL] { byName.sorted { $0.key < $1.key }.map(\.value) }

    /// How each file of the sample must end. Files not listed must only
    /// end in time without crashing.
    static let expected: [String: Set<String>] = [
        "01_plain_infinite_loop.lua": ["timeout"], "03_pcall_retry_loop.lua": ["timeout"],
        "05_coroutine_loops.lua": ["timeout"], "09_index_metamethod_loop.lua": ["timeout"],
        "10_sort_comparator_loop.lua": ["timeout"], "12_pattern_backtracking.lua": ["timeout"],
        "14_string_rep_empty.lua": ["ok"], "15_table_move_empty_range.lua": ["timeout"],
        "17_builtin_size_limits.lua": ["memory"], "18_string_doubling.lua": ["memory"],
        "19_table_growth.lua": ["memory"], "22_pcall_memory_retry.lua": ["memory"],
        "23_deep_recursion.lua": ["memory", "error"], "25_bytecode_load.lua": ["ok"],
        "26_debug_library.lua": ["timeout"], "27_string_metatable_tamper.lua": ["ok"],
        "29_env_escape.lua": ["ok"], "30_native_os_io_access.lua": ["ok"], "33_non_string_errors.lua": ["error"],
        "35_store_huge_value.lua": ["memory", "error"], "37_store_nul_invalid_utf8.lua": ["ok"],
        "39_store_then_timeout.lua": ["timeout"], "40_log_flood_and_persistence.lua": ["error"],
    ]
}

@Suite("The hostile scripts")
struct AttackTests {
    @Test func theProjectCarriesItsOwnCopyOfEveryAttackScript() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Attacks.fixtures.path).filter { $0.hasSuffix(".lua") }
        #expect(Set(names) == Set(Attacks.expected.keys), "Tests/Fixtures/attacks holds \(names.sorted())")
    }

    @Test func everyAttackEndsInTimeAndTheHostKeepsServing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-attacks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let normal = directory.appendingPathComponent("normal.lua")
        try "local t = {}; for i = 1, 100 do t[i] = i end; return table.concat(t, ','):len(), ('ok'):upper()"
            .write(to: normal, atomically: true, encoding: .utf8)
        let root = directory.appendingPathComponent("store").path
        // Loops run at the sample's 1 s deadline; memory bombs, which need
        // a few hundred ms of CPU to reach 30 MB, get 5 s so that a busy
        // machine does not turn them into timeouts. Each group runs in one
        // host process, one file after another, and a normal script after
        // the loops must still work.
        let memoryBombs = Attacks.files.filter { Attacks.expected[$0.lastPathComponent] == ["memory"] }
        let others = Attacks.files.filter { Attacks.expected[$0.lastPathComponent] != ["memory"] }
        var lines: [(line: Substring, deadline: Double)] = []
        for (files, deadline) in [(memoryBombs, 5000.0), (others + [normal], 1000.0)] {
            let run = try CLI.run(["eval", "--json", "--timeout-ms", String(Int(deadline)), "--memory-mb", "30",
                                   "--app-group", "group.attack", "--store-dir", root] + files.map(\.path))
            #expect(run.status == 1, "exit status \(run.status): \(run.stderr)")   // 1: some scripts failed; no crash
            let output = run.stdout.split(separator: "\n")
            #expect(output.count == files.count)
            lines += output.map { ($0, deadline) }
        }
        #expect(lines.count == Attacks.files.count + 1)
        for (line, deadline) in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let name = URL(fileURLWithPath: object["file"] as? String ?? "").lastPathComponent
            let status = object["status"] as? String ?? ""
            let elapsed = object["elapsedMs"] as? Double ?? .infinity
            #expect(elapsed <= deadline + 100, "\(name) ran \(elapsed) ms")
            if let allowed = Attacks.expected[name] {
                #expect(allowed.contains(status), "\(name): \(status) \(object["message"] ?? "")")
            }
            if name == "normal.lua" {
                #expect(status == "ok")
                #expect((object["results"] as? [Any])?.count == 2)
                #expect((object["results"] as? [Any])?.last as? String == "OK")
            }
            if name == "27_string_metatable_tamper.lua" {
                #expect((object["output"] as? String)?.contains("ABC") == true)
            }
            if name == "29_env_escape.lua" {
                #expect((object["results"] as? [Bool]) == [true])
            }
            if name == "37_store_nul_invalid_utf8.lua" {
                #expect((object["output"] as? String)?.contains("false") == false, "\(object["output"] ?? "")")
            }
        }
        // Under a 30 MB cap, attack 35 cannot even build its 30 MB value; with
        // room for it, the store refuses the value and stops the key flood
        // (with time enough for the flood on a busy machine: the store's
        // limits end it, not the deadline).
        if let huge = Attacks.files.first(where: { $0.lastPathComponent.hasPrefix("35_") }) {
            let roomy = try CLI.run(["eval", "--json", "--memory-mb", "200", "--timeout-ms", "10000",
                                     "--app-group", "group.attack", "--store-dir", root, huge.path])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(roomy.stdout.utf8)) as? [String: Any])
            #expect(object["status"] as? String == "error")
            #expect((object["output"] as? String)?.contains("over the limit of 1048576 bytes per value") == true, "\(object)")
            #expect((object["message"] as? String)?.contains("the limit of one call") == true, "\(object)")
        }
        // The failed runs (35, 39) committed nothing; 37's values are kept byte for byte.
        guard Attacks.files.contains(where: { $0.lastPathComponent.hasPrefix("37_") }) else { return }
        let group = try SharedStore(root: root).group("group.attack")
        #expect(try group.keys() == (1...8).map { "val\($0)" })
        let expected: [[UInt8]] = [Array("abc\0def".utf8), [0xFF, 0xFE], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                                   [0xFD, 0xBF, 0xBF, 0xBF, 0xBF, 0xBF], [0xFD, 0xBF, 0xBF, 0xBF, 0xBF, 0xBF], [0x80]]
        for (i, bytes) in expected.enumerated() {
            let stored = try group.get("val\(i + 1)")
            #expect(stored == .bytes(bytes) || stored == StoreText.string(validating: bytes).map { .string($0) }, "val\(i + 1): \(String(describing: stored))")
        }
    }
}
