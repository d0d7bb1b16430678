import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import WidgetHost

/// `lunette query BUNDLE ID [--ids a,b] [--json]`
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Ask an entity query for its suggestions, or resolve ids.",
        discussion: """
            Runs the query's suggested() (rule I4), or with --ids its \
            entities(ids) (its suggestions with those ids when it declares \
            no entities function), under the intent limits, and checks the \
            result: an array of { id = string, title = string, ... }. --json \
            prints {"query","status","message","traceback","location",\
            "limit","entities":[{"id","title",...}]}. See docs/cli.md.
            Exit status: 0 when the query answered, 1 when it failed or its \
            result is not well formed, 2 for usage errors.
            """
    )

    @Argument(help: "The bundle directory (bundle.json, main.lua).", completion: .directory)
    var bundle: String

    @Argument(help: "The query's id.")
    var id: String

    @Option(help: ArgumentHelp("Entity ids to resolve, comma-separated.", valueName: "a,b"))
    var ids: String?

    @OptionGroup var storage: StoreOptions

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var host: HostOptions

    func run() throws {
        let calendar = host.calendar()
        let loaded = try host.load(bundle, calendar: calendar)
        let intents = IntentRuntime(bundle: loaded, services: try host.services(of: loaded, store: storage.store, calendar: calendar))
        let answer: QueryAnswer
        do {
            if let ids {
                answer = try intents.entities(id, ids: ids.split(separator: ",").map { String($0.trimmingWhitespace()) })
            } else {
                answer = try intents.suggested(id)
            }
        } catch {
            throw ValidationError(error.message)
        }
        if json {
            FileOutput.standardOutput.write(QueryOutput.json(answer) + "\n")
        } else {
            (answer.outcome.succeeded ? FileOutput.standardOutput : FileOutput.standardError).write(QueryOutput.text(answer))
        }
        if !answer.outcome.succeeded { throw ExitCode(1) }
    }
}
