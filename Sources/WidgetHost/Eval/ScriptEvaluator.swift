#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox
import SharedStore

/// Runs Lua files one after another, each in a fresh state, and reports how
/// each ended: the job behind `lunette eval`.
public struct ScriptEvaluator {
    /// What each fresh state gives its script.
    public var profile: SandboxProfile
    /// Limits, random seed and clock of each file's call.
    public var options: LuaCallOptions
    /// Receives each printed or logged line as it is written, in addition to capture.
    public var onLog: ((LuaLogLevel, LuaString) -> Void)?
    /// The store scripts see through `store.group(id)`.
    public var store: SharedStore
    /// The app groups scripts may open (none by default).
    public var appGroups: [String]
    /// Lua code run in each file's state before the file, each piece as its
    /// own call named "(command line)" (`lunette eval -e`), e.g. `_port = true`.
    /// A piece that fails makes the file fail with its error.
    public var prelude: [String] = []

    public init(profile: SandboxProfile = .sandbox, options: LuaCallOptions? = nil,
                store: SharedStore = SharedStore(), appGroups: [String] = [],
                onLog: ((LuaLogLevel, LuaString) -> Void)? = nil) {
        self.profile = profile
        self.options = options ?? LuaCallOptions(limits: profile.defaultLimits)
        self.store = store
        self.appGroups = appGroups
        self.onLog = onLog
    }

    /// Reads and runs the file at `path` in a fresh state. As the `lua`
    /// program reads files, a UTF-8 byte order mark and a first line that
    /// starts with `#` (`#!/usr/bin/env …`) are skipped.
    public func evaluate(file path: String) -> EvalResult {
        guard let data = FileManager.default.contents(atPath: path) else {
            return EvalResult(file: path, diagnostic: Diagnostic(.error, Self.readFailure(path), file: path))
        }
        return evaluate(source: Self.skippingFirstLineComment([UInt8](data)), name: path)
    }

    /// The source without a leading byte order mark and without the text of
    /// a first line that starts with `#`; its newline stays, so line numbers
    /// hold (luaL_loadfile does the same).
    static func skippingFirstLineComment(_ bytes: [UInt8]) -> [UInt8] {
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        if start < bytes.count, bytes[start] == UInt8(ascii: "#") {
            start = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
        }
        return start == 0 ? bytes : Array(bytes[start...])
    }

    /// Runs `source` in a fresh state; `name` is the chunk name in messages.
    public func evaluate(source: [UInt8], name: String) -> EvalResult {
        var output: [UInt8] = []
        let clock = ContinuousClock()
        let start = clock.now
        var result = EvalResult(file: name)
        do {
            let state = try LuaState(profile: profile)
            state.options = options
            let onLog = self.onLog
            state.logHandler = { level, line in
                output.append(contentsOf: Array(level.linePrefix.utf8))
                output.append(contentsOf: line.bytes)
                output.append(0x0A)
                onLog?(level, line)
            }
            defer { result.memoryPeakBytes = state.memoryPeak }
            let binding = StoreBinding(store: store, grants: appGroups, owner: "lunette eval",
                                       grantHint: "grant one with --app-group")
            try binding.install(in: state)
            for code in prelude {
                let piece = try state.load(code, name: "(command line)")
                _ = try binding.perform { () throws(LuaError) in try state.call(piece) }
            }
            let chunk = try state.load(bytes: source, name: name)
            // The file's store writes are committed when it succeeds, dropped when it fails.
            // Eval is a developer's tool: a function or other non-data result is shown, not refused.
            result.results = try binding.perform { () throws(LuaError) in try state.callForDisplay(chunk) }
        } catch {
            result.diagnostic = error.diagnostic
        }
        result.elapsed = clock.now - start
        result.output = String(decoding: output, as: UTF8.self)
        return result
    }

    private static func readFailure(_ path: String) -> String {
        guard let kind = FileKind(atPath: path) else { return "no such file" }
        if kind == .directory { return "is a directory" }
        return "permission denied or unreadable"
    }
}
