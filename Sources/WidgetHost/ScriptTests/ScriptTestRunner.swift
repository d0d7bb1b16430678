#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox
import SharedStore

/// One test of a bundle's test files, and how it ended.
public struct ScriptTestResult: Sendable, Codable {
    public var file: String
    public var name: String
    /// Where `test(...)` was called.
    public var line: Int?
    /// Nil when it passed.
    public var failure: Diagnostic?
    /// Wall time, in seconds.
    public var elapsed: Double

    public var passed: Bool { failure == nil }
}

/// `lunette test`: runs a bundle's test files — `tests/*.lua` and any
/// `*_test.lua` — each in a sandboxed state. A file declares tests with
/// `test("name", function(t) … end)`; each test gets a fresh store (a
/// temporary one), a virtual clock (2026-01-01T00:00:00Z until `t.at`) and
/// a fresh host, and `t`, the test API (docs/testing.md).
public final class ScriptTestRunner {
    public let bundle: ScriptBundle
    public let filter: String?
    /// Each test's deadline (its own Lua, not the calls it makes into the bundle,
    /// which keep their own limits).
    public var testDeadline: Duration = .seconds(10)
    public var calendar: HostCalendar = .utc

    /// Where a test's clock starts.
    public static let start = 1_767_225_600.0   // 2026-01-01T00:00:00Z

    public init(bundle: ScriptBundle, filter: String? = nil) {
        self.bundle = bundle
        self.filter = filter
    }

    /// The test files of the bundle, sorted (paths relative to the bundle).
    public static func testFiles(in root: String) -> [String] {
        var files: [String] = []
        for relative in pathsBelow(root) {
            guard relative.hasSuffix(".lua") else { continue }
            if relative.hasPrefix("tests/") || relative.hasSuffix("_test.lua") { files.append(relative) }
        }
        return files.sorted()
    }

    /// Runs every test (those whose name contains `filter`), file by file.
    public func run() -> [ScriptTestResult] {
        var results: [ScriptTestResult] = []
        for file in Self.testFiles(in: bundle.path) { results += run(file: file) }
        return results
    }

    /// Runs the tests of one file.
    func run(file relative: String) -> [ScriptTestResult] {
        let path = bundle.path + "/" + relative
        let context = TestContext(bundle: bundle, calendar: calendar)
        var names: [(name: String, line: Int?)] = []
        let state: LuaState
        let runner: LuaFunctionRef
        do {
            state = try LuaState(profile: .sandbox)
            var host = LuaModule(name: "lunette.test")
            host.add("define") { args in
                names.append((try args.text(1), args.location(level: 2)?.line))
                return []
            }
            context.install(into: &host)
            guard let entry = try state.runGlue(Self.glue, name: "lunette.test", functions: host).first else {
                throw LuaError.runtime(LuaRuntimeError(message: "the test glue returned no runner"))
            }
            runner = entry
            guard let source = FileManager.default.contents(atPath: path) else {
                return [ScriptTestResult(file: relative, name: "(file)", line: nil, failure: Diagnostic(.invalid, "\(path): cannot read the file"), elapsed: 0)]
            }
            let chunk = try state.load(bytes: [UInt8](source), name: path)
            _ = try state.call(chunk, [], options: LuaCallOptions(limits: LuaLimits(memory: 64 << 20, timeout: testDeadline)))
        } catch {
            return [ScriptTestResult(file: relative, name: "(file)", line: nil, failure: Self.diagnostic(error), elapsed: 0)]
        }
        var results: [ScriptTestResult] = []
        for (index, test) in names.enumerated() {
            if let filter, !test.name.contains(filter) { continue }
            context.reset()
            let started = ContinuousClock.now
            var failure: Diagnostic?
            do {
                _ = try state.call(runner, [.integer(Int64(index + 1))], options: LuaCallOptions(limits: LuaLimits(memory: 64 << 20, timeout: testDeadline)))
            } catch {
                failure = Self.diagnostic(error)
            }
            let d = ContinuousClock.now - started
            results.append(ScriptTestResult(file: relative, name: test.name, line: test.line, failure: failure,
                                            elapsed: Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18))
        }
        context.reset()
        return results
    }

