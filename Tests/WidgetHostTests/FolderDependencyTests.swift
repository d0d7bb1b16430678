import Foundation
import Testing

/// docs/ARCHITECTURE.md's WidgetHost folder table is the dependency graph:
/// the code may use a folder only when the table lists it, and the table
/// has no cycle.
@Suite("WidgetHost's folders follow the documented layers")
struct FolderDependencyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Folder → the folders its row says it uses, in the table's order.
    static func documentedGraph() throws -> [(folder: String, uses: Set<String>)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        var rows: [(String, Set<String>)] = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 5, cells[1].hasPrefix("`"), cells[1].hasSuffix("/`") else { continue }
            let folder = String(cells[1].dropFirst().dropLast(2))
            let uses = cells[3] == "—" ? [] : Set(cells[3].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            rows.append((folder, uses))
        }
        return rows
    }

    /// Folder → the folders whose top-level types its code names.
    static func actualGraph() throws -> [String: [String: Set<String>]] {
        let host = root.appendingPathComponent("Sources/WidgetHost")
        var files: [(folder: String, text: String)] = []
        var definedIn: [String: String] = [:]
        let declaration = try Regex(#"(?m)^(?:public |internal |fileprivate |private )?(?:final )?(?:struct|class|enum|protocol|typealias|actor) +([A-Za-z_][A-Za-z0-9_]*)"#)
        for folder in try FileManager.default.contentsOfDirectory(atPath: host.path).sorted() {
            let directory = host.appendingPathComponent(folder)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for name in names where name.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                // Comments name other folders' types freely; code must not.
                let code = text.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { $0.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "" }
                    .joined(separator: "\n")
                files.append((folder, code))
                for match in code.matches(of: declaration) {
                    if let type = match.output[1].substring { definedIn[String(type)] = folder }
                }
            }
        }
        var graph: [String: [String: Set<String>]] = [:]
        for (folder, code) in files {
            for (type, home) in definedIn where home != folder {
                if code.contains(try Regex("\\b\(type)\\b")) { graph[folder, default: [:]][home, default: []].insert(type) }
            }
        }
        return graph
    }

    @Test func theCodeUsesOnlyTheFoldersTheTableLists() throws {
        let documented = try Self.documentedGraph()
        #expect(documented.count >= 10, "found only \(documented.count) folder rows in docs/ARCHITECTURE.md")
        let listed = Dictionary(documented.map { ($0.folder, $0.uses) }, uniquingKeysWith: { a, _ in a })
        let actual = try Self.actualGraph()
        var problems: [String] = []
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources/WidgetHost").path)
            .filter { !$0.hasSuffix(".swift") }
        for folder in folders where listed[folder] == nil {
            problems.append("Sources/WidgetHost/\(folder)/ has no row in docs/ARCHITECTURE.md")
        }
        for (folder, uses) in actual.sorted(by: { $0.key < $1.key }) {
            for (other, types) in uses.sorted(by: { $0.key < $1.key }) where !(listed[folder]?.contains(other) ?? false) {
                problems.append("\(folder)/ uses \(other)/ (\(types.sorted().joined(separator: ", "))), which its row does not list")
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func theTableIsLayeredWithoutCycles() throws {
        let documented = try Self.documentedGraph()
        var seen: Set<String> = []
        for (folder, uses) in documented {
            let later = uses.subtracting(seen)
            #expect(later.isEmpty, "\(folder)/ uses \(later.sorted()), listed below it in the table")
            seen.insert(folder)
        }
    }
}
