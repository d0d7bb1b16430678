import Foundation
import Logging
import SharedStore
import Testing
@testable import WidgetHost

/// Activities live in the app group's database (issue 13, point 3): the
/// app, scripts and other connections see the same ones, and a call's
/// changes commit whole with its store writes or not at all.
@Suite("Live Activities in the store")
struct ActivityStoreTests {
    let t0 = BundleFixture.midnight

    static let main = """
        activity { type = "Delivery", attributes = { order = "string" }, state = { status = "string" }, updater = function() end }
        intent { id = "Start", parameters = { { name = "fail", type = "bool", default = false } },
          perform = function(params)
            local a = activities.request("Delivery", { order = "A1" }, { status = "placed" })
            store.group("group.test"):set("started", a.id)
            if params.fail then error("after the request and the write") end
            return a.id
          end }
        """

    func host(_ fixture: BundleFixture, clock: VirtualClock, store: SharedStore? = nil) throws -> (TimelineEngine, ActivityManager) {
        let bundle = try fixture.load()
        let store = store ?? fixture.store
        let manager = try ActivityManager(bundle: bundle, store: store, policy: .standard, clock: clock)
        let runtime = WidgetRuntime(bundle: bundle, services: HostServices(store: store, clock: clock, calendar: .utc, activities: manager))
        return (TimelineEngine(runtime: runtime), manager)
    }

