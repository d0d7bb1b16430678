import LuaSandbox

/// A bundle's pooled sandboxes, one per call role, shared by everything
/// that calls the bundle's functions (providers, intents, queries,
/// controls). A sandbox whose call failed is dropped and made again for
/// the next call; all are dropped when the services change.
final class SandboxPool {
    let bundle: ScriptBundle
    var services: HostServices {
        didSet { sandboxes = [:] }
    }
    private var sandboxes: [CallRole: BundleSandbox] = [:]
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
        if canceller.isCancelled {
            // The host's operation was cancelled before this call began.
            let deadline = Duration.milliseconds(Int64((role.deadline(services.policy).hard * 1000).rounded()))
            return CallOutcome(.timeout(LuaTimeoutError(limit: deadline, elapsed: .zero, cancelled: true)))
        }
        // The ledger's time (a plugin host's); no clock read on the path of other hosts.
        let ledger = services.ledger
        let now = ledger == nil ? 0 : services.clock.now()
        if let refusal = ledger?.admit(at: now) {
            let outcome = CallOutcome(refusal)
            metrics.call(role, outcome)
            return outcome
        }
        let sandbox: BundleSandbox
        if let pooled = sandboxes[role], pooled.isReusable { sandbox = pooled } else {
            do { sandbox = try BundleSandbox(bundle: bundle, services: services, role: role) } catch {
                return CallOutcome(error)
            }
            sandboxes[role] = sandbox
        }
        sandbox.budgetUsage = budget
        canceller.running(sandbox.state.cancelHandle)
        defer { canceller.running(nil) }
        let outcome = sandbox.call(what, id, field, arguments)
        metrics.call(role, outcome)
        ledger?.record(outcome, at: now)
        return outcome
    }
}
