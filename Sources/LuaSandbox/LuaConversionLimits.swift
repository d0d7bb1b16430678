/// Bounds on one conversion of a Lua value into a `LuaValue`.
///
/// Conversion reads tables with raw access only, so no metamethod ever runs;
/// these limits bound the work and memory a hostile value can cost the host.
public struct LuaConversionLimits: Sendable, Equatable {
    /// Deepest nesting of tables (the value itself is depth 0).
    public var maxDepth: Int
    /// Budget for the converted value: 16 bytes per value plus string bytes.
    public var maxBytes: Int

    public init(maxDepth: Int = 100, maxBytes: Int = 64 << 20) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
    }

    public static let `default` = LuaConversionLimits()
}
