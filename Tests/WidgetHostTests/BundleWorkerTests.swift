import Foundation
import Logging
import LuaSandbox
import LunetteJSON
import SharedStore
import Testing
@testable import WidgetHost

/// Issue 17, point 3: a bundle's calls in worker processes of its own
/// (`HostServices.workers`), with the same results as in process, the
/// store's all-or-nothing rule kept across processes, and a crash that
/// costs the call and nothing else.
@Suite("Bundles in worker processes")
struct BundleWorkerTests {
    let t0 = BundleFixture.midnight

    static let main = """
        widget { kind = "W", placeholder = function() return {} end,
          timeline = function(context)
            local g = store.group("group.test")
            local n = (g:get("n") or 0)
            log.info("timeline at " .. clock.now())
            return { entries = { { date = clock.now(), n = n, half = 0.5, nan = 0/0, big = math.maxinteger,
                                   mixed = { 1, 2, x = "y" }, bytes = "\\0\\255", family = context.family } },
                     policy = { after = clock.now() + 3600 } }
          end }
        intent { id = "Add", parameters = { { name = "by", type = "int", default = 1 } },
          perform = function(params)
            local g = store.group("group.test")
            g:set("n", (g:get("n") or 0) + params.by)
            reload.timelines("W")
            if params.by < 0 then while true do end end
            return { n = g:get("n") }
          end }
        """

    func services(_ fixture: BundleFixture, workers: BundleWorkers?, clock: VirtualClock, policy: HostPolicy = .standard) -> HostServices {
        var services = HostServices(store: fixture.store, clock: clock, calendar: .utc, policy: policy)
        services.workers = workers
        return services
    }

    static func workers() -> BundleWorkers { BundleWorkers(executable: CLI.binary.path) }

