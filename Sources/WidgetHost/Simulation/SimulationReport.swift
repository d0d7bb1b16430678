import LuaSandbox

/// What a simulation saw, per widget instance: what was shown from when to
/// when, every reload (time, reason, counted or exempt, deferred from),
/// budget use, failures. Rendered as text (`text`), JSON (`json`) or a
/// page with charts (`SimulationPage`).
public struct SimulationReport: Sendable {
    public var bundle: String
    public var start: Double
    public var end: Double
    public var policy: HostPolicy
    public var instances: [WidgetInstance]
    /// Each live instance's next reload after the end.
    public var pending: [Int: NextReload]
    public var notes: [CallNote]
    /// Real time the simulation took, in seconds.
    public var wallSeconds: Double
    /// Time zone the text report shows local times in.
    public var calendar: HostCalendar = .fromEnvironment()

    /// Provider calls made: one placeholder per widget and one timeline per reload.
    public var providerCalls: Int { instances.reduce(0) { $0 + 1 + $1.reloads.count } }

    /// A stretch of time in which a widget showed one entry.
    public struct Shown: Sendable {
        public var from: Double
        public var to: Double
        public var isPlaceholder: Bool
        /// The entry (nil: nothing to show, a placeholder that failed).
        public var entry: TimelineEntry?
        /// 1-based index of the entry in its timeline, and which reload gave the timeline.
        public var entryIndex: Int?
        public var timelineNumber: Int?
    }

    /// What `instance` showed, from its adding to its removal or the end (rule T4).
    public func shown(_ instance: WidgetInstance) -> [Shown] {
        var out: [Shown] = []
        let displays = instance.displays
        var timelineNumber = 0
        for (k, display) in displays.enumerated() {
            let from = display.at
            let to = min(k + 1 < displays.count ? displays[k + 1].at : end, end)
            guard to > from else {
                if case .timeline = display.source { timelineNumber += 1 }
                continue
            }
            switch display.source {
            case .removed: return out
            case .placeholder(let entry):
                out.append(Shown(from: from, to: to, isPlaceholder: true, entry: entry))
            case .timeline(let timeline):
                timelineNumber += 1
                guard var index = timeline.entryIndex(at: from) else {
                    out.append(Shown(from: from, to: to, isPlaceholder: true, entry: instance.placeholder))
                    continue
                }
                var t = from
                while t < to {
                    let next = index + 1 < timeline.entries.count ? min(timeline.entries[index + 1].date, to) : to
                    if next > t {
                        out.append(Shown(from: t, to: next, isPlaceholder: false, entry: timeline.entries[index],
                                         entryIndex: index + 1, timelineNumber: timelineNumber))
                    }
                    t = max(t, next)
                    index += 1
                    if index >= timeline.entries.count { break }
                }
            }
        }
        return out
    }

    /// Reloads of `instance`: in all, counted, deferred by the budget, failed.
    public func reloadCounts(_ instance: WidgetInstance) -> (total: Int, counted: Int, deferred: Int, failed: Int) {
        let reloads = instance.reloads
        return (reloads.count, reloads.filter(\.counted).count, reloads.filter { $0.deferredFrom != nil }.count,
                reloads.filter { $0.status != .ok }.count)
    }

    /// Seconds `instance` spent showing its placeholder.
    public func placeholderSeconds(_ instance: WidgetInstance) -> Double {
        shown(instance).filter(\.isPlaceholder).reduce(0) { $0 + $1.to - $1.from }
    }

    /// Times of the counted reloads that share `instance`'s budget: its
    /// own, or those of its kind, or all, by the policy's scope.
    public func budgetTimes(_ instance: WidgetInstance) -> [Double] {
        let sharing: [WidgetInstance]
        switch policy.budgetScope {
        case .instance: sharing = [instance]
        case .kind: sharing = instances.filter { $0.configuration.kind == instance.configuration.kind }
        case .app: sharing = instances
        }
        return sharing.flatMap { $0.reloads.filter(\.counted).map(\.at) }.sorted()
    }

    /// Counted reloads in the budget window that ends at the end of the run.
    public func budgetUsed(_ instance: WidgetInstance) -> Int {
        budgetTimes(instance).filter { $0 > end - policy.budgetWindow }.count
    }
}

