/// What a plugin host grants each plugin (issue 17): a trust level per
/// plugin (or a set of capabilities of its own), each level a set of
/// capabilities. `grants(for:)` gives the set for `HostServices.grants`
/// and `ScriptBundle.load(…grants:)`.
///
/// ```json
/// { "default": "untrusted",
///   "levels": { "partner": ["store", "reload", "log", "weather"] },
///   "plugins": { "com.example.clock": "trusted", "com.example.notes": ["store", "log"] } }
/// ```
public struct PluginPolicy: Sendable, Equatable {
    /// A plugin's grants: a trust level's, or its own.
    public enum Grant: Sendable, Equatable {
        case level(String)
        case capabilities(Set<String>)
    }

    /// `*` in a level grants whatever a plugin asks for.
    public static let anything = "*"

    /// Trust levels by name: `trusted` (whatever it asks for), `standard`
    /// (the host's services: store, activities, reload, log) and
    /// `untrusted` (log only), unless a policy redefines them.
    public var levels: [String: Set<String>]
    /// Plugins by bundle id.
    public var plugins: [String: Grant]
    /// The level of a plugin the policy does not name.
    public var defaultLevel: String
    /// Every plugin's quotas (`PluginLedger`).
    public var quotas: PluginQuotas

    public static let builtInLevels: [String: Set<String>] = [
        "trusted": [anything],
        "standard": Set(ServiceCapability.allCases.map(\.rawValue)),
        "untrusted": [ServiceCapability.log.rawValue],
    ]

    public init(levels: [String: Set<String>] = builtInLevels, plugins: [String: Grant] = [:], defaultLevel: String = "untrusted",
                quotas: PluginQuotas = .standard) {
        self.levels = levels
        self.plugins = plugins
        self.defaultLevel = defaultLevel
        self.quotas = quotas
    }

    /// The capabilities granted to the bundle `manifest` describes: its
    /// level's (or its own), where `*` stands for whatever it asks for.
    public func grants(for manifest: BundleManifest) -> Set<String> {
        let granted: Set<String>
        switch plugins[manifest.id] ?? .level(defaultLevel) {
        case .capabilities(let set): granted = set
        case .level(let name): granted = levels[name] ?? []
        }
        guard granted.contains(Self.anything) else { return granted }
        return granted.subtracting([Self.anything]).union(manifest.capabilities)
    }

    /// The trust level of plugin `id`, or nil when it has capabilities of its own.
    public func level(of id: String) -> String? {
        switch plugins[id] ?? .level(defaultLevel) {
        case .level(let name): return name
        case .capabilities: return nil
        }
    }

    /// Reads a plugin policy file: `default` (a level), `levels` (name →
    /// capabilities, over the built-in ones), `plugins` (bundle id → a
    /// level or capabilities) and `quotas` (`PluginQuotas`' fields). Every problem is reported, each at its line
    /// and column; an unknown level names the known ones.
    public static func load(_ path: String) throws(LocatedErrors) -> PluginPolicy {
        let file = try JSONFile.load(path)
        var reader = try JSONObjectReader.topLevel(of: file)
        var policy = PluginPolicy()
        if var levels = reader.object("levels") {
            for member in levels.members {
                guard let names = levels.strings(member.key) else { continue }
                policy.levels[member.key] = Set(names.map(\.text))
            }
            levels.finish()
        }
        let known = policy.levels.keys.sorted()
        func level(_ name: String, _ report: (String) -> Void) -> String? {
            if policy.levels[name] != nil { return name }
            report("\"\(name)\" is not a trust level " + NearestName.hint(for: name, among: known, label: "levels"))
            return nil
        }
        if let name = reader.string("default"), let found = level(name, { reader.report("'default': \($0)", at: "default") }) {
            policy.defaultLevel = found
        }
        if var quotas = reader.object("quotas") {
            func positive(_ key: String) -> Double? {
                guard let v = quotas.number(key) else { return nil }
                guard v > 0 else { quotas.report(key, "must be positive, got \(v)"); return nil }
                return v
            }
            if let v = positive("window") { policy.quotas.window = v }
            if let v = positive("cpuSeconds") { policy.quotas.cpuSeconds = v }
            if let v = positive("calls") { policy.quotas.calls = Int(v) }
            if let v = positive("logBytes") { policy.quotas.logBytes = Int(v) }
            if let v = positive("failuresInARow") { policy.quotas.failuresInARow = Int(v) }
            quotas.finish()
        }
        if var plugins = reader.object("plugins") {
            for member in plugins.members {
                guard let value = plugins.value(member.key) else { continue }
                switch value.kind {
                case .string(let name):
                    if let found = level(name, { plugins.report("'plugins.\(member.key)': \($0)", at: member.key) }) { policy.plugins[member.key] = .level(found) }
                case .array:
                    if let names = plugins.strings(member.key) { policy.plugins[member.key] = .capabilities(Set(names.map(\.text))) }
                default:
                    plugins.report(member.key, "must be a trust level (\(known.joined(separator: ", "))) or an array of capabilities, got \(value.kindName)")
                }
            }
            plugins.finish()
        }
        reader.finish()
        try file.check()
        return policy
    }
}
