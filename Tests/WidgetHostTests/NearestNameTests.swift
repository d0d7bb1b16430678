import Testing
@testable import WidgetHost

/// The name a misspelled one meant, as messages suggest it (issue 16).
@Suite("Nearest names in messages")
struct NearestNameTests {
    @Test func aNameOneOrTwoEditsAwayIsSuggestedAndASwapIsOneEdit() {
        #expect(NearestName.of("timline", in: ["placeholder", "timeline", "families"]) == "timeline")
        #expect(NearestName.of("kidn", in: ["kind", "family"]) == "kind", "two neighbours swapped")
        #expect(NearestName.of("famlies", in: ["families"]) == "families")
        #expect(NearestName.of("knd", in: ["at", "type"]) == nil, "nothing close")
        #expect(NearestName.of("abc", in: ["abd", "abe"]) == "abd", "ties go to the first in alphabetical order")
        #expect(NearestName.of("abc", in: ["abe", "abd"]) == "abd")
        #expect(NearestName.hint(for: "storSet", among: ["reloadAll", "storeSet"], label: "types") == "(did you mean 'storeSet'? types: reloadAll, storeSet)")
        #expect(NearestName.hint(for: "x", among: [], label: "kinds") == "(kinds: none)")
    }
}
