import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteCommandLine
import WidgetHost

/// `lunette`: run and inspect Lunette widget scripts.
///
/// Every command gives its `commandName`: without one, ArgumentParser derives
/// it with `String(describing:)` of the type, which costs a failed protocol
/// conformance search through all of the binary's conformance records per
/// command, at every start of every subcommand (about 1 ms in all;
/// docs/cli.md, "How release binaries are built").
struct Lunette: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lunette",
        abstract: "Run widget logic written in Lua under an emulated widget system.",
        discussion: """
            Exit status: 0 when everything succeeded, 1 when a script failed, \
            2 for usage errors. The host's own log (what scripts must not see, \
            such as database paths) goes to standard error, from the level in \
            $LUNETTE_LOG_LEVEL (trace, debug, info, notice, warning, error, \
            critical; default warning).
            """,
        version: LunetteVersion.current,
        subcommands: [Eval.self, Store.self, TimelineCommand.self, Simulate.self, Check.self, IntentCommand.self, QueryCommand.self, ControlCommand.self, ActivityCommand.self, DevCommand.self, TestCommand.self, TypesCommand.self, WorkerCommand.self]
    )
}


/// Parses, runs, and maps outcomes to the documented exit statuses:
/// 0 success, 1 a script failed, 2 usage error.
@main
enum Main {
    static func main() {
        let unparsed = Unparsed(CommandLine.arguments)
        if case .version? = unparsed {
            FileOutput.standardOutput.write(Lunette.configuration.version + "\n")
            return
        }
        HostLog.bootstrapFromEnvironment()
        if case .worker(let lockdown)? = unparsed { WorkerCommand.serve(lockdown: lockdown) }
        if case .forkServer? = unparsed { WorkerCommand.serveForks() }
        do {
            var command = try QuickCommandLine.command(CommandLine.arguments) ?? Lunette.parseAsRoot()
            do {
                try command.run()
            } catch let error as ValidationError {
                // Found while running (a value the parser could not judge):
                // the message, without the root command's usage line.
                throw CLIUsageFailure("error: \(error.message)")
            }
        } catch let exit as ExitCode {
            Lunette.exit(withError: exit)
        } catch let failure as CLIFailure {
            FileOutput.standardError.write(failure.description + "\n")
            Lunette.exit(withError: ExitCode(1))
        } catch let failure as CLIUsageFailure {
            FileOutput.standardError.write(failure.description + "\n")
            Lunette.exit(withError: ExitCode(2))
        } catch {
            let code = Lunette.exitCode(for: error)
            if code == .success {
                Lunette.exit(withError: error)  // --help, --version
            }
            if code == .validationFailure || error is ValidationError {
                let message = Lunette.fullMessage(for: error)
                FileOutput.standardError.write(message + "\n")
                Lunette.exit(withError: ExitCode(2))
            }
            Lunette.exit(withError: error)
        }
    }
}

/// The command lines run before ArgumentParser, whose reflection over the
/// command tree is most of a short command's start (its first conformance
/// lookups each scan every record of the binary): each is exact, and every
/// other command line — these with anything more, help, a mode that does
/// not exist — goes through the parser, which answers as before
/// (CLIStartTests checks that the two agree). The plain command lines of
/// `timeline`, `check` and `test` are read without the parser too, into the
/// commands themselves (`QuickCommandLine`).
enum Unparsed {
    /// `lunette --version` alone: the version and a newline on standard
    /// output, status 0, as the parser prints it (1.3 ms of a 4.2 ms start).
    case version
    /// What hosts start workers with: `worker`, `worker --lockdown MODE`,
    /// `worker --lockdown=MODE` (12 M of the 17 M instructions of a
    /// worker's start, and a host with more plugins than idle workers starts
    /// one for most calls).
    case worker(WorkerCommand.Lockdown)
    /// `worker --fork-server`: what `BundleWorkers` starts to fork its
    /// workers from (`WorkerForkServer`).
    case forkServer

    init?(_ arguments: [String]) {
        switch arguments.dropFirst().first {
        case "--version" where arguments.count == 2:
            self = .version
        case "worker":
            if arguments.count == 3 && arguments[2] == "--fork-server" {
                self = .forkServer
                return
            }
            let lockdown: WorkerCommand.Lockdown?
            switch arguments.count {
            case 2: lockdown = .start
            case 3 where arguments[2].hasPrefix("--lockdown="): lockdown = WorkerCommand.Lockdown(rawValue: String(arguments[2].dropFirst("--lockdown=".count)))
            case 4 where arguments[2] == "--lockdown": lockdown = WorkerCommand.Lockdown(rawValue: arguments[3])
            default: lockdown = nil
            }
            guard let lockdown else { return nil }
            self = .worker(lockdown)
        default:
            return nil
        }
    }
}
