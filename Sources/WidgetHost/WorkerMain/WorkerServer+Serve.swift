#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LuaSandbox
import SharedStore

/// The worker's request loop (`lunette worker`): `eval` requests (`lunette
/// eval --isolation process`), and a bundle's `open` and `call` requests
/// (`BundleWorkers`).
extension WorkerServer {
    /// Answers requests on `channel` until it ends. A request it cannot
    /// read ends the worker (the host starts a fresh one). With
    /// `lockDownAtOpen`, it locks down once a bundle is open (`open`).
    public static func serve(_ channel: WorkerChannel, lockDownAtOpen: Bool = false) throws {
        var stores: [String: SharedStore] = [:]   // by root: made once (reading the environment is not free)
        var bundle: WorkerBundle?
        while let message = try channel.receive(until: nil) {
            if message.first == WireTag.call.rawValue {
                guard let bundle else { throw WorkerProtocolError("a call before the bundle was opened") }
                try channel.send(bytes: try bundle.call(message))
                continue
            }
            let request = try WorkerChannel.json(message)
            switch request["op"]?.text {
            case "eval":
                let root = request["storeDir"]?.text ?? ""
                let store = stores[root] ?? SharedStore(root: root.isEmpty ? nil : root)
                stores[root] = store
                try eval(request, store: store, channel)
            case "open":
                guard bundle == nil else { throw WorkerProtocolError("a worker opens one bundle") }
                do {
                    bundle = try WorkerBundle(request, channel: channel, lockDown: { if lockDownAtOpen { lockDownSaying() } })
                    try channel.send(.record([("op", .of("done")), ("version", .of(bundle!.pool.bundle.version))]))
                } catch let refused as WorkerOpenError {
                    try channel.send(.record([("op", .of("done")), ("error", try WorkerWire.encoded(refused.diagnostic))]))
                }
            case "ping":
                try channel.send(.record([("op", .of("done"))]))
            case let op: throw WorkerProtocolError("unknown request \(op.map { "'\($0)'" } ?? "without an op")")
            }
        }
    }

    static func eval(_ request: JSONValue, store: SharedStore, _ channel: WorkerChannel) throws {
        guard let name = request["name"]?.text, let source = request["source"]?.decodedBytes else {
            throw WorkerProtocolError("eval needs a name and a base64 source")
        }
        let profile: SandboxProfile = request["profile"]?.text == "trusted" ? .trusted : .sandbox
        var limits = profile.defaultLimits
        if let mb = request["memoryMB"]?.int { limits.memory = mb << 20 }
        if profile == .sandbox, let ms = request["timeoutMs"]?.int { limits.timeout = .milliseconds(ms) }
        let seed = Int64(request["seed"]?.int ?? 0)
        var groups: [String] = []
        if let items = request["appGroups"]?.items { groups = items.compactMap(\.text) }
        var evaluator = ScriptEvaluator(profile: profile, options: LuaCallOptions(limits: limits, randomSeed: seed),
                                        store: store, appGroups: groups)
        if let items = request["prelude"]?.items { evaluator.prelude = items.compactMap(\.text) }
        var failure: (any Error)?
        evaluator.onLog = { (level: LuaLogLevel, line: LuaString) in
            guard failure == nil else { return }
            do { try channel.send(bytes: WireLogLine.encode(level, line)) } catch {
                failure = error
            }
        }
        let result = evaluator.evaluate(source: ScriptEvaluator.skippingFirstLineComment(source), name: name)
        if let failure { throw failure }
        try channel.send(.record([
            ("op", .of("done")), ("status", .of(result.status.rawValue)),
            ("text", result.diagnostic.map { .of($0.text) } ?? .null),
            ("results", .list(result.results.map { .of($0.description) })),
            ("json", .of(result.jsonLine)),
        ]))
    }
}
