/// An error raised by a Swift function into the calling script.
public struct LuaFunctionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The message the script sees (after the caller's "chunk:line: " when `addsPosition`).
    public var message: String
    /// Prefix the calling script's position, as Lua's `error(msg)` does.
    public var addsPosition: Bool

    public init(_ message: String, addsPosition: Bool = true) {
        self.message = message
        self.addsPosition = addsPosition
    }

    /// "bad argument #n to 'name' (detail)", as Lua's own argument errors read.
    public static func badArgument(_ position: Int, to function: String, _ detail: String) -> LuaFunctionError {
        LuaFunctionError("bad argument #\(position) to '\(function)' (\(detail))")
    }

    public var description: String { message }
}

