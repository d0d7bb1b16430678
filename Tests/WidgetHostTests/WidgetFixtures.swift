import Foundation
import Testing
@testable import WidgetHost

/// A bundle written to a temporary directory, and a host around it on a
/// virtual clock with its own store.
struct BundleFixture {
    let path: String
    let storeRoot: String

    /// 2026-11-21T00:00:00Z.
    static let midnight = 1_795_219_200.0

    init(main: String, manifest: String = #"{ "id": "com.example.test", "appGroups": ["group.test"] }"#,
         files: [String: String] = [:]) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-bundle-\(UUID().uuidString)")
        path = root.path
        storeRoot = root.path + "-store"
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try manifest.write(toFile: path + "/bundle.json", atomically: true, encoding: .utf8)
        try main.write(toFile: path + "/main.lua", atomically: true, encoding: .utf8)
        for (name, text) in files {
            let file = path + "/" + name
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: file, atomically: true, encoding: .utf8)
        }
    }

    func load() throws -> ScriptBundle { try ScriptBundle.load(path, calendar: .utc) }

    /// The load errors, one string each ("file:line: message"), or [] when it loads.
    func loadErrors() -> [String] {
        do { _ = try ScriptBundle.load(path, calendar: .utc); return [] } catch { return error.errors.map(\.locatedMessage) }
    }

    var store: SharedStore { SharedStore(root: storeRoot) }

    /// A store in a new temporary folder.
    static func temporaryStore() -> SharedStore {
        SharedStore(root: FileManager.default.temporaryDirectory.appendingPathComponent("lunette-store-\(UUID().uuidString)").path)
    }

    /// A runtime on a virtual clock at `start`, with `policy`.
    func runtime(at start: Double = midnight, policy: HostPolicy = .standard) throws -> (WidgetRuntime, VirtualClock) {
        let clock = VirtualClock(start)
        let runtime = WidgetRuntime(bundle: try load(), services: HostServices(store: store, clock: clock, calendar: .utc, policy: policy))
        return (runtime, clock)
    }
}

/// Drives an engine the way the simulator does: to each due reload up to `t`.
func advance(_ engine: TimelineEngine, _ clock: VirtualClock, to t: Double) throws {
    while let due = engine.nextDue(), due <= t {
        try clock.advance(to: max(due, clock.time))
        engine.runDue()
    }
    try clock.advance(to: t)
}

/// A widget whose timeline returns one entry now with the given policy
/// (Lua source of the policy expression); it counts its calls in the store.
func policyWidget(_ policy: String, kind: String = "W") -> String {
    """
    widget {
      kind = "\(kind)", families = { "systemSmall" },
      placeholder = function(ctx) return { text = "placeholder" } end,
      timeline = function(ctx)
        local now = clock.now()
        local n = store.group("group.test"):update("calls.\(kind)", function(old) return (old or 0) + 1 end)
        return { entries = { { date = now, n = n } }, policy = \(policy) }
      end,
    }
    """
}
