import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteCommandLine
import WidgetHost

/// `lunette dev BUNDLE`: the hot-reload loop. `lunette` parses and checks
/// the options (so `lunette dev --help` and usage errors are its own), then
/// replaces itself (`execv`: same process, signals and exit status) with
/// `lunette-dev`, found beside its own executable, which runs the loop and
/// its page. Keeping SwiftNIO and Hummingbird out of `lunette` takes about
/// an eighth off every other command's start (docs/cli.md, "How release
/// binaries are built").
struct DevCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev", abstract: DevHelp.abstract, discussion: DevHelp.discussion)

    @OptionGroup var options: DevOptions

    func run() throws {
        // Beside the running executable, symbolic links resolved (as workers find it).
        let own = URL(fileURLWithPath: BundleWorkers.thisExecutable).resolvingSymlinksInPath()
        let dev = own.deletingLastPathComponent().appendingPathComponent("lunette-dev").path
        // Everything after `dev`, as typed: lunette-dev parses the same options.
        let arguments = [dev] + CommandLine.arguments.dropFirst().drop(while: { $0 != "dev" }).dropFirst()
        let argv = arguments.map { strdup($0) } + [nil]
        execv(dev, argv)
        let reason = String(cString: strerror(errno))
        for p in argv { free(p) }
        throw CLIFailure("lunette dev: cannot start \(dev): \(reason) (lunette-dev is built and installed beside lunette: swift build, scripts/install)")
    }
}
