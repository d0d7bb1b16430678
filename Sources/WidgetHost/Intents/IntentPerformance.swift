import LuaSandbox

/// One run of an intent: its checked parameters, how `perform` ended and
/// what it returned.
public struct IntentPerformance: Sendable {
    /// The intent's id.
    public var intent: String
    /// The widget that ran it, if one did.
    public var source: IntentSource?
    /// The parameters `perform` got; nil when they failed their checks.
    public var parameters: LuaTable?
    /// How the call ended. A parameter that failed its checks is an
    /// `invalid` diagnostic naming it, and `perform` did not run.
    public var outcome: CallOutcome
    /// False when the parameters stopped it before `perform` ran.
    public var performed: Bool

    /// What `perform` returned (plain data; nil when it returned nothing),
    /// when it succeeded.
    public var result: LuaValue? { outcome.succeeded ? outcome.values.first : nil }
    public var succeeded: Bool { outcome.succeeded }

    /// A performance stopped by its parameters before `perform` ran (e.g.
    /// a text that `IntentRuntime.parameters(_:fromTexts:)` could not read).
    public static func refused(_ intent: String, _ error: ParameterError, source: IntentSource? = nil) -> IntentPerformance {
        IntentPerformance(intent: intent, source: source, parameters: nil, outcome: CallOutcome(Diagnostic(.invalid, error.message)), performed: false)
    }
}

/// An entity of a query: an `id`, a `title`, and whatever else the script
/// gave it.
public struct QueryEntity: Sendable, Equatable {
    public var id: String
    public var title: String
    /// The whole table, `id` and `title` included.
    public var fields: LuaTable
}

/// What a query answered.
public struct QueryAnswer: Sendable {
    public var query: String
    public var outcome: CallOutcome
    /// The entities, when the call succeeded and its result was well formed.
    public var entities: [QueryEntity]?
}

/// A request the bundle cannot answer at all: no such intent or query.
public struct IntentError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
