import Foundation
import Testing
@testable import WidgetHost

@Suite("A bundle's files")
struct BundleFilesTests {
    /// `relativePaths(under:)` lists what FileManager's enumerator lists:
    /// nested and hidden entries, symbolic links as entries but not entered.
    @Test func theWalkFindsWhatFoundationsEnumeratorFinds() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lunette-walk-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        try fm.createDirectory(atPath: root + "/util/deep", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: root + "/.hidden", withIntermediateDirectories: true)
        for file in ["main.lua", "util/fmt.lua", "util/deep/x.lua", ".hidden/y.lua", "notes.txt"] {
            try Data("return 1".utf8).write(to: URL(fileURLWithPath: root + "/" + file))
        }
        try fm.createSymbolicLink(atPath: root + "/linked", withDestinationPath: root + "/util")
        try fm.createSymbolicLink(atPath: root + "/alias.lua", withDestinationPath: root + "/util/fmt.lua")
        let expected = Set(fm.enumerator(atPath: root)!.compactMap { $0 as? String })
        #expect(Set(ScriptBundle.relativePaths(under: root)) == expected)
        #expect(expected.contains("util/deep/x.lua") && expected.contains(".hidden/y.lua") && !expected.contains("linked/fmt.lua"))
    }
}