    static func diagnostic(_ error: any Error) -> Diagnostic {
        (error as? LuaError)?.diagnostic ?? Diagnostic(.invalid, "\(error)")
    }

    /// The Lua side of the test API: `test`, and `t` with its helpers.
    static let glue = """
        local host = ...
        local tests = {}
        test = function(name, fn)
          if type(name) ~= "string" then error("test(name, fn): the name must be a string", 2) end
          if type(fn) ~= "function" then error("test(name, fn): fn must be a function", 2) end
          host.define(name)
          tests[#tests + 1] = fn
        end
        local t = {}
        for _, name in ipairs({ "at", "now", "store", "get", "timeline", "snapshot", "placeholder", "widget", "shown",
                                "advance", "reloads", "perform", "tap", "control", "activity", "push", "signal", "activities" }) do
          local f = host[name]
          -- t itself goes first, as for a method, so that argument errors count the script's arguments.
          t[name] = function(...) return f(t, ...) end
        end
        -- expected vs got, at the caller's line
        t.eq = function(got, expected, message)
          local difference = host.compare(got, expected)
          if difference then error((message and (message .. ": ") or "") .. difference, 2) end
        end
        t.ok = function(value, message)
          if not value then error(message or "expected a true value, got " .. host.describe(value), 2) end
          return value
        end
        t.contains = function(text, part, message)
          if type(text) ~= "string" or not string.find(text, part, 1, true) then
            error((message and (message .. ": ") or "") .. "expected " .. host.describe(text) .. " to contain " .. host.describe(part), 2)
          end
        end
        return function(i) return tests[i](t) end
        """
}

/// One test's host: a temporary store, a virtual clock and the bundle's
/// runtime, engine and Control Center, made afresh for each test.
final class TestContext {
    let bundle: ScriptBundle
    let calendar: HostCalendar
    private var root: String?
    private var clock = VirtualClock(ScriptTestRunner.start)
    private var store: SharedStore?
    private var engine: TimelineEngine?
    private var controls: ControlCenter?
    private var updaters: ActivityUpdaters?

    init(bundle: ScriptBundle, calendar: HostCalendar) {
        self.bundle = bundle
        self.calendar = calendar
    }

    /// Forgets the last test's store, clock and host.
    func reset() {
        if let root { try? FileManager.default.removeItem(atPath: root) }
        root = nil
        store = nil
        engine = nil
        controls = nil
        updaters = nil
        clock = VirtualClock(ScriptTestRunner.start)
    }

    private func theStore() -> SharedStore {
        if let store { return store }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-test-\(UUID().uuidString)").path
        root = path
        let made = SharedStore(root: path)
        store = made
        return made
    }

    /// The test's engine, made on first use (after `t.at` and `t.store`, so they shape it).
    private func theEngine() throws -> TimelineEngine {
        if let engine { return engine }
        var policy = HostPolicy.standard
        policy.developerMode = false
        let services = try HostServices(store: theStore(), clock: clock, calendar: calendar, policy: policy).withActivities(of: bundle)
        let made = TimelineEngine(runtime: WidgetRuntime(bundle: bundle, services: services))
        made.historyRetention = .infinity
        engine = made
        controls = ControlCenter(engine: made)
        updaters = services.activities.map { ActivityUpdaters(runtime: made.runtime, manager: $0) }
        return made
    }

    /// The bundle's Live Activities (an error for a bundle that declares none).
    private func theUpdaters() throws -> ActivityUpdaters {
        _ = try theEngine()
        guard let updaters else { throw LuaFunctionError("bundle \(bundle.manifest.id) declares no activity { }") }
        return updaters
    }

    /// Fails the test when an updater run of activity `id` since run number `since` failed.
    private static func checkUpdater(_ live: ActivityUpdaters, since: Int, _ id: String) throws {
        if let failed = live.runs.dropFirst(since).first(where: { $0.activity == id && $0.diagnostic != nil })?.diagnostic {
            throw LuaFunctionError("the updater of \(id) failed: \(failed.text)")
        }
    }

