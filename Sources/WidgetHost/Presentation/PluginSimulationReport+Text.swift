import LuaSandbox

/// A plugin simulation's summary as text and JSON (docs/cli.md, "Several bundles").
extension PluginSimulationReport {
    /// The summary as text: one row per plugin, then the quarantines and
    /// the plugins refused at load, each with why.
    public func text(width: Int? = nil) -> String {
        var out = "\(plugins.count + refused.count) plugins, \(calendar.timeText(start, day: true)) to \(calendar.timeText(end, day: true)), "
            + "isolation \(isolation): \(calls) calls in \(fixedText(wallSeconds, decimals: 2)) s\n\n"
        var table = TextTable(["plugin", "calls", "failed", "crashed", "timeouts", "refused", "quarantined", "CPU", "peak memory"])
        for plugin in plugins {
            let t = plugin.totals
            table.add([plugin.id, "\(t.calls)", "\(t.failures)", "\(t.crashes)", "\(t.timeouts)", "\(t.refused)",
                       plugin.quarantine.map { "\($0.cause.rawValue) since \(calendar.timeText($0.since, day: false))" } ?? (t.quarantines > 0 ? "released" : "no"),
                       fixedText(t.cpuSeconds, decimals: 3) + " s", Self.bytes(t.peakMemory)])
        }
        for refused in refused {
            table.add([refused.path, "-", "-", "-", "-", "-", "refused at load", "-", "-"])
        }
        out += table.render(indent: "  ", width: width)
        let quarantined = plugins.filter { $0.quarantine != nil }
        if !quarantined.isEmpty {
            out += "\nQuarantined\n"
            for plugin in quarantined {
                let q = plugin.quarantine!
                out += "  \(plugin.id) at \(calendar.timeText(q.since, day: true)) (\(q.cause.rawValue)): \(q.reason)\n"
            }
        }
        if !refused.isEmpty {
            out += "\nRefused at load\n"
            for refused in refused {
                for diagnostic in refused.diagnostics { out += "  \(refused.path): \(diagnostic.text)\n" }
            }
        }
        return out
    }

    static func bytes(_ n: Int) -> String {
        n >= 1 << 20 ? fixedText(Double(n) / Double(1 << 20), decimals: 1) + " MB" : "\(n / 1024) KB"
    }

    // MARK: JSON

    /// The summary as JSON, each plugin's report inside (docs/plugins.md).
    public var json: String {
        let o = JSONWriter()
        o.object {
            o.field("start", number: start)
            o.field("end", number: end)
            o.field("isolation", string: isolation)
            o.field("wallSeconds", number: (wallSeconds * 1000).rounded() / 1000)
            o.field("calls", integer: calls)
            o.key("plugins")
            o.array(plugins) { plugin in
                o.object {
                    o.field("id", string: plugin.id)
                    o.field("path", string: plugin.path)
                    let t = plugin.totals
                    o.field("calls", integer: t.calls)
                    o.field("failures", integer: t.failures)
                    o.field("crashes", integer: t.crashes)
                    o.field("timeouts", integer: t.timeouts)
                    o.field("refused", integer: t.refused)
                    o.field("quarantines", integer: t.quarantines)
                    o.field("cpuSeconds", number: (t.cpuSeconds * 1e6).rounded() / 1e6)
                    o.field("peakMemoryBytes", integer: t.peakMemory)
                    o.key("quarantine")
                    if let q = plugin.quarantine {
                        o.object {
                            o.field("cause", string: q.cause.rawValue)
                            o.field("since", number: q.since)
                            o.field("reason", string: q.reason)
                        }
                    } else { o.null() }
                    o.key("report")
                    o.value(json: plugin.report.json)
                }
            }
            o.key("refused")
            o.array(refused) { refused in
                o.object {
                    o.field("path", string: refused.path)
                    o.key("diagnostics")
                    o.array(refused.diagnostics) { d in o.object { Diagnostic.writeFields(of: d, to: o) } }
                }
            }
        }
        return o.text
    }
}
