import LuaSandbox

/// The checks of `lunette check`, after a bundle has loaded: each widget
/// kind, in its first family with its default configuration, gets one
/// placeholder, one snapshot (isPreview) and one timeline call under the
/// policy's limits, and the answers are held against the review rules:
/// calls that fail, a placeholder that needs the store (T1), a slow call
/// (soft deadlines), entries out of order (T5), closer than the floor
/// (T8), too many (T9), and a reload policy that would spend more than the
/// refresh budget in a day (B1), with the projected reloads per day: an
/// error when the budget would run out within 16 hours of the widget being
/// added (a waking day), a warning when later.
public struct BundleChecker {
    public let runtime: WidgetRuntime

    public init(runtime: WidgetRuntime) { self.runtime = runtime }

    private var policyWindowHours: Double { runtime.services.policy.budgetWindow / 3600 }

    /// Checks every widget kind: in `family` where the kind supports it
    /// (else its first), with the `values` its configuration declares (the
    /// others take their defaults).
    public func check(family: WidgetFamily? = nil, values: [String: LuaValue] = [:]) -> [Finding] {
        var findings: [Finding] = []
        for widget in runtime.bundle.declarations.widgets {
            let configuration: WidgetConfiguration
            let declared = widget.configuration.flatMap { runtime.bundle.declarations.intent($0) }.map { Set($0.parameters.map(\.name)) } ?? []
            let own = values.filter { declared.contains($0.key) }
            let supported = family.flatMap { widget.families.contains($0) ? $0 : nil }
            do { configuration = try runtime.configuration(kind: widget.kind, family: supported, values: own) } catch {
                findings.append(Finding(level: .error, kind: widget.kind, check: "configuration", message: error.message))
                continue
            }
            findings += check(configuration)
        }
        return findings
    }

    func check(_ widget: WidgetConfiguration) -> [Finding] {
        var findings: [Finding] = []
        func add(_ level: Finding.Level, _ check: String, _ message: String) {
            findings.append(Finding(level: level, kind: widget.kind, check: check, message: message))
        }
        let placeholder = runtime.placeholder(widget)
        if !placeholder.outcome.succeeded {
            let summary = placeholder.outcome.diagnostic?.summary ?? ""
            if !placeholder.outcome.deniedGroups.isEmpty {
                add(.error, "placeholder", "the placeholder reads the store; it must return sample data at once (rule T1): \(summary)")
            } else {
                add(.error, "placeholder", "placeholder \(summary)")
            }
        }
        for warning in placeholder.outcome.warnings { add(.warning, "placeholder", warning) }

        let snapshot = runtime.snapshot(widget, isPreview: true)
        if !snapshot.outcome.succeeded {
            add(.error, "snapshot", "snapshot \(snapshot.outcome.diagnostic?.summary ?? "")")
        }
        for warning in snapshot.outcome.warnings { add(.warning, "snapshot", "slow snapshot: \(warning)") }

        let now = runtime.services.clock.now()
        let timeline = runtime.timeline(widget)
        for warning in timeline.outcome.warnings { add(.warning, "timeline", warning) }
        guard let value = timeline.value else {
            add(.error, "timeline", "timeline \(timeline.outcome.diagnostic?.summary ?? "")")
            return findings
        }
        if value.entries.isEmpty { add(.warning, "timeline", "the timeline has no entries: the placeholder stays on screen") }
        if let projection = Self.reloadsPerDay(value, now: now, policy: runtime.services.policy) {
            let perDay = Int(projection.rounded(.up))
            let budget = runtime.services.policy.budget
            if projection > Double(budget) {
                // Out within 16 waking hours is an error; later in the day, a warning.
                let hours = Double(budget) / projection * policyWindowHours
                add(hours < 16 ? .error : .warning, "budget",
                    "its policy (\(value.policy)) asks for about \(perDay) reloads per day, over the budget of \(budget): "
                    + "it would stop updating about \(Int(hours)) h after it is added (see it with lunette simulate)")
            }
        }
        return findings
    }

    /// Reloads per day the policy leads to if every timeline looks like
    /// this one: a day over the interval between reloads (at least the
    /// floor); nil for never.
    static func reloadsPerDay(_ timeline: Timeline, now: Double, policy: HostPolicy) -> Double? {
        guard let eligible = timeline.eligibleAt else { return nil }
        let interval = max(eligible - now, policy.developerMode ? 1 : policy.minimumReloadInterval)
        return policy.budgetWindow / interval
    }
}
