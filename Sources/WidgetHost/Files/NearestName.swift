/// The name a misspelled one most likely meant, for messages about settings
/// files and declarations: "unknown key 'timline' (did you mean
/// 'timeline'?)".
enum NearestName {
    /// The candidate closest to `word` when it is close enough to be a
    /// misspelling (at most 1 edit for words of up to 4 characters, 2 for
    /// longer ones; case is ignored), else nil. Ties go to the first in
    /// alphabetical order, so the answer does not depend on the order given.
    static func of(_ word: String, in candidates: some Sequence<String>) -> String? {
        let limit = word.count <= 4 ? 1 : 2
        let target = Array(word.lowercased())
        var best: (name: String, distance: Int)?
        for candidate in candidates.sorted() where candidate != word {
            let d = distance(target, Array(candidate.lowercased()))
            if d <= limit, d < (best?.distance ?? .max) { best = (candidate, d) }
        }
        return best?.name
    }

    /// The edits that turn `a` into `b`: inserting, deleting or changing a
    /// character, or swapping two neighbours ("kidn" → "kind" is one edit;
    /// optimal string alignment distance).
    private static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)   // row i - 2
        var previous = Array(0...b.count)                       // row i - 1
        var row = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            row[0] = i
            for j in 1...b.count {
                row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { row[j] = min(row[j], before[j - 2] + 1) }
            }
            (before, previous, row) = (previous, row, before)
        }
        return previous[b.count]
    }
}

extension NearestName {
    /// The parenthesis that follows a name that is not one of `names`:
    /// "(did you mean 'storeSet'? types: appForeground, storeSet, …)", or
    /// "(types: …)" when none is close; `label` names the list ("types"),
    /// and an empty list reads "none".
    static func hint(for word: String, among names: [String], label: String) -> String {
        let list = names.isEmpty ? "none" : names.joined(separator: ", ")
        guard let near = of(word, in: names) else { return "(\(label): \(list))" }
        return "(did you mean '\(near)'? \(label): \(list))"
    }
}
