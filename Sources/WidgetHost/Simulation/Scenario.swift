#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
    /// bundle of `runtime`; `start` is used when the file has none. Every
    /// problem is reported, each with the file, line and column of what it
    /// is about.
    public static func load(_ path: String, runtime: WidgetRuntime, start defaultStart: Double) throws(LocatedErrors) -> Scenario {
        let file = try JSONFile.load(path)
        var reader = try JSONObjectReader.topLevel(of: file)
        var calendar = runtime.services.calendar
        var zone = reader.string("timezone")
        if let name = zone {
            if let c = HostCalendar(timeZoneNamed: name) { calendar = c } else {
                reader.report("timezone", "is not a known IANA time zone: \"\(name)\"")
                zone = nil
            }
        }
        var start = defaultStart
        if let text = reader.string("start") {
            switch ISODate.parse(text, calendar: calendar) {
            case .success(let t): start = t
            case .failure(let error): reader.report("start", error.message)
            }
        }
        var duration = 86_400.0
        if let value = reader.value("duration") {
            if let d = Durations.seconds(value), d > 0 { duration = d } else {
                reader.report("duration", "must be a positive duration like \"24h\", \"90m\" or seconds, got \(value.jsonText)")
            }
        }
        var policy = runtime.services.policy
        if var overrides = reader.object("policy") { policy = policy.applying(&overrides) }
        var widgets: [WidgetConfiguration] = []
        for (i, item) in (reader.array("widgets") ?? []).enumerated() {
            if let widget = widget(item, at: "widgets[\(i + 1)]", file: file, runtime: runtime) { widgets.append(widget) }
        }
        let declaredControls = runtime.bundle.declarations.controls.map(\.kind)
        var controls: [String] = []
        for item in reader.strings("controls") ?? [] {
            guard declaredControls.contains(item.text) else {
                file.report("'controls' names \"\(item.text)\", which is not a control of the bundle \(NearestName.hint(for: item.text, among: declaredControls, label: "controls"))", at: item.location)
                continue
            }
            controls.append(item.text)
        }
        var events: [ScenarioEvent] = []
        var eventLocations: [JSONLocation] = []
        for (i, item) in (reader.array("events") ?? []).enumerated() {
            if let event = event(item, index: i + 1, file: file, runtime: runtime, start: start, calendar: calendar) {
                events.append(event)
                eventLocations.append(item.location)
            }
        }
        reader.finish()
        // What follows judges the scenario as a whole: only once every part of it was read.
        try file.check()
        let hasSomething = !widgets.isEmpty || !controls.isEmpty || events.contains { event in
            switch event.kind {
            case .widgetAdded, .startActivity: return true
            default: return false
            }
        }
        if !hasSomething {
            file.report("nothing to simulate: list widgets in \"widgets\" (or add them with widgetAdded events), controls in \"controls\", or start an activity with a startActivity event")
        }
        let order = events.indices.sorted { (events[$0].at, $0) < (events[$1].at, $1) }
        // An activity index names the n-th startActivity in time order; it must come before the event.
        var started = 0
        for i in order {
            switch events[i].kind {
            case .startActivity: started += 1
            case .push(.index(let n), _, _), .activityEvent(.index(let n), _, _), .endActivity(.index(let n), _, _):
                if n >= started {
                    file.report("'events[\(i + 1)].activity' is \(n), but only \(started) startActivity event(s) come before it (activities count from 0 in the order the scenario starts them)",
                                at: eventLocations[i])
                }
            default: break
            }
        }
        try file.check()
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

    /// A widget of "widgets"; nil when it has a problem (reported).
    private static func widget(_ value: JSONValue, at path: String, file: JSONFile, runtime: WidgetRuntime) -> WidgetConfiguration? {
        guard var r = JSONObjectReader(file, value, prefix: path + ".") else { return nil }
        let problems = file.problems.count
        let widget = readWidget(&r, path: path, runtime: runtime)
        r.finish()
        return file.problems.count == problems ? widget : nil
    }

    /// A widget's `kind`, `family` and `config`, checked against the bundle:
    /// the kind and family first (at the kind), then each configuration
    /// value on its own (at that value), so every bad value is reported.
    private static func readWidget(_ r: inout JSONObjectReader, path: String, runtime: WidgetRuntime) -> WidgetConfiguration? {
        let kind = r.required("kind", r.string("kind"), "name the widget kind")
        let family = readFamily(&r)
        let values = config(&r) ?? []
        guard let kind else { return nil }
        do { _ = try runtime.configuration(kind: kind, family: family) } catch {
            r.report("\(path): \(error.message)", at: "kind")
            return nil
        }
        var valid = true
        for entry in values {
            do { _ = try runtime.configuration(kind: kind, family: family, values: [entry.key: entry.value]) } catch {
                r.file.report("\(path): \(error.message)", at: entry.location)
                valid = false
            }
        }
        guard valid else { return nil }
        do { return try runtime.configuration(kind: kind, family: family, values: dictionary(values)) } catch {
            r.report("\(path): \(error.message)", at: "kind")
            return nil
        }
    }

    /// The `config` of a widget: parameter values as given, each with where it is.
    private static func config(_ r: inout JSONObjectReader) -> [(key: String, value: LuaValue, location: JSONLocation)]? {
        guard var object = r.object("config") else { return nil }
        var values: [(key: String, value: LuaValue, location: JSONLocation)] = []
        for member in object.members {
            if let value = object.storeValue(member.key) { values.append((member.key, value.lua, member.value.location)) }
        }
        return values
    }

    private static func dictionary(_ values: [(key: String, value: LuaValue, location: JSONLocation)]) -> [String: LuaValue] {
        Dictionary(values.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The `intent` of a tap or perform: declared, with a perform.
    private static func intentID(_ r: inout JSONObjectReader, type: String, runtime: WidgetRuntime) -> String? {
        guard let id = r.required("intent", r.string("intent"), "\(type) needs the intent's id") else { return nil }
        guard let intent = runtime.bundle.declarations.intent(id) else {
            let ids = runtime.bundle.declarations.intents.filter(\.hasPerform).map(\.id)
            r.report("intent", "is not an intent of the bundle: \"\(id)\" \(NearestName.hint(for: id, among: ids, label: "intents"))")
            return nil
        }
        guard intent.hasPerform else {
            r.report("intent", "\"\(id)\" has no perform function (a configuration intent?)")
            return nil
        }
        return id
    }

    /// The `params` of a tap or perform, as given (checked when the event runs, rule I1).
    private static func params(_ r: inout JSONObjectReader) -> [String: LuaValue] {
        guard var object = r.object("params") else { return [:] }
        var values: [String: LuaValue] = [:]
        for entry in object.storeValues() { values[entry.key] = entry.value.lua }
        return values
    }

    /// The `kind` of a control event, a control of the bundle.
    private static func controlKind(_ r: inout JSONObjectReader, type: String, required: Bool, runtime: WidgetRuntime) -> String? {
        guard let kind = r.string("kind") else {
            if required { _ = r.required("kind", nil as String?, "\(type) needs the control's kind") }
            return nil
        }
        let kinds = runtime.bundle.declarations.controls.map(\.kind)
        guard kinds.contains(kind) else {
            r.report("kind", "is not a control of the bundle: \"\(kind)\" \(NearestName.hint(for: kind, among: kinds, label: "controls"))")
            return nil
        }
        return kind
    }

    private static func readFamily(_ r: inout JSONObjectReader) -> WidgetFamily? {
        guard let name = r.string("family") else { return nil }
        guard let family = WidgetFamily(rawValue: name) else {
            r.report("family", "is not a family: \"\(name)\" \(NearestName.hint(for: name, among: WidgetFamily.allCases.map(\.rawValue), label: "families"))")
            return nil
        }
        return family
    }

    /// An event of "events"; nil when it has a problem (reported). Every
    /// field is read, so that all of an event's problems are found.
    private static func event(_ value: JSONValue, index: Int, file: JSONFile, runtime: WidgetRuntime,
                              start: Double, calendar: HostCalendar) -> ScenarioEvent? {
        let path = "events[\(index)]"
        guard var r = JSONObjectReader(file, value, prefix: path + ".") else { return nil }
        let problems = file.problems.count
        var time: Double?
        if let at = r.value("at") {
            switch at.kind {
            case .string(let text) where !text.hasPrefix("+") && text.contains("-"):
                switch ISODate.parse(text, calendar: calendar) {
                case .success(let t): time = t
                case .failure(let error): r.report("at", error.message)
                }
            default:
                if let offset = Durations.seconds(at), offset >= 0 { time = start + offset } else {
                    r.report("at", "must be an ISO date or a time from the start (\"+2h\", \"90m\", seconds), got \(at.jsonText)")
                }
            }
        } else {
            r.report("'\(path)' needs \"at\" (an ISO date, or a time from the start like \"+2h\")")
        }
        let type = r.required("type", r.string("type"), "an event needs a type (types: \(ScenarioEvent.typeNames))")
        var kind: ScenarioEvent.Kind?
        func widgetKind(_ required: Bool) -> String? {
            guard let k = r.string("kind") else {
                if required { _ = r.required("kind", nil as String?, "\(type ?? "") needs the widget kind") }
                return nil
            }
            guard runtime.bundle.declarations.widget(k) != nil else {
                let kinds = runtime.bundle.declarations.widgets.map(\.kind)
                r.report("kind", "is not a widget kind of the bundle: \"\(k)\" \(NearestName.hint(for: k, among: kinds, label: "kinds"))")
                return nil
            }
            return k
        }
        switch type {
        case nil:
            r.accept(ScenarioEvent.fieldNames)
        case "appForeground": kind = .appForeground(kind: widgetKind(false))
        case "reloadTimelines": kind = widgetKind(true).map { .reloadTimelines(kind: $0) }
        case "reloadAll": kind = .reloadAll
        case "localeChange": kind = .localeChange
        case "significantTimeChange": kind = .significantTimeChange
        case "timeZoneChange":
            if let zone = r.required("timezone", r.string("timezone"), "timeZoneChange needs the new IANA zone") {
                if HostCalendar(timeZoneNamed: zone) != nil { kind = .timeZoneChange(zone) } else {
                    r.report("timezone", "is not a known IANA time zone: \"\(zone)\"")
                }
            }
        case "storeSet":
            var group = r.required("group", r.string("group"), "storeSet needs the app group")
            if let g = group, !runtime.bundle.manifest.appGroups.contains(g) {
                r.report("group", "is not an app group of the bundle: \"\(g)\" \(NearestName.hint(for: g, among: runtime.bundle.manifest.appGroups, label: "appGroups"))")
                group = nil
            }
            var key = r.required("key", r.string("key"), "storeSet needs the key")
            if let k = key, let problem = StoreText.keyProblem(k) {
                r.report("key", "is not a valid key: \(problem)")
                key = nil
            }
            let value = r.storeValue("value")
            if let group, let key { kind = .storeSet(group: group, key: key, value: value) }
        case "widgetAdded":
            kind = readWidget(&r, path: path, runtime: runtime).map { .widgetAdded($0) }
        case "widgetRemoved":
            let widget = widgetKind(true)
            let family = readFamily(&r)
            kind = widget.map { .widgetRemoved(kind: $0, family: family) }
        case "tap":
            let widget = widgetKind(true)
            let family = readFamily(&r)
            let config = config(&r).map(dictionary)
            let intent = intentID(&r, type: "tap", runtime: runtime)
            let params = params(&r)
            if let widget, let intent { kind = .tap(kind: widget, family: family, config: config, intent: intent, params: params) }
        case "perform":
            let intent = intentID(&r, type: "perform", runtime: runtime)
            let params = params(&r)
            kind = intent.map { .perform(intent: $0, params: params) }
        case "controlAdded", "controlTap":
            let control = controlKind(&r, type: type!, required: true, runtime: runtime)
            kind = control.map { type == "controlAdded" ? .controlAdded($0) : .controlTap($0) }
        case "reloadControls":
            kind = .reloadControls(controlKind(&r, type: "reloadControls", required: false, runtime: runtime))
        case "startActivity", "push", "activityEvent", "endActivity", "activitiesEnabled":
            kind = activityEvent(&r, type: type!, at: time ?? start, runtime: runtime, calendar: calendar)
        case let name?:
            r.report("type", "is not an event type: \"\(name)\" \(NearestName.hint(for: name, among: ScenarioEvent.types, label: "types"))")
            r.accept(ScenarioEvent.fieldNames)
        }
        r.finish()
        guard file.problems.count == problems, let time, let kind else { return nil }
        return ScenarioEvent(at: time, kind: kind)
    }

    // MARK: Live Activities

    private static func activityEvent(_ r: inout JSONObjectReader, type: String, at time: Double, runtime: WidgetRuntime,
                                      calendar: HostCalendar) -> ScenarioEvent.Kind? {
        let declared = runtime.bundle.declarations.activities
        switch type {
        case "startActivity":
            var declaration: ActivityDeclaration?
            if let name = r.required("activityType", r.string("activityType"), "startActivity needs the activity's type") {
                declaration = declared.first { $0.type == name }
                if declaration == nil {
                    r.report("activityType", "is not an activity type of the bundle: \"\(name)\" \(NearestName.hint(for: name, among: declared.map(\.type), label: "types"))")
                }
            }
            let attributes = activityTable(&r, "attributes", declaration?.attributes, at: time, calendar: calendar)
            let state = activityTable(&r, "state", declaration?.state, at: time, calendar: calendar)
            var staleDate: Double?
            var relevance = 0.0
            if var options = r.object("options") {
                if let value = options.value("staleDate") { staleDate = date(value, "staleDate", &options, at: time, calendar: calendar) }
                relevance = options.number("relevance") ?? 0
                _ = options.string("pushType")
                options.finish()
            }
            guard let declaration, let attributes, let state else { return nil }
            return .startActivity(type: declaration.type, attributes: attributes, state: state, staleDate: staleDate, relevance: relevance)
        case "push":
            let activity = activityReference(&r, type: type)
            let payload = r.required("payload", r.storeValue("payload"), "push needs the push's payload")
            var priority = r.integer("priority") ?? 10
            if priority != 5 && priority != 10 {
                r.report("priority", "must be 5 or 10, got \(priority)")
                priority = 10
            }
            guard let activity, let payload else { return nil }
            return .push(activity: activity, payload: payload.lua, priority: priority)
        case "activityEvent":
            let activity = activityReference(&r, type: type)
            let name = r.required("name", r.string("name"), "activityEvent needs the event's name")
            let payload = r.storeValue("payload")?.lua ?? .nil
            guard let activity, let name else { return nil }
            return .activityEvent(activity: activity, name: name, payload: payload)
        case "endActivity":
            let activity = activityReference(&r, type: type)
            var state: LuaTable?
            if r.isSet("state") {
                // The schema is the activity's, known when the event runs; checked then (invalidState).
                switch r.storeValue("state")?.lua {
                case .table(let t)?: state = t
                case nil: break   // reported
                default: r.report("state", "must be an object of the state's fields")
                }
            }
            var dismissal = ActivityManager.Dismissal.standard
            if let value = r.value("dismissal") {
                switch value.kind {
                case .string("default"): dismissal = .standard
                case .string("immediate"): dismissal = .immediate
                default:
                    let at = date(value, "dismissal", &r, at: time, calendar: calendar,
                                  expected: "\"default\", \"immediate\", an ISO date or a time after the event like \"+30m\"")
                    dismissal = at.map { .after($0) } ?? .standard
                }
            }
            return activity.map { .endActivity(activity: $0, state: state, dismissal: dismissal) }
        default:
            return r.required("value", r.boolean("value"), "activitiesEnabled needs true or false").map { .activitiesEnabled($0) }
        }
    }

    /// `activity`: a 0-based index in the order the scenario starts them, or an id.
    private static func activityReference(_ r: inout JSONObjectReader, type: String) -> ScenarioEvent.ActivityReference? {
        guard let value = r.value("activity") else {
            r.report("activity", "is missing: \(type) needs the activity (its 0-based index in the order the scenario starts them, or its id)")
            return nil
        }
        switch value.kind {
        case .integer(let n) where n >= 0: return .index(Int(n))
        case .string(let id) where !id.isEmpty: return .id(id)
        default:
            r.report("activity", "must be a 0-based index or an activity id, got \(value.jsonText)")
            return nil
        }
    }

    /// A date: an ISO date, or a time after the event ("+30m", seconds).
    private static func date(_ value: JSONValue, _ key: String, _ r: inout JSONObjectReader, at time: Double, calendar: HostCalendar,
                             expected: String = "an ISO date or a time after the event like \"+30m\"") -> Double? {
        if case .string(let text) = value.kind, !text.hasPrefix("+"), text.contains("-") {
            switch ISODate.parse(text, calendar: calendar) {
            case .success(let t): return t
            case .failure(let error): r.report(key, error.message); return nil
            }
        }
        guard let offset = Durations.seconds(value), offset >= 0 else {
            r.report(key, "must be \(expected), got \(value.jsonText)")
            return nil
        }
        return time + offset
    }

    /// The `attributes` or `state` of a startActivity, checked against the
    /// declared schema (when the activity type is known); `date` fields may
    /// be ISO dates or times after the event ("+30m").
    private static func activityTable(_ r: inout JSONObjectReader, _ key: String, _ schema: ActivitySchema?, at time: Double,
                                      calendar: HostCalendar) -> LuaTable? {
        guard var object = r.object(key) else {
            _ = r.required(key, nil as LuaTable?, "give the \(key) as an object of the schema's fields")
            return nil
        }
        let problems = r.file.problems.count
        var table = LuaTable()
        for member in object.members {
            let isDate = schema?.fields.contains { $0.name == member.key && $0.type == .date } ?? false
            if isDate, case .string = member.value.kind, let v = object.value(member.key) {
                if let t = date(v, member.key, &object, at: time, calendar: calendar) { table[LuaString(member.key)] = ClockBinding.date(t) }
            } else if let value = object.storeValue(member.key) {
                table[LuaString(member.key)] = value.lua
            }
        }
        // A value left out for its own problem is not also a field missing from the schema.
        guard let schema, r.file.problems.count == problems else { return nil }
        if let problem = schema.problem(in: .table(table), what: key) {
            r.report(key, "does not fit the declared schema: \(problem)")
            return nil
        }
        return table
    }
}
