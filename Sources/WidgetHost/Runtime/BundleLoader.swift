#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox

/// Loading a bundle: its files are read (Bundles/), then main.lua runs in a
/// sandbox of the `.load` role to record and check its declarations.
extension ScriptBundle {
    /// Loads and checks the bundle at `path`. Errors: `LocatedErrors`, one
    /// per problem found (all declaration problems are reported together).
    /// With `grants` (a plugin host's), main.lua runs with only the
    /// services the bundle asks for and is granted, and a bundle that asks
    /// for more than `grants`, or declares Live Activities without asking
    /// for them, is refused (`CapabilityCheck`).
    public static func load(_ path: String, calendar: HostCalendar = .fromEnvironment(), grants: Set<String>? = nil) throws(LocatedErrors) -> ScriptBundle {
        try load(path, calendar: calendar, grantsFor: { _ in grants })
    }

    /// The same, with the grants chosen from the bundle's own bundle.json
    /// (a plugin policy's `grants(for:)`), read once.
    ///
    /// With `workers` (process isolation), main.lua first runs in a worker
    /// process: a bundle whose load crashes it, or does not finish, is
    /// refused (status `crashed` or `timeout`) before it runs in this process.
    public static func load(_ path: String, calendar: HostCalendar = .fromEnvironment(),
                            grantsFor: (BundleManifest) -> Set<String>?, workers: BundleWorkers? = nil) throws(LocatedErrors) -> ScriptBundle {
        let root = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let kind = FileKind(atPath: root) else {
            throw LocatedErrors([LocatedError(file: root, message: "no such bundle directory")])
        }
        guard kind == .directory else {
            throw LocatedErrors([LocatedError(file: root, message: "a bundle is a directory with bundle.json and main.lua")])
        }
        let (manifest, manifestBytes) = try BundleManifest.loadWithBytes(root + "/bundle.json")
        let grants = grantsFor(manifest)
        let sources: (main: Source, modules: [String: Source])
        do { sources = try readSources(root) } catch { throw LocatedErrors([error]) }
        if let workers {
            let unchecked = ScriptBundle(path: root, manifest: manifest, main: sources.main, modules: sources.modules,
                                         declarations: BundleDeclarations(), manifestBytes: manifestBytes, grants: grants)
            if let refused = workers.tryLoad(unchecked, calendar: calendar) { throw LocatedErrors([refused]) }
        }
        return try load(root: root, manifest: manifest, manifestBytes: manifestBytes, sources: sources, grants: grants, calendar: calendar)
    }

    /// Checks a bundle whose files are read: main.lua runs in a sandbox of
    /// the `.load` role, which records its declarations. (A worker process
    /// loads the sources the host sends it this way.)
    static func load(root: String, manifest: BundleManifest, manifestBytes: [UInt8], sources: (main: Source, modules: [String: Source]),
                     grants: Set<String>?, calendar: HostCalendar) throws(LocatedErrors) -> ScriptBundle {
        let unchecked = ScriptBundle(path: root, manifest: manifest, main: sources.main, modules: sources.modules,
                                     declarations: BundleDeclarations())
        let recorder: DeclarationRecorder
        do {
            var services = HostServices(clock: SystemClock(), calendar: calendar)
            services.grants = grants
            let sandbox = try BundleSandbox(bundle: unchecked, services: services, role: .load)
            try sandbox.runMain()
            recorder = sandbox.recorder
        } catch {
            let names = [sources.main.chunkName] + sources.modules.values.map(\.chunkName)
            var located = locate(error, in: sources.main.chunkName, names: names)
            if let why = CapabilityCheck(requested: manifest.capabilities, grants: grants).whyAbsent(inMessage: located.message, bundle: manifest.id) {
                located.message += " (\(why))"
            }
            throw LocatedErrors([located])
        }
        recorder.finish()
        var problems = recorder.problems
        if let activity = recorder.declarations.activities.first, manifest.appGroups.isEmpty {
            problems.append(LocatedError(file: activity.location.file, line: activity.location.line,
                                         message: "activity '\(activity.type)': activities live in an app group's store; list one in appGroups of bundle.json"))
        }
        let bundle = ScriptBundle(path: root, manifest: manifest, main: sources.main, modules: sources.modules,
                                  declarations: recorder.declarations, manifestBytes: manifestBytes, grants: grants)
        problems += CapabilityCheck(bundle: bundle, grants: grants).problems(of: bundle)
        if !problems.isEmpty { throw LocatedErrors(problems) }
        if recorder.declarations.widgets.isEmpty && recorder.declarations.intents.isEmpty
            && recorder.declarations.controls.isEmpty && recorder.declarations.activities.isEmpty {
            throw LocatedErrors([LocatedError(file: sources.main.chunkName, message: "declares nothing: call widget { … } (or intent, control, activity) in main.lua")])
        }
        return bundle
    }

    /// A load failure of main.lua as a located error. Lua shortens long
    /// chunk names to "...their/end.lua"; `names` gives them back in full.
    static func locate(_ error: LuaError, in chunk: String, names: [String]) -> Diagnostic {
        func full(_ name: String) -> String {
            guard name.hasPrefix("...") else { return name }
            return names.first { $0.hasSuffix(name.dropFirst(3)) } ?? name
        }
        var diagnostic = error.diagnostic
        if let file = diagnostic.file, diagnostic.line != nil {
            // The location goes in the fields, with the chunk name in full.
            diagnostic.file = full(file)
            diagnostic.message = strip(diagnostic.message)
        } else {
            diagnostic.file = chunk
        }
        return diagnostic
    }

    /// The message without its leading "chunk:line: ".
    static func strip(_ message: String) -> String {
        let parts = message.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        if parts.count == 3, Int(parts[1]) != nil { return String(parts[2].drop(while: { $0 == " " })) }
        return message
    }
}
