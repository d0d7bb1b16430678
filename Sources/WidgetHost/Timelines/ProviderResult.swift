import LuaSandbox

/// What a provider call gave: the outcome, and the checked value on success.
public struct ProviderResult<Value: Sendable>: Sendable {
    public var outcome: CallOutcome
    public var value: Value?
}
