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

    /// Reads bundle.json at `path`. Every problem is reported, each with
    /// the file, line and column of what it is about.
    public static func load(_ path: String) throws(LocatedErrors) -> BundleManifest {
        try loadWithBytes(path).manifest
    }

    /// The manifest and the file's bytes (for the bundle's version), read once.
    static func loadWithBytes(_ path: String) throws(LocatedErrors) -> (manifest: BundleManifest, bytes: [UInt8]) {
        let file = try JSONFile.load(path)
        let manifest = read(file)
        try file.check()
        return (manifest, file.bytes)
    }

    /// The manifest in `file`; its problems are reported to `file` (a value
    /// with a problem reads as absent).
    static func read(_ file: JSONFile) -> BundleManifest {
        guard var reader = JSONObjectReader(file, file.root) else { return BundleManifest(id: "") }
        let id = reader.string("id")
        if let id {
            if id.isEmpty || id.contains(where: { $0.isWhitespace || $0 == "/" }) {
                reader.report("id", "must be a non-empty reverse-DNS name without spaces or '/', got \"\(id)\"")
            }
        } else if !reader.isSet("id") {
            reader.report("missing \"id\" (the bundle's id, e.g. \"com.example.tasks\")")
        }
        var groups: [String] = []
        for group in reader.strings("appGroups") ?? [] {
            if let problem = StoreText.groupProblem(group.text) {
                file.report("'appGroups' has an invalid group id \"\(group.text)\": \(problem)", at: group.location)
            } else {
                groups.append(group.text)
            }
        }
        var memory: Int? = nil
        if var limits = reader.object("limits") {
            memory = limits.integer("memoryMB")
            if let m = memory, m < 1 {
                limits.report("memoryMB", "must be at least 1, got \(m)")
                memory = nil
            }
            limits.finish()
        }
        var frequent = false
        if var activities = reader.object("activities") {
            frequent = activities.boolean("frequentUpdates") ?? false
            activities.finish()
        }
        var capabilities: [String] = []
        for item in reader.strings("capabilities") ?? [] {
            let valid = !item.text.isEmpty && item.text.utf8.count <= 64
                && item.text.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "." || $0 == "-") }
            guard valid else {
                file.report("'capabilities' has an invalid name \"\(item.text)\": use lowercase letters, digits, '.' and '-'", at: item.location)
                continue
            }
            capabilities.append(item.text)
        }
        reader.finish()
        return BundleManifest(id: id ?? "", appGroups: groups, memoryMB: memory, frequentActivityUpdates: frequent,
                              capabilities: capabilities)
    }
}
