import Foundation
import LuaSandbox

/// Runs Lua files one after another, each in a fresh state, and reports how
/// each ended: the job behind `lunette eval`.
public struct ScriptEvaluator {
    /// Standard libraries each fresh state opens.
    public var libraries: LuaLibraries
    /// Receives each printed line as it is printed, in addition to capture.
    public var onPrint: ((LuaString) -> Void)?

    public init(libraries: LuaLibraries = .all, onPrint: ((LuaString) -> Void)? = nil) {
        self.libraries = libraries
        self.onPrint = onPrint
    }

    /// Reads and runs the file at `path` in a fresh state.
    public func evaluate(file path: String) -> EvalResult {
        guard let data = FileManager.default.contents(atPath: path) else {
            return EvalResult(file: path, status: .error, message: "cannot read \(path): \(Self.readFailure(path))")
        }
        return evaluate(source: [UInt8](data), name: path)
    }

    /// Runs `source` in a fresh state; `name` is the chunk name in messages.
    public func evaluate(source: [UInt8], name: String) -> EvalResult {
        var output: [UInt8] = []
        let clock = ContinuousClock()
        let start = clock.now
        var result = EvalResult(file: name, status: .ok)
        do {
            let state = try LuaState(libraries: libraries)
            let onPrint = self.onPrint
            state.printHandler = { line in
                output.append(contentsOf: line.bytes)
                output.append(0x0A)
                onPrint?(line)
            }
            let chunk = try state.load(bytes: source, name: name)
            result.results = try state.call(chunk)
        } catch {
            result.status = Self.status(of: error)
            result.message = error.message
            result.traceback = error.traceback
        }
        result.elapsed = clock.now - start
        result.output = String(decoding: output, as: UTF8.self)
        return result
    }

    static func status(of error: LuaError) -> EvalStatus {
        switch error {
        case .syntax: return .syntax
        case .runtime, .value: return .error
        case .timeout: return .timeout
        case .memory: return .memory
        }
    }

    private static func readFailure(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) { return "no such file" }
        if isDirectory.boolValue { return "is a directory" }
        return "permission denied or unreadable"
    }
}
