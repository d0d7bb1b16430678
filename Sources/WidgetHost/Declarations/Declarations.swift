import LuaSandbox

/// The widget families a widget may support, with the size (in points) the
/// host passes as `ctx.displaySize`: the sizes of a 393 × 852-point iPhone
/// from Apple's Human Interface Guidelines; systemExtraLarge is the iPad's
/// (our choice of device).
public enum WidgetFamily: String, CaseIterable, Sendable {
    case systemSmall, systemMedium, systemLarge, systemExtraLarge
    case accessoryCircular, accessoryRectangular, accessoryInline

    public var displaySize: (width: Double, height: Double) {
        switch self {
        case .systemSmall: return (170, 170)
        case .systemMedium: return (364, 170)
        case .systemLarge: return (364, 382)
        case .systemExtraLarge: return (715, 338)
        case .accessoryCircular: return (76, 76)
        case .accessoryRectangular: return (172, 76)
        case .accessoryInline: return (257, 26)
        }
    }

    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// Where a declaration was made: the `widget { … }` call's file and line.
public struct ScriptLocation: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var description: String { "\(file):\(line)" }
}

/// A `widget { … }` declaration.
public struct WidgetDeclaration: Sendable, Equatable {
    public var kind: String
    public var displayName: String?
    public var description: String?
    public var families: [WidgetFamily]
    /// The id of its configuration intent, for configurable widgets.
    public var configuration: String?
    /// True when the widget has its own snapshot function (else the
    /// placeholder stands in for it).
    public var hasSnapshot: Bool
    public var location: ScriptLocation
}

/// The type of an intent parameter.
public enum ParameterType: String, CaseIterable, Sendable {
    case string, int, number, bool, date, `enum`, entity
}

/// One parameter of an intent.
public struct IntentParameter: Sendable, Equatable {
    public var name: String
    public var type: ParameterType
    public var title: String?
    public var defaultValue: LuaValue?
    public var isOptional: Bool
    /// The choices of an enum parameter.
    public var values: [String]
    /// The query an entity parameter takes its options from.
    public var query: String?
}

/// An `intent { … }` declaration.
public struct IntentDeclaration: Sendable, Equatable {
    public var id: String
    public var title: String?
    public var isConfiguration: Bool
    public var parameters: [IntentParameter]
    public var hasPerform: Bool
    public var location: ScriptLocation
}

/// A `query { … }` declaration.
public struct QueryDeclaration: Sendable, Equatable {
    public var id: String
    public var hasEntities: Bool
    public var location: ScriptLocation
}

/// A `control { … }` declaration (run by the controls host; recorded here).
public struct ControlDeclaration: Sendable, Equatable {
    public var kind: String
    public var type: String
    public var action: String?
    /// True when it has a `preview` function (C1).
    public var hasPreview: Bool
    public var location: ScriptLocation
}

/// An `activity { … }` declaration (run by the activity manager; recorded here).
public struct ActivityDeclaration: Sendable, Equatable {
    public var type: String
    /// The values fixed when the activity starts.
    public var attributes: ActivitySchema
    /// The content state that updates change.
    public var state: ActivitySchema
    /// Seconds between tick events while it is active, if it asks for them.
    public var tick: Double?
    public var location: ScriptLocation
}

/// Everything a bundle's main.lua declares, in declaration order.
public struct BundleDeclarations: Sendable, Equatable {
    public var widgets: [WidgetDeclaration] = []
    public var intents: [IntentDeclaration] = []
    public var queries: [QueryDeclaration] = []
    public var controls: [ControlDeclaration] = []
    public var activities: [ActivityDeclaration] = []

    public init() {}

    public func widget(_ kind: String) -> WidgetDeclaration? { widgets.first { $0.kind == kind } }
    public func intent(_ id: String) -> IntentDeclaration? { intents.first { $0.id == id } }
    public func query(_ id: String) -> QueryDeclaration? { queries.first { $0.id == id } }
}