    /// An activity as a test sees it.
    private static func table(_ record: ActivityRecord, at now: Double) -> LuaValue {
        .table(LuaTable(fields: ["id": .string(LuaString(record.id)), "type": .string(LuaString(record.type)),
                                 "phase": .string(LuaString(record.phase(at: now).rawValue)),
                                 "attributes": .table(record.attributes), "state": .table(record.content.state)]))
    }

    private func configuration(_ args: LuaArguments, kind n: Int) throws -> WidgetConfiguration {
        let kind = try args.text(n)
        let options = try args.optional(n + 1) { i throws(LuaFunctionError) in try args.table(i) } ?? LuaTable()
        try Self.checkOptions(options, known: ["family", "config"], args, n + 1)
        let family = try options["family"].stringValue.map { name throws(LuaFunctionError) -> WidgetFamily in
            guard let family = WidgetFamily(rawValue: name) else { throw args.badArgument(n + 1, "unknown family '\(name)'") }
            return family
        }
        var values: [String: LuaValue] = [:]
        if case .table(let config) = options["config"] { values = config.namedFields }
        do {
            return try theEngine().runtime.configuration(kind: kind, family: family, values: values)
        } catch let error as ParameterError {
            throw LuaFunctionError(error.message)
        }
    }

    /// Argument `n`, a group the bundle lists in appGroups: a test that
    /// seeds another group would see its widget read nothing.
    private func bundleGroup(_ args: LuaArguments, _ n: Int, _ what: String) throws(LuaFunctionError) -> String {
        let group = try args.text(n)
        let groups = bundle.manifest.appGroups
        guard groups.contains(group) else {
            throw args.badArgument(n, "\(what): group \"\(group)\" is not one of the bundle's app groups "
                                   + NearestName.hint(for: group, among: groups, label: "appGroups"))
        }
        return group
    }

    /// Refuses an option the call does not know (a typo would be ignored silently).
    private static func checkOptions(_ options: LuaTable, known: [String], _ args: LuaArguments, _ n: Int) throws(LuaFunctionError) {
        for field in options.fields {
            let name = field.key.string ?? field.key.displayText
            if !known.contains(name) {
                throw args.badArgument(n, "unknown option '\(name)' " + NearestName.hint(for: name, among: known, label: "options"))
            }
        }
        if !options.array.isEmpty { throw args.badArgument(n, "options are written name = value (\(known.joined(separator: ", ")))") }
    }

    /// A provider's failure, raised in the test with its own location.
    private func raise(_ outcome: CallOutcome, _ what: String) -> LuaFunctionError {
        LuaFunctionError("\(what) failed: \(outcome.diagnostic?.text ?? "no result")")
    }

