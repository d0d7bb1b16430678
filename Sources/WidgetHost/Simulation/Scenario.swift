import Foundation
import LuaSandbox
import SharedStore

/// A stretch of simulated time (docs/scenarios.md): when it starts, how
/// long it lasts, the time zone, the widgets on screen, what happens, and
/// policy changes.
public struct Scenario: Sendable {
    public var start: Double
    public var duration: Double
    /// IANA name; nil keeps the host's.
    public var timeZone: String?
    public var widgets: [WidgetConfiguration]
    /// Controls in Control Center from the start.
    public var controls: [String]
    public var events: [ScenarioEvent]
    /// The host policy for this run.
    public var policy: HostPolicy

    public init(start: Double, duration: Double = 86_400, timeZone: String? = nil,
                widgets: [WidgetConfiguration], controls: [String] = [], events: [ScenarioEvent] = [], policy: HostPolicy = .standard) {
        self.start = start
        self.duration = duration
        self.timeZone = timeZone
        self.widgets = widgets
        self.controls = controls
        self.events = events
        self.policy = policy
    }

    /// The default scenario of a bundle: each widget kind in its first
    /// family, with its default configuration.
    public static func everyKind(of runtime: WidgetRuntime, start: Double, duration: Double = 86_400) throws(ParameterError) -> Scenario {
        var widgets: [WidgetConfiguration] = []
        for widget in runtime.bundle.declarations.widgets {
            widgets.append(try runtime.configuration(kind: widget.kind))
        }
        return Scenario(start: start, duration: duration, widgets: widgets, policy: runtime.services.policy)
    }

    /// Reads a scenario file, checking its widgets and events against the
    /// bundle of `runtime`; `start` is used when the file has none. Errors
    /// name the file and line.
    public static func load(_ path: String, runtime: WidgetRuntime, start defaultStart: Double) throws(LocatedError) -> Scenario {
        let file = try JSONFile.load(path)
        var reader = try JSONObjectReader(file, file.root)
        var calendar = runtime.services.calendar
        let zone = try reader.string("timezone")
        if let zone {
            guard let c = HostCalendar(timeZoneNamed: zone) else { throw reader.fail("timezone", "is not a known IANA time zone: \"\(zone)\"") }
            calendar = c
        }
        var start = defaultStart
        if let text = try reader.string("start") {
            switch ISODate.parse(text, calendar: calendar) {
            case .success(let t): start = t
            case .failure(let error): throw reader.fail("start", error.message)
            }
        }
        var duration = 86_400.0
        if let value = reader.value("duration") {
            guard let d = Durations.seconds(value), d > 0 else {
                throw reader.fail("duration", "must be a positive duration like \"24h\", \"90m\" or seconds, got \(value.jsonText)")
            }
            duration = d
        }
        var policy = runtime.services.policy
        if var overrides = try reader.object("policy") { policy = try policy.applying(&overrides) }
        var widgets: [WidgetConfiguration] = []
        for (i, item) in (try reader.array("widgets") ?? []).enumerated() {
            widgets.append(try widget(item, at: "widgets[\(i + 1)]", file: file, runtime: runtime))
        }
        let declaredControls = runtime.bundle.declarations.controls.map(\.kind)
        var controls: [String] = []
        for item in try reader.strings("controls") ?? [] {
            guard declaredControls.contains(item.text) else {
                throw file.error("'controls' names \"\(item.text)\", which is not a control of the bundle (controls: \(declaredControls.isEmpty ? "none" : declaredControls.joined(separator: ", ")))", at: item.location)
            }
            controls.append(item.text)
        }
        var events: [ScenarioEvent] = []
        for (i, item) in (try reader.array("events") ?? []).enumerated() {
            events.append(try event(item, index: i + 1, file: file, runtime: runtime, start: start, calendar: calendar))
        }
        try reader.finish()
        if widgets.isEmpty && !events.contains(where: { if case .widgetAdded = $0.kind { return true } else { return false } }) {
            throw file.error("no widgets: list some in \"widgets\" or add them with widgetAdded events")
        }
        events = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        return Scenario(start: start, duration: duration, timeZone: zone, widgets: widgets, controls: controls, events: events, policy: policy)
    }

