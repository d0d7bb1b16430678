import LuaSandbox

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
            o.key("intents")
            o.array(performances) { p in
                o.object {
                    o.field("at", number: p.at)
                    o.field("intent", string: p.intent)
                    o.field("source", string: p.source)
                    o.key("instance")
                    if let instance = p.instance { o.integer(instance) } else { o.null() }
                    o.field("performed", bool: p.performed)
                    Diagnostic.writeFields(of: p.diagnostic, to: o)
                    o.key("result")
                    if let result = p.result { result.writeJSON(to: o) } else { o.null() }
                }
            }
            o.key("controls")
            o.array(controls) { control in
                o.object {
                    o.field("kind", string: control.kind)
                    o.field("type", string: control.type)
                    o.key("values")
                    o.array(control.values) { shown in
                        o.object {
                            o.field("at", number: shown.at)
                            o.key("value")
                            if let value = shown.value { value.writeJSON(to: o) } else { o.null() }
                            o.field("read", string: shown.read?.rawValue)
                        }
                    }
                    o.key("reloads")
                    o.array(control.reloads) { read in
                        o.object {
                            o.field("at", number: read.at)
                            o.field("reason", string: read.reason.rawValue)
                            o.field("status", string: read.status.rawValue)
                        }
                    }
                    o.key("failures")
                    failuresJSON(control.failures, o)
                }
            }
            o.key("activities")
            o.array(activities) { lane in activityJSON(lane, o) }
            o.key("events")
            o.array(events) { event in
                o.object {
                    o.field("at", number: event.at)
                    o.field("type", string: event.type)
                    o.field("label", string: event.label)
                    o.field("kind", string: event.kind)
                }
            }
            o.key("notes")
            notesJSON(notes, o)
        }
        return o.text
    }

    /// An activity's lane (docs/scenarios.md).
    private func activityJSON(_ lane: ActivityLane, _ o: JSONWriter) {
        o.object {
            o.field("id", string: lane.id)
            o.field("type", string: lane.type)
            o.field("started", number: lane.started)
            o.key("states")
            o.array(lane.states) { s in
                o.object {
                    o.field("from", number: s.from)
                    o.field("to", number: s.to)
                    o.field("state", string: s.state.rawValue)
                }
            }
            o.key("updates")
            o.array(lane.updates) { u in
                o.object {
                    o.field("at", number: u.at)
                    o.field("kind", string: u.kind.rawValue)
                    o.field("source", string: u.source)
                    o.field("bytes", integer: u.bytes)
                    o.key("alert")
                    if let alert = u.alert { alert.writeJSON(to: o) } else { o.null() }
                }
            }
            o.field("bytesLimit", integer: policy.activityPayloadBytes)
            o.key("pushes")
            o.array(lane.pushes) { ActivityOutput.writePush($0, to: o) }
            o.key("updaterRuns")
            o.array(lane.runs) { run in
                o.object {
                    o.field("at", number: run.at)
                    o.field("kind", string: run.kind)
                    o.field("status", string: (run.diagnostic?.kind ?? .ok).rawValue)
                }
            }
            o.key("failures")
            failuresJSON(lane.failures, o)
            o.key("lastState")
            LuaValue.table(lane.lastState).writeJSON(to: o)
            o.field("ended", number: lane.ended)
            o.field("dismissed", number: lane.dismissed)
        }
    }

    /// `[{"at", "role", "status", "message", "traceback", "location", "limit"}]`.
    private func failuresJSON(_ failures: [CallFailure], _ o: JSONWriter) {
        o.array(failures) { failure in
            o.object {
                o.field("at", number: failure.at)
                o.field("role", string: failure.role.rawValue)
                Diagnostic.writeFields(of: failure.diagnostic, to: o)
            }
        }
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
            failuresJSON(instance.failures, o)
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
