import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// `lunette dev`'s help and options, shared by the two executables that
/// parse them: `lunette`, which lists `dev` among its commands, checks its
/// options and then becomes `lunette-dev` (`DevCommand`), and `lunette-dev`,
/// which runs the loop and its page. The loop lives in an executable of its
/// own so that every other command starts without the page's HTTP server
/// (SwiftNIO and Hummingbird) linked in (docs/cli.md, "How release binaries
/// are built").
public enum DevHelp {
    public static let abstract = "Run a bundle and reload it on every save (developer mode: no budget, no floor)."
    public static let discussion = """
        Puts the bundle's widgets (the scenario's, or one of each kind) and controls on \
        screen, then watches every file of the bundle. On each save the new version is \
        loaded and checked in fresh states (its declarations, one run of each widget's \
        placeholder and timeline, each control's value); if it passes it is swapped in and \
        every widget's timeline and every control's value run again, and a line per widget \
        says what changed. If it fails, the error is printed with file:line and traceback, \
        and the last good version goes on running. Any number of failing saves are fine. \
        The store (and Live Activities) persist across reloads and runs, in the dev store \
        printed at start. A page on 127.0.0.1 (--port, default 4800) shows every widget's \
        timeline, the entry shown now, controls (with buttons), activities, the last error \
        and recent logs, updated on every change; it can step the clock ahead. Ctrl-C ends it.
        """
}

/// The options of `lunette dev BUNDLE`.
public struct DevOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("The bundle directory.", valueName: "bundle"))
    public var bundle: String

    @Option(help: ArgumentHelp("A scenario file whose widgets and controls to show (its events are not played).", valueName: "file"))
    public var scenario: String?

    @Option(name: .customLong("store-dir"), help: ArgumentHelp("The dev store (default ~/.lunette/dev/<bundle folder name>).", valueName: "dir"))
    public var storeDir: String?

    @Flag(help: "Poll the files instead of using inotify (for file systems that send no events).")
    public var polling = false

    @Option(help: ArgumentHelp("The page's port on 127.0.0.1 (0: any free one).", valueName: "n"))
    public var port = 4800

    @Flag(name: .customLong("no-page"), help: "Serve no page: the loop in the terminal only.")
    public var noPage = false

    @Option(help: ArgumentHelp("Stop after this many seconds (for scripts and tests; default: until Ctrl-C).", valueName: "seconds"))
    public var seconds: Double?

    public init() {}

    public func validate() throws {
        guard FileKind(atPath: bundle) == .directory else {
            throw ValidationError("\(bundle): no such bundle directory")
        }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be positive, not \(seconds)") }
        if !(0...65535).contains(port) { throw ValidationError("--port must be 0…65535, not \(port)") }
    }
}
