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

/// A state with the standard libraries whose print output is collected.
final class Harness {
    let state: LuaState
    var printed: [String] = []

    init(libraries: LuaLibraries = .all) throws {
        state = try LuaState(libraries: libraries)
        state.printHandler = { [unowned self] line in self.printed.append(line.displayText) }
    }

    @discardableResult
    func run(_ source: String, name: String = "test.lua") throws(LuaError) -> [LuaValue] {
        try state.run(source, name: name)
    }
}
