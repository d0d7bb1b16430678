import CSQLite
import Foundation
import SharedStore
import Testing

/// A bundle's Live Activity rows in the group's database.
@Suite("Activity rows in the store")
struct StoredActivitiesTests {
    func rows(_ n: Int64) -> StoredActivities {
        StoredActivities(nextNumber: n + 1, activities: (1...n).map {
            StoredActivity(id: "activity-\($0)", record: ["n": .integer($0)], pushes: [["p": .integer($0)], ["p": .integer($0 + 100)]])
        })
    }

    @Test func rowsRoundTripInOrderAndOtherConnectionsSeeThem() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        #expect(try group.activities(of: "com.b") == StoredActivities(), "a bundle without rows is empty and enabled")
        try group.updateActivities(of: "com.b") { $0 = rows(3); $0.enabled = false }
        let seen = try temp.reopen().group("group.a").activities(of: "com.b")
        var expected = rows(3)
        expected.enabled = false
        #expect(seen.activities == expected.activities && seen.enabled == false && seen.nextNumber == 4)
        #expect(seen.version == 1)
        #expect(try group.activities(of: "com.other").activities.isEmpty, "bundles share rows")
        // Removing an activity removes its pushes; a shorter push list is trimmed.
        try group.updateActivities(of: "com.b") { rows in
            rows.activities.removeFirst()
            rows.activities[0].pushes.removeLast()
        }
        let after = try group.activities(of: "com.b")
        #expect(after.activities.map(\.id) == ["activity-2", "activity-3"])
        #expect(after.activities[0].pushes == [["p": 2]])
        #expect(after.version == 2)
    }

    @Test func anUnchangedUpdateWritesNothing() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        try group.updateActivities(of: "com.b") { $0 = rows(2) }
        try group.updateActivities(of: "com.b") { _ in }
        #expect(try group.activities(of: "com.b").version == 1)
    }

    @Test func aBatchWhoseRowsChangedMeanwhileIsRefusedWhole() throws {
        let temp = TemporaryStore()
        let group = try temp.store.group("group.a")
        try group.updateActivities(of: "com.b") { $0 = rows(1) }
        let read = try group.activities(of: "com.b")
        var mine = read
        mine.activities[0].record = ["n": 99]
        // Another process writes first.
        try temp.reopen().group("group.a").updateActivities(of: "com.b") { $0.activities[0].record = ["n": 7] }
        let error = storeError { try group.commit(StoreBatch(values: [("k", 1)], activities: ActivityWrite(bundle: "com.b", old: read, new: mine))) }
        #expect(error?.code == .conflict)
        #expect(error?.message.contains("changed by another writer") == true)
        #expect(try group.get("k") == nil, "the batch's values were written without its rows")
        #expect(try group.activities(of: "com.b").activities[0].record == ["n": 7])
    }
}
