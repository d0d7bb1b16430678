import Foundation
import Testing
@testable import WidgetHost

@Suite("Clocks and calendars")
struct ClockTests {
    @Test func aVirtualClockMovedBackIsAnErrorAndStaysWhereItWas() throws {
        let clock = VirtualClock(1_795_219_200)
        try clock.advance(by: 60)
        #expect(throws: ClockError(message: "a virtual clock does not go back: 2026-11-21T00:00:00Z is before 2026-11-21T00:01:00Z")) {
            try clock.advance(to: 1_795_219_200)
        }
        #expect(throws: ClockError.self) { try clock.advance(by: -1) }
        #expect(throws: ClockError.self) { try clock.advance(to: .nan) }
        #expect(clock.time == 1_795_219_260)
    }

    @Test func isoDatesFormatInUTCWithMillisecondsOnlyWhenNeeded() {
        #expect(ISODate.format(BundleFixture.midnight) == "2026-11-21T00:00:00Z")
        #expect(ISODate.format(BundleFixture.midnight + 9 * 3600 + 30 * 60) == "2026-11-21T09:30:00Z")
        #expect(ISODate.format(BundleFixture.midnight + 0.25) == "2026-11-21T00:00:00.250Z")
        #expect(ISODate.format(0) == "1970-01-01T00:00:00Z")
        #expect(ISODate.format(-1) == "1969-12-31T23:59:59Z")
        #expect(ISODate.format(951_782_400) == "2000-02-29T00:00:00Z")
    }

    @Test func isoDatesParseWithOffsetsAndLocalTimes() throws {
        let paris = try #require(HostCalendar(timeZoneNamed: "Europe/Paris"))
        #expect(try ISODate.parse("2026-11-21T09:30:00Z", calendar: .utc).get() == BundleFixture.midnight + 34_200)
        #expect(try ISODate.parse("2026-11-21T10:30:00+01:00", calendar: .utc).get() == BundleFixture.midnight + 34_200)
        #expect(try ISODate.parse("2026-11-21T10:30:00.5+0100", calendar: .utc).get() == BundleFixture.midnight + 34_200.5)
        // No offset: local to the calendar's zone (Paris is UTC+1 in November).
        #expect(try ISODate.parse("2026-11-21T10:30", calendar: paris).get() == BundleFixture.midnight + 34_200)
        #expect(try ISODate.parse("2026-11-21", calendar: paris).get() == BundleFixture.midnight - 3600)
    }

    @Test func badISODatesSayWhatIsWrong() {
        for (text, what) in [("2026-13-01", "month 13"), ("2026-02-30", "day 30"), ("2026-11-21T25:00", "hour 25"),
                             ("2026-11-21T10:00Zjunk", "unexpected text"), ("yesterday", "expected YYYY-MM-DD")] {
            guard case .failure(let error) = ISODate.parse(text, calendar: .utc) else {
                Issue.record("\(text) parsed")
                continue
            }
            #expect(error.message.contains(what), "\(error.message)")
        }
    }

    @Test func daysFollowTheTimeZoneAcrossDaylightSaving() throws {
        let paris = try #require(HostCalendar(timeZoneNamed: "Europe/Paris"))
        // 2026-03-29 is 23 hours long in Paris (clocks go from 02:00 to 03:00).
        let noon = try ISODate.parse("2026-03-29T12:00", calendar: paris).get()
        let start = paris.startOfDay(noon)
        #expect(ISODate.format(start) == "2026-03-28T23:00:00Z")
        #expect(paris.nextMidnight(noon) - start == 23 * 3600)
        // Adding a day keeps the wall-clock time.
        let before = try ISODate.parse("2026-03-28T12:00", calendar: paris).get()
        #expect(paris.add(before, days: 1, seconds: 0) == noon)
        let c = paris.components(noon)
        #expect((c.year, c.month, c.day, c.hour, c.minute, c.weekday) == (2026, 3, 29, 12, 0, 1))  // a Sunday
    }

    @Test func theClockModuleReadsTheHostClockAndOsTimeAgrees() throws {
        let fixture = try BundleFixture(main: """
            widget {
              kind = "C", families = { "systemSmall" },
              placeholder = function() return {} end,
              timeline = function()
                local now = clock.now()
                local later = clock.add(now, { days = 1, hours = 2, minutes = 3, seconds = 4 })
                local c = clock.components(now)
                local t, message = clock.parse("not a date")
                return { entries = { { date = now, osTime = os.time(), later = later, iso = clock.iso(now),
                  start = clock.startOfDay(now + 3600), midnight = clock.nextMidnight(now), hour = c.hour,
                  weekday = c.weekday, parsed = clock.parse("2026-11-21T10:00:00Z"), bad = t == nil and message } } }
              end,
            }
            """)
        let (runtime, _) = try fixture.runtime(at: BundleFixture.midnight + 9 * 3600)
        let result = runtime.timeline(try runtime.configuration(kind: "C"))
        let entry = try #require(result.value?.entries.first?.content)
        let now = BundleFixture.midnight + 9 * 3600
        #expect(entry["date"] == .integer(Int64(now)))
        #expect(entry["osTime"] == .integer(Int64(now)))
        #expect(entry["later"] == .integer(Int64(now + 86_400 + 7384)))
        #expect(entry["iso"] == "2026-11-21T09:00:00Z")
        #expect(entry["start"] == .integer(Int64(BundleFixture.midnight)))
        #expect(entry["midnight"] == .integer(Int64(BundleFixture.midnight + 86_400)))
        #expect(entry["hour"] == 9)
        #expect(entry["weekday"] == 7)   // 2026-11-21 is a Saturday
        #expect(entry["parsed"] == .integer(Int64(BundleFixture.midnight + 36_000)))
        #expect(entry["bad"].stringValue?.contains("invalid date") == true)
    }

    /// clock.now on a virtual clock (or a worker's) is read in C: the time as the clock has
    /// it at each call (a whole second an integer, else a float), and each
    /// call an effect, as the Swift body's (main.lua reading it cannot be
    /// snapshot). Other clocks go to the body.
    @Test func clockNowReadsAVirtualClockAsItMovesAndIsAnEffect() throws {
        let clock = VirtualClock(1_795_219_200)
        let state = try LuaState()
        try ClockBinding(clock: clock, calendar: .utc).install(in: state)
        let now = try #require(try state.load("return clock.now(), math.type(clock.now())", name: "now.lua"))
        let before = state.effects
        #expect(try state.call(now) == [1_795_219_200, "integer"])
        #expect(state.effects - before == 2, "two calls, two effects")
        try clock.advance(by: 0.25)
        #expect(try state.call(now) == [.number(1_795_219_200.25), "float"])
        try clock.advance(by: 3600.75)
        #expect(try state.call(now) == [1_795_222_801, "integer"])
        // A worker's clock keeps its time the same way: what the host set.
        let workerClock = WorkerClock()
        let worker = try LuaState()
        try ClockBinding(clock: workerClock, calendar: .utc).install(in: worker)
        let workerNow = try #require(try worker.load("return clock.now()", name: "worker.lua"))
        workerClock.set(1_795_219_200.5)
        #expect(try worker.call(workerNow) == [.number(1_795_219_200.5)])
        workerClock.set(1_795_219_260)
        #expect(try worker.call(workerNow) == [1_795_219_260])
        // A system clock: the body answers, with the time of day.
        let system = try LuaState()
        try ClockBinding(clock: SystemClock(), calendar: .utc).install(in: system)
        let read = try #require(try system.load("return clock.now()", name: "system.lua"))
        let t = try #require(try system.call(read).first?.doubleValue)
        #expect(abs(t - Date().timeIntervalSince1970) < 60)
    }

    /// clock.add's C fast path (hours, minutes, seconds) answers as its Swift
    /// body does: `days = 0` changes no sum but sends the call to the body.
    @Test func clockAddsFastPathAnswersAsItsSwiftBody() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "A", placeholder = function() return {} end,
              timeline = function(ctx)
                local cases = {
                  { 0, {} }, { 1.0, {} }, { 1.5, {} }, { -7, { seconds = -0.5 } }, { 86400, { hours = 24 } },
                  { 1795219200, { hours = 1, minutes = -30, seconds = 0.25 } }, { 2^53, { seconds = 2 } },
                  { 2^63, {} }, { -2^63, {} }, { 1e300, { hours = 1 } }, { 0, { minutes = 1/0 } }, { 0, { seconds = 0/0 } },
                  { 3, { seconds = 7 } }, { 0.5, { minutes = 0.5, hours = 0.25 } }, { -0.0, {} },
                  { math.maxinteger, { seconds = 1 } }, { math.mininteger, { minutes = 2^53 } },
                }
                local checked, wrong = 0, {}
                for i, case in ipairs(cases) do
                  local slow = { days = 0 }
                  for k, v in pairs(case[2]) do slow[k] = v end
                  local a, b = clock.add(case[1], case[2]), clock.add(case[1], slow)
                  local same = math.type(a) == math.type(b) and (a == b or (a ~= a and b ~= b))
                  if same then checked = checked + 1 else wrong[#wrong + 1] = i .. ": " .. tostring(a) .. " vs " .. tostring(b) end
                end
                return { entries = { { date = 0, checked = checked, wrong = table.concat(wrong, "; ") } } }
              end }
            """)
        let (runtime, _) = try fixture.runtime()
        let result = runtime.timeline(try runtime.configuration(kind: "A"))
        let entry = try #require(result.value?.entries.first?.content)
        #expect(entry["wrong"] == "")
        #expect(entry["checked"] == 17)
    }

    @Test func clockAddRefusesUnknownUnitsAndFractionalDays() throws {
        let fixture = try BundleFixture(main: """
            widget { kind = "C", placeholder = function() return {} end,
              timeline = function(ctx) return { entries = { { date = clock.add(0, { weeks = 1 }) } } } end }
            widget { kind = "D", placeholder = function() return {} end,
              timeline = function(ctx) return { entries = { { date = clock.add(0, { days = 1.5 }) } } } end }
            widget { kind = "E", placeholder = function() return {} end,
              timeline = function(ctx) return { entries = { { date = clock.add(0, { minutes = "5" }) } } } end }
            """)
        let (runtime, _) = try fixture.runtime()
        let weeks = runtime.timeline(try runtime.configuration(kind: "C")).outcome
        #expect(weeks.status == .error)
        #expect(weeks.message?.contains("main.lua:2: bad argument #2 to 'clock.add' (unknown unit 'weeks'") == true, "\(weeks.message ?? "")")
        let days = runtime.timeline(try runtime.configuration(kind: "D")).outcome
        #expect(days.message?.contains("days must be a whole number") == true, "\(days.message ?? "")")
        let text = runtime.timeline(try runtime.configuration(kind: "E")).outcome
        #expect(text.message?.contains("bad argument #2 to 'clock.add' ('minutes' must be a number, got string)") == true, "\(text.message ?? "")")
    }
}
