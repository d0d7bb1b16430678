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

    init(bundle: ScriptBundle, services: HostServices) {
        self.bundle = bundle
        self.services = services
    }

    /// Runs main.lua, then the function `field` of declaration `what` `id`
    /// with `arguments`, in the role's sandbox. `budget` is what
    /// `host.usage().budget` reports.
    func call(_ role: CallRole, _ what: String, _ id: String, _ field: String, _ arguments: [LuaValue],
              budget: (used: Int, remaining: Int)? = nil) -> CallOutcome {
        let sandbox: BundleSandbox
        if let pooled = sandboxes[role], pooled.isReusable { sandbox = pooled } else {
            do { sandbox = try BundleSandbox(bundle: bundle, services: services, role: role) } catch {
                return CallOutcome(error)
            }
            sandboxes[role] = sandbox
        }
        sandbox.budgetUsage = budget
        return sandbox.call(what, id, field, arguments)
    }
}
