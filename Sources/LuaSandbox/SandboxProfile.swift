import CLuaShims

/// What a script gets: which libraries, and whether the sandbox's guards
/// are on. See docs/sandbox.md.
public struct SandboxProfile: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case sandbox
        case trusted(LuaLibraries)
    }

    let kind: Kind

    /// What every script gets: base (no dofile, loadfile, collectgarbage;
    /// text-only load; no __gc), string (no dump; guarded patterns, rep),
    /// table (guarded), math, utf8, coroutine (kill-aware), os.time/date/clock
    /// on the host's clocks, print and log, host modules through require.
    /// Library tables and the string metatable are read-only. Deadlines,
    /// memory caps, instruction budgets and output caps are enforced, and a
    /// kill cannot be caught.
    public static let sandbox = SandboxProfile(kind: .sandbox)

    /// Every standard library, unguarded, for tools and tests. Memory and
    /// output caps apply; deadlines and instruction budgets do not (there is
    /// no hook), and the script's pcall can catch anything.
    public static let trusted = SandboxProfile(kind: .trusted(.all))

    /// Trusted, with only the given standard libraries.
    public static func trusted(_ libraries: LuaLibraries) -> SandboxProfile {
        SandboxProfile(kind: .trusted(libraries))
    }

    /// True for `.sandbox`.
    public var isSandbox: Bool { kind == .sandbox }

    /// The limits a call gets when none are given: `LuaLimits.sandbox` in
    /// the sandbox, none in trusted states.
    public var defaultLimits: LuaLimits { isSandbox ? .sandbox : .none }
}
