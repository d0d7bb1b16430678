import Foundation
import LuaSandbox

/// The report as one self-contained HTML page with SVG charts: per widget,
/// a strip of what was visible over time, reload marks (counted, exempt,
/// deferred, failed) and the budget line against its limit; per Live
/// Activity, a lane of its phases, changes and pushes.
public struct SimulationPage {
    public let report: SimulationReport

    public init(report: SimulationReport) { self.report = report }

    /// Chart geometry: the time axis runs over `width` pixels after a left margin.
    private let width = 960.0
    private let left = 70.0

    public var html: String {
        var out = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <title>\(escape(report.bundle)) — Lunette simulation</title>
            <style>
            body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1080px;color:#1d1d1f;background:#fbfbfd}
            h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:0 0 6px}
            .meta{color:#555;margin-bottom:18px}
            .card{background:#fff;border:1px solid #e2e2e7;border-radius:10px;padding:14px 16px;margin:0 0 18px}
            .stats{color:#333;margin:0 0 8px} .bad{color:#b3261e;font-weight:600} .ok{color:#1b7f3b}
            table{border-collapse:collapse;margin-top:8px;font-size:13px} td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
            th{color:#666;font-weight:600} .legend span{display:inline-block;margin-right:16px;color:#444;font-size:12px}
            .sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
            svg text{font-size:11px;fill:#555}
            </style></head><body>
            <h1>\(escape(report.bundle))</h1>
            <div class="meta">\(escape(report.localTime(report.start, withDay: true))) → \(escape(report.localTime(report.end, withDay: true))) ·
            budget \(report.policy.budget) per \(SimulationReport.duration(report.policy.budgetWindow)) per \(report.policy.budgetScope.rawValue) ·
            reloads ≥ \(SimulationReport.duration(report.policy.minimumReloadInterval)) apart\(report.policy.developerMode ? " · developer mode" : "") ·
            \(report.instances.count) widget(s), \(report.providerCalls) provider calls in \(String(format: "%.2f", report.wallSeconds)) s</div>
            <div class="legend"><span><i class="sw" style="background:#c7c7cc"></i>placeholder</span><span><i class="sw" style="background:#4c8bf5"></i>timeline entries (a new shade when what is shown changes)</span><span><svg width="12" height="12"><rect x="4" y="0" width="3" height="12" fill="#1d4ed8"/></svg> counted reload</span><span><svg width="12" height="12"><rect x="4" y="0" width="3" height="12" fill="#16a34a"/></svg> exempt reload</span><span><svg width="12" height="12"><rect x="4" y="0" width="3" height="12" fill="#dc2626"/></svg> failed</span><span><svg width="22" height="12"><line x1="1" y1="6" x2="21" y2="6" stroke="#f59e0b" stroke-width="3"/></svg> deferred by the budget</span><span><svg width="22" height="12"><line x1="1" y1="6" x2="21" y2="6" stroke="#7c3aed" stroke-width="2"/></svg> budget used</span></div>

            """
        for instance in report.instances { out += card(instance) }
        if !report.performances.isEmpty {
            out += "<div class=\"card\"><h2>Intents performed</h2><table><tr><th>time</th><th>intent</th><th>from</th><th>status</th><th>result or error</th></tr>"
            for p in report.performances {
                let detail = p.diagnostic?.locatedMessage ?? p.result.map { SimulationReport.summary($0) } ?? ""
                out += "<tr><td>\(escape(report.localTime(p.at, withDay: false)))</td><td>\(escape(p.intent))</td><td>\(escape(p.source))</td>"
                    + "<td class=\"\(p.status == .ok ? "ok" : "bad")\">\(p.status.rawValue)</td><td>\(escape(detail))</td></tr>"
            }
            out += "</table></div>\n"
        }
        for control in report.controls {
            out += "<div class=\"card\"><h2>Control \(escape(control.kind)) (\(escape(control.type)))</h2><table><tr><th>from</th><th>shows</th><th>because</th></tr>"
            for shown in control.values {
                let why = shown.read.map { "read: \($0.rawValue)" } ?? "tapped (optimistic)"
                out += "<tr><td>\(escape(report.localTime(shown.at, withDay: false)))</td><td>\(escape(shown.value.map(\.description) ?? "nil"))</td><td>\(why)</td></tr>"
            }
            out += "</table>"
            for failure in control.failures {
                out += "<div class=\"bad\">\(escape(report.localTime(failure.at, withDay: false))) \(failure.role.rawValue): \(escape(failure.diagnostic.summary))</div>"
            }
            out += "</div>\n"
        }
        for lane in report.activities { out += activityCard(lane) }
        out += "</body></html>\n"
        return out
    }

    /// Phase colours of an activity's lane.
    private static let phaseColors: [ActivityPhase: String] = [.active: "#34c759", .stale: "#f59e0b", .ended: "#8e8e93", .dismissed: "#e5e5ea"]

    /// An activity's lane: its phases, its changes (size against A1's
    /// limit), its pushes (arrival, throttling, delivery), then the tables.
    private func activityCard(_ lane: ActivityLane) -> String {
        let limit = report.policy.activityPayloadBytes
        let late = lane.pushes.filter { ($0.delay ?? 0) > 0 }.count
        let waiting = lane.pushes.filter(\.isWaiting).count
        let dropped = lane.pushes.filter(\.dropped).count
        var out = "<div class=\"card\"><h2>Live Activity \(escape(lane.id)) (\(escape(lane.type)))</h2>\n<div class=\"stats\">"
        out += "\(lane.updates.count) changes, largest \(lane.updates.map(\.bytes).max() ?? 0) of \(limit) bytes · "
        out += "\(lane.pushes.count) pushes, \(lane.pushes.filter(\.counted).count) counted"
        out += late > 0 ? ", <span class=\"bad\">\(late) throttled and delivered late</span>" : ""
        out += waiting > 0 ? ", <span class=\"bad\">\(waiting) still waiting</span>" : ""
        out += dropped > 0 ? ", <span class=\"bad\">\(dropped) dropped (the activity ended first)</span>" : ""
        out += lane.failures.isEmpty ? "" : " · <span class=\"bad\">\(lane.failures.count) updater failures</span>"
        out += "</div>\n<div class=\"legend\">"
        for phase in ActivityPhase.allCases {
            out += "<span><i class=\"sw\" style=\"background:\(Self.phaseColors[phase]!)\"></i>\(phase.rawValue)</span>"
        }
        out += "<span><svg width=\"12\" height=\"12\"><rect x=\"4\" y=\"0\" width=\"3\" height=\"12\" fill=\"#1d4ed8\"/></svg> change by the updater</span>"
        out += "<span><svg width=\"12\" height=\"12\"><rect x=\"4\" y=\"0\" width=\"3\" height=\"12\" fill=\"#0f766e\"/></svg> by the app, an intent or a limit</span>"
        out += "<span><svg width=\"12\" height=\"12\"><circle cx=\"6\" cy=\"6\" r=\"4\" fill=\"#7c3aed\"/></svg> push delivered</span>"
        out += "<span><svg width=\"12\" height=\"12\"><circle cx=\"6\" cy=\"6\" r=\"4\" fill=\"none\" stroke=\"#7c3aed\"/></svg> priority 5</span>"
        out += "<span><svg width=\"22\" height=\"12\"><line x1=\"1\" y1=\"6\" x2=\"21\" y2=\"6\" stroke=\"#f59e0b\" stroke-width=\"3\"/></svg> throttled by the push budget</span></div>\n"
        out += activitySVG(lane)
        out += "<table><tr><th>time</th><th>change</th><th>source</th><th>bytes</th><th>alert</th></tr>"
        for u in lane.updates.prefix(40) {
            out += "<tr><td>\(escape(report.localTime(u.at, withDay: false)))</td><td>\(u.kind.rawValue)</td><td>\(escape(u.source))</td>"
                + "<td>\(u.bytes) / \(limit)</td><td>\(escape(u.alert.map { SimulationReport.summary($0) } ?? ""))</td></tr>"
        }
        if lane.updates.count > 40 { out += "<tr><td colspan=5>… \(lane.updates.count - 40) more</td></tr>" }
        out += "</table>\n"
        if !lane.pushes.isEmpty {
            out += "<table><tr><th>push arrived</th><th>priority</th><th>budget</th><th>delivered</th><th>delay</th></tr>"
            for p in lane.pushes.prefix(60) {
                let delayed = (p.delay ?? 1) > 0
                out += "<tr><td>\(escape(report.localTime(p.arrivedAt, withDay: false)))</td><td>\(p.priority)</td><td>\(p.counted ? "counted" : "not counted")</td>"
                    + "<td class=\"\(delayed ? "bad" : "")\">\(escape(p.deliveredAt.map { report.localTime($0, withDay: false) } ?? (p.dropped ? "dropped" : "waiting")))</td>"
                    + "<td>\(p.delay.map { SimulationReport.duration($0) } ?? "")</td></tr>"
            }
            if lane.pushes.count > 60 { out += "<tr><td colspan=5>… \(lane.pushes.count - 60) more</td></tr>" }
            out += "</table>\n"
        }
        for failure in lane.failures {
            out += "<div class=\"bad\">\(escape(report.localTime(failure.at, withDay: false))) updater: \(escape(failure.diagnostic.summary))</div>"
            if let traceback = failure.diagnostic.traceback { out += "<pre>\(escape(traceback))</pre>" }
        }
        return out + "</div>\n"
    }

    private func activitySVG(_ lane: ActivityLane) -> String {
        let stripTop = 8.0, stripHeight = 24.0
        let changesTop = stripTop + stripHeight + 6, changesHeight = 16.0
        let pushesTop = changesTop + changesHeight + 8, pushesHeight = 18.0
        let axisTop = pushesTop + pushesHeight + 4
        var s = "<svg width=\"\(Int(left + width + 40))\" height=\"\(Int(axisTop + 18))\" role=\"img\" aria-label=\"lane of activity \(escape(lane.id))\">\n"
        s += "<text x=\"0\" y=\"\(stripTop + 16)\">state</text><text x=\"0\" y=\"\(changesTop + 12)\">changes</text><text x=\"0\" y=\"\(pushesTop + 13)\">pushes</text>\n"
        s += grid(top: stripTop, axis: axisTop)
        for state in lane.states {
            let x0 = x(state.from), x1 = x(state.to)
            let title = "\(report.localTime(state.from, withDay: false))–\(report.localTime(state.to, withDay: false)) \(state.state.rawValue)"
            s += "<rect x=\"\(f(x0))\" y=\"\(stripTop)\" width=\"\(f(max(0.5, x1 - x0)))\" height=\"\(stripHeight)\" fill=\"\(Self.phaseColors[state.state]!)\"><title>\(escape(title))</title></rect>"
            if x1 - x0 > 50 {
                s += "<text x=\"\(f(x0 + 4))\" y=\"\(stripTop + 16)\" style=\"fill:\(state.state == .dismissed ? "#555" : "#fff")\">\(state.state.rawValue)</text>"
            }
            s += "\n"
        }
        for u in lane.updates {
            let title = "\(report.localTime(u.at, withDay: false)) \(u.kind.rawValue) by \(u.source), \(u.bytes) of \(report.policy.activityPayloadBytes) bytes"
            s += "<rect x=\"\(f(x(u.at) - 1))\" y=\"\(changesTop)\" width=\"2\" height=\"\(changesHeight)\" fill=\"\(u.source.hasPrefix("updater") ? "#1d4ed8" : "#0f766e")\"><title>\(escape(title))</title></rect>\n"
        }
        let mid = pushesTop + pushesHeight / 2
        for p in lane.pushes {
            let arrived = report.localTime(p.arrivedAt, withDay: false)
            if let delivered = p.deliveredAt, delivered > p.arrivedAt {
                s += "<line x1=\"\(f(x(p.arrivedAt)))\" y1=\"\(mid)\" x2=\"\(f(x(delivered)))\" y2=\"\(mid)\" stroke=\"#f59e0b\" stroke-width=\"3\"><title>arrived \(escape(arrived)), throttled \(SimulationReport.duration(delivered - p.arrivedAt))</title></line>"
            } else if p.dropped {
                s += "<line x1=\"\(f(x(p.arrivedAt)))\" y1=\"\(mid)\" x2=\"\(f(x(lane.ended ?? report.end)))\" y2=\"\(mid)\" stroke=\"#8e8e93\" stroke-width=\"3\" stroke-dasharray=\"2 2\"><title>arrived \(escape(arrived)), dropped: the activity ended before the budget let it through</title></line>"
            } else if p.deliveredAt == nil {
                s += "<line x1=\"\(f(x(p.arrivedAt)))\" y1=\"\(mid)\" x2=\"\(f(x(report.end)))\" y2=\"\(mid)\" stroke=\"#f59e0b\" stroke-width=\"3\" stroke-dasharray=\"4 2\"><title>arrived \(escape(arrived)), still waiting for the budget</title></line>"
            }
            let at = p.deliveredAt ?? p.arrivedAt
            let fill = p.counted ? "#7c3aed" : "none"
            let title = "arrived \(arrived), priority \(p.priority), " + (p.deliveredAt.map { "delivered \(report.localTime($0, withDay: false))" } ?? "waiting")
            s += "<circle cx=\"\(f(x(at)))\" cy=\"\(mid)\" r=\"4\" fill=\"\(fill)\" stroke=\"#7c3aed\"><title>\(escape(title))</title></circle>\n"
        }
        return s + "</svg>\n"
    }

    private func x(_ t: Double) -> Double {
        let span = max(1, report.end - report.start)
        return left + (min(max(t, report.start), report.end) - report.start) / span * width
    }

    private func card(_ instance: WidgetInstance) -> String {
        let n = report.reloadCounts(instance)
        var out = "<div class=\"card\"><h2>#\(instance.id) \(escape(instance.configuration.description))</h2>\n"
        out += "<div class=\"stats\">\(n.total) reloads: \(n.counted) counted, \(n.total - n.counted) exempt"
        out += n.deferred > 0 ? ", <span class=\"bad\">\(n.deferred) deferred by the budget</span>" : ""
        out += n.failed > 0 ? ", <span class=\"bad\">\(n.failed) failed</span>" : ""
        out += " · budget \(report.budgetUsed(instance))/\(report.policy.budget) at the end"
        if let next = report.pending[instance.id], next.isDeferred {
            out += " · <span class=\"bad\">reload wanted since \(escape(report.localTime(next.wantedAt, withDay: false))) waits for "
                + (next.at.isFinite ? escape(report.localTime(next.at, withDay: false)) : "a slot that never frees") + "</span>"
        }
        out += "</div>\n"
        out += svg(instance)
        if !instance.failures.isEmpty {
            out += "<table><tr><th>time</th><th>call</th><th>status</th><th>message</th></tr>"
            for f in instance.failures.prefix(20) {
                out += "<tr><td>\(escape(report.localTime(f.at, withDay: false)))</td><td>\(f.role.rawValue)</td><td class=\"bad\">\(f.status.rawValue)</td><td>\(escape(f.message))</td></tr>"
            }
            if instance.failures.count > 20 { out += "<tr><td colspan=4>… \(instance.failures.count - 20) more</td></tr>" }
            out += "</table>\n"
        }
        return out + "</div>\n"
    }

    private func svg(_ instance: WidgetInstance) -> String {
        let stripTop = 8.0, stripHeight = 34.0
        let marksTop = stripTop + stripHeight + 6, marksHeight = 16.0
        let budgetTop = marksTop + marksHeight + 14, budgetHeight = 70.0
        let axisTop = budgetTop + budgetHeight + 4
        let height = axisTop + 18
        var s = "<svg width=\"\(Int(left + width + 40))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"timeline of widget \(instance.id)\">\n"
        s += "<text x=\"0\" y=\"\(stripTop + 21)\">shown</text><text x=\"0\" y=\"\(marksTop + 12)\">reloads</text><text x=\"0\" y=\"\(budgetTop + 10)\">budget</text>\n"
        s += grid(top: stripTop, axis: axisTop)
        // What was shown.
        for item in report.shown(instance) {
            let x0 = x(item.from), x1 = x(item.to)
            let label = item.entry.map { SimulationReport.summary($0.content) } ?? "(nothing)"
            // The same content keeps its shade: a change on screen is a change of colour.
            let color = item.isPlaceholder ? "#c7c7cc" : ["#4c8bf5", "#2f6fde", "#6aa0f7", "#1f5fc9", "#85b3f9", "#3d7ef0"][Self.shade(of: label)]
            let title = "\(report.localTime(item.from, withDay: false))–\(report.localTime(item.to, withDay: false)) "
                + (item.isPlaceholder ? "placeholder " : "entry \(item.entryIndex ?? 0) of timeline \(item.timelineNumber ?? 0) ") + label
            s += "<rect x=\"\(f(x0))\" y=\"\(stripTop)\" width=\"\(f(max(0.5, x1 - x0)))\" height=\"\(stripHeight)\" fill=\"\(color)\" stroke=\"#fff\" stroke-width=\"0.5\"><title>\(escape(title))</title></rect>"
            if x1 - x0 > 60 {
                let chars = Int((x1 - x0 - 8) / 6.2)
                let text = label.count > chars ? String(label.prefix(max(1, chars - 1))) + "…" : label
                s += "<text x=\"\(f(x0 + 4))\" y=\"\(stripTop + 21)\" style=\"fill:\(item.isPlaceholder ? "#333" : "#fff")\">\(escape(text))</text>"
            }
            s += "\n"
        }
        // Reload marks; a deferral is an amber bar from when it was wanted.
        for r in instance.reloads {
            if let from = r.deferredFrom {
                s += "<line x1=\"\(f(x(from)))\" y1=\"\(marksTop + marksHeight / 2)\" x2=\"\(f(x(r.at)))\" y2=\"\(marksTop + marksHeight / 2)\" stroke=\"#f59e0b\" stroke-width=\"3\"><title>deferred from \(escape(report.localTime(from, withDay: false)))</title></line>"
            }
            let color = r.status != .ok ? "#dc2626" : (r.counted ? "#1d4ed8" : "#16a34a")
            let title = "\(report.localTime(r.at, withDay: false)) \(r.reason.rawValue), \(r.counted ? "counted" : "exempt"), \(r.status.rawValue)"
            s += "<rect x=\"\(f(x(r.at) - 1))\" y=\"\(marksTop)\" width=\"2\" height=\"\(marksHeight)\" fill=\"\(color)\"><title>\(escape(title))</title></rect>\n"
        }
        if let next = report.pending[instance.id], next.isDeferred, next.wantedAt < report.end {
            s += "<line x1=\"\(f(x(next.wantedAt)))\" y1=\"\(marksTop + marksHeight / 2)\" x2=\"\(f(x(report.end)))\" y2=\"\(marksTop + marksHeight / 2)\" stroke=\"#f59e0b\" stroke-width=\"3\" stroke-dasharray=\"4 2\"><title>reload wanted, waiting for the budget</title></line>\n"
        }
        // Budget used (counted reloads in the window) against the limit.
        let limit = max(1, report.policy.budget)
        func y(_ used: Int) -> Double { budgetTop + budgetHeight - Double(min(used, limit)) / Double(limit) * budgetHeight }
        s += "<rect x=\"\(left)\" y=\"\(budgetTop)\" width=\"\(width)\" height=\"\(budgetHeight)\" fill=\"none\" stroke=\"#ddd\"/>"
        s += "<line x1=\"\(left)\" y1=\"\(y(limit))\" x2=\"\(left + width)\" y2=\"\(y(limit))\" stroke=\"#dc2626\" stroke-dasharray=\"5 3\"/>"
        s += "<text x=\"\(left + width - 4)\" y=\"\(y(limit) + 12)\" text-anchor=\"end\">limit \(report.policy.budget)</text>\n"
        var points = ["\(f(x(report.start))),\(f(y(0)))"]
        var last = 0
        for point in budgetSteps(instance) {
            points.append("\(f(x(point.at))),\(f(y(last)))")
            points.append("\(f(x(point.at))),\(f(y(point.used)))")
            last = point.used
        }
        points.append("\(f(x(report.end))),\(f(y(last)))")
        s += "<polyline points=\"\(points.joined(separator: " "))\" fill=\"none\" stroke=\"#7c3aed\" stroke-width=\"2\"/>\n"
        return s + "</svg>\n"
    }

    /// The budget use as steps: up at each counted reload that shares the
    /// budget, down when one leaves the window.
    private func budgetSteps(_ instance: WidgetInstance) -> [(at: Double, used: Int)] {
        var changes: [(Double, Int)] = []
        for t in report.budgetTimes(instance) {
            changes.append((t, 1))
            if t + report.policy.budgetWindow < report.end { changes.append((t + report.policy.budgetWindow, -1)) }
        }
        changes.sort { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
        var used = 0
        return changes.map { change in
            used += change.1
            return (change.0, used)
        }
    }

    /// The time grid from `top` down to the axis at `axis`, with its labels.
    private func grid(top: Double, axis: Double) -> String {
        var s = ""
        for tick in ticks() {
            s += "<line x1=\"\(f(x(tick.at)))\" y1=\"\(top)\" x2=\"\(f(x(tick.at)))\" y2=\"\(axis)\" stroke=\"#eee\"/>"
            s += "<text x=\"\(f(x(tick.at)))\" y=\"\(axis + 13)\" text-anchor=\"middle\">\(escape(tick.label))</text>\n"
        }
        return s
    }

    /// Axis ticks every 1, 2, 3, 6 or 12 hours (or days), local time.
    private func ticks() -> [(at: Double, label: String)] {
        let span = report.end - report.start
        let steps: [Double] = [900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800]
        let step = steps.first { span / $0 <= 13 } ?? 604_800
        var out: [(Double, String)] = []
        var t = report.calendar.startOfDay(report.start)
        while t <= report.end {
            if t >= report.start { out.append((t, report.localTime(t, withDay: false))) }
            t += step
        }
        return out
    }

    private func f(_ v: Double) -> String { String(format: "%.1f", v) }

    /// A stable shade (0..<6) for a text: FNV-1a over its bytes.
    static func shade(of text: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash % 6)
    }

    private func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
