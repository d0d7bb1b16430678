// Codable for diagnostics, in the shape of their JSON fields (docs/json.md):
// `{"kind", "message", "file", "line", "column", "traceback", "limit"}`,
// the limit as `{"kind": "deadline", "limitMs", "elapsedMs"}`,
// `{"kind": "instructions", "limit", "elapsedMs"}`,
// `{"kind": "memory", "capBytes", "peakBytes"}` or `{"kind": "output", "capBytes"}`.

extension Diagnostic: Codable {
    private enum Key: String, CodingKey { case kind, message, file, line, column, traceback, limit }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(message, forKey: .message)
        try c.encodeIfPresent(file, forKey: .file)
        try c.encodeIfPresent(line, forKey: .line)
        try c.encodeIfPresent(column, forKey: .column)
        try c.encodeIfPresent(traceback, forKey: .traceback)
        try c.encodeIfPresent(limit, forKey: .limit)
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        self.init(try c.decode(CallStatus.self, forKey: .kind), try c.decode(String.self, forKey: .message),
                  file: try c.decodeIfPresent(String.self, forKey: .file), line: try c.decodeIfPresent(Int.self, forKey: .line),
                  column: try c.decodeIfPresent(Int.self, forKey: .column), traceback: try c.decodeIfPresent(String.self, forKey: .traceback),
                  limit: try c.decodeIfPresent(Limit.self, forKey: .limit))
    }
}

extension Diagnostic.Limit: Codable {
    private enum Key: String, CodingKey { case kind, limitMs, elapsedMs, limit, capBytes, peakBytes }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .deadline(let limit, let elapsed):
            try c.encode("deadline", forKey: .kind)
            try c.encodeIfPresent(limit.map(Self.milliseconds), forKey: .limitMs)
            try c.encode(Self.milliseconds(elapsed), forKey: .elapsedMs)
        case .instructions(let limit, let elapsed):
            try c.encode("instructions", forKey: .kind)
            try c.encode(limit, forKey: .limit)
            try c.encode(Self.milliseconds(elapsed), forKey: .elapsedMs)
        case .memory(let cap, let peak):
            try c.encode("memory", forKey: .kind)
            try c.encodeIfPresent(cap, forKey: .capBytes)
            try c.encode(peak, forKey: .peakBytes)
        case .output(let cap):
            try c.encode("output", forKey: .kind)
            try c.encode(cap, forKey: .capBytes)
        }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        switch try c.decode(String.self, forKey: .kind) {
        case "deadline":
            self = .deadline(limit: try c.decodeIfPresent(Double.self, forKey: .limitMs).map(Self.duration),
                             elapsed: Self.duration(try c.decode(Double.self, forKey: .elapsedMs)))
        case "instructions":
            self = .instructions(limit: try c.decode(Int.self, forKey: .limit), elapsed: Self.duration(try c.decode(Double.self, forKey: .elapsedMs)))
        case "memory":
            self = .memory(cap: try c.decodeIfPresent(Int.self, forKey: .capBytes), peak: try c.decode(Int.self, forKey: .peakBytes))
        case "output":
            self = .output(cap: try c.decode(Int.self, forKey: .capBytes))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: c, debugDescription: "unknown limit kind \"\(other)\" (deadline, instructions, memory, output)")
        }
    }

    private static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    private static func duration(_ ms: Double) -> Duration { .nanoseconds(Int64((ms * 1e6).rounded())) }
}
