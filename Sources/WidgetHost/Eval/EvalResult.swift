import LuaSandbox

/// What `lunette eval` reports for one file.
public struct EvalResult: Sendable, Equatable {
    /// The path as given.
    public var file: String
    /// How it ended: `.ok`, or the kind of `diagnostic`.
    public var status: CallStatus { diagnostic?.kind ?? .ok }
    /// What went wrong (nil when ok): the message ("hello.lua:3: boom"),
    /// its location, the traceback, the limit.
    public var diagnostic: Diagnostic?
    /// The diagnostic's message.
    public var message: String? { diagnostic?.message }
    /// The diagnostic's traceback.
    public var traceback: String? { diagnostic?.traceback }
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

    public init(file: String, diagnostic: Diagnostic? = nil,
                elapsed: Duration = .zero, results: [LuaDisplayValue] = [], output: String = "", memoryPeakBytes: Int = 0) {
        self.file = file
        self.diagnostic = diagnostic
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
}
