import Foundation
import Testing
import LunetteSystem
import CLuaShims

/// The pieces that stand in for Foundation's classes in the modules the
/// `lunette` executable links.
@Suite("System pieces without Foundation")
struct SystemTests {
    @Test func aHostThreadRunsWithItsStackAndName() {
        final class Seen: @unchecked Sendable {
            var stack = 0, name = "", isOther = false, finished = false
        }
        let seen = Seen(), done = Condition()
        let caller = HostThread.current
        // Above glibc's default (8 MiB here), so that a size not passed on would show.
        let id = HostThread.start(name: "lunette.test.thread.long", stackSize: 20 << 20) {
            seen.stack = lunette_thread_stack_size()
            seen.name = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
            seen.isOther = !HostThread.same(HostThread.current, caller)
            done.withLock { seen.finished = true; done.signal() }
        }
        done.lock()
        while !seen.finished { done.wait() }
        done.unlock()
        // At least what it asked for: glibc may hand it a cached stack of an
        // ended thread, up to four times as big.
        #expect(seen.stack >= 20 << 20 && seen.stack <= 80 << 20, "\(seen.stack)")
        #expect(seen.name == "lunette.test.th", "cut to the kernel's 15 bytes")
        #expect(seen.isOther && !HostThread.same(id, caller))
    }

    @Test func aConditionWakesItsWaiters() {
        let condition = Condition()
        final class Box: @unchecked Sendable { var queue: [Int] = [], taken: [Int] = [] }
        let box = Box()
        let consumers = 3, items = 300
        let group = DispatchGroup()
        for _ in 0..<consumers {
            group.enter()
            HostThread.start(name: "consumer", stackSize: 256 << 10) {
                while true {
                    condition.lock()
                    while box.queue.isEmpty { condition.wait() }
                    let item = box.queue.removeFirst()
                    if item >= 0 { box.taken.append(item) }
                    condition.unlock()
                    if item < 0 { break }
                }
                group.leave()
            }
        }
        for i in 0..<items { condition.withLock { box.queue.append(i); condition.signal() } }
        condition.withLock { box.queue += Array(repeating: -1, count: consumers); condition.broadcast() }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(box.taken.sorted() == Array(0..<items))
    }

    @Test func sleepWaitsAtLeastItsTime() {
        let start = ContinuousClock.now
        HostThread.sleep(0.02)
        #expect(ContinuousClock.now - start >= .milliseconds(20))
    }

