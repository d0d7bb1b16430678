import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHost

/// `lunette activity BUNDLE start|list|update|push|event|end …`
struct ActivityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity",
        abstract: "Start, update, push to, signal, end and list a bundle's Live Activities.",
        usage: """
            lunette activity <bundle> start <type> --attributes <json> --state <json> [--stale <date>] [--relevance <n>]
            lunette activity <bundle> list [--type <type>] [--all]
            lunette activity <bundle> update <id> --state <json> [--stale <date>] [--relevance <n>]
            lunette activity <bundle> push <id> --payload <json> [--priority 5|10]
            lunette activity <bundle> event <id> <name> [--payload <json>]
            lunette activity <bundle> end <id> [--state <json>] [--dismissal default|immediate|<date>]
            """,
        discussion: """
            Acts as the app in the foreground on the bundle's activities, \
            which live in its first app group's store (--store-dir), shared \
            with the app, its scripts and other lunette processes. Each \
            command first runs what is due (throttled pushes whose slot \
            freed, ticks, stale dates). A push or event runs the activity's \
            updater(activity, event) under L2. Dates are ISO 8601 or a time \
            from now ("+30m"); `date` fields of --attributes and --state \
            take either too. --json prints an activity as {"id","type",\
            "state","attributes","content":{"state","staleDate"},\
            "relevance","started","ended","dismissAt","pushes"} (list: an \
            array; push and event add "updater":[{"activity","at","kind",\
            "status","message"}]); a refusal as {"error","message"}. See \
            docs/activities.md.
            Exit status: 0 on success; 1 when ActivityKit would refuse (the \
            error's name first: denied, attributesTooLarge, \
            targetMaximumExceeded, unknownType, invalidState), when the \
            activity cannot take it (A8), or when the updater of this push \
            or event failed; 2 for usage errors.
            """
    )

    enum Verb: String, ExpressibleByArgument, CaseIterable {
        case start, list, update, push, event, end
    }

    @Argument(help: "The bundle directory (bundle.json, main.lua).", completion: .directory)
    var bundle: String

    @Argument(help: "What to do: start, list, update, push, event or end.")
    var verb: Verb

    @Argument(help: "start: the activity type; update, push, end: its id; event: its id and the event's name.")
    var operands: [String] = []

    @Option(help: ArgumentHelp("start: the attributes, a JSON object.", valueName: "json"))
    var attributes: String?

    @Option(help: ArgumentHelp("start, update, end: the content state, a JSON object.", valueName: "json"))
    var state: String?

    @Option(help: ArgumentHelp("start, update: the stale date.", valueName: "date"))
    var stale: String?

    @Option(help: ArgumentHelp("start, update: the relevance score (A9).", valueName: "n"))
    var relevance: Double?

    @Option(help: ArgumentHelp("push, event: the payload, any JSON value.", valueName: "json"))
    var payload: String?

    @Option(help: ArgumentHelp("push: 10 (counted against the budget, the default) or 5 (not counted).", valueName: "5|10"))
    var priority: Int = 10

    @Option(help: ArgumentHelp("end: default (up to 4 h), immediate, or a date.", valueName: "when"))
    var dismissal: String?

    @Option(help: ArgumentHelp("list: only activities of this type.", valueName: "type"))
    var type: String?

    @Flag(help: "list: dismissed activities too.")
    var all = false

    @OptionGroup var storage: StoreOptions

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var host: HostOptions

    /// The operands each verb takes, and the options it allows.
    private var shape: (operands: [String], options: [(String, Bool)]) {
        let given: [(String, Bool)] = [("--attributes", attributes != nil), ("--state", state != nil), ("--stale", stale != nil),
                                      ("--relevance", relevance != nil), ("--payload", payload != nil), ("--priority", priority != 10),
                                      ("--dismissal", dismissal != nil), ("--type", type != nil), ("--all", all)]
        let allowed: Set<String>
        let operands: [String]
        switch verb {
        case .start: operands = ["type"]; allowed = ["--attributes", "--state", "--stale", "--relevance"]
        case .list: operands = []; allowed = ["--type", "--all"]
        case .update: operands = ["id"]; allowed = ["--state", "--stale", "--relevance"]
        case .push: operands = ["id"]; allowed = ["--payload", "--priority"]
        case .event: operands = ["id", "name"]; allowed = ["--payload"]
        case .end: operands = ["id"]; allowed = ["--state", "--dismissal"]
        }
        return (operands, given.filter { $0.1 && !allowed.contains($0.0) })
    }

    func validate() throws {
        let (names, stray) = shape
        guard operands.count == names.count else {
            throw ValidationError("activity \(verb.rawValue) takes \(names.isEmpty ? "no operands" : names.map { "<\($0)>" }.joined(separator: " ")), got \(operands.isEmpty ? "none" : operands.joined(separator: " "))")
        }
        if let (flag, _) = stray.first { throw ValidationError("\(flag) does not go with activity \(verb.rawValue)") }
        if verb == .start, attributes == nil || state == nil { throw ValidationError("activity start needs --attributes and --state (JSON objects)") }
        if verb == .update, state == nil { throw ValidationError("activity update needs --state (a JSON object)") }
        if verb == .push, payload == nil { throw ValidationError("activity push needs --payload (JSON)") }
        if priority != 5 && priority != 10 { throw ValidationError("--priority must be 5 or 10, not \(priority)") }
    }

    func run() throws {
        let calendar = host.calendar()
        let loaded = try host.load(bundle, calendar: calendar)
        guard !loaded.declarations.activities.isEmpty else { throw CLIFailure("error: bundle \(loaded.manifest.id) declares no activity { }") }
        let services = try host.services(of: loaded, store: storage.store, calendar: calendar)
        do throws(ActivityError) {
            let live = try LiveActivities(bundle: loaded, services: services)
            try live.manager.withSource("cli") { () throws(ActivityError) in try perform(live, calendar: calendar) }
        } catch {
            if json { FileOutput.standardOutput.write(ActivityOutput.json(error) + "\n") }
            else { FileOutput.standardError.write("error: \(error.message)\n") }
            throw ExitCode(1)
        }
    }

    private func perform(_ live: LiveActivities, calendar: HostCalendar) throws(ActivityError) {
        let manager = live.manager
        let now = manager.clock.now()
        func date(_ text: String?, _ flag: String) throws(ActivityError) -> Double? {
            guard let text else { return nil }
            switch Durations.instant(text, after: now, calendar: calendar) {
            case .success(let t): return t
            case .failure(let error): throw ActivityError(refusal: nil, message: "\(flag): \(error.message)")
            }
        }
        let out = FileOutput.standardOutput
        let updaters = live.updaters
        // What was due runs first; its failures are reported, and do not decide the exit status.
        let first = updaters.runs.count
        try updaters.runDue()
        for run in updaters.runs[first...] {
            if let diagnostic = run.diagnostic {
                FileOutput.standardError.write("warning: the updater of \(run.activity) (\(run.kind) at \(ISODate.format(run.at))) failed: \(diagnostic.text)\n")
            }
        }
        func show(_ record: ActivityRecord, runs: ArraySlice<UpdaterRun> = []) {
            guard json else {
                out.write(ActivityOutput.text(record, at: now))
                for run in runs {
                    if let diagnostic = run.diagnostic {
                        FileOutput.standardError.write("the updater of \(run.activity) (\(run.kind)) failed: \(diagnostic.text)\n")
                    }
                }
                return
            }
            out.write(ActivityOutput.json(record, at: now, extra: verb != .push && verb != .event ? nil : { o in
                o.key("updater")
                o.array(Array(runs)) { run in
                    o.object {
                        o.field("activity", string: run.activity)
                        o.field("at", number: run.at)
                        o.field("kind", string: run.kind)
                        o.field("status", string: (run.diagnostic?.kind ?? .ok).rawValue)
                        o.field("message", string: run.diagnostic?.message)
                    }
                }
            }) + "\n")
        }
        func record(_ id: String) throws(ActivityError) -> ActivityRecord {
            guard let record = try manager.get(id) else { throw ActivityError(refusal: nil, message: "no activity '\(id)' in bundle \(manager.bundleID)") }
            return record
        }
        switch verb {
        case .start:
            let type = operands[0]
            let attributes = try live.table(json: self.attributes!, what: "attributes", type: type)
            let state = try live.table(json: self.state!, what: "state", type: type)
            let started = try manager.request(type: type, attributes: attributes, state: state, staleDate: try date(stale, "--stale"),
                                              relevance: relevance ?? 0, from: .app).get()
            show(started)
        case .list:
            let records = all ? try manager.all().filter { type == nil || $0.type == type } : try manager.list(type: type)
            out.write(json ? ActivityOutput.json(records, at: now) + "\n" : ActivityOutput.text(records, at: now, width: TerminalWidth.columns()))
        case .update:
            let id = operands[0]
            let state = try live.table(json: self.state!, what: "state", type: try record(id).type)
            show(try manager.update(id, state: state, staleDate: try date(stale, "--stale"), relevance: relevance))
        case .push:
            let id = operands[0]
            let before = updaters.runs.count
            let push = try updaters.push(id, payload: try LiveActivities.payload(json: payload!), priority: priority)
            let runs = updaters.runs[before...]
            if !json {
                out.write(ActivityOutput.text(push: push, of: id, budget: manager.pushesPerHour,
                                              nextDelivery: push.isWaiting ? try manager.expectedDeliveries(of: id).last : nil))
            }
            show(try record(id), runs: runs)
            // This push's own run: its updater ran at its delivery.
            if runs.contains(where: { $0.activity == id && $0.kind == "push" && $0.at == push.deliveredAt && $0.diagnostic != nil }) {
                throw ActivityError(refusal: nil, message: "the updater of activity '\(id)' failed on this push")
            }
        case .event:
            let id = operands[0]
            let before = updaters.runs.count
            try updaters.signal(id, name: operands[1], payload: try payload.map { (text) throws(ActivityError) in try LiveActivities.payload(json: text) } ?? .nil)
            let runs = updaters.runs[before...]
            show(try record(id), runs: runs)
            if let own = runs.last(where: { $0.activity == id && $0.kind == "event" }), own.diagnostic != nil {
                throw ActivityError(refusal: nil, message: "the updater of activity '\(id)' failed on event '\(operands[1])'")
            }
        case .end:
            let id = operands[0]
            let state = try self.state.map { (text) throws(ActivityError) in try live.table(json: text, what: "state", type: try record(id).type) }
            var how = ActivityManager.Dismissal.standard
            switch dismissal {
            case nil, "default": break
            case "immediate": how = .immediate
            case let text?:
                guard case .success(let t) = Durations.instant(text, after: now, calendar: calendar) else {
                    throw ActivityError(refusal: nil, message: "--dismissal: expected default, immediate, an ISO 8601 date or a time from now like \"+30m\", got \"\(text)\"")
                }
                how = .after(t)
            }
            show(try manager.finish(id, state: state, dismissal: how))
        }
    }
}
