/// The host's own services a plugin must ask for and be granted (issue 17):
/// a bundle lists them in bundle.json's `"capabilities"`, beside the
/// capabilities of the app's modules (`HostModule`), and a host that grants
/// capabilities (`HostServices.grants`) gives a bundle only the services it
/// asked for and was granted. A service it does not have is absent from its
/// scripts' globals; using it fails with an error that names the capability.
/// A host that grants nothing in particular (`grants` nil, the default)
/// gives every bundle every service, as before.
public enum ServiceCapability: String, CaseIterable, Sendable {
    /// `store`: the app group store.
    case store
    /// `activities`: Live Activities (and `activity { }` declarations).
    case activities
    /// `reload`: reload requests for widgets and controls.
    case reload
    /// `log`, `print` and `warn`.
    case log

    /// The globals the capability gives.
    public var globals: [String] {
        switch self {
        case .store: return ["store"]
        case .activities: return ["activities"]
        case .reload: return ["reload"]
        case .log: return ["log", "print", "warn"]
        }
    }

    /// The capability a global belongs to.
    static func of(global name: String) -> ServiceCapability? {
        allCases.first { $0.globals.contains(name) }
    }
}

/// What a bundle may use under a host's grants.
public struct CapabilityCheck: Sendable, Equatable {
    /// What the bundle asked for (bundle.json's `"capabilities"`).
    public let requested: [String]
    /// What the host grants it; nil: everything (no plugin policy).
    public let grants: Set<String>?

    public init(requested: [String], grants: Set<String>?) {
        self.requested = requested
        self.grants = grants
    }

    public init(bundle: ScriptBundle, grants: Set<String>?) {
        self.init(requested: bundle.manifest.capabilities, grants: grants)
    }

    /// Whether the bundle has `capability`: asked for and granted, or any
    /// capability when the host grants everything.
    public func has(_ capability: String) -> Bool {
        guard let grants else { return true }
        return requested.contains(capability) && grants.contains(capability)
    }

    public func has(_ service: ServiceCapability) -> Bool { has(service.rawValue) }

    /// The services the bundle's scripts do not get.
    public var withheld: [ServiceCapability] { ServiceCapability.allCases.filter { !has($0) } }

    /// Why the bundle cannot load under these grants, or nil: it asks for a
    /// capability the host does not grant, or declares Live Activities
    /// without asking for `activities`.
    public func problems(of bundle: ScriptBundle) -> [LocatedError] {
        guard let grants else { return [] }
        var problems: [LocatedError] = []
        let refused = requested.filter { !grants.contains($0) }
        if !refused.isEmpty {
            let granted = grants.sorted()
            problems.append(LocatedError(
                file: bundle.path + "/bundle.json",
                message: "bundle \(bundle.manifest.id) asks for \(Self.list(refused)), which this host does not grant it "
                    + "(granted: \(granted.isEmpty ? "nothing" : granted.joined(separator: ", "))); nothing of it was loaded"))
        }
        if !requested.contains(ServiceCapability.activities.rawValue), let first = bundle.declarations.activities.first {
            problems.append(LocatedError(
                file: first.location.file, line: first.location.line,
                message: "activity '\(first.type)': Live Activities need the capability 'activities'; list it in \"capabilities\" of bundle.json"))
        }
        return problems
    }

    /// Why `name` is not there, for a global or a `require` of a withheld
    /// service; nil when it is not one.
    func whyAbsent(_ name: String, bundle: String) -> String? {
        guard let service = ServiceCapability.of(global: name), !has(service) else { return nil }
        return requested.contains(service.rawValue)
            ? "'\(name)' needs the capability '\(service.rawValue)', which this host does not grant bundle \(bundle)"
            : "'\(name)' needs the capability '\(service.rawValue)', which bundle \(bundle) does not ask for; list it in \"capabilities\" of bundle.json"
    }

    /// Why a global that a runtime error names ("attempt to index a nil
    /// value (global 'store')") is absent, when it is a service the bundle
    /// was not given; nil otherwise.
    func whyAbsent(inMessage message: String, bundle: String) -> String? {
        guard let range = message.firstRange(of: "(global '") else { return nil }
        let name = message[range.upperBound...].prefix { $0 != "'" }
        return whyAbsent(String(name), bundle: bundle)
    }

    static func list(_ names: [String]) -> String {
        (names.count == 1 ? "the capability " : "the capabilities ") + names.map { "'\($0)'" }.joined(separator: ", ")
    }
}
