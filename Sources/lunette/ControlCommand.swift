import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHost

/// `lunette control BUNDLE KIND [--tap] [--json]`
struct ControlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "control",
        abstract: "Read a Control Center control's value, or tap it.",
        discussion: """
            Adds the control, which reads its value(ctx) (rule C2, under the \
            control limits: soft 1 s, hard 5 s), and prints it. With --tap: a \
            toggle flips at once, its action intent performs with \
            params.value = the new value (C3), a button's action performs, \
            and the value is read again and printed (a failed action leaves \
            the value read after it). --json prints {"kind","type","value",\
            "optimistic","status","message","traceback","location","limit",\
            "performed":{"intent","status","message","traceback","location",\
            "limit","result"}|null}; status and message are the last value \
            read's. See docs/cli.md.
            Exit status: 0 when the value was read (and the action \
            performed), 1 when either failed, 2 for usage errors.
            """
    )

    @Argument(help: "The bundle directory (bundle.json, main.lua).", completion: .directory)
    var bundle: String

    @Argument(help: "The control's kind.")
    var kind: String

    @Flag(help: "Tap the control: perform its action, then read its value again.")
    var tap = false

    @OptionGroup var storage: StoreOptions

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var host: HostOptions

    func run() throws {
        let calendar = host.calendar()
        let loaded = try host.load(bundle, calendar: calendar)
        let runtime = WidgetRuntime(bundle: loaded, services: try host.services(of: loaded, store: storage.store, calendar: calendar))
        let center = ControlCenter(engine: TimelineEngine(runtime: runtime))
        let record: ControlRecord
        var tapped: ControlTap?
        do {
            record = try center.add(kind)
            if tap { tapped = try center.tap(kind) }
        } catch {
            throw ValidationError(error.message)
        }
        let final = center.control(kind) ?? record
        let failed = final.lastReadFailure != nil || tapped?.performance?.succeeded == false
        if json {
            FileOutput.standardOutput.write(ControlOutput.json(final, tap: tapped) + "\n")
        } else {
            (failed ? FileOutput.standardError : FileOutput.standardOutput).write(ControlOutput.text(final, tap: tapped))
        }
        if failed { throw ExitCode(1) }
    }
}
