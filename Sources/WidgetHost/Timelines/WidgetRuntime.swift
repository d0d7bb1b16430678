import LuaSandbox

/// Calls a bundle's widget providers and checks what they return. Each
/// call gets fresh globals in a pooled sandbox (see `BundleSandbox`): one
/// state per role, dropped after a failed call or when `services` change.
public final class WidgetRuntime {
    public let bundle: ScriptBundle
    /// (Read on every provider call, as the pool's are; a read is a copy,
    /// never held across a call: no run-time exclusivity checks.)
    @exclusivity(unchecked) public var services: HostServices {
        didSet { pool.services = services }
    }
    /// The bundle's sandboxes, shared with intents, queries and controls.
    let pool: SandboxPool

    /// Ends the call this runtime is running, from any thread.
    public var canceller: CallCanceller { pool.canceller }

    public init(bundle: ScriptBundle, services: HostServices) {
        self.bundle = bundle
        self.services = services
        pool = SandboxPool(bundle: bundle, services: services)
    }

    /// The configuration of a new `kind` widget in `family`: checks the
    /// family and the given values against the widget's configuration
    /// intent, and fills in defaults.
    public func configuration(kind: String, family: WidgetFamily? = nil, values: [String: LuaValue] = [:]) throws(ParameterError) -> WidgetConfiguration {
        let (widget, intent) = try configurationIntent(kind: kind, setting: values.keys.sorted().first)
        let family = family ?? widget.families[0]
        guard widget.families.contains(family) else {
            throw ParameterError(message: "widget '\(kind)' does not support \(family.rawValue) (families: \(widget.families.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let intent else { return WidgetConfiguration(kind: kind, family: family) }
        return WidgetConfiguration(kind: kind, family: family, values: try ParameterValues.configuration(values, for: intent))
    }

    /// Reads `name=value` texts into values of the widget's configuration parameters.
    public func parseValues(kind: String, _ texts: [String: String]) throws(ParameterError) -> [String: LuaValue] {
        guard let intent = try configurationIntent(kind: kind, setting: texts.keys.sorted().first).intent else { return [:] }
        var values: [String: LuaValue] = [:]
        for (name, text) in texts {
            guard let parameter = intent.parameters.first(where: { $0.name == name }) else {
                throw ParameterError.unknownParameter(name, of: intent)
            }
            values[name] = try ParameterValues.parse(text, for: parameter, calendar: services.calendar)
        }
        return values
    }

    /// The widget `kind` and its configuration intent (nil when it has
    /// none, and then setting a parameter, `setting`, is an error).
    private func configurationIntent(kind: String, setting: String?) throws(ParameterError) -> (widget: WidgetDeclaration, intent: IntentDeclaration?) {
        guard let widget = bundle.declarations.widget(kind) else {
            let kinds = bundle.declarations.widgets.map(\.kind).joined(separator: ", ")
            throw ParameterError(message: "bundle \(bundle.manifest.id) has no widget kind '\(kind)' (kinds: \(kinds.isEmpty ? "none" : kinds))")
        }
        guard let id = widget.configuration, let intent = bundle.declarations.intent(id) else {
            if let name = setting {
                throw ParameterError(message: "widget '\(kind)' has no configuration, so '\(name)' cannot be set")
            }
            return (widget, nil)
        }
        return (widget, intent)
    }

    /// The placeholder entry (rule T1: instant, no store).
    public func placeholder(_ widget: WidgetConfiguration) -> ProviderResult<TimelineEntry> {
        entryCall(.placeholder, widget, field: "placeholder", arguments: [context(widget, isPreview: false)])
    }

    /// The snapshot entry (rule T2), for the gallery when `isPreview`. A
    /// widget without a snapshot function answers with its placeholder.
    public func snapshot(_ widget: WidgetConfiguration, isPreview: Bool = true) -> ProviderResult<TimelineEntry> {
        let hasSnapshot = bundle.declarations.widget(widget.kind)?.hasSnapshot ?? false
        return entryCall(.snapshot, widget, field: hasSnapshot ? "snapshot" : "placeholder",
                         arguments: arguments(widget, isPreview: isPreview))
    }

    /// The timeline (rule T3), checked and sorted. `budget` is what
    /// `host.usage().budget` reports to the script.
    public func timeline(_ widget: WidgetConfiguration, budget: (used: Int, remaining: Int)? = nil) -> ProviderResult<Timeline> {
        decodedCall(.timeline, widget, field: "timeline",
                    arguments: arguments(widget, isPreview: false), budget: budget,
                    TimelineReader(policy: services.policy))
    }

    private func entryCall(_ role: CallRole, _ widget: WidgetConfiguration, field: String, arguments: [LuaValue]) -> ProviderResult<TimelineEntry> {
        decodedCall(role, widget, field: field, arguments: arguments, budget: nil,
                    EntryReader(role: role, defaultDate: services.clock.now()))
    }

    /// Calls `field` and checks what it returned with `reader`, which reads
    /// the results in place (only the kept values are made): its warnings
    /// join the call's, and a result it refuses fails the call with why.
    /// The outcome is handed on, not copied (it is large); its `values`
    /// are empty.
    private func decodedCall<T, Reader: CallResultReader>(_ role: CallRole, _ widget: WidgetConfiguration, field: String, arguments: [LuaValue],
                                                          budget: (used: Int, remaining: Int)?, _ reader: Reader) -> ProviderResult<T>
    where Reader.Output == Result<TimelineDecoder.Decoded<T>, DecodeError> {
        var (outcome, decoded) = pool.call(role, "widget", widget.kind, field, arguments, budget: budget, reader: reader)
        guard outcome.succeeded, let decoded else { return ProviderResult(outcome: consume outcome, value: nil) }
        switch decoded {
        case .success(let decoded):
            // Most results draw none: no append (≈ 140 instructions) then.
            if !decoded.warnings.isEmpty { outcome.warnings += decoded.warnings }
            return ProviderResult(outcome: consume outcome, value: decoded.value)
        case .failure(let error):
            outcome.refuse(error.message)
            return ProviderResult(outcome: consume outcome, value: nil)
        }
    }

    /// A provider's timeline, from its first result.
    private struct TimelineReader: CallResultReader {
        let policy: HostPolicy
        func read<Results: RandomAccessCollection>(_ results: Results) -> Result<TimelineDecoder.Decoded<Timeline>, DecodeError>
        where Results.Element: ProviderValue {
            TimelineDecoder.timeline(results.first, policy: policy)
        }
    }

    /// A placeholder's or snapshot's entry, from its first result; one
    /// without a date is dated `defaultDate`, the host's now when the call
    /// began (read then: no host code runs while the results are read).
    private struct EntryReader: CallResultReader {
        let role: CallRole
        let defaultDate: Double
        func read<Results: RandomAccessCollection>(_ results: Results) -> Result<TimelineDecoder.Decoded<TimelineEntry>, DecodeError>
        where Results.Element: ProviderValue {
            TimelineDecoder.entry(results.first, at: "the \(role.rawValue) entry", defaultDate: defaultDate).map { TimelineDecoder.Decoded(value: $0, warnings: []) }
        }
    }

    /// ctx: kind, family, displaySize = { width, height }, isPreview.
    /// Made once per widget and kept (widgets reload many times).
    func context(_ widget: WidgetConfiguration, isPreview: Bool) -> LuaValue {
        kept(widget, isPreview: isPreview).context
    }

    /// A call's arguments: ctx, then the configuration's values (nil
    /// without). For a widget without values the array is kept with its
    /// ctx, so a call makes none (an allocation, its two values' copies
    /// and its release: ≈ 200 instructions a call).
    func arguments(_ widget: WidgetConfiguration, isPreview: Bool) -> [LuaValue] {
        let kept = kept(widget, isPreview: isPreview)
        guard let values = widget.values else { return kept.arguments }
        return [kept.context, .table(values)]
    }

    private func kept(_ widget: WidgetConfiguration, isPreview: Bool) -> KeptContext {
        // Consecutive calls are mostly of the same kind and family: a compare
        // of the last key, where it is kept (a copy of it retained and
        // released its parts), before the hashed lookup.
        if let last = lastKept, lastKey.family == widget.family, lastKey.isPreview == isPreview, lastKey.kind == widget.kind {
            return last
        }
        let key = ContextKey(kind: widget.kind, family: widget.family, isPreview: isPreview)
        if let made = contexts[key] {
            (lastKey, lastKept) = (key, made)
            return made
        }
        let size = widget.family.displaySize
        let context = LuaValue.table(LuaTable(fields: [
            "kind": .string(widget.kind), "family": .string(widget.family.rawValue),
            "displaySize": .table(LuaTable(fields: ["width": ClockBinding.date(size.width), "height": ClockBinding.date(size.height)])),
            "isPreview": .boolean(isPreview),
        ]))
        let made = KeptContext(context: context, arguments: [context, .nil])
        contexts[key] = made
        (lastKey, lastKept) = (key, made)
        return made
    }

    private struct KeptContext {
        var context: LuaValue
        /// `[context, nil]`: the arguments of a widget without values.
        var arguments: [LuaValue]
    }
    private struct ContextKey: Hashable {
        var kind: String
        var family: WidgetFamily
        var isPreview: Bool
    }
    /// (Both read on every provider call, on the runtime's one thread, and
    /// never held across a call: no run-time exclusivity checks.)
    @exclusivity(unchecked) private var contexts: [ContextKey: KeptContext] = [:]
    @exclusivity(unchecked) private var lastKey = ContextKey(kind: "", family: .systemSmall, isPreview: false)
    @exclusivity(unchecked) private var lastKept: KeptContext?
}