// MARK: - JSON

extension SimulationReport {
    /// The report as JSON (docs/scenarios.md describes every field).
    public var json: String {
        let o = JSONWriter()
        o.object {
            o.field("bundle", string: bundle)
            o.field("start", number: start)
            o.field("end", number: end)
            o.field("wallSeconds", number: (wallSeconds * 1000).rounded() / 1000)
            o.field("providerCalls", integer: providerCalls)
            o.key("policy")
            o.object {
                o.field("budget", integer: policy.budget)
                o.field("budgetScope", string: policy.budgetScope.rawValue)
                o.field("budgetWindow", number: policy.budgetWindow)
                o.field("minimumReloadInterval", number: policy.minimumReloadInterval)
                o.field("developerMode", bool: policy.developerMode)
            }
            o.key("instances")
            o.array(instances) { instance in instanceJSON(instance, o) }
            o.key("notes")
            notesJSON(notes, o)
        }
        return o.text
    }

    /// `[{"at", "message"}]`.
    private func notesJSON(_ notes: [CallNote], _ o: JSONWriter) {
        o.array(notes) { note in
            o.object {
                o.field("at", number: note.at)
                o.field("message", string: note.message)
            }
        }
    }

    private func instanceJSON(_ instance: WidgetInstance, _ o: JSONWriter) {
        o.object {
            o.field("id", integer: instance.id)
            o.field("kind", string: instance.configuration.kind)
            o.field("family", string: instance.configuration.family.rawValue)
            o.key("config")
            if let values = instance.configuration.values { LuaValue.table(values).writeJSON(to: o) } else { o.null() }
            o.field("added", number: instance.addedAt)
            o.field("removed", number: instance.removedAt)
            o.key("reloads")
            o.array(instance.reloads) { r in
                o.object {
                    o.field("at", number: r.at)
                    o.field("reason", string: r.reason.rawValue)
                    o.field("counted", bool: r.counted)
                    o.field("deferredFrom", number: r.deferredFrom)
                    o.field("coalescedRequests", integer: r.coalescedRequests)
                    o.field("status", string: r.status.rawValue)
                    o.field("elapsedMs", number: (r.elapsed * 1e5).rounded() / 100)
                }
            }
            o.key("shown")
            o.array(shown(instance)) { s in
                o.object {
                    o.field("from", number: s.from)
                    o.field("to", number: s.to)
                    o.field("source", string: s.isPlaceholder ? "placeholder" : "timeline")
                    if let i = s.entryIndex { o.field("entryIndex", integer: i) }
                    if let n = s.timelineNumber { o.field("timeline", integer: n) }
                    o.key("entry")
                    if let entry = s.entry { LuaValue.table(entry.content).writeJSON(to: o) } else { o.null() }
                }
            }
            o.key("failures")
            o.array(instance.failures) { f in
                o.object {
                    o.field("at", number: f.at)
                    o.field("role", string: f.role.rawValue)
                    Diagnostic.writeFields(of: f.diagnostic, to: o)
                }
            }
            o.key("budget")
            o.object {
                o.field("limit", integer: policy.budget)
                o.field("used", integer: budgetUsed(instance))
                o.field("scope", string: policy.budgetScope.rawValue)
                o.key("series")
                o.array(instance.budgetUsage) { point in
                    o.object {
                        o.field("at", number: point.at)
                        o.field("used", integer: point.used)
                    }
                }
            }
            o.field("placeholderSeconds", number: placeholderSeconds(instance))
            o.key("next")
            if let next = pending[instance.id] {
                o.object {
                    // Infinite when no budget slot will ever free: null, as documented.
                    o.field("at", number: next.at.isFinite ? next.at : nil)
                    o.field("wantedAt", number: next.wantedAt)
                    o.field("reason", string: next.reason.rawValue)
                    o.field("deferred", bool: next.isDeferred)
                }
            } else {
                o.null()
            }
            o.key("warnings")
            notesJSON(instance.notes, o)
            o.key("logs")
            o.array(instance.logs) { line in
                o.object {
                    o.field("at", number: line.at)
                    o.field("level", string: line.level.name)
                    o.field("text", string: line.text)
                }
            }
        }
    }
}
