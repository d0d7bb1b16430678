import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem
import WidgetHost

/// `lunette simulate BUNDLE... [--scenario FILE] [--duration 24h] [--start ISO] [--json] [--html FILE]`
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Play a stretch of widget life on a virtual clock and report it.",
        discussion: """
            Without --scenario: each widget kind of the bundle in its first \
            family, with its default configuration, from the start of today \
            (or --start) for --duration. A scenario file (docs/scenarios.md) \
            sets the widgets, the events (app writes, reload requests, \
            foreground, widgets added and removed, time changes) and policy \
            changes. Flags win over the scenario's policy, which wins over \
            --policy.
            The report gives, per widget: every reload (time, reason, counted \
            or exempt, deferred from), what was shown from when to when, budget \
            use, failures (identical ones grouped, with their traceback), \
            warnings and logs. As text every entry is whole, wrapped at the \
            terminal's width (--wide: not wrapped), and every time says its \
            UTC offset (09:30+01:00). --json prints it as JSON \
            (docs/scenarios.md); --html FILE also writes a page with charts.
            The store is a fresh temporary one unless --store-dir is given, so \
            a simulation never touches the app's real data.
            Exit status: 0 when the simulation ran and every call succeeded; \
            1 when a call failed (the report says which; --allow-failures \
            makes that 0, for scenarios that test failures) or the bundle or \
            scenario has errors; 2 for usage errors (a bundle directory or \
            scenario file that does not exist).
            With several bundles (lunette simulate DIR1 DIR2 …) they run \
            together as plugins of one host (docs/plugins.md): one clock, one \
            store, each plugin its own quotas (--plugin-policy's, else the \
            standard ones), each playing each of its widget kinds. The report \
            is a summary per plugin (calls, failures, crashes, timeouts, \
            refused calls, quarantine, CPU, peak memory) and the plugins \
            refused at load; --json adds each plugin's own report. A plugin \
            that fails to load is reported and the others run (exit 1 unless \
            --allow-failures). --isolation process runs every call in worker \
            processes, one set per plugin.
            """
    )

    @Argument(help: "The bundle directory (bundle.json, main.lua); several: plugins of one host.", completion: .directory)
    var bundles: [String]

    var bundle: String { bundles[0] }

    @Option(help: ArgumentHelp("A scenario JSON file.", valueName: "file"), completion: .file(extensions: ["json"]))
    var scenario: String?

    @Option(help: ArgumentHelp("How long to simulate: 24h, 90m, 2d, 1h30m or seconds (default 24h, or the scenario's).", valueName: "duration"))
    var duration: String?

    @Option(help: ArgumentHelp("When to start, ISO 8601 (default: the scenario's, else the start of today).", valueName: "date"))
    var start: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Flag(help: "Do not wrap long content in the text report (default: wrap at the terminal's width, else 100 columns).")
    var wide = false

    @Option(help: ArgumentHelp("Also write the report as an HTML page with charts.", valueName: "file"))
    var html: String?

    @Option(name: .customLong("store-dir"), help: ArgumentHelp("Use this store root instead of a fresh temporary one.", valueName: "dir"))
    var storeDir: String?

    @Flag(name: .customLong("allow-failures"), help: "Exit 0 even when provider calls failed (they are in the report).")
    var allowFailures = false

    @OptionGroup var cap: CallCapOption

    @OptionGroup var host: HostOptions

    func validate() throws {
        if bundles.isEmpty { throw ValidationError("give a bundle directory (or several, to simulate them as plugins of one host)") }
        if bundles.count > 1 && scenario != nil {
            throw ValidationError("--scenario plays one bundle; with \(bundles.count) bundles each plugin plays each of its widget kinds (simulate one bundle with its scenario on its own)")
        }
        if bundles.count > 1 && html != nil { throw ValidationError("--html draws one bundle's report; with several bundles use --json (each plugin's report is inside)") }
        if let duration, (Durations.seconds(duration) ?? 0) <= 0 {
            throw ValidationError("--duration \(duration): expected a positive duration like 24h, 90m, 2d or seconds")
        }
    }

    func run() throws {
        if bundles.count > 1 { return try runPlugins() }
        let calendar = host.calendar()
        let plugins = try host.plugins()
        let bundle = try loadBundle(self.bundle, calendar: calendar, policy: plugins, workers: host.isolation == .process ? commandWorkers : nil)
        let startTime = try self.startTime(calendar)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: calendar, policy: try host.hostPolicy()))
        var scenario: Scenario
        if let path = self.scenario {
            try requireFile(path, what: "scenario file")
            do { scenario = try Scenario.load(path, runtime: runtime, start: startTime) } catch {
                throw CLIFailure(error.text)
            }
            if let start, case .success(let t) = ISODate.parse(start, calendar: calendar) {
                let shift = t - scenario.start
                scenario.start = t
                for i in scenario.events.indices { scenario.events[i].at += shift }
            }
            host.applyFlags(to: &scenario.policy)
            // The scenario's zone is the host's for this run (it wins over --tz, as
            // in the report): os.date, Lua's own on the process's TZ, must agree.
            // (`Scenario.load` keeps only a zone it knows.)
            if let zone = scenario.timeZone, let zoned = HostCalendar(timeZoneNamed: zone) { useForLocalTime(zoned) }
        } else {
            do { scenario = try Scenario.everyKind(of: runtime, start: startTime) } catch { throw CLIFailure(Diagnostic(.invalid, error.message).text) }
        }
        if let duration { scenario.duration = Durations.seconds(duration)! }
        cap.apply(to: &scenario.policy)

        let (root, temporary) = simulationStore()
        defer { if let temporary { try? FileManager.default.removeItem(atPath: temporary) } }

        for warning in scenario.rangeWarnings() { FileOutput.standardError.write("warning: \(warning)\n") }
        let simulator = Simulator(bundle: bundle, scenario: scenario, store: SharedStore(root: root), calendar: calendar)
        simulator.grants = bundle.grants
        if host.isolation == .process { simulator.workers = commandWorkers }
        simulator.ledger = plugins.map { PluginLedger(plugin: bundle.manifest.id, quotas: $0.quotas) }
        let progress = ProgressBar(enabled: isatty(2) != 0)
        simulator.onProgress = { progress.update($0) }
        let report = simulator.run()
        progress.finish()
        let out = FileOutput.standardOutput
        out.write(json ? report.json + "\n" : report.text(width: wide ? nil : TerminalWidth.columns()))
        if let html {
            do { try SimulationPage(report: report).html.write(toFile: html, atomically: true, encoding: .utf8) } catch {
                throw CLIFailure("error: cannot write \(html): \(errorText(error))")
            }
            if !json { out.write("\nwrote \(html)\n") }
        }
        let failed = report.instances.reduce(0) { $0 + report.reloadCounts($1).failed }
        if failed > 0 && !allowFailures {
            FileOutput.standardError.write("simulate: \(failed) provider call\(failed == 1 ? "" : "s") failed (see the report; --allow-failures exits 0)\n")
            throw ExitCode.failure
        }
    }

    /// --store-dir, else a fresh temporary folder, which the caller removes (`temporary`).
    func simulationStore() -> (root: String, temporary: String?) {
        if let storeDir { return (storeDir, nil) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-sim-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        return (dir, dir)
    }

    /// --start, else the start of today.
    func startTime(_ calendar: HostCalendar) throws -> Double {
        guard let start else { return calendar.startOfDay(SystemClock().now()) }
        switch ISODate.parse(start, calendar: calendar) {
        case .success(let t): return t
        case .failure(let error): throw ValidationError("--start: \(error.message)")
        }
    }

    /// Several bundles as plugins of one host (`PluginSimulation`).
    func runPlugins() throws {
        let calendar = host.calendar()
        let plugins = try host.plugins()
        let workers = host.isolation == .process ? pluginWorkers : nil
        let startTime = try self.startTime(calendar)
        for path in bundles { try requireDirectory(path) }
        let (root, temporary) = simulationStore()
        defer { if let temporary { try? FileManager.default.removeItem(atPath: temporary) } }
        let store = SharedStore(root: root)
        var policy = try host.hostPolicy()
        cap.apply(to: &policy)
        var simulators: [Simulator] = []
        var refused: [PluginSimulationReport.Refused] = []
        var seen: [String: String] = [:]
        for path in bundles {
            let bundle: ScriptBundle
            do { bundle = try ScriptBundle.load(path, calendar: calendar, grantsFor: { plugins?.grants(for: $0) }, workers: workers) } catch {
                refused.append(.init(path: path, diagnostics: error.errors))
                continue
            }
            if let other = seen[bundle.manifest.id] {
                refused.append(.init(path: path, diagnostics: [Diagnostic(.invalid, "bundle id \(bundle.manifest.id) is already the id of \(other): a host runs one plugin per id", file: path + "/bundle.json")]))
                continue
            }
            seen[bundle.manifest.id] = path
            let runtime = WidgetRuntime(bundle: bundle, services: HostServices(calendar: calendar, policy: policy))
            var scenario: Scenario
            do { scenario = try Scenario.everyKind(of: runtime, start: startTime) } catch {
                refused.append(.init(path: path, diagnostics: [Diagnostic(.invalid, error.message, file: path)]))
                continue
            }
            scenario.policy = policy
            if let duration { scenario.duration = Durations.seconds(duration)! }
            let simulator = Simulator(bundle: bundle, scenario: scenario, store: store, calendar: calendar)
            simulator.grants = bundle.grants
            simulator.workers = workers
            simulator.ledger = PluginLedger(plugin: bundle.manifest.id, quotas: plugins?.quotas ?? .standard)
            simulators.append(simulator)
        }
        let simulation = PluginSimulation(simulators)
        let progress = ProgressBar(enabled: isatty(2) != 0)
        simulation.onProgress = { progress.update($0) }
        var report = simulation.run()
        progress.finish()
        report.refused = refused
        report.isolation = host.isolation.rawValue
        let out = FileOutput.standardOutput
        out.write(json ? report.json + "\n" : report.text(width: wide ? nil : TerminalWidth.columns()))
        let failed = report.plugins.reduce(0) { $0 + $1.totals.failures + $1.totals.refused }
        if (failed > 0 || !refused.isEmpty) && !allowFailures {
            var parts: [String] = []
            if failed > 0 { parts.append("\(failed) call\(failed == 1 ? "" : "s") failed or were refused") }
            if !refused.isEmpty { parts.append("\(refused.count) plugin\(refused.count == 1 ? "" : "s") refused at load") }
            FileOutput.standardError.write("simulate: \(parts.joined(separator: ", ")) (see the report; --allow-failures exits 0)\n")
            throw ExitCode.failure
        }
    }
}

/// How wide text output may be: the terminal's columns when standard
/// output is one, else `$COLUMNS`, else 100.
enum TerminalWidth {
    static func columns() -> Int {
        var size = winsize()
        if isatty(1) != 0, ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 40 { return Int(size.ws_col) }
        // getenv, not ProcessInfo's environment, which copies all of it into a dictionary.
        if let value = getenv("COLUMNS"), let n = Int(String(cString: value)), n >= 40 { return n }
        return 100
    }
}

/// A progress bar on standard error, for terminals.
final class ProgressBar {
    let enabled: Bool
    private var shown = -1
    private let started = ContinuousClock.now

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ fraction: Double) {
        guard enabled, ContinuousClock.now - started > .milliseconds(300) else { return }
        let percent = Int(fraction * 100)
        guard percent != shown else { return }
        shown = percent
        let width = 30
        let filled = width * percent / 100
        FileOutput.standardError.write("\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] \(percent)% simulated")
    }

    func finish() {
        if enabled && shown >= 0 { FileOutput.standardError.write("\r" + String(repeating: " ", count: 50) + "\r") }
    }
}
