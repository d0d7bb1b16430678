import LuaSandbox

/// A widget as the user placed it: kind, family and configuration values
/// (rule T11: each has its own timeline).
public struct WidgetConfiguration: Sendable, Hashable, CustomStringConvertible {
    public var kind: String
    public var family: WidgetFamily
    /// The configuration intent's values (defaults filled in), or nil for
    /// widgets without a configuration.
    public var values: LuaTable?

    public init(kind: String, family: WidgetFamily, values: LuaTable? = nil) {
        self.kind = kind
        self.family = family
        self.values = values
    }

    public var description: String {
        var text = "\(kind) · \(family.rawValue)"
        if let values, !values.isEmpty { text += " · " + LuaValue.table(values).jsonText }
        return text
    }
}
