import Testing
@testable import WidgetHost

@Suite("Call roles")
struct CallRoleTests {
    /// Per-role arrays (the sandbox pool's) are indexed by `position`: it
    /// must be each role's place in `allCases`, with none left out.
    @Test func eachRolesPositionIsItsPlaceInAllCases() {
        #expect(CallRole.allCases.map(\.position) == Array(CallRole.allCases.indices))
    }
}
