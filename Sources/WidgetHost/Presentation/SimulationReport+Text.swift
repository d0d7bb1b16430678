#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LuaSandbox

extension SimulationReport {
    /// The report as text tables, for people, wrapped at 100 columns.
    public var text: String { text(width: 100) }

    /// The report as text tables, for people. Times are local to the
    /// report's calendar, each with its UTC offset ("09:30+01:00"). Long
    /// content (entries, messages, logs) wraps at `width` columns, indented
    /// under its column; nil never wraps. Nothing is cut.
    public func text(width: Int?) -> String {
        var out = "Simulation of \(bundle): \(localTime(start, withDay: true)) → \(localTime(end, withDay: true)) (\(Self.duration(end - start)), \(calendar.identifier))\n"
        out += "policy: budget \(policy.budget) per \(Self.duration(policy.budgetWindow)) per \(policy.budgetScope.rawValue), "
            + "reloads ≥ \(Self.duration(policy.minimumReloadInterval)) apart" + (policy.developerMode ? ", developer mode (no budget, no floor)" : "") + "\n"
        out += "\(instances.count) widget(s), \(providerCalls) provider calls in \(fixedText(wallSeconds, decimals: 2)) s\n"
        for instance in instances { out += "\n" + instanceText(instance, width: width) }
        if !performances.isEmpty {
            out += "\nIntents performed\n"
            var table = TextTable(["at", "intent", "from", "status", "result or error"])
            for p in performances {
                table.add([localTime(p.at, withDay: false), p.intent, p.source, p.status.rawValue,
                           p.diagnostic?.locatedMessage ?? p.result.map { Self.summary($0) } ?? ""])
            }
            out += table.render(indent: "  ", width: width)
        }
        for control in controls { out += "\n" + controlText(control, width: width) }
        for lane in activities { out += "\n" + activityText(lane, width: width) }
        if !events.isEmpty {
            out += "\nEvents\n"
            var table = TextTable(["at", "event"])
            for event in events { table.add([localTime(event.at, withDay: false), event.label]) }
            out += table.render(indent: "  ", width: width)
        }
        if !notes.isEmpty {
            out += "\nNotes\n"
            var table = TextTable(["at", "note"])
            for note in notes { table.add([localTime(note.at, withDay: false), note.message]) }
            out += table.render(indent: "  ", width: width)
        }
        return out
    }

    /// Failures grouped (identical ones are one line, ×N with the first
    /// and last time), each group with its traceback.
    func failuresText(_ failures: [CallFailure], indent: String, width: Int?) -> String {
        var out = ""
        for group in FailureGroup.grouping(failures) {
            let when = group.count == 1 ? "at \(localTime(group.first.at, withDay: false))"
                : "×\(group.count), first at \(localTime(group.first.at, withDay: false)), last at \(localTime(group.lastAt, withDay: false))"
            let head = "\(group.first.role.rawValue) \(group.first.diagnostic.summary)"
            out += indent + TextWrap.block(head, width: width, firstColumn: indent.count, indent: indent + "    ") + "\n"
            out += indent + "    " + when + "\n"
            if let traceback = group.first.diagnostic.traceback {
                for line in traceback.split(separator: "\n") {
                    out += indent + "    " + line.replacing("\t", with: "  ") + "\n"
                }
            }
        }
        return out
    }

    private func controlText(_ control: ControlRecord, width: Int?) -> String {
        var out = "control \(control.kind) (\(control.type)): \(control.value.map(\.description) ?? "nil") at the end; \(control.reloads.count) value reads\n"
        var table = TextTable(["from", "shows", "because"])
        for shown in control.values {
            table.add([localTime(shown.at, withDay: false), shown.value.map(\.description) ?? "nil",
                       shown.read.map { "read: \($0.rawValue)" } ?? "tapped (optimistic)"])
        }
        out += table.render(indent: "  ", width: width)
        if !control.failures.isEmpty {
            out += "  failures:\n" + failuresText(control.failures, indent: "    ", width: width)
        }
        return out
    }

