import Foundation
import Testing
@testable import WidgetHost

/// `ZoneRules` (the tz database read directly) against Foundation's
/// `Calendar` on the same zone: every question `HostCalendar` answers,
/// around every change of offset from 1990 to 2045 and at instants spread
/// over 1970–2100. (Foundation's answers come from ICU's own copy of the tz
/// data, the rules' from the system's: zones whose history the two versions
/// tell differently, like EST5EDT before 1967, are left out.)
@Suite("Time zone rules")
struct ZoneRulesTests {
    /// Zones with every kind of rule: none, northern and southern daylight
    /// time, half-hour and 45-minute offsets, a 30-minute daylight shift,
    /// changes at midnight (a day without 00:00), offsets that changed for
    /// good, and zones past the end of their explicit transitions.
    static let zones = [
        "UTC", "Etc/UTC", "Europe/Paris", "Europe/London", "Europe/Moscow", "Europe/Dublin", "America/New_York",
        "America/Los_Angeles", "America/Santiago", "America/Havana", "America/Asuncion", "America/Sao_Paulo",
        "America/St_Johns", "America/Godthab", "America/Caracas", "Asia/Tokyo", "Asia/Kolkata", "Asia/Kathmandu",
        "Asia/Tehran", "Asia/Beirut", "Asia/Gaza", "Australia/Sydney", "Australia/Lord_Howe", "Australia/Adelaide",
        "Pacific/Auckland", "Pacific/Chatham", "Pacific/Apia", "Pacific/Kiritimati", "Africa/Casablanca", "Africa/Cairo",
        "Antarctica/Troll", "US/Eastern",
    ]

    static let database = ZoneRules.database

    @Test(arguments: zones)
    func answersAsFoundationDoes(_ name: String) throws {
        try #require(FileManager.default.fileExists(atPath: Self.database + "/" + name),
                     "no tz database at \(Self.database) (Debian: apt install tzdata; scripts/bootstrap does)")
        let rules = try #require(ZoneRules(named: name), "\(name) did not load")
        let ours = HostCalendar(rules)
        let zone = try #require(TimeZone(identifier: name))
        let theirs = HostCalendar(foundation: zone)
        #expect(ours.usesZoneRules && !theirs.usesZoneRules)

