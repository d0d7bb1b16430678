import LuaSandbox
import Testing

/// Runs `body` and returns the LuaError it threw; records an issue when it did not throw.
func luaError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> LuaError? {
    do {
        try body()
        Issue.record("expected a LuaError", sourceLocation: sourceLocation)
        return nil
    } catch let error as LuaError {
        return error
    } catch {
        Issue.record("expected a LuaError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// A state whose print and log output is collected ("[level] " before
/// lines other than info). Trusted with every library unless told otherwise.
final class Harness {
    let state: LuaState
    var printed: [String] = []

    init(profile: SandboxProfile = .trusted) throws {
        state = try LuaState(profile: profile)
        state.logHandler = { [unowned self] level, line in
            self.printed.append(level.linePrefix + line.displayText)
        }
    }

    convenience init(libraries: LuaLibraries) throws {
        try self.init(profile: .trusted(libraries))
    }

    @discardableResult
    func run(_ source: String, name: String = "test.lua") throws(LuaError) -> [LuaValue] {
        try state.run(source, name: name)
    }
}