    private static func widget(_ value: JSONValue, at path: String, file: JSONFile, runtime: WidgetRuntime) throws(LocatedError) -> WidgetConfiguration {
        var r = try JSONObjectReader(file, value, prefix: path + ".")
        let widget = try readWidget(&r, path: path, runtime: runtime)
        try r.finish()
        return widget
    }

    /// A widget's `kind`, `family` and `config`, checked against the bundle.
    private static func readWidget(_ r: inout JSONObjectReader, path: String, runtime: WidgetRuntime) throws(LocatedError) -> WidgetConfiguration {
        guard let kind = try r.string("kind") else { throw r.fail("kind", "is missing: name the widget kind") }
        let family = try readFamily(&r)
        var values: [String: LuaValue] = [:]
        if var config = try r.object("config") {
            for entry in try config.storeValues() { values[entry.key] = entry.value.lua }
        }
        do { return try runtime.configuration(kind: kind, family: family, values: values) } catch {
            throw r.error("\(path): \(error.message)", at: "kind")
        }
    }

    /// The `intent` of a tap or perform: declared, with a perform.
    private static func intentID(_ r: inout JSONObjectReader, type: String, runtime: WidgetRuntime) throws(LocatedError) -> String {
        guard let id = try r.string("intent") else { throw r.fail("intent", "is missing: \(type) needs the intent's id") }
        guard let intent = runtime.bundle.declarations.intent(id) else {
            let ids = runtime.bundle.declarations.intents.filter(\.hasPerform).map(\.id)
            throw r.fail("intent", "is not an intent of the bundle: \"\(id)\" (intents: \(ids.isEmpty ? "none" : ids.joined(separator: ", ")))")
        }
        guard intent.hasPerform else { throw r.fail("intent", "\"\(id)\" has no perform function (a configuration intent?)") }
        return id
    }

    /// The `params` of a tap or perform, as given (checked when the event runs, rule I1).
    private static func params(_ r: inout JSONObjectReader) throws(LocatedError) -> [String: LuaValue] {
        guard var object = try r.object("params") else { return [:] }
        var values: [String: LuaValue] = [:]
        for entry in try object.storeValues() { values[entry.key] = entry.value.lua }
        return values
    }

    /// The `kind` of a control event, a control of the bundle.
    private static func controlKind(_ r: inout JSONObjectReader, type: String, required: Bool, runtime: WidgetRuntime) throws(LocatedError) -> String? {
        guard let kind = try r.string("kind") else {
            if required { throw r.fail("kind", "is missing: \(type) needs the control's kind") }
            return nil
        }
        let kinds = runtime.bundle.declarations.controls.map(\.kind)
        guard kinds.contains(kind) else {
            throw r.fail("kind", "is not a control of the bundle: \"\(kind)\" (controls: \(kinds.isEmpty ? "none" : kinds.joined(separator: ", ")))")
        }
        return kind
    }

    private static func readFamily(_ r: inout JSONObjectReader) throws(LocatedError) -> WidgetFamily? {
        guard let name = try r.string("family") else { return nil }
        guard let family = WidgetFamily(rawValue: name) else {
            throw r.fail("family", "is not a family: \"\(name)\" (families: \(WidgetFamily.names))")
        }
        return family
    }

