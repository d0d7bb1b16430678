import Foundation
import Testing
@testable import WidgetHost

/// The Live Activity lifecycle (A1–A5, A7–A9), on a virtual clock. Each
/// test's name starts with its rule's id.
@Suite("Live Activity rules")
struct ActivityRuleTests {
    let t0 = BundleFixture.midnight

    /// A table of plain-data fields.
    func T(_ fields: LuaFields) -> LuaTable { LuaTable(fields: fields) }

    func manager(policy: HostPolicy = .standard) throws -> (ActivityManager, VirtualClock) {
        let fixture = try BundleFixture(main: """
            widget { kind = "W", placeholder = function() return {} end, timeline = function() return { entries = {} } end }
            activity { type = "Delivery", attributes = { order = "string" },
              state = { status = "string", eta = "date?", note = "string?" }, updater = function() end }
            """)
        let clock = VirtualClock(t0)
        return (try ActivityManager(bundle: try fixture.load(), store: fixture.store, policy: policy, clock: clock), clock)
    }

    func start(_ m: ActivityManager, order: String = "A1", relevance: Double = 0, staleDate: Double? = nil) throws -> ActivityRecord {
        try m.request(type: "Delivery", attributes: T(["order": .string(LuaString(order))]), state: T(["status": "placed"]),
                      staleDate: staleDate, relevance: relevance, from: .app).get()
    }

    func refusal(_ result: Result<ActivityRecord, ActivityError>) -> ActivityRefusal? {
        if case .failure(let error) = result { return error.refusal }
        return nil
    }

    @Test("A1: attributes and state over 4 KB together are refused, on request and on update")
    func payloadLimit() throws {
        let (m, _) = try manager()
        let big = LuaString(String(repeating: "x", count: 4100))
        #expect(refusal(m.request(type: "Delivery", attributes: T(["order": "A"]), state: T(["status": .string(big)]), from: .app)) == .attributesTooLarge)
        let fits = LuaString(String(repeating: "x", count: 3000))
        let a = try m.request(type: "Delivery", attributes: T(["order": "A"]), state: T(["status": .string(fits)]), from: .app).get()
        let more = LuaString(String(repeating: "y", count: 1100))
        #expect(throws: ActivityError.self) { try m.update(a.id, state: T(["status": .string(fits), "note": .string(more)])) }
        #expect(try m.get(a.id)?.content.state["status"] == .string(fits), "a refused update changed the content")
    }

    @Test("A2: at most 5 activities at once; a request past it is targetMaximumExceeded")
    func concurrentLimit() throws {
        let (m, _) = try manager()
        var started: [ActivityRecord] = []
        for i in 0..<5 { started.append(try start(m, order: "O\(i)")) }
        #expect(refusal(m.request(type: "Delivery", attributes: T(["order": "O5"]), state: T(["status": "placed"]), from: .app)) == .targetMaximumExceeded)
        try m.finish(started[0].id)
        _ = try start(m, order: "O6")
    }

    @Test("A3: an activity ends after 8 hours active and is dismissed 4 hours later")
    func activeAndVisibleLimits() throws {
        let (m, clock) = try manager()
        let a = try start(m)
        try clock.advance(to: t0 + 8 * 3600 - 1)
        #expect(try m.get(a.id)?.phase(at: clock.time) == .active)
        try clock.advance(to: t0 + 8 * 3600 + 10)
        #expect(try m.get(a.id)?.endedAt == t0 + 8 * 3600)
        #expect(try m.get(a.id)?.phase(at: clock.time) == .ended)
        try clock.advance(to: t0 + 12 * 3600)
        #expect(try m.get(a.id)?.phase(at: clock.time) == .dismissed)
        #expect(try m.list().isEmpty)
    }

    @Test("A4: at its stale date an activity becomes stale and can still be updated")
    func staleIsUpdatable() throws {
        let (m, clock) = try manager()
        let a = try start(m, staleDate: t0 + 600)
        try clock.advance(to: t0 + 600)
        #expect(try m.get(a.id)?.phase(at: clock.time) == .stale)
        try m.update(a.id, state: T(["status": "late"]), staleDate: t0 + 1200)
        #expect(try m.get(a.id)?.phase(at: clock.time) == .active)
        #expect(try m.list().count == 1, "a stale activity was removed")
    }

    @Test("A5: dismissal default, immediate and after(d), capped at 4 hours after the end; a past date means now")
    func dismissal() throws {
        let (m, clock) = try manager()
        let standard = try start(m, order: "S"), immediate = try start(m, order: "I")
        let soon = try start(m, order: "A"), late = try start(m, order: "L"), past = try start(m, order: "P")
        try clock.advance(to: t0 + 100)
        #expect(try m.finish(standard.id).dismissAt == t0 + 100 + 4 * 3600)
        #expect(try m.finish(immediate.id, dismissal: .immediate).dismissAt == t0 + 100)
        #expect(try m.finish(soon.id, dismissal: .after(t0 + 1000)).dismissAt == t0 + 1000)
        #expect(try m.finish(late.id, dismissal: .after(t0 + 24 * 3600)).dismissAt == t0 + 100 + 4 * 3600)
        #expect(try m.finish(past.id, dismissal: .after(t0)).dismissAt == t0 + 100)
    }

