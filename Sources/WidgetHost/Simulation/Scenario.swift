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
    /// Where each event is in its file ("file:line:column"), in the order of
    /// `events`; empty for scenarios not read from a file.
    public var eventSources: [String] = []
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
        var eventLocations: [JSONLocation] = []
        for (i, item) in (try reader.array("events") ?? []).enumerated() {
            events.append(try event(item, index: i + 1, file: file, runtime: runtime, start: start, calendar: calendar))
            eventLocations.append(item.location)
        }
        try reader.finish()
        let hasSomething = !widgets.isEmpty || !controls.isEmpty || events.contains { event in
            switch event.kind {
            case .widgetAdded, .startActivity: return true
            default: return false
            }
        }
        if !hasSomething {
            throw file.error("nothing to simulate: list widgets in \"widgets\" (or add them with widgetAdded events), controls in \"controls\", or start an activity with a startActivity event")
        }
        let order = events.indices.sorted { (events[$0].at, $0) < (events[$1].at, $1) }
        // An activity index names the n-th startActivity in time order; it must come before the event.
        var started = 0
        for i in order {
            switch events[i].kind {
            case .startActivity: started += 1
            case .push(.index(let n), _, _), .activityEvent(.index(let n), _, _), .endActivity(.index(let n), _, _):
                if n >= started {
                    throw file.error("'events[\(i + 1)].activity' is \(n), but only \(started) startActivity event(s) come before it (activities count from 0 in the order the scenario starts them)",
                                     at: eventLocations[i])
                }
            default: break
            }
        }
        events = order.map { events[$0] }
        var scenario = Scenario(start: start, duration: duration, timeZone: zone, widgets: widgets, controls: controls, events: events, policy: policy)
        scenario.eventSources = order.map { "\(path):\(eventLocations[$0].line):\(eventLocations[$0].column)" }
        return scenario
    }

    /// Events that fall outside the run (with the start and duration it has
    /// now): one before the start happens at the start, one at or after the
    /// end does not happen. A warning for each, with its place in the file.
    public func rangeWarnings() -> [String] {
        let end = start + duration
        var warnings: [String] = []
        for (i, event) in events.enumerated() where event.at < start || event.at >= end {
            let place = i < eventSources.count ? eventSources[i] + ": " : ""
            if event.at < start {
                warnings.append("\(place)event \(event.kind) at \(ISODate.format(event.at)) is before the start (\(ISODate.format(start))): it happens at the start")
            } else {
                warnings.append("\(place)event \(event.kind) at \(ISODate.format(event.at)) is at or after the end (\(ISODate.format(end))): it does not happen (make the run longer with \"duration\" or --duration)")
            }
        }
        return warnings
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
        case "startActivity", "push", "activityEvent", "endActivity", "activitiesEnabled":
            kind = try activityEvent(&r, type: type, at: time, runtime: runtime, calendar: calendar)
        default:
            throw r.fail("type", "is not an event type: \"\(type)\" (types: \(ScenarioEvent.typeNames))")
        }
        try r.finish()
        return ScenarioEvent(at: time, kind: kind)
    }

    // MARK: Live Activities

    private static func activityEvent(_ r: inout JSONObjectReader, type: String, at time: Double, runtime: WidgetRuntime,
                                      calendar: HostCalendar) throws(LocatedError) -> ScenarioEvent.Kind {
        let declared = runtime.bundle.declarations.activities
        switch type {
        case "startActivity":
            guard let name = try r.string("activityType") else { throw r.fail("activityType", "is missing: startActivity needs the activity's type") }
            guard let declaration = declared.first(where: { $0.type == name }) else {
                let types = declared.map(\.type).joined(separator: ", ")
                throw r.fail("activityType", "is not an activity type of the bundle: \"\(name)\" (types: \(types.isEmpty ? "none" : types))")
            }
            let attributes = try activityTable(&r, "attributes", declaration.attributes, at: time, calendar: calendar, required: true)!
            let state = try activityTable(&r, "state", declaration.state, at: time, calendar: calendar, required: true)!
            var staleDate: Double?
            var relevance = 0.0
            if var options = try r.object("options") {
                if let value = options.value("staleDate") { staleDate = try date(value, "staleDate", &options, at: time, calendar: calendar) }
                relevance = try options.number("relevance") ?? 0
                _ = try options.string("pushType")
                try options.finish()
            }
            return .startActivity(type: name, attributes: attributes, state: state, staleDate: staleDate, relevance: relevance)
        case "push":
            let activity = try activityReference(&r, type: type)
            guard let payload = try r.storeValue("payload") else { throw r.fail("payload", "is missing: push needs the push's payload") }
            let priority = try r.integer("priority") ?? 10
            guard priority == 5 || priority == 10 else { throw r.fail("priority", "must be 5 or 10, got \(priority)") }
            return .push(activity: activity, payload: payload.lua, priority: priority)
        case "activityEvent":
            let activity = try activityReference(&r, type: type)
            guard let name = try r.string("name") else { throw r.fail("name", "is missing: activityEvent needs the event's name") }
            return .activityEvent(activity: activity, name: name, payload: try r.storeValue("payload")?.lua ?? .nil)
        case "endActivity":
            let activity = try activityReference(&r, type: type)
            var state: LuaTable?
            if r.value("state") != nil {
                // The schema is the activity's, known when the event runs; checked then (invalidState).
                guard case .table(let t)? = try r.storeValue("state")?.lua else { throw r.fail("state", "must be an object of the state's fields") }
                state = t
            }
            var dismissal = ActivityManager.Dismissal.standard
            if let value = r.value("dismissal") {
                switch value.kind {
                case .string("default"): dismissal = .standard
                case .string("immediate"): dismissal = .immediate
                default: dismissal = .after(try date(value, "dismissal", &r, at: time, calendar: calendar,
                                                    expected: "\"default\", \"immediate\", an ISO date or a time after the event like \"+30m\""))
                }
            }
            return .endActivity(activity: activity, state: state, dismissal: dismissal)
        default:
            guard let value = try r.boolean("value") else { throw r.fail("value", "is missing: activitiesEnabled needs true or false") }
            return .activitiesEnabled(value)
        }
    }

    /// `activity`: a 0-based index in the order the scenario starts them, or an id.
    private static func activityReference(_ r: inout JSONObjectReader, type: String) throws(LocatedError) -> ScenarioEvent.ActivityReference {
        guard let value = r.value("activity") else {
            throw r.fail("activity", "is missing: \(type) needs the activity (its 0-based index in the order the scenario starts them, or its id)")
        }
        switch value.kind {
        case .integer(let n) where n >= 0: return .index(Int(n))
        case .string(let id) where !id.isEmpty: return .id(id)
        default: throw r.fail("activity", "must be a 0-based index or an activity id, got \(value.jsonText)")
        }
    }

    /// A date: an ISO date, or a time after the event ("+30m", seconds).
    private static func date(_ value: JSONValue, _ key: String, _ r: inout JSONObjectReader, at time: Double, calendar: HostCalendar,
                             expected: String = "an ISO date or a time after the event like \"+30m\"") throws(LocatedError) -> Double {
        if case .string(let text) = value.kind, !text.hasPrefix("+"), text.contains("-") {
            switch ISODate.parse(text, calendar: calendar) {
            case .success(let t): return t
            case .failure(let error): throw r.fail(key, error.message)
            }
        }
        guard let offset = Durations.seconds(value), offset >= 0 else { throw r.fail(key, "must be \(expected), got \(value.jsonText)") }
        return time + offset
    }

    /// The `attributes` or `state` of a startActivity, checked against the
    /// declared schema; `date` fields may be ISO dates or times after the
    /// event ("+30m").
    private static func activityTable(_ r: inout JSONObjectReader, _ key: String, _ schema: ActivitySchema, at time: Double,
                                      calendar: HostCalendar, required: Bool) throws(LocatedError) -> LuaTable? {
        guard var object = try r.object(key) else {
            if required { throw r.fail(key, "is missing: give the \(key) as an object of the schema's fields") }
            return nil
        }
        var table = LuaTable()
        for member in object.members {
            let isDate = schema.fields.contains { $0.name == member.key && $0.type == .date }
            if isDate, case .string = member.value.kind, let v = object.value(member.key) {
                table[LuaString(member.key)] = ClockBinding.date(try date(v, member.key, &object, at: time, calendar: calendar))
            } else if let value = try object.storeValue(member.key) {
                table[LuaString(member.key)] = value.lua
            }
        }
        if let problem = schema.problem(in: .table(table), what: key) { throw r.fail(key, "does not fit the declared schema: \(problem)") }
        return table
    }
}