    func install(into host: inout LuaModule) {
        host.add("at") { [unowned self] args in
            let text = try args.text(2)
            let time: Double
            switch ISODate.parse(text, calendar: calendar) {
            case .success(let t): time = t
            case .failure(let error): throw args.badArgument(2, "\(error)")
            }
            do { try clock.advance(to: time) } catch {
                throw LuaFunctionError("t.at: \(error) (a test's clock only moves forward)")
            }
            return []
        }
        host.add("now") { [unowned self] _ in [ClockBinding.date(clock.now())] }
        host.add("store") { [unowned self] args in
            let group = try theStore().group(try bundleGroup(args, 2, "t.store"))
            for field in try args.table(3).fields {
                guard let key = field.key.string else { throw args.badArgument(3, "keys are strings") }
                let value: StoreValue?
                do { value = try StoreValue(lua: field.value, path: key) } catch { throw LuaFunctionError("t.store: \(error)") }
                try group.set(key, value)
            }
            return []
        }
        host.add("get") { [unowned self] args in
            let value = try theStore().group(try bundleGroup(args, 2, "t.get")).get(try args.text(3))
            return [value?.lua ?? .nil]
        }
        host.add("timeline") { [unowned self] args in
            let configuration = try configuration(args, kind: 2)
            let result = try theEngine().runtime.timeline(configuration)
            guard let timeline = result.value else { throw raise(result.outcome, "timeline of \(configuration.kind)") }
            return [.table(Self.table(timeline))]
        }
        for (name, role) in [("snapshot", true), ("placeholder", false)] {
            host.add(name) { [unowned self] args in
                let configuration = try configuration(args, kind: 2)
                let runtime = try theEngine().runtime
                let result = role ? runtime.snapshot(configuration) : runtime.placeholder(configuration)
                guard let entry = result.value else { throw raise(result.outcome, "\(name) of \(configuration.kind)") }
                return [.table(entry.content)]
            }
        }
        host.add("widget") { [unowned self] args in
            let configuration = try configuration(args, kind: 2)
            return [.integer(Int64(try theEngine().addWidget(configuration)))]
        }
        host.add("shown") { [unowned self] args in
            let id = Int(try args.integer(2))
            guard let instance = try theEngine().instance(id) else { throw args.badArgument(2, "no widget #\(id)") }
            return [instance.shown(at: clock.now()).map { .table($0.content) } ?? .nil]
        }
        host.add("advance") { [unowned self] args in
            let text = try args.text(2)
            guard let seconds = Durations.seconds(text), seconds >= 0 else { throw args.badArgument(2, "not a duration such as \"90m\" or \"2h\"") }
            let engine = try theEngine()
            let end = clock.now() + seconds
            func next() throws -> Double? {
                [engine.nextDue(), try updaters?.nextDue()].compactMap { $0 }.min()
            }
            while let due = try next(), due <= end {
                try clock.advance(to: max(due, clock.now()))
                engine.runDue()
                try updaters?.runDue()
            }
            try clock.advance(to: end)
            return []
        }
        host.add("reloads") { [unowned self] args in
            let id = Int(try args.integer(2))
            guard let instance = try theEngine().instance(id) else { throw args.badArgument(2, "no widget #\(id)") }
            return [.table(LuaTable(array: instance.reloads.map { r in
                .table(LuaTable(fields: ["at": ClockBinding.date(r.at), "reason": .string(LuaString(r.reason.rawValue)), "counted": .boolean(r.counted),
                                         "status": .string(LuaString(r.status.rawValue))]))
            }))]
        }
        host.add("perform") { [unowned self] args in
            let id = try args.text(2)
            let parameters = try args.optional(3, { i throws(LuaFunctionError) in try args.table(i) })?.namedFields ?? [:]
            let options = try args.optional(4) { i throws(LuaFunctionError) in try args.table(i) }
            if let options { try Self.checkOptions(options, known: ["from"], args, 4) }
            let engine = try theEngine()
            let performance: IntentPerformance
            do {
                if let from = options?["from"].stringValue {
                    var widget = engine.instances.first { $0.removedAt == nil && $0.configuration.kind == from }?.id
                    if widget == nil { widget = engine.addWidget(try engine.runtime.configuration(kind: from)) }
                    performance = try engine.tap(widget!, intent: id, parameters: parameters)
                } else {
                    performance = try engine.perform(id, parameters: parameters)
                }
            } catch let error as IntentError {
                throw LuaFunctionError("t.perform: \(error.message)")
            } catch let error as ParameterError {
                throw LuaFunctionError("t.perform: \(error.message)")
            }
            guard performance.succeeded else { throw raise(performance.outcome, "intent \(id)") }
            return [performance.result ?? .nil]
        }
        host.add("tap") { [unowned self] args in
            let kind = try args.text(2)
            _ = try theEngine()
            do { return [try controls!.tap(kind).after ?? .nil] } catch { throw LuaFunctionError("t.tap: \(error)") }
        }
        host.add("control") { [unowned self] args in
            let kind = try args.text(2)
            _ = try theEngine()
            do {
                if controls!.control(kind) == nil { try controls!.add(kind) }
                return [controls!.control(kind)?.value ?? .nil]
            } catch { throw LuaFunctionError("t.control: \(error)") }
        }
        host.add("activity") { [unowned self] args in
            let live = try theUpdaters()
            let record = try live.manager.request(type: try args.text(2), attributes: try args.table(3), state: try args.table(4),
                                                  from: .app).get()
            return [Self.table(record, at: clock.now())]
        }
        host.add("push") { [unowned self] args in
            let live = try theUpdaters()
            let id = try args.text(2)
            let runs = live.runs.count
            _ = try live.push(id, payload: try args.value(3))
            try Self.checkUpdater(live, since: runs, id)
            guard let record = try live.manager.all().first(where: { $0.id == id }) else { return [.nil] }
            return [Self.table(record, at: clock.now())]
        }
        host.add("signal") { [unowned self] args in
            let live = try theUpdaters()
            let id = try args.text(2)
            let runs = live.runs.count
            try live.signal(id, name: try args.text(3), payload: try args.optional(4) { i throws(LuaFunctionError) in try args.value(i) } ?? .nil)
            try Self.checkUpdater(live, since: runs, id)
            guard let record = try live.manager.all().first(where: { $0.id == id }) else { return [.nil] }
            return [Self.table(record, at: clock.now())]
        }
        host.add("activities") { [unowned self] _ in
            let live = try theUpdaters()
            return [.table(LuaTable(array: try live.manager.all().map { Self.table($0, at: clock.now()) }))]
        }
        host.add("compare") { args in
            let difference = Self.differences(try args.value(1), try args.value(2))
            return [difference.map { .string(LuaString($0)) } ?? .nil]
        }
        host.add("describe") { args in [.string(LuaString(Self.describe(try args.value(1))))] }
    }

