import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHost

/// `lunette intent BUNDLE ID [--param name=value]... [--from KIND] [--family F] [--config name=value]... [--json]`
struct IntentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "intent",
        abstract: "Perform an app intent once, from the app or from a widget's button.",
        discussion: """
            Checks the --param values against the intent's declared \
            parameters (rule I1: types, enum values, entities resolved by \
            their query, required values, defaults, unknown names), then runs \
            its perform(params, ctx) under the intent limits on a virtual \
            clock at now. With --from KIND the intent runs from a button or \
            toggle of a KIND widget (--family, --config as for `lunette \
            timeline`): ctx.source is that widget, and when perform succeeds \
            the widget's timeline reloads at once, exempt (rule I2). Store \
            writes are all or nothing. --json prints {"intent","status",\
            "message","traceback","location","limit","performed",\
            "parameters","result","reloads":[{"kind","family","reason",\
            "entry"}]}. See docs/cli.md.
            Exit status: 0 when perform succeeded, 1 when a parameter failed \
            its checks or perform failed, 2 for usage errors.
            """
    )

    @Argument(help: "The bundle directory (bundle.json, main.lua).", completion: .directory)
    var bundle: String

    @Argument(help: "The intent's id.")
    var id: String

    @Option(name: .customLong("param"), help: ArgumentHelp("A parameter value (repeatable).", valueName: "name=value"))
    var params: [String] = []

    @Option(name: .customLong("from"), help: ArgumentHelp("Run it from a button of a widget of this kind.", valueName: "kind"))
    var from: String?

    @Option(help: "The widget family with --from (default: the widget's first).")
    var family: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("A configuration value of the --from widget (repeatable).", valueName: "name=value"))
    var config: [String] = []

    @OptionGroup var storage: StoreOptions

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var host: HostOptions

    func validate() throws {
        if from == nil, family != nil || !config.isEmpty { throw ValidationError("--family and --config go with --from KIND") }
        if let family, WidgetFamily(rawValue: family) == nil {
            throw ValidationError("--family \(family): not a widget family (\(WidgetFamily.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        _ = try parseAssignments(params, flag: "--param")
        _ = try parseAssignments(config, flag: "--config")
    }

    func run() throws {
        let calendar = host.calendar()
        let loaded = try host.load(bundle, calendar: calendar)
        let runtime = WidgetRuntime(bundle: loaded, services: try host.services(of: loaded, store: storage.store, calendar: calendar))
        let engine = TimelineEngine(runtime: runtime)
        let texts = try parseAssignments(params, flag: "--param")
        let performance: IntentPerformance
        var reloads: [IntentOutput.Reload] = []
        do {
            var widget: Int?
            if let from {
                let values = try runtime.parseValues(kind: from, try parseAssignments(config, flag: "--config"))
                let configuration = try runtime.configuration(kind: from, family: family.flatMap(WidgetFamily.init(rawValue:)), values: values)
                widget = engine.addWidget(configuration)
            }
            switch try engine.intents.parameters(id, fromTexts: texts) {
            case .failure(let error):
                performance = .refused(id, error)
            case .success(let values):
                if let widget {
                    let before = engine.instance(widget)!.reloads.count
                    performance = try engine.tap(widget, intent: id, parameters: values)
                    let instance = engine.instance(widget)!
                    for reload in instance.reloads.dropFirst(before) {
                        reloads.append(IntentOutput.Reload(kind: instance.configuration.kind, family: instance.configuration.family,
                                                           reason: reload.reason, entry: instance.timeline?.entries.first?.content))
                    }
                } else {
                    performance = try engine.perform(id, parameters: values)
                }
            }
        } catch let error as IntentError {
            throw ValidationError(error.message)
        } catch let error as ParameterError {
            throw ValidationError(error.message)
        }
        if json {
            FileOutput.standardOutput.write(IntentOutput.json(performance, reloads: reloads) + "\n")
        } else {
            let text = IntentOutput.text(performance, reloads: reloads, width: TerminalWidth.columns())
            (performance.succeeded ? FileOutput.standardOutput : FileOutput.standardError).write(text)
        }
        if !performance.succeeded { throw ExitCode(1) }
    }
}