    /// The pid of the first worker of `workers` to be in a call, waiting up
    /// to 5 s for one (nil: none was).
    static func busyWorker(of workers: BundleWorkers) -> Int32? {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if let busy = workers.busyWorkers.first { return busy.pid }
            usleep(1000)
        }
        return nil
    }

    /// A widget whose timeline never returns, in a runtime whose calls run
    /// in `workers`, with a timeline deadline of `seconds`.
    func looping(_ workers: BundleWorkers, deadline seconds: Double) throws -> (BundleFixture, WidgetRuntime) {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() local i = 0; while true do i = i + 1 end end }
            """)
        var policy = HostPolicy.standard
        policy.timelineDeadline = .init(soft: seconds, hard: seconds)
        return (fixture, WidgetRuntime(bundle: try fixture.load(), services: services(fixture, workers: workers, clock: VirtualClock(t0), policy: policy)))
    }

    /// The default executable of workers is this process's own, as
    /// Foundation names it (read from /proc/self/exe on Linux without
    /// making `Bundle.main`, which lists the executable's folder).
    @Test func theDefaultWorkerExecutableIsThisProcesssOwn() throws {
        let own = BundleWorkers.thisExecutable
        #expect(own.hasPrefix("/"), "\(own)")
        #expect(FileManager.default.isExecutableFile(atPath: own), "\(own)")
        let foundation = try #require(Bundle.main.executablePath)
        #expect(URL(fileURLWithPath: own).resolvingSymlinksInPath().path == URL(fileURLWithPath: foundation).resolvingSymlinksInPath().path)
    }

    @Test func aBundlesCallsInAWorkerGiveWhatTheyGiveInProcess() throws {
        let fixture = try BundleFixture(main: Self.main)
        let bundle = try fixture.load()
        let workers = Self.workers()
        defer { workers.stop() }
        func run(_ workers: BundleWorkers?) throws -> (timeline: ProviderResult<Timeline>, add: CallOutcome, after: ProviderResult<Timeline>) {
            let clock = VirtualClock(t0)
            let services = services(fixture, workers: workers, clock: clock)
            try fixture.store.group("group.test").set("n", .integer(0))
            let runtime = WidgetRuntime(bundle: bundle, services: services)
            let intents = IntentRuntime(bundle: bundle, services: services)
            let first = runtime.timeline(try runtime.configuration(kind: "W"))
            let add = try intents.perform("Add", parameters: ["by": .integer(2)]).outcome
            try clock.advance(by: 60)
            let after = runtime.timeline(try runtime.configuration(kind: "W"))
            return (first, add, after)
        }
        let inProcess = try run(nil)
        let inWorker = try run(workers)
        // The timelines: decoded in place in process, from the worker's values under isolation.
        for (a, b) in [(inProcess.timeline, inWorker.timeline), (inProcess.after, inWorker.after)] {
            let (entriesA, entriesB) = (try #require(a.value).entries, try #require(b.value).entries)
            // NaN is not equal to itself: compare the rendering of the contents.
            #expect(entriesA.map { LuaValue.table($0.content).description } == entriesB.map { LuaValue.table($0.content).description })
            #expect(entriesA.map(\.date) == entriesB.map(\.date))
            #expect(entriesA.map { $0.relevance?.score } == entriesB.map { $0.relevance?.score })
            #expect(a.value?.policy == b.value?.policy)
            #expect(a.outcome.warnings == b.outcome.warnings)
            // Decoded as they were read (in place, or from the worker's
            // values): no raw copy of the result is kept with the outcome.
            #expect(a.outcome.values.isEmpty && b.outcome.values.isEmpty)
        }
        #expect(inProcess.add.values.map(\.description) == inWorker.add.values.map(\.description), "the intent's result")
        for (a, b) in [(inProcess.timeline.outcome, inWorker.timeline.outcome), (inProcess.add, inWorker.add), (inProcess.after.outcome, inWorker.after.outcome)] {
            try #require(b.status == .ok, "\(b.message ?? "")")
            #expect(a.logs.map(\.text) == b.logs.map(\.text))
            #expect(a.reloadRequests == b.reloadRequests)
            #expect(b.bundleVersion == bundle.version)
            #expect(b.memoryPeak > 0)
        }
        let entry = try #require(inWorker.after.value?.entries.first?.content)
        #expect(entry["n"] == .integer(2), "the worker's write is in the host's store, read by the next call")
        #expect(entry["half"] == .number(0.5) && entry["big"] == .integer(.max) && entry["bytes"] == .string(LuaString(bytes: [0, 255])))
        #expect(entry["mixed"] == .table(LuaTable(array: [1, 2], fields: ["x": "y"])))
        #expect(inWorker.add.reloadRequests == [.timelines(kind: "W")])
        #expect(workers.workersStarted == 1, "one worker served every call of the bundle")
        #expect(try fixture.store.group("group.test").get("n") == .integer(2))
    }

    @Test func aWorkerThatDiesInACallCommitsNothingAndTheNextCallGetsAFreshOne() throws {
        let fixture = try BundleFixture(main: Self.main)
        let workers = Self.workers()
        defer { workers.stop() }
        var policy = HostPolicy.standard
        policy.intentDeadline = 10
        let services = services(fixture, workers: workers, clock: VirtualClock(t0), policy: policy)
        let intents = IntentRuntime(bundle: try fixture.load(), services: services)
        #expect(try intents.perform("Add", parameters: ["by": .integer(1)]).outcome.status == .ok)
        // The call writes n = 0, then loops: the worker dies of SIGSEGV (as
        // a crash in native code would) before the call commits. A sanitizer
        // build's worker catches SIGSEGV (a report, exit 66): there, SIGKILL.
        let signal = WorkerServer.isSanitizerBuild ? SIGKILL : SIGSEGV
        let killer = Thread {
            guard let pid = Self.busyWorker(of: workers) else { return }
            usleep(50_000)
            kill(pid, signal)
        }
        killer.start()
        let crashed = try intents.perform("Add", parameters: ["by": .integer(-1)]).outcome
        #expect(crashed.status == .crashed)
        let died = WorkerServer.isSanitizerBuild ? "signal 9 (SIGKILL)" : "signal 11 (SIGSEGV)"
        #expect(crashed.message == "the worker process died of \(died); the call's effects are discarded, and the next call gets a fresh worker")
        #expect(crashed.reloadRequests.isEmpty)
        #expect(try fixture.store.group("group.test").get("n") == .integer(1), "the dead call's write is not in the store")
        let next = try intents.perform("Add", parameters: ["by": .integer(5)]).outcome
        #expect(next.status == .ok && next.values.first?.tableValue?["n"] == .integer(6), "\(next.message ?? "")")
        #expect(workers.workersStarted == 2)
    }

    @Test func aCallPastItsDeadlineEndsAsTimeoutAndAScriptErrorIsTheScripts() throws {
        let fixture = try BundleFixture(main: Self.main + """
            intent { id = "Fail", perform = function() error("no data") end }
            """)
        let workers = Self.workers()
        defer { workers.stop() }
        var policy = HostPolicy.standard
        policy.intentDeadline = 0.2
        let intents = IntentRuntime(bundle: try fixture.load(), services: services(fixture, workers: workers, clock: VirtualClock(t0), policy: policy))
        let loop = try intents.perform("Add", parameters: ["by": .integer(-1)]).outcome
        #expect(loop.status == .timeout, "\(loop.message ?? "")")
        #expect(try fixture.store.group("group.test").get("n") == nil)
        let failed = try intents.perform("Fail").outcome
        #expect(failed.status == .error && failed.diagnostic?.line == 17, "\(failed.diagnostic.map { "\($0)" } ?? "")")
        #expect(failed.message?.hasSuffix("no data") == true)
        #expect(workers.workersStarted == 1, "a script's own failure does not cost the worker")
    }

    @Test func anAppModuleRunsInTheHostForAWorker() throws {
        var weather = HostModule(name: "app.weather", capability: "weather")
        weather.add("today") { args in
            let city = try args.text(1)
            if city == "Nowhere" { throw LuaFunctionError("no forecast for Nowhere") }
            return [.table(LuaTable(fields: ["city": .string(LuaString(city)), "high": 21.5, "pid": .integer(Int64(getpid()))]))]
        }
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), today = require("app.weather").today("Lyon") } } } end }
            intent { id = "Nowhere", perform = function() return require("app.weather").today("Nowhere") end }
            """, manifest: #"{ "id": "com.example.test", "appGroups": ["group.test"], "capabilities": ["weather"] }"#)
        let workers = Self.workers()
        defer { workers.stop() }
        var services = services(fixture, workers: workers, clock: VirtualClock(t0))
        services.modules = [weather]
        let runtime = WidgetRuntime(bundle: try fixture.load(), services: services)
        let result = runtime.timeline(try runtime.configuration(kind: "W"))
        try #require(result.outcome.status == .ok, "\(result.outcome.message ?? "")")
        let today = result.value?.entries.first?.content["today"].tableValue
        #expect(today?["city"] == "Lyon" && today?["high"] == .number(21.5))
        #expect(today?["pid"] == .integer(Int64(getpid())), "the module ran in the host")
        let refused = try IntentRuntime(bundle: try fixture.load(), services: services).perform("Nowhere").outcome
        #expect(refused.status == .error && refused.message?.contains("no forecast for Nowhere") == true, "\(refused.message ?? "")")
    }

    @Test func theRuntimesCancellerKillsTheWorkerOfTheRunningCall() throws {
        let workers = Self.workers()
        defer { workers.stop() }
        let (_, runtime) = try looping(workers, deadline: 10)
        let canceller = runtime.canceller
        let stopper = Thread {
            guard Self.busyWorker(of: workers) != nil else { return }
            usleep(20_000)
            canceller.cancel()
        }
        stopper.start()
        let started = ContinuousClock.now
        let outcome = runtime.timeline(try runtime.configuration(kind: "W")).outcome
        #expect(outcome.status == .timeout && outcome.message?.hasPrefix("cancelled by the host") == true, "\(outcome.message ?? "")")
        #expect(ContinuousClock.now - started < .seconds(5), "the cancel ended the call, not its 10 s deadline")
        #expect(workers.idleWorkers == 0, "the killed worker is not kept")
        #expect(workers.workersStarted == 1)
    }

    @Test func anEvictedWorkerExitsAndStopLeavesNoWorkerBehind() throws {
        // Two bundles, one idle worker kept: each call of the other bundle
        // evicts the idle one, which is stopped off the calling thread.
        let first = try BundleFixture(main: Self.main), second = try BundleFixture(main: Self.main)
        let workers = BundleWorkers(executable: CLI.binary.path, maxIdle: 1)
        defer { workers.stop() }
        let clock = VirtualClock(t0)
        let a = WidgetRuntime(bundle: try first.load(), services: services(first, workers: workers, clock: clock))
        let b = WidgetRuntime(bundle: try second.load(), services: services(second, workers: workers, clock: clock))
        #expect(a.timeline(try a.configuration(kind: "W")).outcome.status == .ok)
        let evicted = workers.processIdentifiers
        #expect(evicted.count == 1)
        #expect(b.timeline(try b.configuration(kind: "W")).outcome.status == .ok)
        #expect(workers.idleWorkers == 1 && workers.workersStarted == 2)
        #expect(workers.processIdentifiers != evicted, "the first bundle's worker was evicted")
        // stop() returns with every worker reaped: the idle one, and the
        // evicted one stopping in the background.
        let kept = workers.processIdentifiers
        workers.stop()
        for pid in evicted + kept {
            let signalled = kill(pid, 0), error = errno
            #expect(signalled != 0 && error == ESRCH, "worker \(pid) was reaped by stop()")
        }
        #expect(workers.idleWorkers == 0)
    }

    @Test func aWorkerPastItsCPUAllowanceIsRetiredAfterItsCall() throws {
        let fixture = try BundleFixture(main: Self.main)
        let workers = Self.workers()
        defer { workers.stop() }
        workers.retireAfterCPUSeconds = 0   // every worker has used more than none
        let runtime = WidgetRuntime(bundle: try fixture.load(), services: services(fixture, workers: workers, clock: VirtualClock(t0)))
        for _ in 0..<2 { #expect(runtime.timeline(try runtime.configuration(kind: "W")).outcome.status == .ok) }
        #expect(workers.workersStarted == 2 && workers.idleWorkers == 0, "each call's worker was retired: \(workers.workersStarted)")
    }

    @Test func aWorkersLogLinesReachTheHostsLoggerWithTheMetadataOfACallInProcess() throws {
        let fixture = try BundleFixture(main: Self.main)
        let workers = Self.workers()
        defer { workers.stop() }
        func lines(_ workers: BundleWorkers?) throws -> [String] {
            let collected = CollectedLog()
            var services = services(fixture, workers: workers, clock: VirtualClock(t0))
            services.scriptLogger = Logger(label: "test.scripts", factory: collected.handler)
            let runtime = WidgetRuntime(bundle: try fixture.load(), services: services)
            #expect(runtime.timeline(try runtime.configuration(kind: "W")).outcome.status == .ok)
            // The call's number differs from run to run: everything else is the same.
            return collected.all.map { $0.replacingOccurrences(of: #"call=\d+ "#, with: "call=N ", options: .regularExpression) }
        }
        let inProcess = try lines(nil), inWorker = try lines(workers)
        #expect(inProcess.count == 1 && inProcess.first?.contains("family=systemSmall") == true, "\(inProcess)")
        // Sorted by key, the worker's lines add where they ran before "kind".
        #expect(inWorker == inProcess.map { $0.replacingOccurrences(of: " kind=", with: " isolation=process kind=") }, "\(inWorker)")
    }

    @Test func aWorkerThatStopsReadingOrClosesItsOutputCostsTheCallNotTheHost() throws {
        // Stand-ins for a worker whose native code was taken over: real processes that break the protocol.
        let deaf = try WorkerProcess(executable: "/bin/sh", arguments: ["-c", "exec sleep 30"])
        let big = [UInt8](repeating: 0x7B, count: 1 << 20)   // more than a pipe holds: the write has to wait
        let started = ContinuousClock.now
        #expect(deaf.exchange(big, deadline: 0.3) == .failure(.killed(deadline: 0.3)))
        #expect(ContinuousClock.now - started < .seconds(3), "the write waited under the deadline")
        #expect(!deaf.isAlive)
        let mute = try WorkerProcess(executable: "/bin/sh", arguments: ["-c", "exec 1>&-; exec sleep 30"])
        let result = mute.exchange(Array("{}".utf8), deadline: 10)
        #expect(result == .failure(.broken("it closed its output and did not exit")), "\(result)")
        #expect(!mute.isAlive)
        var reader = WireReader([WireTag.done.rawValue, 0x06, 0xFF, 0xFF, 0xFF, 0x1F])   // a table of 64 M items, in 6 bytes
        #expect(throws: WorkerProtocolError.self) { try reader.value() }
    }

    /// The policy crosses to a worker as an object of its fields, written
    /// by hand: every stored property of `HostPolicy` is one of them (a
    /// new one fails here until it is), and each comes back as it went.
    @Test func everyFieldOfThePolicyReachesTheWorkerAsItIs() throws {
        #expect(Mirror(reflecting: HostPolicy()).children.count == WorkerWire.policyFieldCount)
        var policy = HostPolicy()
        policy.placeholderDeadline = .init(soft: 0.125, hard: 1.5)
        policy.snapshotDeadline = .init(soft: 2.25, hard: 7)
        policy.timelineDeadline = .init(soft: 0.1, hard: 0.30000000000000004)
        policy.minimumReloadInterval = 61.5
        policy.entriesWarning = 11; policy.entriesLimit = 12
        policy.timelineBytesWarning = 13; policy.timelineBytesLimit = 14
        policy.budget = 15; policy.budgetWindow = 3600.25; policy.budgetScope = .app
        policy.developerMode = true; policy.callCap = 0.75
        policy.widgetMemoryMB = 16; policy.activityMemoryMB = 17; policy.intentDeadline = 9.5
        policy.controlDeadline = .init(soft: 0.5, hard: 2.5)
        policy.activityPushBudget = 18; policy.activityFrequentPushBudget = 19; policy.activityPayloadBytes = 20
        policy.maxActiveActivities = 21; policy.activityActiveLimit = 22.5; policy.activityDismissLimit = 23.5
        policy.activityRetention = 24.5; policy.outputBytes = 25
        func trip(_ p: HostPolicy) throws -> HostPolicy? {
            let writer = JSONWriter()
            WorkerWire.policy(p).writeJSON(to: writer)
            return try WorkerWire.policy(from: try JSONValue.parse(bytes: Array(writer.text.utf8)))
        }
        #expect(try trip(policy) == policy)
        policy.callCap = nil
        #expect(try trip(policy) == policy)
        #expect(try trip(.standard) == .standard)
        var broken = WorkerWire.policy(.standard)
        if case .object(var members) = broken.kind {
            members.removeAll { $0.key == "budgetScope" }
            broken.kind = .object(members)
        }
        #expect(throws: WorkerProtocolError.self) { _ = try WorkerWire.policy(from: broken) }
    }

    @Test func theHostServesAWorkerOnlyTheModulesItsBundleIsGranted() throws {
        var weather = HostModule(name: "app.weather", capability: "weather")
        weather.add("today") { _ in [.integer(21)] }
        var secrets = HostModule(name: "app.secrets", capability: "secrets")
        secrets.add("token") { _ in ["s3cr3t"] }
        let fixture = try BundleFixture(main: "widget { kind = \"W\", placeholder = function() return {} end, timeline = function() return { entries = {} } end }",
                                        manifest: #"{ "id": "com.example.test", "capabilities": ["weather", "secrets"] }"#)
        let workers = Self.workers()
        var services = HostServices(clock: VirtualClock(t0), calendar: .utc, modules: [weather, secrets])
        services.grants = ["weather"]
        let link = try workers.link(try fixture.load(), services)
        func ask(_ module: String, _ function: String) throws -> Result<[LuaValue], WorkerWire.ModuleError> {
            // What a worker sends in a call; one whose native code was taken over could send anything.
            try WorkerWire.reply(try #require(workers.serve(WorkerWire.module(module, function, []), link, services)))
        }
        #expect(try ask("app.weather", "today").get() == [.integer(21)])
        #expect(throws: WorkerWire.ModuleError(message: "app.secrets.token: bundle com.example.test may not call it (not one of the app's functions, or its capability is not granted)")) {
            try ask("app.secrets", "token").get()
        }
        #expect(throws: WorkerWire.ModuleError.self) { try ask("app.weather", "other").get() }
        #expect(workers.serve(WireLogLine.encode(.info, LuaString("not a module call")), link, services) == nil)
    }

    @Test func aBundleThatDoesNotLoadInAWorkerIsRefusedWithTheErrorOfItsLoad() throws {
        let fixture = try BundleFixture(main: """
            local x = nil
            widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
            return x.field
            """)
        let workers = Self.workers()
        defer { workers.stop() }
        let loaded = Result { () throws(LocatedErrors) in try ScriptBundle.load(fixture.path, calendar: .utc, grantsFor: { _ in nil }, workers: workers) }
        guard case .failure(let error) = loaded else { Issue.record("the bundle loaded"); return }
        #expect(error.errors.map(\.locatedMessage) == fixture.loadErrors(), "the same error as a load in process")
        #expect(error.errors.first?.line == 3, "\(error)")
        #expect(workers.workersStarted == 1, "the load ran in a worker")
        #expect(workers.idleWorkers == 0, "the worker that tried the load is stopped")
    }

    #if os(Linux)
    /// The worker locks down once its bundle is open: no_new_privs and a seccomp filter (mode 2).
    @Test(.enabled(if: !WorkerServer.isSanitizerBuild, "a sanitizer build does not lock workers down"))
    func aBundlesWorkerLocksDownOnceItsGroupsAreOpen() throws {
        let workers = Self.workers()
        defer { workers.stop() }
        let (fixture, runtime) = try looping(workers, deadline: 0.5)
        let status = Locked<String>("")
        let reader = Thread {
            if let pid = Self.busyWorker(of: workers) {
                status.set((try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? "")
            }
        }
        reader.start()
        #expect(runtime.timeline(try runtime.configuration(kind: "W")).outcome.status == .timeout)
        let text = status.get()
        #expect(text.contains("NoNewPrivs:\t1") && text.contains("Seccomp:\t2"), "\(text)")
        let open = try FileManager.default.contentsOfDirectory(atPath: fixture.storeRoot)
        #expect(open == ["group.test"], "the worker opened the bundle's group before it locked down")
    }
    #endif
}

/// A value shared with a thread.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func get() -> T { lock.withLock { value } }
    func set(_ new: T) { lock.withLock { value = new } }
}

/// `--isolation process` and `lunette simulate DIR1 DIR2 …` from the command line.
@Suite("Plugins from the command line")
struct PluginsFromTheCommandLineTests {
    func bundle(_ id: String, _ main: String) throws -> String {
        try BundleFixture(main: main, manifest: #"{ "id": "\#(id)", "appGroups": ["group.\#(id)"] }"#).path
    }

    static let counting = """
        widget { kind = "W", placeholder = function() return {} end,
          timeline = function()
            local g = store.group(GROUP)
            g:set("n", (g:get("n") or 0) + 1)
            return { entries = { { date = clock.now(), n = g:get("n"), x = 0.25 } }, policy = { after = clock.now() + 3600 } }
          end }
        """

    @Test func aTimelineInAWorkerPrintsWhatItPrintsInProcess() throws {
        let path = try bundle("com.example.a", "local GROUP = 'group.com.example.a'\n" + Self.counting)
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-cli-\(UUID().uuidString)").path
        let args = ["timeline", path, "--kind", "W", "--at", "2026-11-21T00:00:00Z", "--json", "--store-dir", store]
        let inProcess = try CLI.run(args)
        let inWorker = try CLI.run(args + ["--isolation", "process"])
        #expect(inProcess.status == 0 && inWorker.status == 0, "\(inProcess.stderr)\(inWorker.stderr)")
        func entries(_ out: String) throws -> String {
            // The line's "entries" member, as printed (the call's time differs).
            let start = try #require(out.range(of: #""entries":"#)), end = try #require(out.range(of: #","policy":"#))
            return String(out[start.upperBound..<end.lowerBound])
        }
        #expect(try entries(inProcess.stdout) == #"[{"date":1795219200,"n":1,"x":0.25}]"#, "\(inProcess.stdout)")
        #expect(try entries(inWorker.stdout) == #"[{"date":1795219200,"n":2,"x":0.25}]"#,
                "the worker's call read and wrote the same store: \(inWorker.stdout)")
    }

    @Test func severalBundlesRunAsPluginsOfOneHostWithASummaryAndRefusalsReported() throws {
        let a = try bundle("com.example.a", "local GROUP = 'group.com.example.a'\n" + Self.counting)
        let b = try bundle("com.example.b", """
            widget { kind = "W", placeholder = function() return {} end, timeline = function() error("down") end }
            """)
        let broken = try bundle("com.example.c", "widget { kind = ")
        let twin = try bundle("com.example.a", "local GROUP = 'group.com.example.a'\n" + Self.counting)
        let run = try CLI.run(["simulate", a, b, broken, twin, "--start", "2026-11-21T00:00:00Z", "--duration", "6h",
                               "--isolation", "process", "--json"])
        #expect(run.status == 1, "calls failed and plugins were refused: \(run.stderr)")
        #expect(run.stderr.contains("plugins refused at load") || run.stderr.contains("plugin refused at load"), "\(run.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect(report["isolation"] as? String == "process")
        let plugins = try #require(report["plugins"] as? [[String: Any]])
        #expect(plugins.map { $0["id"] as? String } == ["com.example.a", "com.example.b"])
        #expect(plugins[0]["failures"] as? Int == 0 && (plugins[0]["calls"] as? Int ?? 0) >= 6, "\(plugins[0])")
        #expect((plugins[1]["failures"] as? Int ?? 0) > 0 && (plugins[1]["report"] as? [String: Any])?["bundle"] as? String == "com.example.b")
        let refused = try #require(report["refused"] as? [[String: Any]])
        #expect(refused.map { $0["path"] as? String } == [broken, twin])
        let twinMessage = ((refused[1]["diagnostics"] as? [[String: Any]])?.first?["message"] as? String) ?? ""
        #expect(twinMessage.contains("bundle id com.example.a is already the id of \(a)"), "\(twinMessage)")
        let text = try CLI.run(["simulate", a, b, "--start", "2026-11-21T00:00:00Z", "--duration", "6h", "--allow-failures"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("2 plugins, 2026-11-21 00:00+00:00 to 2026-11-21 06:00+00:00, isolation inprocess: "), "\(text.stdout)")
        #expect(text.stdout.contains("plugin ") && text.stdout.contains("com.example.b"), "\(text.stdout)")
        let usage = try CLI.run(["simulate", a, b, "--scenario", "x.json"])
        #expect(usage.status == 2, "\(usage.status)")
        #expect(usage.stderr.contains("--scenario plays one bundle"), "\(usage.stderr)")
    }
}
