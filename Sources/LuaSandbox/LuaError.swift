/// What went wrong in a Lua call, typed by kind.
///
/// Every failure of script code ends as a `LuaError`; none is a crash.
public enum LuaError: Error, Sendable, Equatable {
    /// The chunk did not compile.
    case syntax(LuaSyntaxError)
    /// The script raised an error (or a Swift function it called did).
    case runtime(LuaRuntimeError)
    /// The state ran out of memory: its cap, or the system's.
    case memory(LuaMemoryError)
    /// The call ran past its deadline.
    case timeout(LuaTimeoutError)
    /// A value crossing the boundary was not plain data.
    case value(LuaValueError)

    /// How the call ended, in the one vocabulary of `CallStatus`.
    public var status: CallStatus {
        switch self {
        case .syntax: return .syntax
        case .runtime: return .error
        case .memory: return .memory
        case .timeout: return .timeout
        case .value: return .invalid
        }
    }

    /// The one-line message, without traceback.
    public var message: String {
        switch self {
        case .syntax(let e): return e.description
        case .runtime(let e): return e.message
        case .memory(let e): return e.description
        case .timeout(let e): return e.description
        case .value(let e): return e.description
        }
    }

    /// The Lua traceback, where there is one.
    public var traceback: String? {
        if case .runtime(let e) = self { return e.traceback }
        return nil
    }
}

extension LuaError: CustomStringConvertible {
    public var description: String {
        if let traceback, !traceback.isEmpty { return message + "\n" + traceback }
        return message
    }
}

/// A chunk that did not compile: where, and what the parser said.
public struct LuaSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The chunk's name as given to `load` (a file path for files).
    public var chunk: String
    /// The line the parser stopped at, when it said.
    public var line: Int?
    /// The parser's message without the location, e.g. "'end' expected near <eof>".
    public var message: String

    public init(chunk: String, line: Int?, message: String) {
        self.chunk = chunk
        self.line = line
        self.message = message
    }

    /// "chunk:line: message".
    public var description: String {
        if let line { return "\(chunk):\(line): \(message)" }
        return "\(chunk): \(message)"
    }
}

/// An error raised while script code ran.
public struct LuaRuntimeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Longest message kept, in bytes; longer ones are cut and say so.
    public static let maxMessageBytes = 16 * 1024

    /// The message as Lua gave it, e.g. "tasks.lua:12: attempt to index a nil value".
    /// Non-string error objects read "(error object is a table value)".
    public var message: String
    /// Where the error was raised ("chunk" and line), parsed from the message when it has one.
    public var chunk: String?
    public var line: Int?
    /// "stack traceback:\n\t…" from the point of the error.
    public var traceback: String?
    /// The error object itself when it is plain data (e.g. `error({ code = 1 })`).
    public var value: LuaValue?
    /// Set when the call was ended for printing or logging more than this many bytes.
    public var outputLimit: Int?

    public init(message: String, chunk: String? = nil, line: Int? = nil, traceback: String? = nil, value: LuaValue? = nil,
                outputLimit: Int? = nil) {
        self.message = message
        self.chunk = chunk
        self.line = line
        self.traceback = traceback
        self.value = value
        self.outputLimit = outputLimit
    }

    public var description: String { message }
}

/// A state that ran out of memory.
public struct LuaMemoryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The cap in bytes, or nil when the system itself refused.
    public var limit: Int?
    /// The most the state held at once during the call, in bytes.
    public var peak: Int

    public init(limit: Int?, peak: Int) {
        self.limit = limit
        self.peak = peak
    }

    public var description: String {
        if let limit { return "memory cap exceeded: \(limit) bytes allowed, peak \(peak) bytes" }
        return "not enough memory (peak \(peak) bytes)"
    }
}

/// A call ended at its deadline, or when its instruction budget ran out.
public struct LuaTimeoutError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The deadline given to the call (nil when only a budget was set).
    public var limit: Duration?
    /// How long the call had run when it was ended.
    public var elapsed: Duration
    /// The instruction budget, when that is what ended the call.
    public var instructionLimit: Int?
    /// The host cancelled the call (`LuaCancelHandle.cancel()`, a task's
    /// cancellation) before its deadline.
    public var cancelled: Bool
    /// Where the script was when it was ended: its chunk and line.
    public var chunk: String?
    public var line: Int?

    public init(limit: Duration?, elapsed: Duration, instructionLimit: Int? = nil, cancelled: Bool = false,
                chunk: String? = nil, line: Int? = nil) {
        self.limit = limit
        self.elapsed = elapsed
        self.instructionLimit = instructionLimit
        self.cancelled = cancelled
        self.chunk = chunk
        self.line = line
    }

    public var description: String {
        if cancelled { return "cancelled by the host after \(elapsed.lunetteMilliseconds) ms" }
        if let instructionLimit {
            return "instruction budget exceeded: limit \(instructionLimit) instructions, ran \(elapsed.lunetteMilliseconds) ms"
        }
        return "deadline exceeded: limit \((limit ?? .zero).lunetteMilliseconds) ms, ran \(elapsed.lunetteMilliseconds) ms"
    }
}

/// A value that is not plain data, or that exceeds the conversion limits.
public struct LuaValueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where in the value, e.g. "entries[3].icon"; empty for the value itself.
    public var path: String
    /// What is wrong, e.g. "a function is not plain data".
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// "path: reason", or just the reason at the root.
    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

extension Duration {
    /// Whole milliseconds, rounded down; for messages.
    var lunetteMilliseconds: Int64 {
        let (s, atto) = components
        return s * 1000 + atto / 1_000_000_000_000_000
    }
}