    @Test func aToolRunsInItsFolderAndIsReadToItsEnd() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-tool-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let errors = open(folder + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(errors) }
        // A lot of output (more than a pipe holds), the folder, the environment, an exit status.
        let script = "pwd; echo \"$LUNETTE_TOOL_TEST\"; head -c 200000 /dev/zero | tr '\\\\0' x; echo; echo oops >&2; read line || echo no-input; exit 3"
        let run = try ToolProcess.run("/bin/sh", arguments: ["-c", script], environment: ["LUNETTE_TOOL_TEST": "set", "PATH": "/usr/bin:/bin"],
                                      directory: folder, errorDescriptor: errors, timeout: 30)
        #expect(run.ending == .exited(3))
        let lines = String(decoding: run.output, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines.first.map(String.init) == URL(fileURLWithPath: folder).resolvingSymlinksInPath().path || lines.first.map(String.init) == folder)
        #expect(lines.dropFirst().first == "set")
        #expect(lines.dropFirst(2).first?.count == 200_000)
        #expect(lines.last == "no-input", "standard input is /dev/null")
        #expect(try String(contentsOfFile: folder + "/stderr", encoding: .utf8) == "oops\n")
    }

    @Test func aToolPastItsTimeIsStoppedWithItsChildren() throws {
        let start = ContinuousClock.now
        // The shell's child (sleep) holds the pipe too: the whole group must go.
        let run = try ToolProcess.run("/bin/sh", arguments: ["-c", "sleep 30; echo late"], environment: [:],
                                      directory: "/", errorDescriptor: 2, timeout: 0.3)
        #expect(run.ending == .timedOut)
        #expect(run.output.isEmpty)
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    /// A relative path names the tool from the caller's folder, not from the
    /// folder the tool runs in (which may be a bundle's own).
    @Test func aRelativeToolPathIsTheCallersNotTheToolsFolders() throws {
        let here = FileManager.default.currentDirectoryPath
        let up = here.split(separator: "/").count
        let relative = String(repeating: "../", count: up) + "bin/sh"
        // Deeper than here: the same relative path from there does not reach /bin/sh.
        var deep = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-relative-\(getpid())").path
        let root = deep
        for i in 0...up { deep += "/\(i)" }
        try FileManager.default.createDirectory(atPath: deep, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let run = try ToolProcess.run(relative, arguments: ["-c", "echo ran"], environment: [:], directory: deep, errorDescriptor: 2, timeout: 30)
        #expect(run.ending == .exited(0))
        #expect(String(decoding: run.output, as: UTF8.self) == "ran\n")
    }

    @Test func aToolThatClosesItsOutputAndGoesOnIsStoppedAtItsTime() throws {
        let start = ContinuousClock.now
        let run = try ToolProcess.run("/bin/sh", arguments: ["-c", "echo early; exec >&-; sleep 30"], environment: [:],
                                      directory: "/", errorDescriptor: 2, timeout: 0.3)
        #expect(run.ending == .timedOut)
        #expect(String(decoding: run.output, as: UTF8.self) == "early\n", "what it wrote before is kept")
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func aToolKilledBySignalAndOneThatCannotStartAreTold() {
        let killed = try? ToolProcess.run("/bin/sh", arguments: ["-c", "kill -TERM $$"], environment: [:],
                                          directory: "/", errorDescriptor: 2, timeout: 30)
        #expect(killed?.ending == .killed(SIGTERM))
        #expect(throws: ToolProcess.CannotStart.self) {
            try ToolProcess.run("/nonexistent/tool", arguments: [], environment: [:], directory: "/", errorDescriptor: 2, timeout: 1)
        }
        #expect(throws: ToolProcess.CannotStart.self, "a folder that does not exist") {
            try ToolProcess.run("/bin/true", arguments: [], environment: [:], directory: "/nonexistent/folder", errorDescriptor: 2, timeout: 1)
        }
    }

    @Test func fileKindsFollowLinks() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-kind-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(FileManager.default.createFile(atPath: folder + "/file", contents: Data()))
        try FileManager.default.createSymbolicLink(atPath: folder + "/link", withDestinationPath: folder)
        try FileManager.default.createSymbolicLink(atPath: folder + "/dangling", withDestinationPath: folder + "/nothing")
        #expect(FileKind(atPath: folder) == .directory)
        #expect(FileKind(atPath: folder + "/link") == .directory)
        #expect(FileKind(atPath: folder + "/file") == .file)
        #expect(FileKind(atPath: "/dev/null") == .file)
        #expect(FileKind(atPath: folder + "/dangling") == nil)
        #expect(FileKind(atPath: folder + "/nothing") == nil)
    }

    @Test func pathsBelowAFolderSkipWhatCannotBeReadAndDoNotFollowLinks() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-below-\(getpid())").path
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/closed/inner", withIntermediateDirectories: true)
        defer {
            chmod(root + "/closed", 0o755)
            try? FileManager.default.removeItem(atPath: root)
        }
        #expect(FileManager.default.createFile(atPath: root + "/top.lua", contents: Data()))
        #expect(FileManager.default.createFile(atPath: root + "/a/b/deep.lua", contents: Data()))
        #expect(FileManager.default.createFile(atPath: root + "/closed/inner/hidden.lua", contents: Data()))
        try FileManager.default.createSymbolicLink(atPath: root + "/a/loop", withDestinationPath: root)
        chmod(root + "/closed", 0o000)
        let paths = Set(pathsBelow(root))
        #expect(paths.isSuperset(of: ["top.lua", "a", "a/b", "a/b/deep.lua", "a/loop", "closed"]))
        #expect(!paths.contains { $0.hasPrefix("a/loop/") }, "a link to a folder is listed, not entered")
        if getuid() != 0 {   // root reads any folder
            #expect(!paths.contains("closed/inner"), "an unreadable folder's content is skipped, the rest is not")
        }
        #expect(pathsBelow(root + "/nothing").isEmpty)
    }

    @Test func textHelpersAnswerAsFoundationDid() {
        for value in [0.0, 1.5, -2.25, 1e300, .infinity, -.infinity, .nan, 123_456_789.125] {
            #expect(cFormat("%g", value) == String(format: "%g", value))
            #expect(cFormat("%.*f", Int32(3), value) == String(format: "%.*f", 3, value))
        }
        #expect(cFormat("%.*f", Int32(2), 1e300).count > 300, "longer than the first buffer")
        for text in ["", "  ", " a b ", "\t24h\n", "x", "\u{3000}1h\u{3000}"] {
            #expect(String(text.trimmingWhitespace()) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
        do {
            try FileManager.default.createDirectory(atPath: "/proc/lunette/x", withIntermediateDirectories: true)
            Issue.record("made a folder under /proc")
        } catch {
            #expect(errorText(error) == "No such file or directory" || errorText(error) == "Permission denied", "\(errorText(error))")
        }
        #expect(errorText(POSIXError(.EACCES)) == "Permission denied")
    }
}
