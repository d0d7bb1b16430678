import Logging
import LuaSandbox

/// A bundle's pooled sandboxes, one per call role, shared by everything
/// that calls the bundle's functions (providers, intents, queries,
/// controls). A sandbox whose call failed is dropped and made again for
/// the next call; all are dropped when the services change.
final class SandboxPool {
    let bundle: ScriptBundle
    /// (It and `sandboxes` are read by every call, on the one thread that
    /// uses the pool at a time, and never held across a call: no run-time
    /// exclusivity checks.)
    @exclusivity(unchecked) var services: HostServices {
        didSet { sandboxes = Self.noSandboxes(); link = nil }
    }
    /// The key and open request of this bundle's workers (process isolation).
    private var link: BundleWorkers.Link?
    /// By `CallRole.position`: an array, not a dictionary keyed by the
    /// role (whose hash is its raw value's, a string, on every call).
    @exclusivity(unchecked) private var sandboxes = SandboxPool.noSandboxes()
    private static func noSandboxes() -> [BundleSandbox?] { Array(repeating: nil, count: CallRole.allCases.count) }
    /// Ends the running call from another thread.
    let canceller: CallCanceller
    /// The bundle's figures (swift-metrics).
    let metrics: HostMetrics

    init(bundle: ScriptBundle, services: HostServices) {
        self.bundle = bundle
        self.services = services
        canceller = services.canceller ?? CallCanceller()
        metrics = HostMetrics(bundle: bundle.manifest.id, factory: services.metrics)
    }

    /// Runs main.lua, then the function `field` of declaration `what` `id`
    /// with `arguments`, in the role's sandbox. `budget` is what
    /// `host.usage().budget` reports.
    func call(_ role: CallRole, _ what: String, _ id: String, _ field: String, _ arguments: [LuaValue],
              budget: (used: Int, remaining: Int)? = nil) -> CallOutcome {
        var (outcome, values) = call(role, what, id, field, arguments, budget: budget, reader: PlainResults())
        if let values { outcome.values = values }
        return outcome
    }

    /// The same, with what `reader` made of the results (nil when the call
    /// failed): read in place in process, from the values a worker sent
    /// under process isolation. The outcome's `values` are then empty.
    func call<Reader: CallResultReader>(_ role: CallRole, _ what: String, _ id: String, _ field: String, _ arguments: [LuaValue],
                                        budget: (used: Int, remaining: Int)? = nil, reader: Reader) -> (CallOutcome, Reader.Output?) {
        // The common call (in process, no ledger, its pooled sandbox
        // reusable) runs here; every other takes `callInGeneral`, kept out
        // of line so that this path's code is a few cache lines, not the
        // whole function's (docs/ARCHITECTURE.md, the twentieth stop).
        guard services.ledger == nil, services.workers == nil, let sandbox = sandboxes[role.position], sandbox.isReusable,
              !canceller.isCancelled else {
            return callInGeneral(role, what, id, field, arguments, budget: budget, reader: reader)
        }
        return call(in: sandbox, role, what, id, field, arguments, budget: budget, reader: reader)
    }

    /// The call in `sandbox`, this process's, cancellable meanwhile.
    @inline(__always)
    private func call<Reader: CallResultReader>(in sandbox: BundleSandbox, _ role: CallRole, _ what: String, _ id: String, _ field: String,
                                                _ arguments: [LuaValue], budget: (used: Int, remaining: Int)?, reader: Reader) -> (CallOutcome, Reader.Output?) {
        sandbox.budgetUsage = budget
        canceller.running(sandbox.state.cancelHandle)
        defer { canceller.running(nil) }
        let (outcome, read) = sandbox.call(what, id, field, arguments, reader: reader)
        metrics.call(role, outcome)
        return (outcome, read)
    }

    /// `call(_:_:_:_:_:budget:reader:)` in every case: cancelled before it
    /// began, a plugin host's ledger, process isolation, a sandbox to make.
    @inline(never)
    private func callInGeneral<Reader: CallResultReader>(_ role: CallRole, _ what: String, _ id: String, _ field: String, _ arguments: [LuaValue],
                                                         budget: (used: Int, remaining: Int)?, reader: Reader) -> (CallOutcome, Reader.Output?) {
        if canceller.isCancelled {
            // The host's operation was cancelled before this call began.
            let deadline = Duration.milliseconds(Int64((role.deadline(services.policy).hard * 1000).rounded()))
            return (CallOutcome(.timeout(LuaTimeoutError(limit: deadline, elapsed: .zero, cancelled: true))), nil)
        }
        // The ledger's time (a plugin host's); no clock read on the path of other hosts.
        let ledger = services.ledger
        let now = ledger == nil ? 0 : services.clock.now()
        if let refusal = ledger?.admit(at: now) {
            let outcome = CallOutcome(refusal)
            metrics.call(role, outcome)
            return (outcome, nil)
        }
        if let workers = services.workers {
            var outcome = inWorker(workers, role, what, id, field, arguments, budget)
            metrics.call(role, outcome)
            ledger?.record(outcome, at: now)
            guard outcome.succeeded else { return (outcome, nil) }
            let read = reader.read(outcome.values)
            outcome.values = []
            return (outcome, read)
        }
        let sandbox: BundleSandbox
        if let pooled = sandboxes[role.position], pooled.isReusable { sandbox = pooled } else {
            do { sandbox = try BundleSandbox(bundle: bundle, services: services, role: role) } catch {
                return (CallOutcome(error), nil)
            }
            sandboxes[role.position] = sandbox
        }
        let (outcome, read) = call(in: sandbox, role, what, id, field, arguments, budget: budget, reader: reader)
        ledger?.record(outcome, at: now)
        return (outcome, read)
    }

    /// The pooled sandbox of `role`, if one is made (tests).
    func sandbox(for role: CallRole) -> BundleSandbox? { sandboxes[role.position] }

    /// The same call, in a worker process of the bundle's own.
    private func inWorker(_ workers: BundleWorkers, _ role: CallRole, _ what: String, _ id: String, _ field: String,
                          _ arguments: [LuaValue], _ budget: (used: Int, remaining: Int)?) -> CallOutcome {
        if link == nil {
            do { link = try workers.link(bundle, services) } catch {
                return CallOutcome(Diagnostic(.crashed, "could not describe bundle \(bundle.manifest.id) to a worker: \(error)"))
            }
        }
        var outcome = workers.call(link!, services: services, canceller: canceller, role: role, what, id, field, arguments, budget: budget)
        outcome.bundleVersion = bundle.version
        if let logger = services.scriptLogger, !outcome.logs.isEmpty {
            var metadata = BundleSandbox.logMetadata(bundle: bundle.manifest.id, role: role, what, id, field, arguments)
            metadata["isolation"] = "process"
            for line in outcome.logs {
                logger.log(level: BundleSandbox.loggerLevel(line.level), "\(line.text)", metadata: metadata)
            }
        }
        return outcome
    }
}