    /// An activity's lane: its phases, its changes with their sizes, its
    /// pushes with their delays, its updater failures.
    private func activityText(_ lane: ActivityLane, width: Int?) -> String {
        var out = "activity \(lane.id) (\(lane.type)): "
        out += lane.states.map { "\($0.state.rawValue) \(localTime($0.from, withDay: false))" }.joined(separator: ", ")
        out += "; last state " + Self.summary(lane.lastState) + "\n"
        var changes = TextTable(["at", "change", "source", "bytes", "alert"])
        for u in lane.updates {
            changes.add([localTime(u.at, withDay: false), u.kind.rawValue, u.source, "\(u.bytes)/\(policy.activityPayloadBytes)",
                         u.alert.map { Self.summary($0) } ?? ""])
        }
        out += changes.render(indent: "  ", maxRows: 60, width: width)
        if !lane.pushes.isEmpty {
            let counted = lane.pushes.filter(\.counted).count
            let late = lane.pushes.filter { ($0.delay ?? 0) > 0 }.count
            let waiting = lane.pushes.filter(\.isWaiting).count
            let dropped = lane.pushes.filter(\.dropped).count
            out += "  pushes: \(lane.pushes.count) received, \(counted) counted, \(late) throttled and delivered late, \(waiting) still waiting"
                + (dropped > 0 ? ", \(dropped) dropped (the activity ended first)" : "") + "\n"
            var pushes = TextTable(["arrived", "priority", "budget", "delivered", "delay"])
            for p in lane.pushes {
                pushes.add([localTime(p.arrivedAt, withDay: false), "\(p.priority)", p.counted ? "counted" : "not counted",
                            p.deliveredAt.map { localTime($0, withDay: false) } ?? (p.dropped ? "dropped" : "waiting"), p.delay.map { Self.duration($0) } ?? ""])
            }
            out += pushes.render(indent: "  ", maxRows: 60)
        }
        let runs = lane.runs.count, failed = lane.failures.count
        if runs > 0 { out += "  updater: \(runs) run(s), \(failed) failed\n" }
        out += failuresText(lane.failures, indent: "    ", width: width)
        return out
    }

