/// How a script call, or a file the host read, turned out: the one
/// vocabulary of every layer, report and command (`"status"` in JSON).
public enum CallStatus: String, Sendable, Equatable, CaseIterable {
    /// Ran to the end, and the host could use what it returned.
    case ok
    /// A chunk did not compile.
    case syntax
    /// The script raised an error (or a Swift function it called did).
    case error
    /// Ended at its deadline or when its instruction budget ran out.
    case timeout
    /// Went over its memory cap (or the system had no memory left).
    case memory
    /// The host cannot use it: a result that breaks the rules (a timeline
    /// entry without a date, a value that is not plain data) or a file with
    /// a mistake (bundle.json, a scenario, a policy).
    case invalid
}

/// What went wrong, where, and which limit: the one error value that every
/// command renders, as text (`text`) and as JSON (`Diagnostic+JSON` in
/// WidgetHost).
///
/// `message` reads as Lua or the host wrote it, location included when the
/// script's message has one ("main.lua:3: boom"); `file` and `line` give the
/// location as data, whether or not the message shows it.
public struct Diagnostic: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure (never `.ok`).
    public var kind: CallStatus
    /// One line, without traceback.
    public var message: String
    /// The file (or chunk) the problem is in, when known.
    public var file: String?
    /// Its 1-based line, when known.
    public var line: Int?
    /// The Lua traceback of a runtime error.
    public var traceback: String?
    /// The limit that ended the call, with the figures.
    public var limit: Limit?

    /// A limit that ended a call.
    public enum Limit: Sendable, Equatable {
        /// The deadline (`limit` nil when only an instruction budget was set), and how long the call ran.
        case deadline(limit: Duration?, elapsed: Duration)
        /// The instruction budget, and how long the call ran.
        case instructions(limit: Int, elapsed: Duration)
        /// The memory cap (nil: the system refused), and the most the state held.
        case memory(cap: Int?, peak: Int)
        /// The output cap in bytes.
        case output(cap: Int)
    }

    public init(_ kind: CallStatus, _ message: String, file: String? = nil, line: Int? = nil,
                traceback: String? = nil, limit: Limit? = nil) {
        self.kind = kind
        self.message = message
        self.file = file
        self.line = line
        self.traceback = traceback
        self.limit = limit
    }

    /// A mistake in a file the host read: "bundle.json:3: unknown key 'x'".
    public init(file: String, line: Int? = nil, message: String) {
        self.init(.invalid, message, file: file, line: line)
    }

    /// The diagnostic of a failed Lua call.
    public init(_ error: LuaError) {
        switch error {
        case .syntax(let e):
            self.init(.syntax, e.description, file: e.chunk, line: e.line)
        case .runtime(let e):
            self.init(.error, e.message, file: e.chunk, line: e.line, traceback: e.traceback,
                      limit: e.outputLimit.map { .output(cap: $0) })
        case .memory(let e):
            self.init(.memory, e.description, limit: .memory(cap: e.limit, peak: e.peak))
        case .timeout(let e):
            let limit: Limit = e.instructionLimit.map { .instructions(limit: $0, elapsed: e.elapsed) }
                ?? .deadline(limit: e.limit, elapsed: e.elapsed)
            self.init(.timeout, e.description, limit: limit)
        case .value(let e):
            self.init(.invalid, e.description)
        }
    }

    /// The message with its location in front when the message does not
    /// already start with it: "file:line: message".
    public var locatedMessage: String {
        guard let file else { return message }
        let prefix = line.map { "\(file):\($0)" } ?? file
        if message.hasPrefix(prefix + ":") { return message }
        return "\(prefix): \(message)"
    }

    /// The one text rendering: "kind: file:line: message", then the
    /// traceback's lines.
    public var text: String {
        var out = "\(kind.rawValue): \(locatedMessage)"
        if let traceback, !traceback.isEmpty { out += "\n" + traceback }
        return out
    }

    public var description: String { text }
}

extension LuaError {
    /// This error as the one diagnostic value.
    public var diagnostic: Diagnostic { Diagnostic(self) }
}
