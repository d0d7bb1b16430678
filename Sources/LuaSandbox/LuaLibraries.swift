import CLuaShims

/// Which of Lua's standard libraries a new state opens.
public struct LuaLibraries: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let base = LuaLibraries(rawValue: LUNETTE_LIB_BASE)
    public static let package = LuaLibraries(rawValue: LUNETTE_LIB_PACKAGE)
    public static let coroutine = LuaLibraries(rawValue: LUNETTE_LIB_COROUTINE)
    public static let table = LuaLibraries(rawValue: LUNETTE_LIB_TABLE)
    public static let io = LuaLibraries(rawValue: LUNETTE_LIB_IO)
    public static let os = LuaLibraries(rawValue: LUNETTE_LIB_OS)
    public static let string = LuaLibraries(rawValue: LUNETTE_LIB_STRING)
    public static let math = LuaLibraries(rawValue: LUNETTE_LIB_MATH)
    public static let utf8 = LuaLibraries(rawValue: LUNETTE_LIB_UTF8)
    public static let debug = LuaLibraries(rawValue: LUNETTE_LIB_DEBUG)

    /// Every standard library, as `luaL_openlibs` opens them.
    public static let all: LuaLibraries = [.base, .package, .coroutine, .table, .io, .os, .string, .math, .utf8, .debug]
    /// The libraries that touch nothing outside the state.
    public static let pure: LuaLibraries = [.base, .coroutine, .table, .string, .math, .utf8]
}