    /// A timeline as the test sees it: `{ entries = { content… }, policy = "atEnd" | "never" | { after = t } }`.
    static func table(_ timeline: Timeline) -> LuaTable {
        let policy: LuaValue
        switch timeline.policy {
        case .atEnd: policy = "atEnd"
        case .never: policy = "never"
        case .after(let t): policy = .table(LuaTable(fields: ["after": ClockBinding.date(t)]))
        }
        return LuaTable(fields: ["entries": .table(LuaTable(array: timeline.entries.map { .table($0.content) })), "policy": policy])
    }

    /// Every place where `got` and `expected` differ, the first 5 in
    /// order ("title: expected "a", got "b"; alerts: not expected (got
    /// false)"), or nil when they are equal.
    static func differences(_ got: LuaValue, _ expected: LuaValue) -> String? {
        var found: [String] = []
        collect(got, expected, at: "", into: &found)
        guard !found.isEmpty else { return nil }
        let shown = found.prefix(5).joined(separator: "; ")
        return found.count > 5 ? shown + "; and \(found.count - 5) more" : shown
    }

    static func collect(_ got: LuaValue, _ expected: LuaValue, at path: String, into found: inout [String]) {
        let prefix = path.isEmpty ? "" : path + ": "
        switch (got, expected) {
        case (.table(let a), .table(let b)):
            for i in 0..<max(a.array.count, b.array.count) {
                let x = i < a.array.count ? a.array[i] : .nil, y = i < b.array.count ? b.array[i] : .nil
                collect(x, y, at: "\(path)[\(i + 1)]", into: &found)
            }
            let keys = Set(a.fields.map(\.key)).union(b.fields.map(\.key)).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            for key in keys {
                let name = key.string ?? key.displayText
                collect(a[key], b[key], at: path.isEmpty ? name : "\(path).\(name)", into: &found)
            }
        case (.integer(let a), .number(let b)) where Double(a) == b: return
        case (.number(let a), .integer(let b)) where a == Double(b): return
        case (_, .nil) where got != .nil && !path.isEmpty:
            found.append("\(prefix)not expected (got \(describe(got)))")
        case (.nil, _) where expected != .nil && !path.isEmpty:
            found.append("\(prefix)missing (expected \(describe(expected)))")
        default:
            if got != expected { found.append("\(prefix)expected \(describe(expected)), got \(describe(got))") }
        }
    }

    static func describe(_ value: LuaValue) -> String {
        switch value {
        case .nil: return "nil"
        case .string(let s): return "\"\(s.displayText)\""
        default: return value.jsonText
        }
    }
}
