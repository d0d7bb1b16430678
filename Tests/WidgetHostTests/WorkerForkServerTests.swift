import Foundation
import LuaSandbox
import Testing
@testable import WidgetHost

#if os(Linux)
/// Issue 18, point 6 (plugins under process isolation): `BundleWorkers`
/// forks its workers from one fork server (`WorkerForkServer`), and a
/// forked worker is started, limited, watched, killed and reaped as a
/// spawned one is.
@Suite("Workers forked from a fork server", .enabled(if: WorkerForkServer.isSupported, "this system has no pidfds"))
struct WorkerForkServerTests {
    let t0 = BundleFixture.midnight

    /// A process's parent and process group, from /proc/<pid>/stat.
    static func parentAndGroup(of pid: Int32) throws -> (parent: Int32, group: Int32) {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return (try #require(Int32(fields[1])), try #require(Int32(fields[2])))
    }

    /// What each of a process's descriptors is (/proc/<pid>/fd), by number.
    static func descriptors(of pid: Int32) throws -> [Int: String] {
        var out: [Int: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") {
            out[Int(name)!] = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)")
        }
        return out
    }

    /// The fork server's pid once it has started and warmed up (it starts
    /// off the calling thread, beside a host's first worker; a start before
    /// it is ready spawns its worker), waiting up to 10 s; nil if none did,
    /// or only `other` is there.
    static func server(of workers: BundleWorkers, other: Int32? = nil) -> Int32? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let pid = workers.forkServerProcessIdentifier, pid != other, workers.forkServerIsReady { return pid }
            usleep(1000)
        }
        return nil
    }

    /// With no store (`deadline` given), a hung worker is killed at the
    /// deadline and the grace, without the wait for the store's lock.
    func runtime(_ fixture: BundleFixture, _ workers: BundleWorkers, deadline: Double? = nil) throws -> WidgetRuntime {
        var policy = HostPolicy.standard
        if let deadline { policy.timelineDeadline = .init(soft: deadline, hard: deadline) }
        var services = HostServices(store: deadline == nil ? fixture.store : nil, clock: VirtualClock(t0), calendar: .utc, policy: policy)
        services.workers = workers
        return WidgetRuntime(bundle: try fixture.load(), services: services)
    }

    static let main = """
        widget { kind = "W", placeholder = function() return {} end,
          timeline = function() return { entries = { { date = clock.now(), n = (store.group("group.test"):get("n") or 0) } } } end }
        widget { kind = "Now", placeholder = function() return {} end,
          timeline = function() return { entries = { { date = clock.now() } } } end }
        widget { kind = "Loop", placeholder = function() return {} end,
          timeline = function() local i = 0; while true do i = i + 1 end end }
        """

    @Test func aForkedWorkerIsTheServersChildWithItsOwnGroupAndOnlyItsPipesOfTheHosts() throws {
        let first = try BundleFixture(main: Self.main), fixture = try BundleFixture(main: Self.main)
        let workers = BundleWorkers(executable: CLI.binary.path)
        defer { workers.stop() }
        #expect(workers.forksWorkers)
        // The first worker is spawned, and the server starts meanwhile.
        let starter = try runtime(first, workers)
        #expect(starter.timeline(try starter.configuration(kind: "W")).outcome.status == .ok)
        let spawned = try #require(workers.processIdentifiers.first)
        #expect(try Self.parentAndGroup(of: spawned).parent == getpid())
        let server = try #require(Self.server(of: workers))
        let runtime = try runtime(fixture, workers)
        #expect(runtime.timeline(try runtime.configuration(kind: "W")).outcome.status == .ok)
        let worker = try #require(workers.processIdentifiers.first { $0 != spawned })
        let (parent, group) = try Self.parentAndGroup(of: worker)
        #expect(parent == server, "the worker was forked by the server, not spawned by the host (\(getpid()))")
        #expect(group == worker, "a process group of its own")
        #expect(try Self.parentAndGroup(of: server).parent == getpid())
        let serverStatus = try String(contentsOfFile: "/proc/\(server)/status", encoding: .utf8)
        #expect(serverStatus.contains("Threads:\t1\n"), "the server stays single-threaded")
        // Its warm-up left nothing open: a descriptor it held would be closed in each worker, its number free for reuse.
        let serverOpen = try Self.descriptors(of: server)
        #expect(serverOpen.keys.sorted() == [0, 1, 2], "\(serverOpen)")
        let open = try Self.descriptors(of: worker)
        #expect(open[0]?.hasPrefix("pipe:") == true && open[1]?.hasPrefix("pipe:") == true, "\(open)")
        #expect(!open.values.contains { $0.hasPrefix("socket:") }, "the server's socket did not reach the worker: \(open)")
        let others = open.filter { $0.key > 2 }.values.filter { !$0.contains("/group.test/") }
        #expect(others.isEmpty, "beyond its pipes and standard error, only its app group's store: \(open)")
        if !WorkerServer.isSanitizerBuild {
            let status = try String(contentsOfFile: "/proc/\(worker)/status", encoding: .utf8)
            #expect(status.contains("Seccomp:\t2"), "locked down at its bundle's open, as a spawned worker")
        }
        // The next call is the same worker's: a forked worker is kept idle as any.
        #expect(runtime.timeline(try runtime.configuration(kind: "W")).outcome.status == .ok)
        #expect(workers.workersStarted == 2)
    }

    /// The server's warm-up opens a bundle and calls it as a worker would
    /// (here in the test's process): it must succeed, or every forked
    /// worker pays for what it skipped, and leave nothing behind.
    @Test func theServersRehearsalOfAWorkersFirstRequestsSucceedsAndLeavesNothing() throws {
        try WorkerForkServer.rehearse()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-fork-server-\(getpid())").path
        #expect(!FileManager.default.fileExists(atPath: scratch))
    }

    @Test func withoutForkingEachWorkerIsTheHostsChild() throws {
        let fixture = try BundleFixture(main: Self.main)
        let workers = BundleWorkers(executable: CLI.binary.path, forksWorkers: false)
        defer { workers.stop() }
        let runtime = try runtime(fixture, workers)
        #expect(runtime.timeline(try runtime.configuration(kind: "W")).outcome.status == .ok)
        #expect(workers.forkServerProcessIdentifier == nil)
        let worker = try #require(workers.processIdentifiers.first)
        #expect(try Self.parentAndGroup(of: worker).parent == getpid())
    }

    /// Both ways of starting a worker: a worker that stops answering is
    /// killed at the call's deadline and its grace, a worker that dies is
    /// reported with its signal, and the next call gets a fresh one.
    @Test(arguments: [true, false])
    func aWorkerKilledOrDeadEndsItsCallWithWhyEitherWay(forking: Bool) throws {
        let fixture = try BundleFixture(main: Self.main)
        let workers = BundleWorkers(executable: CLI.binary.path, forksWorkers: forking)
        defer { workers.stop() }
        let runtime = try runtime(fixture, workers, deadline: 0.3)
        workers.retireAfterCPUSeconds = 0   // each call's worker is retired: the next call starts one
        let now = try runtime.configuration(kind: "Now"), loop = try runtime.configuration(kind: "Loop")
        // The first worker is spawned either way; with forking, the next ones come from the server.
        #expect(runtime.timeline(now).outcome.status == .ok)
        let server = forking ? Self.server(of: workers) : nil
        #expect(forking ? server != nil : workers.forkServerProcessIdentifier == nil)
        let parents = Locked<[Int32]>([])
        func whileBusy(_ signal: Int32) {
            Thread {
                guard let pid = BundleWorkerTests.busyWorker(of: workers) else { return }
                if let parent = try? Self.parentAndGroup(of: pid).parent { parents.set(parents.get() + [parent]) }
                usleep(30_000)
                kill(pid, signal)
            }.start()
        }
        workers.grace = 0.2
        whileBusy(SIGSTOP)   // stopped, its own deadline cannot end the call: the host kills it
        let timedOut = runtime.timeline(loop).outcome
        #expect(timedOut.status == .timeout && timedOut.message?.contains("was killed (SIGKILL)") == true, "\(timedOut.message ?? "")")
        workers.grace = 10
        whileBusy(WorkerServer.isSanitizerBuild ? SIGKILL : SIGSEGV)
        let crashed = runtime.timeline(loop).outcome
        let died = WorkerServer.isSanitizerBuild ? "signal 9 (SIGKILL)" : "signal 11 (SIGSEGV)"
        #expect(crashed.message == "the worker process died of \(died); the call's effects are discarded, and the next call gets a fresh worker",
                "\(crashed.status): \(crashed.message ?? "")")
        #expect(parents.get() == [server ?? getpid(), server ?? getpid()], "the two lost workers were \(forking ? "forked" : "spawned")")
        let next = runtime.timeline(now).outcome
        #expect(next.status == .ok, "\(next.message ?? "")")
        #expect(workers.workersStarted == 4)
    }

    @Test func aServerThatStopsAnsweringIsGivenUpAtItsTimeoutAndKilled() throws {
        let server = try WorkerForkServer(executable: CLI.binary.path, answerTimeout: 0.3)
        let warm = Date().addingTimeInterval(10)
        while !server.isReady && Date() < warm { usleep(1000) }
        #expect(server.isReady)
        #expect(server.rehearsed, "the server rehearsed a worker's first requests in its warm-up")
        let first = try WorkerProcess(forkedBy: server, lockdown: .never)
        #expect(kill(server.processIdentifier, SIGSTOP) == 0)
        let began = ContinuousClock.now
        #expect(throws: WorkerProtocolError.self) { _ = try WorkerProcess(forkedBy: server, lockdown: .never) }
        #expect(ContinuousClock.now - began < .seconds(3), "the start waited for the timeout, not longer")
        #expect(!server.isUsable)
        let deadline = Date().addingTimeInterval(5)
        var status = (try? String(contentsOfFile: "/proc/\(server.processIdentifier)/stat", encoding: .utf8)) ?? ""
        while !status.isEmpty && !status.contains(") Z ") && Date() < deadline {
            usleep(2000)
            status = (try? String(contentsOfFile: "/proc/\(server.processIdentifier)/stat", encoding: .utf8)) ?? ""
        }
        #expect(status.isEmpty || status.contains(") Z "), "the server was killed: \(status)")
        // Its worker lives on, and stops when its input closes (how it ended is then not known).
        #expect(first.isAlive)
        first.stop()
        #expect(!first.isAlive)
    }

    /// A server says when its warm-up is done; until then a host does not
    /// wait for it (`BundleWorkers` spawns instead), and a start asked of
    /// it waits at most the timeout.
    @Test func aServerIsNotWaitedForBeforeItsWarmUpEnds() throws {
        let server = try WorkerForkServer(executable: CLI.binary.path, answerTimeout: 0.3)
        #expect(kill(server.processIdentifier, SIGSTOP) == 0)   // within its first instants: long before its warm-up ends
        let began = ContinuousClock.now
        #expect(!server.isReady)
        #expect(ContinuousClock.now - began < .milliseconds(100), "isReady does not wait")
        #expect(throws: WorkerProtocolError.self) { _ = try WorkerProcess(forkedBy: server, lockdown: .never) }
        #expect(!server.isUsable)
    }

    @Test func aServerThatDiesIsReplacedAndItsWorkersServeOn() throws {
        let fixtures = try (0..<4).map { _ in try BundleFixture(main: Self.main) }
        let workers = BundleWorkers(executable: CLI.binary.path, maxIdle: 4)
        let runtimes = try fixtures.map { try runtime($0, workers) }
        func call(_ i: Int) throws -> Bool { runtimes[i].timeline(try runtimes[i].configuration(kind: "W")).outcome.status == .ok }
        #expect(try call(0))   // spawned; the server starts
        let spawned = Set(workers.processIdentifiers)
        let dead = try #require(Self.server(of: workers))
        #expect(try call(1))   // forked
        let orphan = try #require(workers.processIdentifiers.first { !spawned.contains($0) })
        #expect(try Self.parentAndGroup(of: orphan).parent == dead)
        #expect(kill(dead, SIGKILL) == 0)
        // Its worker outlives it and serves on.
        #expect(try call(1))
        // The next start finds it gone: that worker is spawned, and a new server starts.
        #expect(try call(2))
        let replacement = try #require(Self.server(of: workers, other: dead))
        #expect(try call(3))
        let fresh = try #require(Set(workers.processIdentifiers).subtracting(spawned).subtracting([orphan]).first {
            (try? Self.parentAndGroup(of: $0).parent) != getpid()
        })
        #expect(try Self.parentAndGroup(of: fresh).parent == replacement)
        #expect(workers.workersStarted == 4)
        // Stopping them all returns (the orphan's end is not known to any
        // server, and is not waited for), and the new server ends with them.
        workers.stop()
        #expect(workers.processIdentifiers.isEmpty && workers.forkServerProcessIdentifier == nil)
        let deadline = Date().addingTimeInterval(5)
        while kill(replacement, 0) == 0 && Date() < deadline { usleep(2000) }
        #expect(kill(replacement, 0) != 0 && errno == ESRCH, "the server was reaped once nothing needed it")
    }
}
#endif
