import LunetteJSON

/// How a script call, or a file the host read, turned out: the one
/// vocabulary of every layer, report and command (`"status"` in JSON).
public enum CallStatus: String, Sendable, Equatable, CaseIterable, Codable {
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
    /// The host did not run it: a plugin in quarantine (over a quota, or
    /// failing call after call) until the host releases it.
    case refused
    /// The worker process running it died (a signal, or an exit): process
    /// isolation's containment of a crash; the call's effects are discarded.
    case crashed
}

/// What went wrong, where, and which limit: the one error value that every
/// command renders, as text (`text`) and as JSON (`writeFields(of:to:)`).
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
    /// The 1-based column (in Unicode scalars), when known: JSON files.
    public var column: Int?
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

    public init(_ kind: CallStatus, _ message: String, file: String? = nil, line: Int? = nil, column: Int? = nil,
                traceback: String? = nil, limit: Limit? = nil) {
        self.kind = kind
        self.message = message
        self.file = file
        self.line = line
        self.column = line == nil ? nil : column
        self.traceback = traceback
        self.limit = limit
    }

    /// A mistake in a file the host read (bundle.json, main.lua's
    /// declarations, a scenario, a policy): "bundle.json:3:5: unknown key 'x'".
    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        self.init(.invalid, message, file: file, line: line, column: column)
    }

    /// A mistake at a place in a JSON file.
    public init(file: String, at location: JSONLocation, message: String) {
        self.init(file: file, line: location.line, column: location.column, message: message)
    }

    /// The diagnostic of a failed Lua call (its kind is `error.status`,
    /// the one mapping of a LuaError to a status).
    public init(_ error: LuaError) {
        self.init(error.status, error.message)
        switch error {
        case .syntax(let e):
            file = e.chunk
            line = e.line
        case .runtime(let e):
            file = e.chunk
            line = e.line
            traceback = e.traceback
            limit = e.outputLimit.map { .output(cap: $0) }
        case .memory(let e):
            limit = .memory(cap: e.limit, peak: e.peak)
        case .timeout(let e):
            limit = e.instructionLimit.map { .instructions(limit: $0, elapsed: e.elapsed) }
                ?? .deadline(limit: e.limit, elapsed: e.elapsed)
            file = e.chunk   // the line it was running
            line = e.line
        case .value:
            break
        }
    }

    /// "file:line:column", "file:line" or "file" (as compilers write it, so
    /// editors can jump there); nil without a file.
    public var location: String? {
        guard let file else { return nil }
        switch (line, column) {
        case (let line?, let column?): return "\(file):\(line):\(column)"
        case (let line?, nil): return "\(file):\(line)"
        default: return file
        }
    }

    /// The message with its location in front when the message does not
    /// already start with it (Lua's messages do): "file:line: message".
    public var locatedMessage: String {
        guard let location else { return message }
        if message.hasPrefix(location + ":") { return message }
        return "\(location): \(message)"
    }

    /// The one-line rendering: "kind: file:line: message".
    public var summary: String { "\(kind.rawValue): \(locatedMessage)" }

    /// The one text rendering: the summary, then the traceback's lines.
    public var text: String {
        guard let traceback, !traceback.isEmpty else { return summary }
        return summary + "\n" + traceback
    }

    public var description: String { text }
}

extension Diagnostic {
    /// The one JSON rendering of how a call or a file turned out, as fields
    /// of the object being written: `"status"`, `"message"` (the located
    /// message), `"traceback"`, `"location"` (`{"file","line","column"}`) and
    /// `"limit"` (`{"kind": "deadline"|"instructions"|"memory"|"output", …}`);
    /// all but status are null for `nil` (success).
    public static func writeFields(of diagnostic: Diagnostic?, to writer: JSONWriter) {
        writer.field("status", string: (diagnostic?.kind ?? .ok).rawValue)
        writer.field("message", string: diagnostic?.locatedMessage)
        writer.field("traceback", string: diagnostic?.traceback)
        writer.key("location")
        if let diagnostic, let file = diagnostic.file {
            writer.object {
                writer.field("file", string: file)
                writer.key("line")
                if let line = diagnostic.line { writer.integer(line) } else { writer.null() }
                writer.key("column")
                if let column = diagnostic.column { writer.integer(column) } else { writer.null() }
            }
        } else {
            writer.null()
        }
        writer.key("limit")
        switch diagnostic?.limit {
        case nil:
            writer.null()
        case .deadline(let limit, let elapsed)?:
            writer.object {
                writer.field("kind", string: "deadline")
                writer.field("limitMs", number: limit.map(Self.milliseconds))
                writer.field("elapsedMs", number: Self.milliseconds(elapsed))
            }
        case .instructions(let limit, let elapsed)?:
            writer.object {
                writer.field("kind", string: "instructions")
                writer.field("limit", integer: limit)
                writer.field("elapsedMs", number: Self.milliseconds(elapsed))
            }
        case .memory(let cap, let peak)?:
            writer.object {
                writer.field("kind", string: "memory")
                writer.key("capBytes")
                if let cap { writer.integer(cap) } else { writer.null() }
                writer.field("peakBytes", integer: peak)
            }
        case .output(let cap)?:
            writer.object {
                writer.field("kind", string: "output")
                writer.field("capBytes", integer: cap)
            }
        }
    }

    private static func milliseconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        let ms = Double(s) * 1000 + Double(atto) / 1e15
        return (ms * 1000).rounded() / 1000
    }
}

extension LuaError {
    /// This error as the one diagnostic value.
    public var diagnostic: Diagnostic { Diagnostic(self) }
}