    private func instanceText(_ instance: WidgetInstance, width: Int?) -> String {
        let reloads = instance.reloads
        let n = reloadCounts(instance)
        var out = "#\(instance.id) \(instance.configuration)\n"
        if instance.addedAt > start || instance.removedAt != nil {
            out += "  on screen from \(localTime(instance.addedAt, withDay: false))"
                + (instance.removedAt.map { " to \(localTime($0, withDay: false)) (removed)" } ?? " to the end") + "\n"
        }
        out += "  \(n.total) reloads (\(n.counted) counted, \(n.total - n.counted) exempt), \(n.deferred) deferred by the budget, \(n.failed) failed; "
        out += "budget \(budgetUsed(instance))/\(policy.budget) used at the end; placeholder shown \(Self.duration(placeholderSeconds(instance)))\n"
        if let next = pending[instance.id] {
            if !next.at.isFinite {
                out += "  next reload: wanted since \(localTime(next.wantedAt, withDay: true)) (\(next.reason.rawValue)), but the budget never frees a slot\n"
            } else if next.isDeferred {
                out += "  next reload: \(localTime(next.at, withDay: true)) (\(next.reason.rawValue)), deferred by the budget from \(localTime(next.wantedAt, withDay: true))\n"
            } else {
                out += "  next reload: \(localTime(next.at, withDay: true)) (\(next.reason.rawValue))\n"
            }
        } else if instance.removedAt == nil {
            out += "  next reload: none scheduled (policy never, no request pending)\n"
        }
        var table = TextTable(["reload at", "reason", "budget", "deferred from", "status", "ms"])
        for r in reloads {
            let budget = r.counted ? "counted" : "exempt"
            table.add([localTime(r.at, withDay: false), r.reason.rawValue + (r.coalescedRequests > 1 ? " ×\(r.coalescedRequests)" : ""), budget,
                       r.deferredFrom.map { localTime($0, withDay: false) } ?? "", r.status.rawValue, fixedText(r.elapsed * 1000, decimals: 2)])
        }
        out += table.render(indent: "  ", width: width)
        // Consecutive stretches that showed the same thing read as one row.
        var shownTable = TextTable(["from", "to", "shows"])
        var rows: [(from: Double, to: Double, content: String, firstTimeline: Int?, lastTimeline: Int?, entry: Int?)] = []
        for s in shown(instance) {
            let content = s.isPlaceholder ? "placeholder " + (s.entry.map { Self.summary($0.content) } ?? "(none)")
                : (s.entry.map { Self.summary($0.content) } ?? "")
            if let last = rows.last, last.content == content, last.to == s.from, last.entry == s.entryIndex {
                rows[rows.count - 1].to = s.to
                rows[rows.count - 1].lastTimeline = s.timelineNumber
            } else {
                rows.append((s.from, s.to, content, s.timelineNumber, s.timelineNumber, s.entryIndex))
            }
        }
        for row in rows {
            var what = row.content
            if let first = row.firstTimeline, let last = row.lastTimeline, let entry = row.entry {
                what = "entry \(entry) of timeline" + (first == last ? " \(first)" : "s \(first)–\(last)") + " " + what
            }
            shownTable.add([localTime(row.from, withDay: false), localTime(row.to, withDay: false), what])
        }
        out += shownTable.render(indent: "  ", width: width)
        if !instance.failures.isEmpty {
            let groups = FailureGroup.grouping(instance.failures).count
            out += "  failures (\(instance.failures.count)" + (groups < instance.failures.count ? ", \(groups) different" : "") + "):\n"
            out += failuresText(instance.failures, indent: "    ", width: width)
        }
        if !instance.notes.isEmpty {
            out += "  warnings:\n"
            var seen: [String: Int] = [:]
            for n in instance.notes { seen[n.message, default: 0] += 1 }
            for n in instance.notes where seen[n.message] != nil {
                let times = seen.removeValue(forKey: n.message)!
                let prefix = "    \(localTime(n.at, withDay: false))  "
                out += prefix + TextWrap.block(n.message + (times > 1 ? " (×\(times))" : ""), width: width, firstColumn: prefix.count,
                                               indent: String(repeating: " ", count: prefix.count)) + "\n"
            }
        }
        if !instance.logs.isEmpty {
            out += "  logs (the last \(instance.logs.count)):\n"
            var table = TextTable(["at", "level", "text"])
            for line in instance.logs { table.add([localTime(line.at, withDay: false), line.level.name, line.text]) }
            out += table.render(indent: "    ", width: width)
        }
        return out
    }

    /// "09:30+01:00" ("09:30+01:00 +1d" on a later day than the start), or
    /// "2026-11-21 09:30+01:00" with the day: every time says its zone.
    func localTime(_ t: Double, withDay: Bool) -> String {
        guard t.isFinite else { return "never" }
        if withDay { return calendar.timeText(t, day: true) }
        let time = calendar.timeText(t, day: false)
        let dayOffset = Int(((calendar.startOfDay(t) - calendar.startOfDay(start)) / 86_400).rounded())
        return dayOffset == 0 ? time : time + " +\(dayOffset)d"
    }

    /// "1h30m", "5m", "45s", "0s".
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s == 0 { return "0s" }
        var parts: [String] = []
        if s >= 86_400 { parts.append("\(s / 86_400)d") }
        if s % 86_400 >= 3600 { parts.append("\(s % 86_400 / 3600)h") }
        if s % 3600 >= 60 { parts.append("\(s % 3600 / 60)m") }
        if s % 60 != 0 { parts.append("\(s % 60)s") }
        return parts.joined()
    }

    /// An entry's fields without its date, whole, as JSON:
    /// {"remaining":2,"title":"Buy milk"}.
    static func summary(_ content: LuaTable) -> String {
        var t = content
        t.fields[LuaString("date")] = nil
        return LuaValue.table(t).jsonText
    }

    /// Any value, whole, as JSON: what a perform returned.
    static func summary(_ value: LuaValue) -> String {
        if case .table(let t) = value { return summary(t) }
        return value.jsonText
    }
}
