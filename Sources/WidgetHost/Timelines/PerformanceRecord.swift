import LuaSandbox

/// One intent performed through the engine, as the report shows it.
public struct PerformanceRecord: Sendable, Codable {
    public var at: Double
    public var intent: String
    /// Who ran it: "widget #1 (TaskCount)", "control Torch" or "app".
    public var source: String
    /// The widget instance whose button or toggle ran it.
    public var instance: Int?
    /// What went wrong (nil on success): a parameter that failed its
    /// checks, or `perform`'s own failure.
    public var diagnostic: Diagnostic?
    /// What `perform` returned, on success.
    public var result: LuaValue?
    /// False when the parameters stopped it before `perform` ran.
    public var performed: Bool

    public var status: CallStatus { diagnostic?.kind ?? .ok }
}
