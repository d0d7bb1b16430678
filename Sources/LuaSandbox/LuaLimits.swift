import CLuaShims

/// The limits of one call (each top-level call starts them afresh; calls
/// nested inside it share them). nil means no limit.
public struct LuaLimits: Sendable, Equatable {
    /// Bytes the state may hold while script code runs (a widget call: 30 MB).
    public var memory: Int?
    /// Wall time from the start of the call, on a monotonic clock (kept
    /// in whole nanoseconds: `timeoutNanoseconds`).
    public var timeout: Duration? {
        get { timeoutNanoseconds.map { .nanoseconds($0) } }
        set { timeoutNanoseconds = newValue.map(Self.nanoseconds) }
    }
    /// The same wall time in nanoseconds, as the sandbox arms it. A host
    /// that sets a call's deadline on every call sets this one: a
    /// `Duration` takes 128-bit arithmetic to make and to read back.
    public var timeoutNanoseconds: Int64?
    /// Lua VM instructions (counted in steps of 1000).
    public var instructions: Int?
    /// Bytes of print and log output (each line counts its newline).
    public var output: Int?

    public init(memory: Int? = nil, timeout: Duration? = nil, instructions: Int? = nil, output: Int? = nil) {
        self.init(memory: memory, timeoutNanoseconds: timeout.map(Self.nanoseconds), instructions: instructions, output: output)
    }

    /// The same, with the timeout given in nanoseconds.
    public init(memory: Int? = nil, timeoutNanoseconds: Int64?, instructions: Int? = nil, output: Int? = nil) {
        self.memory = memory
        self.timeoutNanoseconds = timeoutNanoseconds
        self.instructions = instructions
        self.output = output
    }

    /// A duration in whole nanoseconds (rounded down; negative ones are 0,
    /// and those beyond `Int64` nanoseconds, ~292 years, are the most it holds).
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflowed) = whole.addingReportingOverflow(max(0, attoseconds) / 1_000_000_000)
        return overflowed ? .max : sum
    }

    /// No limits.
    public static let none = LuaLimits()

    /// The sandbox's defaults: 30 MB, 1 s, no instruction budget, 64 KB of output.
    public static let sandbox = LuaLimits(memory: 30 << 20, timeout: .seconds(1), output: 64 << 10)
}

/// Everything a top-level call is given besides its arguments.
public struct LuaCallOptions: Sendable, Equatable {
    public var limits: LuaLimits
    /// math.random is seeded with this at the call's first draw, so a run replays exactly.
    public var randomSeed: Int64
    /// "Now" for os.time and os.date, in seconds since the Unix epoch; nil
    /// reads the system clock.
    public var now: Double?

    public init(limits: LuaLimits, randomSeed: Int64 = 0, now: Double? = nil) {
        self.limits = limits
        self.randomSeed = randomSeed
        self.now = now
    }

    var cLimits: lunette_limits {
        var c = lunette_limits()
        if let ns = limits.timeoutNanoseconds { c.timeout_ns = UInt64(max(1, ns)) }
        c.instructions = limits.instructions.map { Int64(max(0, $0)) } ?? -1
        c.memory = limits.memory.map { max(1, $0) } ?? 0
        c.output = limits.output.map { max(1, $0) } ?? 0
        c.random_seed = randomSeed
        if let now {
            c.clock_now = now
            c.has_clock_now = 1
        }
        return c
    }
}