    @Test("A6: pushes are budgeted per activity per hour; priority 5 does not count; over budget they are delivered later, in order, never lost")
    func pushBudget() throws {
        var policy = HostPolicy()
        policy.activityPushBudget = 3
        let (m, clock) = try manager(policy: policy)
        let a = try start(m), b = try start(m, order: "B")
        for n in 1...5 { try m.push(a.id, payload: .integer(Int64(n))) }
        try m.push(a.id, payload: "low", priority: 5)
        try m.push(b.id, payload: "other activity")
        let pushes = try #require(try m.get(a.id)?.pushes)
        #expect(pushes.map(\.deliveredAt) == [t0, t0, t0, nil, nil, t0], "over budget went through, or priority 5 waited")
        #expect(pushes.map(\.counted) == [true, true, true, true, true, false])
        #expect(try m.get(b.id)?.pushes.first?.deliveredAt == t0, "one activity's budget held back another's")
        try clock.advance(to: t0 + 3600 + 5)
        let later = try #require(try m.get(a.id)?.pushes)
        #expect(later.map(\.deliveredAt) == [t0, t0, t0, t0 + 3600, t0 + 3600, t0])
        #expect(later.compactMap(\.delay) == [0, 0, 0, 3600, 3600, 0])
        #expect(later.count == 6 && later.allSatisfy { $0.deliveredAt != nil }, "a push was lost")
        let counted = later.filter(\.counted).compactMap(\.deliveredAt)
        #expect(counted == counted.sorted(), "counted pushes delivered out of order")
        #expect(later.map(\.payload) == [1, 2, 3, 4, 5, "low"], "payloads changed or reordered")
        #expect(throws: ActivityError.self) { try m.push(a.id, payload: 1, priority: 7) }
    }

    @Test("A7: with activities switched off a request fails with denied")
    func disabled() throws {
        let (m, _) = try manager()
        try m.setEnabled(false)
        #expect(refusal(m.request(type: "Delivery", attributes: T(["order": "A"]), state: T(["status": "placed"]), from: .app)) == .denied)
    }

    @Test("A8: updating or ending an ended or dismissed activity is an error that says so")
    func endedRefusesUpdates() throws {
        let (m, clock) = try manager()
        let a = try start(m)
        try m.finish(a.id, state: T(["status": "delivered"]))
        #expect(throws: ActivityError(refusal: nil, message: "cannot update activity '\(a.id)': it is ended (A8)")) {
            try m.update(a.id, state: T(["status": "again"]))
        }
        try clock.advance(to: t0 + 5 * 3600)
        #expect(throws: ActivityError(refusal: nil, message: "cannot end activity '\(a.id)': it is dismissed (A8)")) {
            try m.finish(a.id)
        }
        #expect(try m.get(a.id)?.content.state["status"] == "delivered")
    }

    @Test("A9: the most relevant leads; ties go to the earliest started")
    func relevanceOrder() throws {
        let (m, clock) = try manager()
        let first = try start(m, order: "first", relevance: 1)
        try clock.advance(to: t0 + 1)
        let second = try start(m, order: "second", relevance: 1)
        let top = try start(m, order: "top", relevance: 5)
        #expect(try m.list().map(\.id) == [top.id, first.id, second.id])
        // Rows kept in another order (another process wrote them so): the tie still goes to the earliest started.
        try m.group.updateActivities(of: m.bundleID) { $0.activities.reverse() }
        #expect(try m.list().map(\.id) == [top.id, first.id, second.id], "ties follow the stored order, not the start")
        try m.update(second.id, state: T(["status": "near"]), relevance: 9)
        #expect(try m.list().first?.id == second.id)
    }

    @Test func requestsAreCheckedForTheirOriginTypeAndSchema() throws {
        let (m, _) = try manager()
        #expect(refusal(m.request(type: "Delivery", attributes: T(["order": "A"]), state: T(["status": "placed"]), from: .widget)) == .visibility)
        #expect(refusal(m.request(type: "Pizza", attributes: T([:]), state: T([:]), from: .app)) == .unknownType)
        let bad = m.request(type: "Delivery", attributes: T(["order": 7]), state: T(["status": "placed"]), from: .intent)
        #expect(refusal(bad) == .invalidState)
        if case .failure(let error) = bad { #expect(error.message == "invalidState: attributes.order must be a string, got number") }
    }
}
