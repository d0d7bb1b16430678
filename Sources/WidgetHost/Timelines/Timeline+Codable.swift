import LuaSandbox

// Codable for timelines, so a host can keep and send them:
// an entry is `{"date", "content", "relevance": {"score", "duration"} | absent}`,
// a policy `"atEnd"`, `"never"` or `{"after": t}`; a timeline
// `{"entries", "policy"}`.

extension TimelineEntry: Codable {
    private enum Key: String, CodingKey { case date, content, relevance }
    private enum RelevanceKey: String, CodingKey { case score, duration }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(date, forKey: .date)
        try c.encode(content, forKey: .content)
        if let relevance {
            var r = c.nestedContainer(keyedBy: RelevanceKey.self, forKey: .relevance)
            try r.encode(relevance.score, forKey: .score)
            try r.encode(relevance.duration, forKey: .duration)
        }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        date = try c.decode(Double.self, forKey: .date)
        content = try c.decode(LuaTable.self, forKey: .content)
        if c.contains(.relevance) {
            let r = try c.nestedContainer(keyedBy: RelevanceKey.self, forKey: .relevance)
            relevance = (try r.decode(Double.self, forKey: .score), try r.decode(Double.self, forKey: .duration))
        } else {
            relevance = nil
        }
    }
}

extension ReloadPolicy: Codable {
    private enum Key: String, CodingKey { case after }

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .atEnd:
            var c = encoder.singleValueContainer()
            try c.encode("atEnd")
        case .never:
            var c = encoder.singleValueContainer()
            try c.encode("never")
        case .after(let t):
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(t, forKey: .after)
        }
    }

    public init(from decoder: Decoder) throws {
        if let c = try? decoder.singleValueContainer(), let name = try? c.decode(String.self) {
            switch name {
            case "atEnd": self = .atEnd
            case "never": self = .never
            default:
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "a reload policy is \"atEnd\", \"never\" or {\"after\": t}, not \"\(name)\"")
            }
            return
        }
        let c = try decoder.container(keyedBy: Key.self)
        self = .after(try c.decode(Double.self, forKey: .after))
    }
}

