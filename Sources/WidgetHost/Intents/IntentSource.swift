import LuaSandbox

/// The widget whose button or toggle ran an intent: `ctx.source` of its
/// `perform` (nil when the app, Shortcuts or a control ran it).
public struct IntentSource: Sendable, Equatable {
    public var kind: String
    public var family: WidgetFamily
    /// The widget's configuration values, if it has a configuration.
    public var config: LuaTable?

    public init(kind: String, family: WidgetFamily, config: LuaTable? = nil) {
        self.kind = kind
        self.family = family
        self.config = config
    }

    /// `{ kind =, family =, config = }` as the script sees it.
    var lua: LuaValue {
        var fields: LuaFields = ["kind": .string(kind), "family": .string(family.rawValue)]
        if let config { fields["config"] = .table(config) }
        return .table(LuaTable(fields: fields))
    }
}
