import LuaSandbox

/// Several bundles simulated together as plugins of one host (issue 17,
/// `lunette simulate DIR1 DIR2 …`): one virtual clock, one store, one set
/// of worker processes when calls are isolated, and each plugin its own
/// ledger (quotas and quarantine). Time jumps to the earliest moment any
/// plugin has; plugins whose moments coincide run in the order given.
public final class PluginSimulation {
    public let simulators: [Simulator]
    /// Called with the fraction of simulated time done (0…1), at most every 1%.
    public var onProgress: ((Double) -> Void)?

    /// Each simulator is a plugin; one without a ledger gets one with the
    /// standard quotas. Their scenarios share the first one's start and duration.
    public init(_ simulators: [Simulator]) {
        for simulator in simulators where simulator.ledger == nil {
            simulator.ledger = PluginLedger(plugin: simulator.bundle.manifest.id)
        }
        self.simulators = simulators
    }

    public func run() -> PluginSimulationReport {
        guard let first = simulators.first else {
            return PluginSimulationReport(start: 0, end: 0, plugins: [], wallSeconds: 0)
        }
        let start = first.scenario.start, end = start + first.scenario.duration
        let clock = VirtualClock(start)
        let runs = simulators.map { SimulationRun($0, clock: clock) }
        // Each run's next moment, asked once and then only after it steps: a
        // run's moments are its own events, its own engine's reloads and its
        // own bundle's Live Activities, which change only when it steps; the
        // clock only moves forward, to the earliest of them, so a cached
        // moment is never behind it. (Asking every run at every step cost
        // plugins × steps, and a failing store was noted at each.)
        var times = runs.map { $0.next() }
        // Except runs that read the same Live Activity rows (the same bundle
        // id in the same store: a host runs one plugin per id, but nothing
        // here refuses two): a step of one changes the others' due times, so
        // they are asked again.
        var byRows: [String: [Int]] = [:]
        for (i, run) in runs.enumerated() { if let rows = run.activityRows { byRows[rows, default: []].append(i) } }
        let sharing = runs.map { run in (run.activityRows.flatMap { byRows[$0] } ?? []) }
        var lastReported = -1
        let wallStart = ContinuousClock.now
        while true {
            var earliest: (t: Double, i: Int)?
            for (i, time) in times.enumerated() {   // ties: the first in the order given
                if let t = time, t < end, t < (earliest?.t ?? .infinity) { earliest = (t, i) }
            }
            guard let (t, i) = earliest else { break }
            try? clock.advance(to: t)   // t ≥ clock.time: never refused
            if let onProgress {
                let percent = Int((t - start) / (end - start) * 100)
                if percent > lastReported { lastReported = percent; onProgress(Double(percent) / 100) }
            }
            runs[i].step()
            times[i] = runs[i].next()
            for j in sharing[i] where j != i { times[j] = runs[j].next() }
        }
        onProgress?(1)
        let wall = Simulator.seconds(ContinuousClock.now - wallStart)
        let plugins = runs.map { run in
            let ledger = run.simulator.ledger!
            return PluginSimulationReport.Plugin(id: run.simulator.bundle.manifest.id, path: run.simulator.bundle.path,
                                                 totals: ledger.totals, quarantine: ledger.quarantine, report: run.report(wall: wall))
        }
        return PluginSimulationReport(start: start, end: end, plugins: plugins, wallSeconds: wall,
                                      calendar: first.calendar)
    }
}

/// What a `PluginSimulation` found: each plugin's summary and report.
public struct PluginSimulationReport: Sendable {
    public struct Plugin: Sendable {
        public var id: String
        public var path: String
        /// Calls, failures, crashes, timeouts, refusals, quarantines, CPU, peak memory.
        public var totals: PluginTotals
        /// Its quarantine at the end (nil: it was not quarantined, or was released).
        public var quarantine: Quarantine?
        /// Its own simulation report, as `lunette simulate DIR` prints it.
        public var report: SimulationReport
    }

    /// A plugin the host refused, or could not load: it ran no call.
    public struct Refused: Sendable {
        public var path: String
        public var diagnostics: [Diagnostic]
        public init(path: String, diagnostics: [Diagnostic]) {
            self.path = path
            self.diagnostics = diagnostics
        }
    }

    public var start: Double
    public var end: Double
    public var plugins: [Plugin]
    public var refused: [Refused] = []
    public var wallSeconds: Double
    public var calendar: HostCalendar = .utc
    /// "inprocess" or "process".
    public var isolation = "inprocess"

    init(start: Double, end: Double, plugins: [Plugin], wallSeconds: Double, calendar: HostCalendar = .utc) {
        self.start = start
        self.end = end
        self.plugins = plugins
        self.wallSeconds = wallSeconds
        self.calendar = calendar
    }

    /// Calls made by every plugin.
    public var calls: Int { plugins.reduce(0) { $0 + $1.totals.calls } }
}
