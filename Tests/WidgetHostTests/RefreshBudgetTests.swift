import Testing
@testable import WidgetHost

/// `RefreshBudget` counts by slot (an engine finds a widget's slot once and
/// uses it on every reload); these tests hold it to the rule it keeps:
/// counted reloads over a rolling window, checked against every reload kept
/// in a plain list, by key and by slot alike.
@Suite("Refresh budgets over a rolling window")
struct RefreshBudgetTests {
    @Test func recordReturnsTheCountAfterItAndNextFreeIsWhenTheOldestLeaves() {
        var budget = RefreshBudget(limit: 2, window: 100)
        #expect(budget.record("a", at: 0) == 1)
        #expect(budget.nextFree("a", at: 10) == 10, "a slot is free")
        #expect(budget.record("a", at: 10) == 2)
        #expect(budget.nextFree("a", at: 20) == 100, "full until the reload at 0 leaves the window")
        #expect(budget.used("a", at: 100) == 1)
        #expect(budget.record("a", at: 150) == 1, "the reloads at 0 and 10 have left")
        #expect(budget.used("b", at: 150) == 0)
        #expect(budget.nextFree("b", at: 150) == 150)
        #expect(RefreshBudget(limit: 0, window: 100).nextFree("a", at: 5) == .infinity)
    }

    @Test func agreesWithEveryReloadKeptOverManyRandomReloads() {
        for (limit, window) in [(1, 30.0), (3, 100.0), (5, 1_000.0)] {
            var budget = RefreshBudget(limit: limit, window: window)
            var all: [String: [Double]] = [:]
            var t = 0.0
            for step in 0..<2_000 {
                t += Double((step * 7919) % 23)   // a deterministic walk, ties included
                let key = ["x", "y", "instance:42"][(step * 31) % 3]
                let inWindow = { (times: [Double]) in times.filter { $0 > t - window }.count }
                #expect(budget.used(key, at: t) == inWindow(all[key] ?? []), "step \(step)")
                let expectedFree: Double = {
                    let kept = (all[key] ?? []).filter { $0 > t - window }
                    return kept.count >= limit ? kept[kept.count - limit] + window : t
                }()
                #expect(budget.nextFree(key, at: t) == expectedFree, "step \(step)")
                if step % 2 == 0 {
                    all[key, default: []].append(t)
                    #expect(budget.record(key, at: t) == inWindow(all[key]!), "step \(step)")
                }
            }
        }
    }

    @Test func aSlotCountsAsItsKeyAndOutlivesAWindowEmptiedByRestore() {
        var budget = RefreshBudget(limit: 2, window: 100)
        let a = budget.slot("instance:1"), b = budget.slot("kind:Tasks")
        #expect(a != b)
        #expect(budget.slot("instance:1") == a, "a key keeps its slot")
        #expect(budget.record(slot: a, at: 0) == 1)
        #expect(budget.record("instance:1", at: 10) == 2, "the key and its slot are one budget")
        #expect(budget.used(slot: a, at: 20) == 2)
        #expect(budget.nextFree(slot: a, at: 20) == 100)
        #expect(budget.used(slot: b, at: 20) == 0)
        #expect(budget.windows(at: 20) == ["instance:1": [0, 10]], "a key with no reloads is left out")
        // A widget removed: its window goes, its slot stays and counts from nothing.
        budget.restore("instance:1", [])
        #expect(budget.windows(at: 20).isEmpty)
        #expect(budget.window("instance:1", at: 20).isEmpty)
        #expect(budget.used(slot: a, at: 20) == 0)
        #expect(budget.record(slot: a, at: 30) == 1)
        #expect(budget.window("instance:1", at: 30) == [30])
        // Restoring a key never seen makes its slot; emptying one never seen makes none.
        budget.restore("app", [5, 6])
        #expect(budget.used("app", at: 50) == 2)
        budget.restore("unseen", [])
        #expect(budget.windows(at: 50).keys.sorted() == ["app", "instance:1"])
        #expect(budget.slot("unseen") == b + 2, "slots: instance:1, kind:Tasks, app, then this")
        // A released slot forgets its key and reloads, and serves the next new key afresh.
        budget.release(slot: a)
        #expect(budget.used("instance:1", at: 30) == 0)
        #expect(budget.windows(at: 50).keys.sorted() == ["app"])
        let reused = budget.slot("instance:2")
        #expect(reused == a)
        #expect(budget.used(slot: reused, at: 30) == 0)
        #expect(budget.record("instance:2", at: 40) == 1)
        #expect(budget.slot("instance:1") != a, "the old key gets a slot of its own again")
    }
}