    @Test func theAppScriptsAndOtherConnectionsSeeTheSameActivities() throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let (engine, _) = try host(fixture, clock: clock)
        let id = try #require(try engine.perform("Start").result?.stringValue)
        // The app, on a connection of its own (as another process).
        let app = try ActivityManager(bundle: try fixture.load(), store: SharedStore(root: fixture.storeRoot), policy: .standard, clock: clock)
        #expect(try app.get(id)?.content.state["status"] == "placed")
        try app.update(id, state: LuaTable(fields: ["status": "cooking"]))
        let (other, otherManager) = try host(fixture, clock: clock, store: SharedStore(root: fixture.storeRoot))
        #expect(try otherManager.list().map(\.id) == [id])
        #expect(try otherManager.get(id)?.content.state["status"] == "cooking")
        // Ids stay unique across connections.
        #expect(try other.perform("Start").result?.stringValue == "activity-2")
    }

    @Test func aFailedCallLeavesNeitherItsActivityNorItsWrites() throws {
        let fixture = try BundleFixture(main: Self.main)
        let (engine, manager) = try host(fixture, clock: VirtualClock(t0))
        #expect(try engine.perform("Start", parameters: ["fail": true]).outcome.status == .error)
        #expect(try manager.all().isEmpty)
        #expect(try fixture.store.group("group.test").get("started") == nil)
        #expect(try engine.perform("Start").result?.stringValue == "activity-1", "the failed call used up an id")
        #expect(try fixture.store.group("group.test").get("started") == "activity-1")
    }

    @Test func aCallWhoseActivitiesAnotherWriterChangedMeanwhileCommitsNothing() throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let (_, manager) = try host(fixture, clock: clock)
        let id = try manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get().id
        // A script call's session: read at its first operation, kept in memory.
        manager.beginCall(source: "intent Test")
        try manager.update(id, state: LuaTable(fields: ["status": "mine"]))
        let app = try ActivityManager(bundle: try fixture.load(), store: SharedStore(root: fixture.storeRoot), policy: .standard, clock: clock)
        try app.update(id, state: LuaTable(fields: ["status": "theirs"]))
        let write = try #require(try manager.attachedWrite())
        let group = try fixture.store.group(write.group)
        #expect(throws: StoreError.self) { try group.commit(StoreBatch(values: [("k", 1)], activities: write.write)) }
        manager.endCall(committed: false)
        #expect(try manager.get(id)?.content.state["status"] == "theirs")
        #expect(try group.get("k") == nil)
        #expect(!manager.changes.contains { $0.source == "intent Test" }, "an uncommitted change was reported")
    }

    @Test("A6: an updater whose commit meets another writer's change runs again; its push is not lost")
    func anUpdaterThatConflictsRunsAgain() throws {
        let fixture = try BundleFixture(main: """
            activity { type = "Delivery", attributes = { order = "string" }, state = { status = "string" },
              updater = function(activity, event) activity:update({ status = event.payload.status }) end }
            """)
        let clock = VirtualClock(t0)
        let live = try LiveActivities(bundle: try fixture.load(), services: HostServices(store: fixture.store, clock: clock, calendar: .utc))
        let mine = try live.manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get().id
        let other = try live.manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "B"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get().id
        // Another process changes another activity of the bundle between the updater's read and its commit, once.
        let app = try ActivityManager(bundle: try fixture.load(), store: SharedStore(root: fixture.storeRoot), policy: .standard, clock: clock)
        var interfered = false
        live.manager.afterCallLoad = {
            guard !interfered else { return }
            interfered = true
            _ = try? app.update(other, state: LuaTable(fields: ["status": "theirs"]))
        }
        try live.updaters.push(mine, payload: ["status": "picked up"])
        #expect(interfered && live.updaters.conflicts == 1)
        #expect(live.updaters.runs.count == 1 && live.updaters.runs[0].diagnostic == nil, "\(live.updaters.runs)")
        #expect(try live.manager.get(mine)?.content.state["status"] == "picked up", "the push's change was lost")
        #expect(try live.manager.get(mine)?.pushes.first?.handled == true)
        #expect(try live.manager.get(other)?.content.state["status"] == "theirs", "the other writer's change was lost")
    }

    @Test("A6: a push still waiting when its activity ends is dropped, visibly; one whose slot came before the 8-hour limit is delivered")
    func pushesAtTheEnd() throws {
        var policy = HostPolicy()
        policy.activityPushBudget = 1
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let manager = try ActivityManager(bundle: try fixture.load(), store: fixture.store, policy: policy, clock: clock)
        func start() throws -> String {
            try manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get().id
        }
        // Ended by the app while a push waits.
        let ended = try start()
        try manager.push(ended, payload: 1)
        try manager.push(ended, payload: 2)
        try clock.advance(to: t0 + 600)
        try manager.finish(ended)
        let pushes = try #require(try manager.get(ended)?.pushes)
        #expect(pushes.map(\.deliveredAt) == [t0, nil] && pushes.map(\.dropped) == [false, true])
        try clock.advance(to: t0 + 2 * 3600)
        #expect(try manager.get(ended)?.pushes[1].deliveredAt == nil, "a push was delivered after its activity ended")
        // Ended by the 8-hour limit while no host ran: a slot before the limit delivers, one after drops.
        let limited = try start()
        try clock.advance(to: t0 + 2 * 3600 + 8 * 3600 - 1800)
        try manager.push(limited, payload: 1)   // delivered at once
        try manager.push(limited, payload: 2)   // its slot is an hour later: after the limit
        try clock.advance(to: t0 + 12 * 3600)
        let late = try #require(try manager.get(limited))
        #expect(late.endedAt == t0 + 2 * 3600 + 8 * 3600)
        #expect(late.pushes.map(\.dropped) == [false, true] && late.pushes[0].deliveredAt != nil)
    }

    @Test func aCallThatOnlyReadsActivitiesCommitsNothingAndCannotConflict() throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let (_, manager) = try host(fixture, clock: clock)
        let id = try manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get().id
        try clock.advance(to: t0 + 9 * 3600)   // past the 8-hour limit: time alone ends it
        manager.beginCall(source: "timeline W")
        #expect(try manager.list().first?.phase(at: clock.time) == .ended)
        let app = try ActivityManager(bundle: try fixture.load(), store: SharedStore(root: fixture.storeRoot), policy: .standard, clock: clock)
        _ = try app.all()   // another writer applies the limit meanwhile
        #expect(try manager.attachedWrite() == nil, "a reading call wrote what time did")
        manager.endCall(committed: true)
        #expect(manager.changes.filter { $0.kind == .ended }.isEmpty, "an unwritten change was reported")
        #expect(try manager.get(id)?.endedAt == t0 + 8 * 3600)
        #expect(app.changes.filter { $0.kind == .ended }.map(\.source) == ["limit (A3)"], "the writer of the end did not note it")
    }

    @Test func aRowThisHostCannotReadIsNeitherDroppedNorOverwritten() throws {
        let fixture = try BundleFixture(main: Self.main)
        let clock = VirtualClock(t0)
        let (_, manager) = try host(fixture, clock: clock)
        _ = try manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get()
        let group = try fixture.store.group("group.test")
        try group.updateActivities(of: "com.example.test") { rows in
            rows.activities.append(StoredActivity(id: "activity-9", record: ["written by": "a newer host"]))
        }
        let collected = CollectedLog()
        manager.logger = Logger(label: "test.activities", factory: collected.handler)
        let error = #expect(throws: ActivityError.self) { try manager.list() }
        // The caller (maybe a script) gets a neutral message; the host's log, what and where.
        #expect(error?.message == "the store of com.example.test's Live Activities is unavailable (a stored value does not decode); the host's log has the details",
                "\(String(describing: error))")
        #expect(collected.all.contains { $0.contains("activity 'activity-9' of com.example.test holds a row this host cannot read") }, "\(collected.all)")
        #expect(try group.activities(of: "com.example.test").activities.map(\.id) == ["activity-1", "activity-9"], "a row was dropped")
    }

    @Test("A6: a bundle that asks for frequent updates gets the larger push budget")
    func frequentUpdates() throws {
        var policy = HostPolicy()
        policy.activityPushBudget = 2
        policy.activityFrequentPushBudget = 4
        for (frequent, delivered) in [(false, 2), (true, 4)] {
            let fixture = try BundleFixture(main: Self.main, manifest: """
                { "id": "com.example.test", "appGroups": ["group.test"], "activities": { "frequentUpdates": \(frequent) } }
                """)
            let manager = try ActivityManager(bundle: try fixture.load(), store: fixture.store, policy: policy, clock: VirtualClock(t0))
            #expect(manager.pushesPerHour == (frequent ? 4 : 2))
            let id = try manager.request(type: "Delivery", attributes: LuaTable(fields: ["order": "A"]), state: LuaTable(fields: ["status": "placed"]), from: .app).get().id
            for n in 1...5 { try manager.push(id, payload: .integer(Int64(n))) }
            #expect(try manager.get(id)?.pushes.filter { $0.deliveredAt != nil }.count == delivered, "frequentUpdates \(frequent)")
        }
    }

    @Test func aBundleWithActivitiesButNoAppGroupIsRefusedAtLoad() throws {
        let fixture = try BundleFixture(main: Self.main, manifest: #"{ "id": "com.example.test" }"#)
        #expect(fixture.loadErrors().contains { $0.hasSuffix("main.lua:1: activity 'Delivery': activities live in an app group's store; list one in appGroups of bundle.json") },
                "\(fixture.loadErrors())")
    }
}