    private static func event(_ value: JSONValue, index: Int, file: JSONFile, runtime: WidgetRuntime,
                              start: Double, calendar: HostCalendar) throws(LocatedError) -> ScenarioEvent {
        let path = "events[\(index)]"
        var r = try JSONObjectReader(file, value, prefix: path + ".")
        guard let at = r.value("at") else { throw r.error("'\(path)' needs \"at\" (an ISO date, or a time from the start like \"+2h\")") }
        let time: Double
        switch at.kind {
        case .string(let text) where !text.hasPrefix("+") && text.contains("-"):
            switch ISODate.parse(text, calendar: calendar) {
            case .success(let t): time = t
            case .failure(let error): throw r.fail("at", error.message)
            }
        default:
            guard let offset = Durations.seconds(at), offset >= 0 else {
                throw r.fail("at", "must be an ISO date or a time from the start (\"+2h\", \"90m\", seconds), got \(at.jsonText)")
            }
            time = start + offset
        }
        guard let type = try r.string("type") else { throw r.fail("type", "is missing (types: \(ScenarioEvent.typeNames))") }
        let kind: ScenarioEvent.Kind
        func widgetKind(_ required: Bool) throws(LocatedError) -> String? {
            guard let k = try r.string("kind") else {
                if required { throw r.fail("kind", "is missing: \(type) needs the widget kind") }
                return nil
            }
            guard runtime.bundle.declarations.widget(k) != nil else {
                throw r.fail("kind", "is not a widget kind of the bundle: \"\(k)\"")
            }
            return k
        }
        switch type {
        case "appForeground": kind = .appForeground(kind: try widgetKind(false))
        case "reloadTimelines": kind = .reloadTimelines(kind: try widgetKind(true)!)
        case "reloadAll": kind = .reloadAll
        case "localeChange": kind = .localeChange
        case "significantTimeChange": kind = .significantTimeChange
        case "timeZoneChange":
            guard let zone = try r.string("timezone") else { throw r.fail("timezone", "is missing: timeZoneChange needs the new IANA zone") }
            guard HostCalendar(timeZoneNamed: zone) != nil else { throw r.fail("timezone", "is not a known IANA time zone: \"\(zone)\"") }
            kind = .timeZoneChange(zone)
        case "storeSet":
            guard let group = try r.string("group") else { throw r.fail("group", "is missing: storeSet needs the app group") }
            guard runtime.bundle.manifest.appGroups.contains(group) else {
                throw r.fail("group", "is not an app group of the bundle: \"\(group)\"")
            }
            guard let key = try r.string("key") else { throw r.fail("key", "is missing: storeSet needs the key") }
            if let problem = StoreText.keyProblem(key) { throw r.fail("key", "is not a valid key: \(problem)") }
            kind = .storeSet(group: group, key: key, value: try r.storeValue("value"))
        case "widgetAdded":
            kind = .widgetAdded(try readWidget(&r, path: path, runtime: runtime))
        case "widgetRemoved":
            kind = .widgetRemoved(kind: try widgetKind(true)!, family: try readFamily(&r))
        case "tap":
            let widget = try widgetKind(true)!
            let family = try readFamily(&r)
            var config: [String: LuaValue]?
            if var object = try r.object("config") {
                var values: [String: LuaValue] = [:]
                for entry in try object.storeValues() { values[entry.key] = entry.value.lua }
                config = values
            }
            kind = .tap(kind: widget, family: family, config: config, intent: try intentID(&r, type: type, runtime: runtime), params: try params(&r))
        case "perform":
            kind = .perform(intent: try intentID(&r, type: type, runtime: runtime), params: try params(&r))
        case "controlAdded", "controlTap":
            let control = try controlKind(&r, type: type, required: true, runtime: runtime)!
            kind = type == "controlAdded" ? .controlAdded(control) : .controlTap(control)
        case "reloadControls":
            kind = .reloadControls(try controlKind(&r, type: type, required: false, runtime: runtime))
        default:
            throw r.fail("type", "is not an event type: \"\(type)\" (types: \(ScenarioEvent.typeNames))")
        }
        try r.finish()
        return ScenarioEvent(at: time, kind: kind)
    }
}
