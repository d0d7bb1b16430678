import LuaSandbox

/// Intents run through the engine: from a widget's button or toggle, with
/// the widget's reload that follows (I2), or from the app.
extension TimelineEngine {
    /// A tap on a button or toggle of widget `id` that runs `intent`: the
    /// intent performs with `ctx.source` the widget; when it succeeds the
    /// widget's timeline reloads at once, exempt from the budget and the
    /// floor (I2, B2), with reason `intent`; when it fails nothing reloads
    /// and the failure is recorded on the widget.
    @discardableResult
    public func tap(_ id: Int, intent: String, parameters: [String: LuaValue] = [:]) throws(IntentError) -> IntentPerformance {
        guard let i = position(of: id), instances[i].removedAt == nil else {
            throw IntentError(message: "no widget #\(id) on screen")
        }
        let configuration = instances[i].configuration
        let source = IntentSource(kind: configuration.kind, family: configuration.family, config: configuration.values)
        let performance = try intents.perform(intent, parameters: parameters, source: source)
        record(performance, source: "widget #\(id) (\(configuration.kind))", instance: id)
        if performance.succeeded {
            reload(i, reason: .intent, deferredFrom: nil)
        } else {
            instances[i].append(CallFailure(at: now, role: .intent, diagnostic: performance.outcome.diagnostic ?? Diagnostic(.error, "failed")))
        }
        return performance
    }

    /// Runs `intent` from the app, Shortcuts or a control (`origin` says
    /// which, for the report): no widget reloads unless the script asks.
    @discardableResult
    public func perform(_ intent: String, parameters: [String: LuaValue] = [:], origin: String = "app") throws(IntentError) -> IntentPerformance {
        try perform(intent, parameters: parameters, hostValues: [:], origin: origin)
    }

    /// `perform` with values the host adds whether or not the intent
    /// declares them (a toggle's `value`, C3).
    func perform(_ intent: String, parameters: [String: LuaValue], hostValues: [String: LuaValue], origin: String) throws(IntentError) -> IntentPerformance {
        let performance = try intents.perform(intent, parameters: parameters, source: nil, hostValues: hostValues)
        record(performance, source: origin, instance: nil)
        return performance
    }

    /// Records a performance and applies the reload requests it made (a
    /// failed call's requests are dropped with its writes).
    private func record(_ performance: IntentPerformance, source: String, instance: Int?) {
        performances.append(PerformanceRecord(at: now, intent: performance.intent, source: source, instance: instance,
                                              diagnostic: performance.outcome.diagnostic, result: performance.result,
                                              performed: performance.performed))
        if performance.succeeded { apply(performance.outcome.reloadRequests) }
    }
}
