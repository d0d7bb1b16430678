import SharedStore

/// What bundle.json says: the bundle's id, the app groups its scripts may
/// open, and limits it asks for.
///
/// ```json
/// { "id": "com.example.tasks",
///   "appGroups": ["group.com.example.tasks"],
///   "limits": { "memoryMB": 30 },
///   "activities": { "frequentUpdates": true } }
/// ```
public struct BundleManifest: Sendable, Equatable {
    /// Reverse-DNS id, unique per bundle.
    public var id: String
    /// App groups `store.group(id)` may open.
    public var appGroups: [String]
    /// Memory cap the bundle asks for, in MB. The host's policy caps it:
    /// a call gets the smaller of the two.
    public var memoryMB: Int?
    /// The bundle's Live Activities take frequent push updates (an app's
    /// NSSupportsLiveActivitiesFrequentUpdates): a larger push budget (A6).
    public var frequentActivityUpdates: Bool
    /// What the bundle asks to use beyond the host's own services: the
    /// capabilities of the app's modules (`HostModule`), e.g. "weather".
    public var capabilities: [String]

    public init(id: String, appGroups: [String] = [], memoryMB: Int? = nil, frequentActivityUpdates: Bool = false,
                capabilities: [String] = []) {
        self.id = id
        self.appGroups = appGroups
        self.memoryMB = memoryMB
        self.frequentActivityUpdates = frequentActivityUpdates
        self.capabilities = capabilities
    }

    /// Reads bundle.json at `path`; every error names the file and line.
    public static func load(_ path: String) throws(LocatedError) -> BundleManifest {
        try parse(JSONFile.load(path))
    }

    static func parse(_ file: JSONFile) throws(LocatedError) -> BundleManifest {
        var reader = try JSONObjectReader(file, file.root)
        guard let id = try reader.string("id") else { throw reader.error("missing \"id\" (the bundle's id, e.g. \"com.example.tasks\")") }
        if id.isEmpty || id.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw reader.fail("id", "must be a non-empty reverse-DNS name without spaces or '/', got \"\(id)\"")
        }
        let groups = try reader.strings("appGroups") ?? []
        for group in groups {
            if let problem = StoreText.groupProblem(group.text) {
                throw file.error("'appGroups' has an invalid group id \"\(group.text)\": \(problem)", at: group.location)
            }
        }
        var memory: Int? = nil
        if var limits = try reader.object("limits") {
            memory = try limits.integer("memoryMB")
            if let m = memory, m < 1 { throw limits.fail("memoryMB", "must be at least 1, got \(m)") }
            try limits.finish()
        }
        var frequent = false
        if var activities = try reader.object("activities") {
            frequent = try activities.boolean("frequentUpdates") ?? false
            try activities.finish()
        }
        var capabilities: [String] = []
        for item in try reader.strings("capabilities") ?? [] {
            let valid = !item.text.isEmpty && item.text.utf8.count <= 64
                && item.text.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "." || $0 == "-") }
            guard valid else {
                throw file.error("'capabilities' has an invalid name \"\(item.text)\": use lowercase letters, digits, '.' and '-'", at: item.location)
            }
            capabilities.append(item.text)
        }
        try reader.finish()
        return BundleManifest(id: id, appGroups: groups.map(\.text), memoryMB: memory, frequentActivityUpdates: frequent,
                              capabilities: capabilities)
    }
}
