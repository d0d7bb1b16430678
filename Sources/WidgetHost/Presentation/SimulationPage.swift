#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LuaSandbox

/// The report as one self-contained HTML page (no network, no external
/// file): per widget, a chart on one time axis — the scenario's events as
/// labelled marks, a strip of what was visible, reload marks (counted,
/// exempt, deferred, failed) and the budget line while the widget exists —
/// then tables that need no script: reloads with their cause, every entry
/// shown with its whole content, failures grouped with their tracebacks,
/// warnings and logs. Per Live Activity, a lane of its phases, changes and
/// pushes. A small script adds zoom buttons to the charts; without it the
/// page reads the same, unzoomed.
public struct SimulationPage {
    public let report: SimulationReport

    public init(report: SimulationReport) { self.report = report }

    /// Chart geometry: the time axis runs over `width` pixels after a left margin.
    private let width = 960.0
    private let left = 70.0
    /// The zoom factors the page offers (the script's buttons).
    private static let zooms = [1, 2, 4, 8, 16]

    public var html: String {
        var out = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(report.bundle)) — Lunette simulation</title>
            <style>
            body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;padding:0 12px;color:#1d1d1f;background:#f5f5f7}
            h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:0 0 6px} h3{font-size:13px;margin:12px 0 2px;color:#333}
            .meta{color:#555;margin-bottom:14px}
            .card{background:#fff;border:1px solid #e2e2e7;border-radius:10px;padding:14px 16px;margin:0 0 18px}
            .stats{color:#333;margin:0 0 8px} .bad{color:#b3261e;font-weight:600} .ok{color:#1b7f3b} .warn{color:#92400e}
            table{border-collapse:collapse;margin-top:4px;font-size:12.5px;width:100%} td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
            th{color:#666;font-weight:600;border-bottom:1px solid #eee} tr:nth-child(even) td{background:#fafafa}
            td.t,td.n{white-space:nowrap;font-variant-numeric:tabular-nums;color:#444} td code{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word}
            pre{tab-size:2;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#fbf3f2;border-left:3px solid #dc2626;padding:6px 10px;margin:4px 0 10px;white-space:pre-wrap}
            details{margin-top:6px} summary{cursor:pointer;font-weight:600;font-size:13px;color:#333}
            .legend{margin:0 0 12px} .legend span{display:inline-block;margin-right:14px;color:#444;font-size:12px}
            .sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
            .scroll{overflow-x:auto;overflow-y:hidden}
            .zoom{font-size:12px;color:#555;margin:2px 0} .zoom button{font:12px inherit;margin-left:3px;padding:1px 7px;border:1px solid #ccc;border-radius:4px;background:#fff;cursor:pointer}
            .zoom button.on{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
            svg text{font-size:11px;fill:#555} svg text.ev{font-size:10.5px} svg .zone{font-size:11px;fill:#333;font-weight:600}
            </style></head><body>
            <h1>\(escape(report.bundle))</h1>
            <div class="meta">\(escape(report.localTime(report.start, withDay: true))) → \(escape(report.localTime(report.end, withDay: true))) (\(escape(zoneCaption))) ·
            budget \(report.policy.budget) per \(SimulationReport.duration(report.policy.budgetWindow)) per \(report.policy.budgetScope.rawValue) ·
            reloads ≥ \(SimulationReport.duration(report.policy.minimumReloadInterval)) apart\(report.policy.developerMode ? " · developer mode" : "") ·
            \(report.instances.count) widget(s), \(report.providerCalls) provider calls in \(fixedText(report.wallSeconds, decimals: 2)) s</div>
            <div class="legend"><span><i class="sw" style="background:#c7c7cc"></i>placeholder</span><span><i class="sw" style="background:#4c8bf5"></i>timeline entries (a new shade when what is shown changes)</span><span><svg width="12" height="12"><rect x="4" y="0" width="3" height="12" fill="#1d4ed8"/></svg> counted reload</span><span><svg width="12" height="12"><rect x="4" y="0" width="3" height="12" fill="#16a34a"/></svg> exempt reload</span><span><svg width="12" height="12"><rect x="4" y="0" width="3" height="12" fill="#dc2626"/></svg> failed</span><span><svg width="22" height="12"><line x1="1" y1="6" x2="21" y2="6" stroke="#f59e0b" stroke-width="3"/></svg> deferred by the budget</span><span><svg width="22" height="12"><line x1="1" y1="6" x2="21" y2="6" stroke="#7c3aed" stroke-width="2"/></svg> budget used</span><span><svg width="12" height="12"><path d="M2 2 L10 2 L6 9 Z" fill="#0891b2"/></svg> scenario event</span></div>

            """
        for instance in report.instances { out += card(instance) }
        if !report.events.isEmpty {
            out += "<div class=\"card\" id=\"events\"><h2>Scenario events</h2><table><tr><th>time</th><th>event</th><th>type</th></tr>"
            for event in report.events {
                out += "<tr><td class=\"t\">\(escape(report.localTime(event.at, withDay: false)))</td><td>\(escape(event.label))</td><td>\(escape(event.type))</td></tr>"
            }
            out += "</table></div>\n"
        }
        if !report.performances.isEmpty {
            out += "<div class=\"card\"><h2>Intents performed</h2><table><tr><th>time</th><th>intent</th><th>from</th><th>status</th><th>result or error</th></tr>"
            for p in report.performances {
                let detail = p.diagnostic?.locatedMessage ?? p.result.map { SimulationReport.summary($0) } ?? ""
                out += "<tr><td class=\"t\">\(escape(report.localTime(p.at, withDay: false)))</td><td>\(escape(p.intent))</td><td>\(escape(p.source))</td>"
                    + "<td class=\"\(p.status == .ok ? "ok" : "bad")\">\(p.status.rawValue)</td><td><code>\(escape(detail))</code></td></tr>"
            }
            out += "</table></div>\n"
        }
        for control in report.controls {
            out += "<div class=\"card\"><h2>Control \(escape(control.kind)) (\(escape(control.type)))</h2><table><tr><th>from</th><th>shows</th><th>because</th></tr>"
            for shown in control.values {
                let why = shown.read.map { "read: \($0.rawValue)" } ?? "tapped (optimistic)"
                out += "<tr><td class=\"t\">\(escape(report.localTime(shown.at, withDay: false)))</td><td><code>\(escape(shown.value.map(\.description) ?? "nil"))</code></td><td>\(why)</td></tr>"
            }
            out += "</table>"
            out += failuresHTML(control.failures)
            out += "</div>\n"
        }
        for lane in report.activities { out += activityCard(lane) }
        if !report.notes.isEmpty {
            out += "<div class=\"card\"><h2>Notes</h2><table><tr><th>time</th><th>note</th></tr>"
            for note in report.notes {
                out += "<tr><td class=\"t\">\(escape(report.localTime(note.at, withDay: false)))</td><td>\(escape(note.message))</td></tr>"
            }
            out += "</table></div>\n"
        }
        out += "<script>\n\(Self.zoomScript(left: left, width: width, span: max(1, report.end - report.start)))</script>\n"
        out += "</body></html>\n"
        return out
    }

    /// "Europe/Paris, UTC+01:00" (both offsets when the run crosses a change).
    private var zoneCaption: String {
        let a = report.calendar.offsetText(report.start), b = report.calendar.offsetText(report.end)
        return "\(report.calendar.identifier), UTC" + (a == b ? a : "\(a) → UTC\(b)")
    }

    // MARK: - Widgets

    /// The events drawn on a widget's chart: those about its kind or about
    /// every widget (not the ones about controls and Live Activities).
    private func events(for instance: WidgetInstance) -> [EventMark] {
        let elsewhere: Set<String> = ["controlAdded", "controlTap", "reloadControls", "startActivity", "push", "activityEvent",
                                      "endActivity", "activitiesEnabled"]
        let until = instance.removedAt ?? report.end
        return report.events.filter { event in
            !elsewhere.contains(event.type) && (event.kind == nil || event.kind == instance.configuration.kind)
                && event.at >= instance.addedAt - 1 && event.at <= until + 1
        }
    }

    /// The events at the time of a reload: what caused it, when an event
    /// did (a store write never reloads by itself; an intent performed by
    /// the app does when its script asks).
    private func causes(of reload: ReloadRecord, among events: [EventMark]) -> [EventMark] {
        events.filter { abs($0.at - reload.at) < 1 && $0.type != "storeSet" }
    }

    private static let eventColors: [String: String] = [
        "storeSet": "#0891b2", "reloadTimelines": "#2563eb", "reloadAll": "#2563eb", "appForeground": "#16a34a",
        "tap": "#db2777", "perform": "#db2777", "widgetAdded": "#059669", "widgetRemoved": "#6b7280",
        "localeChange": "#9333ea", "significantTimeChange": "#9333ea", "timeZoneChange": "#9333ea",
    ]

    private func card(_ instance: WidgetInstance) -> String {
        let n = report.reloadCounts(instance)
        let marks = events(for: instance)
        var out = "<div class=\"card widget\" id=\"widget-\(instance.id)\"><h2>#\(instance.id) \(escape(instance.configuration.description))</h2>\n"
        out += "<div class=\"stats\">added \(escape(report.localTime(instance.addedAt, withDay: false)))"
        if let removed = instance.removedAt { out += ", removed \(escape(report.localTime(removed, withDay: false)))" }
        out += " · \(n.total) reloads: \(n.counted) counted, \(n.total - n.counted) exempt"
        out += n.deferred > 0 ? ", <span class=\"bad\">\(n.deferred) deferred by the budget</span>" : ""
        out += n.failed > 0 ? ", <span class=\"bad\">\(n.failed) failed</span>" : ""
        out += " · budget \(report.budgetUsed(instance))/\(report.policy.budget) at the end"
        if let next = report.pending[instance.id], next.isDeferred {
            out += " · <span class=\"bad\">reload wanted since \(escape(report.localTime(next.wantedAt, withDay: false))) waits for "
                + (next.at.isFinite ? escape(report.localTime(next.at, withDay: false)) : "a slot that never frees") + "</span>"
        }
        out += "</div>\n<div class=\"scroll\">" + svg(instance, events: marks) + "</div>\n"

        // Reloads, with the event that caused each (when one did).
        out += "<details\(instance.reloads.count <= 24 ? " open" : "") class=\"reloads\"><summary>Reloads (\(instance.reloads.count))</summary><table><tr><th>time</th><th>reason</th><th>cause</th><th>budget</th><th>deferred from</th><th>status</th><th>ms</th></tr>"
        for r in instance.reloads {
            let cause = causes(of: r, among: marks).map(\.label).joined(separator: "; ")
            out += "<tr><td class=\"t\">\(escape(report.localTime(r.at, withDay: false)))</td><td>\(r.reason.rawValue)\(r.coalescedRequests > 1 ? " ×\(r.coalescedRequests)" : "")</td>"
                + "<td>\(escape(cause))</td><td>\(r.counted ? "counted" : "exempt")</td><td class=\"t\">\(escape(r.deferredFrom.map { report.localTime($0, withDay: false) } ?? ""))</td>"
                + "<td class=\"\(r.status == .ok ? "ok" : "bad")\">\(r.status.rawValue)</td><td>\(fixedText(r.elapsed * 1000, decimals: 2))</td></tr>"
        }
        out += "</table></details>\n"

        // Every stretch shown, with the whole entry.
        let shown = report.shown(instance)
        // Long lists start folded (a click, or the browser's find, opens them).
        out += "<details\(shown.count <= 24 ? " open" : "") class=\"shown\"><summary>What was shown (\(shown.count) stretches, each entry whole)</summary><table><tr><th>from</th><th>to</th><th>what</th><th>content</th></tr>"
        for item in shown {
            let what = item.isPlaceholder ? "placeholder" : "entry \(item.entryIndex ?? 0) of timeline \(item.timelineNumber ?? 0)"
            let content = item.entry.map { SimulationReport.summary($0.content) } ?? "(nothing)"
            out += "<tr><td class=\"t\">\(escape(report.localTime(item.from, withDay: false)))</td><td class=\"t\">\(escape(report.localTime(item.to, withDay: false)))</td>"
                + "<td class=\"n\">\(what)</td><td><code>\(escape(content))</code></td></tr>"
        }
        out += "</table></details>\n"

        if !instance.failures.isEmpty {
            out += "<h3 class=\"bad\">Failures (\(instance.failures.count))</h3>" + failuresHTML(instance.failures)
        }
        if !instance.notes.isEmpty {
            // The same warning is one row: its first time and how many times.
            var order: [String] = [], times: [String: (first: Double, count: Int)] = [:]
            for note in instance.notes {
                if let seen = times[note.message] { times[note.message] = (seen.first, seen.count + 1) } else {
                    order.append(note.message)
                    times[note.message] = (note.at, 1)
                }
            }
            out += "<h3 class=\"warn\">Warnings (\(instance.notes.count))</h3><table class=\"warnings\"><tr><th>first at</th><th>times</th><th>warning</th></tr>"
            for message in order {
                let seen = times[message]!
                out += "<tr><td class=\"t\">\(escape(report.localTime(seen.first, withDay: false)))</td><td>×\(seen.count)</td><td class=\"warn\">\(escape(message))</td></tr>"
            }
            out += "</table>\n"
        }
        if !instance.logs.isEmpty {
            out += "<details\(instance.logs.count <= 12 ? " open" : "") class=\"logs\"><summary>Logs (the last \(instance.logs.count))</summary><table><tr><th>time</th><th>level</th><th>text</th></tr>"
            for line in instance.logs {
                out += "<tr><td class=\"t\">\(escape(report.localTime(line.at, withDay: false)))</td><td>\(line.level.name)</td><td><code>\(escape(line.text))</code></td></tr>"
            }
            out += "</table></details>\n"
        }
        return out + "</div>\n"
    }

    /// Failures grouped (×N, first and last time), each with its traceback.
    private func failuresHTML(_ failures: [CallFailure]) -> String {
        var out = ""
        for group in FailureGroup.grouping(failures) {
            let when = group.count == 1 ? "at \(report.localTime(group.first.at, withDay: false))"
                : "×\(group.count), first at \(report.localTime(group.first.at, withDay: false)), last at \(report.localTime(group.lastAt, withDay: false))"
            out += "<div class=\"failure\"><span class=\"bad\">\(group.first.role.rawValue) \(escape(group.first.diagnostic.summary))</span> <span class=\"t\">(\(escape(when)))</span>"
            if let traceback = group.first.diagnostic.traceback { out += "<pre class=\"traceback\">\(escape(traceback))</pre>" }
            out += "</div>\n"
        }
        return out
    }

    private func svg(_ instance: WidgetInstance, events: [EventMark]) -> String {
        // Event labels in up to four rows, each label in the first row where it fits.
        var rowEnds: [Double] = []
        var placed: [(event: EventMark, row: Int?)] = []
        for event in events {
            let x0 = x(event.at), w = Double(min(event.label.count, 34)) * 5.9 + 8
            if let row = rowEnds.firstIndex(where: { $0 < x0 - 4 }) {
                rowEnds[row] = x0 + w
                placed.append((event, row))
            } else if rowEnds.count < 4 {
                rowEnds.append(x0 + w)
                placed.append((event, rowEnds.count - 1))
            } else {
                placed.append((event, nil))   // its mark and its hover only
            }
        }
        let eventsTop = 4.0, rowHeight = 13.0
        let eventsHeight = events.isEmpty ? 0 : Double(rowEnds.count) * rowHeight + 10
        let stripTop = eventsTop + eventsHeight + 2, stripHeight = 34.0
        let marksTop = stripTop + stripHeight + 6, marksHeight = 16.0
        let budgetTop = marksTop + marksHeight + 14, budgetHeight = 70.0
        let axisTop = budgetTop + budgetHeight + 4
        let height = axisTop + 34
        var s = "<svg class=\"chart\" width=\"\(Int(left + width + 40))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"timeline of widget \(instance.id)\">\n"
        s += "<text x=\"0\" y=\"\(stripTop + 21)\">shown</text><text x=\"0\" y=\"\(marksTop + 12)\">reloads</text><text x=\"0\" y=\"\(budgetTop + 10)\">budget</text>\n"
        if !events.isEmpty { s += "<text x=\"0\" y=\"\(eventsTop + eventsHeight - 2)\">events</text>\n" }
        s += grid(top: stripTop, axis: axisTop)
        // What was shown.
        let stretches = report.shown(instance)
        // The fields that change from entry to entry lead the strip's labels.
        var seen: [String: LuaValue] = [:], varying: Set<String> = []
        for item in stretches {
            for (name, value) in item.entry?.content.namedFields ?? [:] where name != "date" {
                if let earlier = seen[name], earlier != value { varying.insert(name) }
                seen[name] = value
            }
        }
        for item in stretches {
            let x0 = x(item.from), x1 = x(item.to)
            let label = item.entry.map { SimulationReport.summary($0.content) } ?? "(nothing)"
            let short = item.entry.map { Self.stripLabel($0.content, leading: varying) } ?? "(nothing)"
            // The same content keeps its shade: a change on screen is a change of colour.
            let color = item.isPlaceholder ? "#c7c7cc" : ["#4c8bf5", "#2f6fde", "#6aa0f7", "#1f5fc9", "#85b3f9", "#3d7ef0"][Self.shade(of: label)]
            let title = "\(report.localTime(item.from, withDay: false))–\(report.localTime(item.to, withDay: false)) "
                + (item.isPlaceholder ? "placeholder " : "entry \(item.entryIndex ?? 0) of timeline \(item.timelineNumber ?? 0) ") + label
            let w = max(0.5, x1 - x0)
            s += "<rect class=\"seg\" x=\"\(f(x0))\" y=\"\(stripTop)\" width=\"\(f(w))\" height=\"\(stripHeight)\" fill=\"\(color)\" stroke=\"#fff\" stroke-width=\"0.5\" data-x=\"\(f(x0))\" data-w=\"\(f(w))\"><title>\(escape(title))</title></rect>"
            // A label for every stretch that is wide enough at some zoom; shown when it fits.
            if w * Double(Self.zooms.last!) > 60 {
                let fits = w > 60
                s += "<text class=\"seglabel\" x=\"\(f(x0 + 4))\" y=\"\(stripTop + 21)\" data-x=\"\(f(x0 + 4))\" data-w=\"\(f(w))\" data-full=\"\(escape(short))\"\(fits ? "" : " display=\"none\"") style=\"fill:\(item.isPlaceholder ? "#333" : "#fff");pointer-events:none\">\(escape(fits ? Self.fit(short, pixels: w) : ""))</text>"
            }
            s += "\n"
        }
        // The scenario's events: a mark and its label above the strip, a line down through the reloads.
        for (event, row) in placed {
            let ex = x(event.at), color = Self.eventColors[event.type] ?? "#64748b"
            let title = "\(report.localTime(event.at, withDay: false)) \(event.label)"
            let markY = eventsTop + eventsHeight - 8
            s += "<line class=\"evline\" x1=\"\(f(ex))\" y1=\"\(markY + 6)\" x2=\"\(f(ex))\" y2=\"\(marksTop + marksHeight)\" stroke=\"\(color)\" stroke-width=\"1\" stroke-dasharray=\"3 2\" opacity=\"0.8\" data-x1=\"\(f(ex))\" data-x2=\"\(f(ex))\"/>"
            s += "<path class=\"evmark\" d=\"M\(f(ex - 4)) \(f(markY)) L\(f(ex + 4)) \(f(markY)) L\(f(ex)) \(f(markY + 7)) Z\" fill=\"\(color)\" data-x=\"\(f(ex))\" data-y=\"\(f(markY))\"><title>\(escape(title))</title></path>"
            if let row {
                let text = event.label.count > 34 ? String(event.label.prefix(33)) + "…" : event.label
                s += "<text class=\"ev\" x=\"\(f(ex - 3))\" y=\"\(f(eventsTop + 9 + Double(row) * rowHeight))\" data-x=\"\(f(ex - 3))\" style=\"fill:\(color)\"><title>\(escape(title))</title>\(escape(text))</text>"
            }
            s += "\n"
        }
        // Reload marks; a deferral is an amber bar from when it was wanted.
        for r in instance.reloads {
            if let from = r.deferredFrom {
                s += "<line x1=\"\(f(x(from)))\" y1=\"\(marksTop + marksHeight / 2)\" x2=\"\(f(x(r.at)))\" y2=\"\(marksTop + marksHeight / 2)\" stroke=\"#f59e0b\" stroke-width=\"3\" data-x1=\"\(f(x(from)))\" data-x2=\"\(f(x(r.at)))\"><title>deferred from \(escape(report.localTime(from, withDay: false)))</title></line>"
            }
            let color = r.status != .ok ? "#dc2626" : (r.counted ? "#1d4ed8" : "#16a34a")
            let cause = causes(of: r, among: events).map(\.label).joined(separator: "; ")
            let title = "\(report.localTime(r.at, withDay: false)) reload: \(r.reason.rawValue)" + (cause.isEmpty ? "" : " (\(cause))")
                + ", \(r.counted ? "counted" : "exempt"), \(r.status.rawValue)"
            s += "<rect class=\"reload\" x=\"\(f(x(r.at) - 1))\" y=\"\(marksTop)\" width=\"2\" height=\"\(marksHeight)\" fill=\"\(color)\" data-x=\"\(f(x(r.at) - 1))\"><title>\(escape(title))</title></rect>\n"
        }
        if let next = report.pending[instance.id], next.isDeferred, next.wantedAt < report.end {
            s += "<line x1=\"\(f(x(next.wantedAt)))\" y1=\"\(marksTop + marksHeight / 2)\" x2=\"\(f(x(report.end)))\" y2=\"\(marksTop + marksHeight / 2)\" stroke=\"#f59e0b\" stroke-width=\"3\" stroke-dasharray=\"4 2\" data-x1=\"\(f(x(next.wantedAt)))\" data-x2=\"\(f(x(report.end)))\"><title>reload wanted, waiting for the budget</title></line>\n"
        }
        // Budget used (counted reloads in the window) against the limit, while the widget exists.
        let limit = max(1, report.policy.budget)
        func y(_ used: Int) -> Double { budgetTop + budgetHeight - Double(min(used, limit)) / Double(limit) * budgetHeight }
        s += "<rect class=\"frame\" x=\"\(left)\" y=\"\(budgetTop)\" width=\"\(width)\" height=\"\(budgetHeight)\" fill=\"none\" stroke=\"#ddd\" data-x=\"\(left)\" data-w=\"\(width)\"/>"
        s += "<line x1=\"\(left)\" y1=\"\(y(limit))\" x2=\"\(left + width)\" y2=\"\(y(limit))\" stroke=\"#dc2626\" stroke-dasharray=\"5 3\" data-x1=\"\(left)\" data-x2=\"\(left + width)\"/>"
        s += "<text class=\"limit\" x=\"\(left + width - 4)\" y=\"\(y(limit) + 12)\" text-anchor=\"end\" data-x=\"\(left + width - 4)\">limit \(report.policy.budget)</text>\n"
        let from = max(instance.addedAt, report.start), to = min(instance.removedAt ?? report.end, report.end)
        var points = ["\(f(x(from))),\(f(y(0)))"]
        var last = 0
        for point in budgetSteps(instance) where point.at >= from && point.at <= to {
            points.append("\(f(x(point.at))),\(f(y(last)))")
            points.append("\(f(x(point.at))),\(f(y(point.used)))")
            last = point.used
        }
        points.append("\(f(x(to))),\(f(y(last)))")
        let joined = points.joined(separator: " ")
        s += "<polyline class=\"budget\" points=\"\(joined)\" data-points=\"\(joined)\" fill=\"none\" stroke=\"#7c3aed\" stroke-width=\"2\"><title>budget used while the widget exists: \(last) of \(report.policy.budget) at \(escape(report.localTime(to, withDay: false)))</title></polyline>\n"
        // Added and removed marks on the budget's lane.
        if instance.addedAt > report.start {
            s += lifeMark(at: instance.addedAt, label: "added", color: "#059669", top: budgetTop, height: budgetHeight)
        }
        if let removed = instance.removedAt, removed < report.end {
            s += lifeMark(at: removed, label: "removed", color: "#6b7280", top: budgetTop, height: budgetHeight)
        }
        s += "<text class=\"zone\" x=\"\(left + width)\" y=\"\(axisTop + 30)\" text-anchor=\"end\" data-x=\"\(left + width)\">times in \(escape(zoneCaption))</text>\n"
        return s + "</svg>\n"
    }

    /// A widget's adding or removal on its budget lane: a line and a word.
    private func lifeMark(at t: Double, label: String, color: String, top: Double, height: Double) -> String {
        let lx = x(t)
        return "<line class=\"life\" x1=\"\(f(lx))\" y1=\"\(top)\" x2=\"\(f(lx))\" y2=\"\(top + height)\" stroke=\"\(color)\" stroke-width=\"2\" data-x1=\"\(f(lx))\" data-x2=\"\(f(lx))\"><title>\(label) at \(escape(report.localTime(t, withDay: false)))</title></line>"
            + "<text class=\"life\" x=\"\(f(lx + 4))\" y=\"\(top + 12)\" data-x=\"\(f(lx + 4))\" style=\"fill:\(color);font-weight:600\">\(label) \(escape(report.localTime(t, withDay: false)))</text>\n"
    }

    // MARK: - Live Activities

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
        out += "<div class=\"scroll\">" + activitySVG(lane) + "</div>"
        out += "<table><tr><th>time</th><th>change</th><th>source</th><th>bytes</th><th>alert</th></tr>"
        for u in lane.updates {
            out += "<tr><td class=\"t\">\(escape(report.localTime(u.at, withDay: false)))</td><td>\(u.kind.rawValue)</td><td>\(escape(u.source))</td>"
                + "<td>\(u.bytes) / \(limit)</td><td><code>\(escape(u.alert.map { SimulationReport.summary($0) } ?? ""))</code></td></tr>"
        }
        out += "</table>\n"
        if !lane.pushes.isEmpty {
            out += "<table><tr><th>push arrived</th><th>priority</th><th>budget</th><th>delivered</th><th>delay</th></tr>"
            for p in lane.pushes {
                let delayed = (p.delay ?? 1) > 0
                out += "<tr><td class=\"t\">\(escape(report.localTime(p.arrivedAt, withDay: false)))</td><td>\(p.priority)</td><td>\(p.counted ? "counted" : "not counted")</td>"
                    + "<td class=\"t \(delayed ? "bad" : "")\">\(escape(p.deliveredAt.map { report.localTime($0, withDay: false) } ?? (p.dropped ? "dropped" : "waiting")))</td>"
                    + "<td>\(p.delay.map { SimulationReport.duration($0) } ?? "")</td></tr>"
            }
            out += "</table>\n"
        }
        out += failuresHTML(lane.failures)
        return out + "</div>\n"
    }

    private func activitySVG(_ lane: ActivityLane) -> String {
        let stripTop = 8.0, stripHeight = 24.0
        let changesTop = stripTop + stripHeight + 6, changesHeight = 16.0
        let pushesTop = changesTop + changesHeight + 8, pushesHeight = 18.0
        let axisTop = pushesTop + pushesHeight + 4
        var s = "<svg class=\"chart\" width=\"\(Int(left + width + 40))\" height=\"\(Int(axisTop + 34))\" role=\"img\" aria-label=\"lane of activity \(escape(lane.id))\">\n"
        s += "<text x=\"0\" y=\"\(stripTop + 16)\">state</text><text x=\"0\" y=\"\(changesTop + 12)\">changes</text><text x=\"0\" y=\"\(pushesTop + 13)\">pushes</text>\n"
        s += grid(top: stripTop, axis: axisTop)
        for state in lane.states {
            let x0 = x(state.from), x1 = x(state.to), w = max(0.5, x1 - x0)
            let title = "\(report.localTime(state.from, withDay: false))–\(report.localTime(state.to, withDay: false)) \(state.state.rawValue)"
            s += "<rect x=\"\(f(x0))\" y=\"\(stripTop)\" width=\"\(f(w))\" height=\"\(stripHeight)\" fill=\"\(Self.phaseColors[state.state]!)\" data-x=\"\(f(x0))\" data-w=\"\(f(w))\"><title>\(escape(title))</title></rect>"
            if x1 - x0 > 50 {
                s += "<text x=\"\(f(x0 + 4))\" y=\"\(stripTop + 16)\" data-x=\"\(f(x0 + 4))\" style=\"fill:\(state.state == .dismissed ? "#555" : "#fff")\">\(state.state.rawValue)</text>"
            }
            s += "\n"
        }
        for u in lane.updates {
            let title = "\(report.localTime(u.at, withDay: false)) \(u.kind.rawValue) by \(u.source), \(u.bytes) of \(report.policy.activityPayloadBytes) bytes"
            s += "<rect x=\"\(f(x(u.at) - 1))\" y=\"\(changesTop)\" width=\"2\" height=\"\(changesHeight)\" fill=\"\(u.source.hasPrefix("updater") ? "#1d4ed8" : "#0f766e")\" data-x=\"\(f(x(u.at) - 1))\"><title>\(escape(title))</title></rect>\n"
        }
        let mid = pushesTop + pushesHeight / 2
        for p in lane.pushes {
            let arrived = report.localTime(p.arrivedAt, withDay: false)
            func bar(to end: Double, color: String, dash: String?, title: String) -> String {
                "<line x1=\"\(f(x(p.arrivedAt)))\" y1=\"\(mid)\" x2=\"\(f(x(end)))\" y2=\"\(mid)\" stroke=\"\(color)\" stroke-width=\"3\"" + (dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")
                    + " data-x1=\"\(f(x(p.arrivedAt)))\" data-x2=\"\(f(x(end)))\"><title>\(escape(title))</title></line>"
            }
            if let delivered = p.deliveredAt, delivered > p.arrivedAt {
                s += bar(to: delivered, color: "#f59e0b", dash: nil, title: "arrived \(arrived), throttled \(SimulationReport.duration(delivered - p.arrivedAt))")
            } else if p.dropped {
                s += bar(to: lane.ended ?? report.end, color: "#8e8e93", dash: "2 2", title: "arrived \(arrived), dropped: the activity ended before the budget let it through")
            } else if p.deliveredAt == nil {
                s += bar(to: report.end, color: "#f59e0b", dash: "4 2", title: "arrived \(arrived), still waiting for the budget")
            }
            let at = p.deliveredAt ?? p.arrivedAt
            let fill = p.counted ? "#7c3aed" : "none"
            let title = "arrived \(arrived), priority \(p.priority), " + (p.deliveredAt.map { "delivered \(report.localTime($0, withDay: false))" } ?? "waiting")
            s += "<circle cx=\"\(f(x(at)))\" cy=\"\(mid)\" r=\"4\" fill=\"\(fill)\" stroke=\"#7c3aed\" data-x=\"\(f(x(at)))\"><title>\(escape(title))</title></circle>\n"
        }
        s += "<text class=\"zone\" x=\"\(left + width)\" y=\"\(axisTop + 30)\" text-anchor=\"end\" data-x=\"\(left + width)\">times in \(escape(zoneCaption))</text>\n"
        return s + "</svg>\n"
    }

    // MARK: - Axis

    private func x(_ t: Double) -> Double {
        let span = max(1, report.end - report.start)
        return left + (min(max(t, report.start), report.end) - report.start) / span * width
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

    /// Tick steps, in seconds, from the finest.
    private static let tickSteps: [Double] = [300, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800]

    /// The step whose ticks are at least `spacing` pixels apart at `zoom`.
    private func tickStep(zoom: Double, spacing: Double = 70) -> Double {
        let span = max(1, report.end - report.start)
        return Self.tickSteps.first { $0 / span * width * zoom >= spacing } ?? 604_800
    }

    /// The time grid from `top` down to the axis at `axis`: ticks at every
    /// step some zoom shows (local time), those of the unzoomed step visible.
    private func grid(top: Double, axis: Double) -> String {
        let finest = tickStep(zoom: Double(Self.zooms.last!)), shown = tickStep(zoom: 1)
        let dayStart = report.calendar.startOfDay(report.start)
        var s = ""
        var t = dayStart
        while t <= report.end {
            if t >= report.start {
                let offset = (t - dayStart).rounded()
                let step = Self.tickSteps.last { offset.truncatingRemainder(dividingBy: $0) == 0 } ?? finest
                let visible = offset.truncatingRemainder(dividingBy: shown) == 0
                let hide = visible ? "" : " display=\"none\""
                s += "<g class=\"tick\" data-step=\"\(Int(step))\"\(hide)><line x1=\"\(f(x(t)))\" y1=\"\(top)\" x2=\"\(f(x(t)))\" y2=\"\(axis)\" stroke=\"#eee\" data-x1=\"\(f(x(t)))\" data-x2=\"\(f(x(t)))\"/>"
                s += "<text x=\"\(f(x(t)))\" y=\"\(axis + 13)\" text-anchor=\"middle\" data-x=\"\(f(x(t)))\">\(escape(tickLabel(t)))</text></g>\n"
            }
            t += finest
        }
        return s
    }

    /// "09:00", with the day on days after the start ("09:00 +1d").
    private func tickLabel(_ t: Double) -> String {
        let c = report.calendar.components(t)
        let time = (c.hour < 10 ? "0" : "") + "\(c.hour):" + (c.minute < 10 ? "0" : "") + "\(c.minute)"
        let day = Int(((report.calendar.startOfDay(t) - report.calendar.startOfDay(report.start)) / 86_400).rounded())
        return day == 0 ? time : time + " +\(day)d"
    }

    /// The zoom buttons and what they do: every time-placed element keeps
    /// its unzoomed place in data-x / data-w / data-x1 / data-x2 /
    /// data-points, and a zoom of z puts it at left + (x − left)·z.
    private static func zoomScript(left: Double, width: Double, span: Double) -> String {
        """
        (function () {
          var L = \(left), W = \(width), SPAN = \(span), ZOOMS = [\(zooms.map(String.init).joined(separator: ","))];
          var STEPS = [\(tickSteps.map { String(Int($0)) }.joined(separator: ","))];
          function sx(v, z) { return L + (parseFloat(v) - L) * z; }
          function fit(label, px) { var n = Math.floor((px - 8) / 6.2); return label.length > n ? label.slice(0, Math.max(1, n - 1)) + '\\u2026' : label; }
          function zoom(svg, z) {
            svg.setAttribute('width', Math.round(L + W * z + 40));
            svg.querySelectorAll('[data-x]').forEach(function (el) {
              var v = sx(el.dataset.x, z);
              if (el.tagName === 'circle') el.setAttribute('cx', v);
              else if (el.tagName === 'path') { var y = parseFloat(el.dataset.y); el.setAttribute('d', 'M' + (v - 4) + ' ' + y + ' L' + (v + 4) + ' ' + y + ' L' + v + ' ' + (y + 7) + ' Z'); }
              else el.setAttribute('x', v);
            });
            svg.querySelectorAll('rect[data-w]').forEach(function (el) { el.setAttribute('width', Math.max(0.5, parseFloat(el.dataset.w) * z)); });
            svg.querySelectorAll('[data-x1]').forEach(function (el) { el.setAttribute('x1', sx(el.dataset.x1, z)); el.setAttribute('x2', sx(el.dataset.x2, z)); });
            svg.querySelectorAll('polyline[data-points]').forEach(function (el) {
              el.setAttribute('points', el.dataset.points.split(' ').map(function (p) { var xy = p.split(','); return sx(xy[0], z) + ',' + xy[1]; }).join(' '));
            });
            svg.querySelectorAll('text.seglabel').forEach(function (el) {
              var px = parseFloat(el.dataset.w) * z;
              if (px > 60) { el.removeAttribute('display'); el.textContent = fit(el.dataset.full, px); } else el.setAttribute('display', 'none');
            });
            var step = STEPS.filter(function (s) { return s / SPAN * W * z >= 70; })[0] || STEPS[STEPS.length - 1];
            svg.querySelectorAll('g.tick').forEach(function (g) {
              if (parseInt(g.dataset.step, 10) % step === 0) g.removeAttribute('display'); else g.setAttribute('display', 'none');
            });
          }
          document.querySelectorAll('.scroll').forEach(function (box) {
            var svg = box.querySelector('svg.chart');
            if (!svg) return;
            var bar = document.createElement('div');
            bar.className = 'zoom';
            bar.textContent = 'zoom:';
            ZOOMS.forEach(function (z) {
              var b = document.createElement('button');
              b.type = 'button';
              b.textContent = z + '\\u00d7';
              b.dataset.zoom = z;
              if (z === 1) b.className = 'on';
              b.addEventListener('click', function () {
                var middle = (box.scrollLeft + box.clientWidth / 2) / box.scrollWidth;
                zoom(svg, z);
                bar.querySelectorAll('button').forEach(function (o) { o.className = o === b ? 'on' : ''; });
                box.scrollLeft = middle * box.scrollWidth - box.clientWidth / 2;
              });
              bar.appendChild(b);
            });
            box.parentNode.insertBefore(bar, box);
          });
        })();

        """
    }

    private func f(_ v: Double) -> String { fixedText(v, decimals: 1) }

    /// A label cut to what fits in `pixels` (about 6.2 px a character).
    private static func fit(_ label: String, pixels: Double) -> String {
        let chars = Int((pixels - 8) / 6.2)
        return label.count > chars ? String(label.prefix(max(1, chars - 1))) + "…" : label
    }

    /// An entry as a strip's label: its fields as `name=value`, those in
    /// `leading` (the ones that change) first, short ones (numbers,
    /// booleans, strings up to 24 characters) before long ones, so what
    /// changes from entry to entry shows in the little room there is.
    static func stripLabel(_ content: LuaTable, leading: Set<String> = []) -> String {
        var lead: [String] = [], leadLong: [String] = [], short: [String] = [], long: [String] = []
        for (name, value) in content.namedFields.sorted(by: { $0.key < $1.key }) where name != "date" {
            let text: String
            if case .string(let s) = value, let plain = s.string { text = plain } else { text = value.jsonText }
            let pair = "\(name)=\(text)"
            var isShort = text.count <= 24
            if case .table = value { isShort = false }
            switch (leading.contains(name), isShort) {
            case (true, true): lead.append(pair)
            case (true, false): leadLong.append(pair)
            case (false, true): short.append(pair)
            case (false, false): long.append(pair)
            }
        }
        return (lead + leadLong + short + long).joined(separator: " ")
    }

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
