import LuaSandbox

/// How one evaluated script ended.
public enum EvalStatus: String, Sendable, Equatable {
    /// Ran to the end; `results` holds what it returned.
    case ok
    /// Did not compile.
    case syntax
    /// Raised an error, or returned a table that breaks the plain-data rules
    /// (a cycle, a key that is not a string or array index, a hole).
    case error
    /// Ran past its deadline.
    case timeout
    /// Ran out of memory.
    case memory
}

/// What `lunette eval` reports for one file.
public struct EvalResult: Sendable, Equatable {
    /// The path as given.
    public var file: String
    public var status: EvalStatus
    /// The error message (nil when ok), e.g. "hello.lua:3: boom".
    public var message: String?
    /// The Lua traceback of a runtime error.
    public var traceback: String?
    /// Wall time of compiling and running the file.
    public var elapsed: Duration
    /// The values the chunk returned: plain data, or a description of a
    /// function, userdata or thread (also inside tables).
    public var results: [LuaDisplayValue]
    /// Everything the script printed or logged, one line per call; lines
    /// other than print / log.info start with "[level] ".
    public var output: String
    /// The most memory the script's state held during the call, in bytes.
    public var memoryPeakBytes: Int

    public init(file: String, status: EvalStatus, message: String? = nil, traceback: String? = nil,
                elapsed: Duration = .zero, results: [LuaDisplayValue] = [], output: String = "", memoryPeakBytes: Int = 0) {
        self.file = file
        self.status = status
        self.message = message
        self.traceback = traceback
        self.elapsed = elapsed
        self.results = results
        self.output = output
        self.memoryPeakBytes = memoryPeakBytes
    }

    /// Milliseconds, fractional.
    public var elapsedMilliseconds: Double {
        let (seconds, attoseconds) = elapsed.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    /// One line of JSON: {"file","status","message","traceback","elapsedMs","memoryPeakBytes","results","output"}.
    public var jsonLine: String {
        let o = JSONWriter()
        o.object {
            o.field("file", string: file)
            o.field("status", string: status.rawValue)
            o.field("message", string: message)
            o.field("traceback", string: traceback)
            o.field("elapsedMs", number: (elapsedMilliseconds * 1000).rounded() / 1000)
            o.field("memoryPeakBytes", integer: memoryPeakBytes)
            o.key("results")
            o.array(results) { $0.writeJSON(to: o) }
            o.field("output", string: output)
        }
        return o.text
    }
}
