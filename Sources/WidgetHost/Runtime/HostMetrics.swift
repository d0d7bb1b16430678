import CoreMetrics
import LuaSandbox

/// A bundle's figures in swift-metrics (the factory given in
/// `HostServices.metrics`, else the one the app bootstrapped with
/// `MetricsSystem.bootstrap`; none: nothing is recorded):
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `lunette_calls_total` | counter | bundle, role, status (`ok`, `error`, `timeout`, `memory`, …) |
/// | `lunette_call_duration` | timer (ns) | bundle, role |
/// | `lunette_call_memory_peak_bytes` | recorder | bundle, role |
/// | `lunette_reloads_total` | counter | bundle, reason, budget (`counted`, `exempt`) |
/// | `lunette_reloads_deferred_total` | counter | bundle (reloads the refresh budget held back, B3) |
/// | `lunette_activity_pushes_total` | counter | bundle, priority, delivery (`now`, `throttled`) |
///
/// Metric objects are made once per set of dimensions and kept.
final class HostMetrics {
    let bundle: String
    let factory: MetricsFactory
    private var counters: [String: Counter] = [:]
    /// The per-call metrics, found without building a key (every call records them).
    private var callCounters: [CallRole: [CallStatus: Counter]] = [:]
    private var timers: [CallRole: Timer] = [:]
    private var peaks: [CallRole: Recorder] = [:]

    /// False when figures go nowhere (swift-metrics' no-op factory, the
    /// default of a host that bootstrapped none): then nothing is looked up
    /// or made on a call's path.
    let records: Bool

    init(bundle: String, factory: MetricsFactory?) {
        self.bundle = bundle
        self.factory = factory ?? MetricsSystem.factory
        records = !(self.factory is NOOPMetricsHandler)
    }

    /// A call of `role` ended with `outcome`.
    @inline(__always)
    func call(_ role: CallRole, _ outcome: CallOutcome) {
        if records { recordCall(role, outcome) }
    }

    /// (Out of line: a host that records nothing runs one test a call.)
    @inline(never)
    private func recordCall(_ role: CallRole, _ outcome: CallOutcome) {
        let status = outcome.status
        if let counter = callCounters[role]?[status] {
            counter.increment()
        } else {
            let counter = self.counter("lunette_calls_total", ["role": role.rawValue, "status": status.rawValue])
            callCounters[role, default: [:]][status] = counter
            counter.increment()
        }
        timer(role).recordNanoseconds(Int64((outcome.elapsed * 1e9).rounded()))
        peak(role).record(outcome.memoryPeak)
    }

    /// A widget reloaded (`deferred`: the budget had held it back); a
    /// counted reload also records how much of its budget is now used
    /// (`budgetUsed` of `budgetLimit`, as a fraction).
    @inline(__always)
    func reload(reason: String, counted: Bool, deferred: Bool, budgetUsed: Int? = nil, budgetLimit: Int = 0) {
        if records { recordReload(reason: reason, counted: counted, deferred: deferred, budgetUsed: budgetUsed, budgetLimit: budgetLimit) }
    }

    @inline(never)
    private func recordReload(reason: String, counted: Bool, deferred: Bool, budgetUsed: Int?, budgetLimit: Int) {
        if let budgetUsed, budgetLimit > 0 {
            if budgetRecorder == nil {
                budgetRecorder = Recorder(label: "lunette_budget_used_ratio", dimensions: [("bundle", bundle)], factory: factory)
            }
            budgetRecorder!.record(Double(budgetUsed) / Double(budgetLimit))
        }
        let key = ReloadKey(reason: reason, counted: counted)
        if let counter = reloadCounters[key] {
            counter.increment()
        } else {
            let counter = self.counter("lunette_reloads_total", ["reason": reason, "budget": counted ? "counted" : "exempt"])
            reloadCounters[key] = counter
            counter.increment()
        }
        if deferred { counter("lunette_reloads_deferred_total", [:]).increment() }
    }

    private struct ReloadKey: Hashable {
        var reason: String
        var counted: Bool
    }
    private var reloadCounters: [ReloadKey: Counter] = [:]
    private var budgetRecorder: Recorder?

    /// A push arrived for an activity: delivered now, or throttled (A6).
    func push(priority: Int, throttled: Bool) {
        guard records else { return }
        counter("lunette_activity_pushes_total", ["priority": String(priority), "delivery": throttled ? "throttled" : "now"]).increment()
    }

    private func counter(_ label: String, _ dimensions: [String: String]) -> Counter {
        let pairs = [("bundle", bundle)] + dimensions.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let key = label + "|" + pairs.map { $0.0 + "=" + $0.1 }.joined(separator: ",")
        if let counter = counters[key] { return counter }
        let counter = Counter(label: label, dimensions: pairs, factory: factory)
        counters[key] = counter
        return counter
    }

    private func timer(_ role: CallRole) -> Timer {
        if let timer = timers[role] { return timer }
        let timer = Timer(label: "lunette_call_duration", dimensions: [("bundle", bundle), ("role", role.rawValue)], factory: factory)
        timers[role] = timer
        return timer
    }

    private func peak(_ role: CallRole) -> Recorder {
        if let recorder = peaks[role] { return recorder }
        let recorder = Recorder(label: "lunette_call_memory_peak_bytes", dimensions: [("bundle", bundle), ("role", role.rawValue)], factory: factory)
        peaks[role] = recorder
        return recorder
    }
}