        var instants: [Double] = []
        var t = Date(timeIntervalSince1970: 631_152_000)           // 1990
        let end = Date(timeIntervalSince1970: 2_366_841_600)       // 2045
        while let next = zone.nextDaylightSavingTimeTransition(after: t), next < end {
            for delta in [-86_400.0, -3_601, -1_800, -1, 0, 1, 1_799.5, 3_600, 7_200, 86_400] {
                instants.append(next.timeIntervalSince1970 + delta)
            }
            t = next
        }
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(name.utf8.count)
        for _ in 0..<150 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            instants.append(Double(seed >> 11).truncatingRemainder(dividingBy: 4_102_444_800))
        }
        var mismatches: [String] = []
        var skipped = 0
        func check<T: Equatable>(_ what: String, _ t: Double, _ a: T, _ b: T) {
            if a != b && mismatches.count < 12 { mismatches.append("\(what) at \(ISODate.format(t)) (\(t)): \(a) here, \(b) in Foundation") }
        }
        for t in instants {
            check("utcOffset", t, ours.utcOffset(t), theirs.utcOffset(t))
            check("components", t, ours.components(t), theirs.components(t))
            check("startOfDay", t, ours.startOfDay(t), theirs.startOfDay(t))
            check("nextMidnight", t, ours.nextMidnight(t), theirs.nextMidnight(t))
            for days in [1, -1, 7, -30] {
                let (a, b) = (ours.add(t, days: days, seconds: 0.25), theirs.add(t, days: days, seconds: 0.25))
                // Where a zone skipped a whole day (Samoa, Kiribati), Foundation's
                // sum does not keep the wall-clock time; those are not compared.
                if a != b && !keepsWallClock(b - 0.25, from: t, days: days, theirs) { skipped += 1; continue }
                check("add \(days) days", t, a, b)
            }
            // The local times around t, read back: times that happen twice or not at all included.
            let c = theirs.components(t)
            for hour in Set([c.hour, min(c.hour + 1, 23)]) {
                for minutes in [0, 30, 59] {
                    check("instant \(c.year)-\(c.month)-\(c.day) \(hour):\(minutes)", t,
                          ours.instant(year: c.year, month: c.month, day: c.day, hour: hour, minute: minutes, second: 1.5),
                          theirs.instant(year: c.year, month: c.month, day: c.day, hour: hour, minute: minutes, second: 1.5))
                }
            }
        }
        #expect(mismatches.isEmpty, "\(name): \(mismatches.joined(separator: "\n"))")
        #expect(skipped <= (["Pacific/Apia", "Pacific/Kiritimati"].contains(name) ? 40 : 0), "\(name): \(skipped) sums not compared")
    }

    /// Whether `result` is `t`'s local time of day, `days` local days later.
    private func keepsWallClock(_ result: Double, from t: Double, days: Int, _ calendar: HostCalendar) -> Bool {
        let (a, b) = (calendar.components(t), calendar.components(result))
        let day = ISODate.daysFromCivil(year: a.year, month: a.month, day: a.day) + Int64(days)
        return ISODate.daysFromCivil(year: b.year, month: b.month, day: b.day) == day
            && (a.hour, a.minute, a.second) == (b.hour, b.minute, b.second)
    }

    @Test func namesOutsideTheDatabaseAreRefused() {
        for name in ["", "/etc/localtime", "../../etc/passwd", "Europe/../Europe/Paris", "Europe//Paris", "Europe/Paris/", "Mars/Olympus", "Europe/Paris\u{0}"] {
            #expect(ZoneRules(named: name) == nil, "\(name.debugDescription)")
        }
        // A name ICU knows but the database does not (a Java-era alias) still
        // makes a calendar, through Foundation, where Foundation's ICU part is
        // linked (as here; not in the `lunette` executable).
        let alias = try? #require(HostCalendar(timeZoneNamed: "JST"))
        #expect(alias?.usesZoneRules == false)
        #expect(alias?.utcOffset(0) == 32_400)
        #expect(HostCalendar(timeZoneNamed: "Mars/Olympus") == nil)
    }

    /// Fixed offsets in Foundation's notation are read from their text, with
    /// Foundation's answers (its identifier and offset) for every form it
    /// takes or refuses.
    @Test func fixedOffsetNamesReadAsFoundationReadsThem() throws {
        var names: [String] = []
        for prefix in ["GMT", "UTC", "gmt", "UT", "Etc/GMT", ""] {
            for sign in ["+", "-", "", "++"] {
                for body in ["", "0", "2", "02", "14", "18", "19", "24", "99", "230", "0230", "1800", "1801", "123", "12345",
                             "2:30", "02:00", "5:5", "05:5", "18:00", "18:01", "23:59", "02:00:30", "020030", "2 ", ":30",
                             "2.30", "02.30", "5.5", "2.3.0"] {
                    names.append(prefix + sign + body)
                }
            }
        }
        var compared = 0
        for name in names {
            let ours = ZoneRules(offsetName: name)
            let theirs = TimeZone(identifier: name)
            if ZoneRules(named: name) != nil {
                // Database names ("GMT", "GMT0", "GMT+0", "Etc/GMT+2") are the tz reader's, read first.
                continue
            }
            #expect(ours?.identifier == theirs?.identifier, "\(name)")
            #expect(ours.map { Int($0.offset(at: 0)) } == theirs?.secondsFromGMT(for: Date(timeIntervalSince1970: 0)), "\(name)")
            if ours != nil { compared += 1 }
        }
        #expect(compared >= 30, "the grid exercised the forms Foundation takes")
        // The one difference, said in the initializer: 60 minutes are not the next hour.
        #expect(TimeZone(identifier: "GMT-12:60")?.secondsFromGMT() == -46_800 && ZoneRules(offsetName: "GMT-12:60") == nil)
        // And through the host's calendar, without Foundation.
        let calendar = try #require(HostCalendar(timeZoneNamed: "UTC-0130"))
        #expect(calendar.usesZoneRules && calendar.identifier == "GMT-0130" && calendar.utcOffset(0) == -5_400)
    }

    @Test func filesItCannotReadFallBackOrAreRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("zonerules-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: dir.appendingPathComponent(name)) }
        // A version 1 file: one transition, from +1 to +2 at t = 1000.
        var v1: [UInt8] = Array("TZif".utf8) + [0] + Array(repeating: 0, count: 15)
        for count in [0, 0, 0, 1, 2, 4] as [UInt32] { v1 += withUnsafeBytes(of: count.bigEndian, Array.init) }
        v1 += withUnsafeBytes(of: Int32(1000).bigEndian, Array.init) + [1]
        v1 += withUnsafeBytes(of: Int32(3600).bigEndian, Array.init) + [0, 0]
        v1 += withUnsafeBytes(of: Int32(7200).bigEndian, Array.init) + [1, 0]
        v1 += Array("AB\0\0".utf8)
        try write("V1", v1)
        let rules = try #require(ZoneRules(named: "V1", database: dir.path))
        #expect(rules.offset(at: 999) == 3600 && rules.offset(at: 1000) == 7200)
        // Truncated, not TZif, or with leap seconds: refused.
        try write("Short", Array(v1.prefix(60)))
        try write("Text", Array("not a zone file".utf8))
        var leap = v1
        leap[20 + 8 + 3] = 1   // leapcnt = 1, and its record (after the names: no isstd or isut) follows
        leap += withUnsafeBytes(of: Int32(78_796_800).bigEndian, Array.init) + withUnsafeBytes(of: Int32(1).bigEndian, Array.init)
        try write("Leap", leap)
        for name in ["Short", "Text", "Leap", "Missing"] { #expect(ZoneRules(named: name, database: dir.path) == nil, "\(name)") }
    }

    @Test func posixRulesReadEveryDateForm() throws {
        let paris = try #require(PosixRule("CET-1CEST,M3.5.0,M10.5.0/3"))
        #expect(paris.standard == 3600 && paris.daylight?.offset == 7200)
        // 2031-03-30 01:00 UTC: the last Sunday of March, 02:00 local.
        #expect(paris.offset(at: 1_932_598_800 - 1) == 3600 && paris.offset(at: 1_932_598_800) == 7200)
        // Southern: daylight from the first Sunday of October to the first of
        // April, so a year starts in daylight time. 2031-04-06 03:00 AEDT is
        // 2031-04-05 16:00 UTC; 2031-10-05 02:00 AEST is 2031-10-04 16:00 UTC.
        let sydney = try #require(PosixRule("AEST-10AEDT,M10.1.0,M4.1.0/3"))
        let april = ISODate.daysFromCivil(year: 2031, month: 4, day: 5) * 86_400 + 16 * 3600
        let october = ISODate.daysFromCivil(year: 2031, month: 10, day: 4) * 86_400 + 16 * 3600
        #expect(sydney.offset(at: ISODate.daysFromCivil(year: 2031, month: 1, day: 1) * 86_400) == 39_600)
        #expect(sydney.offset(at: april - 1) == 39_600 && sydney.offset(at: april) == 36_000)
        #expect(sydney.offset(at: october - 1) == 36_000 && sydney.offset(at: october) == 39_600)
        #expect(PosixRule("<-03>3")?.standard == -10_800 && PosixRule("<-03>3")?.daylight == nil)
        #expect(PosixRule("<+0545>-5:45")?.standard == 20_700)
        let julian = try #require(PosixRule("XST5XDT,J60/0,J300/-1"))
        #expect(julian.daylight?.start.days(in: 2028) == ISODate.daysFromCivil(year: 2028, month: 3, day: 1))
        #expect(julian.daylight?.end.time == -3600)
        let zeroBased = try #require(PosixRule("XST5XDT4,59,300"))
        #expect(zeroBased.daylight?.start.days(in: 2028) == ISODate.daysFromCivil(year: 2028, month: 2, day: 29))
        for bad in ["", "X5", "CET", "CET-1CEST", "CET-1CEST,M13.1.0,M10.5.0", "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,J0,J10", "CET-1CEST,M3.5.0"] {
            #expect(PosixRule(bad) == nil, "\(bad)")
        }
    }

    @Test func everyZoneOfTheDatabaseLoadsOrFallsBackToFoundation() throws {
        let list = Self.database + "/tzdata.zi"
        let text = try #require(try? String(contentsOfFile: list, encoding: .utf8), "no \(list) (Debian: apt install tzdata)")
        // "Z name …" lines are zones, "L target name" links.
        let names = text.split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: " ")
            if parts.first == "Z", parts.count > 1 { return String(parts[1]) }
            if parts.first == "L", parts.count > 2 { return String(parts[2]) }
            return nil
        }
        #expect(names.count > 400)
        let failed = names.filter { ZoneRules(named: $0) == nil }
        #expect(failed.isEmpty, "zones read through Foundation instead: \(failed)")
    }
}
