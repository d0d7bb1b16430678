#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif

/// Calendar arithmetic in the host's time zone: what `clock.startOfDay`,
/// `clock.nextMidnight`, `clock.components` and `clock.add` compute, and how
/// ISO 8601 text is read and written. Proleptic Gregorian calendar; weekday
/// 1 is Sunday, as in Lua's `os.date("*t")`.
///
/// A zone of the system's tz database is computed from its file, and a
/// fixed offset written as Foundation writes one ("GMT+0200", "UTC-5") from
/// its text (`ZoneRules`: a binary search, no Foundation or ICU); any other
/// zone Foundation knows goes through Foundation's `Calendar`, with the same
/// answers from 1583 on (before, Foundation's calendar is Julian; the tz
/// path, like `ISODate`, stays Gregorian). The `lunette` executable links
/// FoundationEssentials only, without ICU: there, a named zone needs the
/// system's tz database (Debian's tzdata; scripts/bootstrap installs it).
public struct HostCalendar: Sendable {
    /// The time zone's name ("Europe/Paris", "UTC").
    public let identifier: String
    /// The value of `TZ` that makes libc's local time (Lua's `os.date`)
    /// this zone's: the zone's name, or for a fixed offset read from its
    /// name a POSIX rule ("<+0200>-2"; libc would read "GMT+0200" with the
    /// opposite sign).
    public var posixTZ: String {
        if case .rules(let rules) = zone, let posix = rules.posixTZ { return posix }
        return identifier
    }
    private let zone: Zone

    private enum Zone: Sendable {
        case rules(ZoneRules)
        case foundation(Calendar)
    }

    /// The time zone as Foundation's (made on each use).
    public var timeZone: TimeZone {
        switch zone {
        case .rules(let rules):
            // A zone Foundation does not know by name: its offset now, fixed.
            let now = Int64(Date().timeIntervalSince1970)
            return TimeZone(identifier: rules.identifier) ?? TimeZone(secondsFromGMT: Int(rules.offset(at: now))) ?? TimeZone(secondsFromGMT: 0)!
        case .foundation(let calendar): return calendar.timeZone
        }
    }

    /// The calendar of Foundation's `timeZone`: from the tz database when it
    /// has a zone of that name, else through Foundation.
    public init(timeZone: TimeZone) {
        if let rules = ZoneRules(named: timeZone.identifier) { self.init(rules) } else { self.init(foundation: timeZone) }
    }

    /// The calendar of an IANA time zone name ("Europe/Paris", "UTC"), or
    /// nil when the name is unknown.
    public init?(timeZoneNamed name: String) {
        if let rules = ZoneRules(named: name) ?? ZoneRules(offsetName: name) {
            self.init(rules)
        } else if let zone = TimeZone(identifier: name) {
            self.init(foundation: zone)
        } else {
            return nil
        }
    }

    init(_ rules: ZoneRules) {
        identifier = rules.identifier
        zone = .rules(rules)
    }

    /// The same zone computed by Foundation's `Calendar` (the fallback, and
    /// what the tests compare `ZoneRules` with).
    init(foundation timeZone: TimeZone) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        identifier = timeZone.identifier
        zone = .foundation(calendar)
    }

    /// The time zone named by `TZ` in the environment (with or without the
    /// leading ":"), else the system's (`/etc/localtime`).
    public static func fromEnvironment() -> HostCalendar {
        // getenv, not ProcessInfo's environment, which copies all of it into a dictionary.
        if let value = getenv("TZ"), case var name = String(cString: value), !name.isEmpty {
            if name.hasPrefix(":") { name.removeFirst() }
            if let calendar = HostCalendar(timeZoneNamed: name) { return calendar }
        }
        if let rules = ZoneRules.system() { return HostCalendar(rules) }
        return HostCalendar(foundation: .current)
    }

    /// UTC.
    public static let utc = HostCalendar(ZoneRules(fixed: "UTC", offset: 0))

    /// Whether the zone is computed from the tz database (tests).
    var usesZoneRules: Bool {
        if case .rules = zone { return true }
        return false
    }

    // MARK: Days

    /// The first instant of the day that contains `t`.
    public func startOfDay(_ t: Double) -> Double {
        switch zone {
        case .rules(let rules):
            let day = localDay(of: t, rules)
            return Double(rules.instant(local: day * 86_400))
        case .foundation(let calendar):
            return calendar.startOfDay(for: Date(timeIntervalSince1970: t)).timeIntervalSince1970
        }
    }

    /// The first instant of the day after the one that contains `t`.
    public func nextMidnight(_ t: Double) -> Double {
        switch zone {
        case .rules(let rules):
            let day = localDay(of: t, rules)
            return Double(rules.instant(local: (day + 1) * 86_400))
        case .foundation(let calendar):
            let date = Date(timeIntervalSince1970: t)
            guard let day = calendar.dateInterval(of: .day, for: date) else { return startOfDay(t) + 86_400 }
            return day.end.timeIntervalSince1970
        }
    }

    /// Local date and time of `t`.
    public struct Components: Sendable, Equatable {
        public var year, month, day, hour, minute, second, weekday: Int
    }

    /// The local date and time of `t` (seconds rounded down).
    public func components(_ t: Double) -> Components {
        switch zone {
        case .rules(let rules):
            let whole = Self.wholeSeconds(t)
            let local = whole + Int64(rules.offset(at: whole))
            let days = ISODate.floorDiv(local, 86_400)
            let inDay = Int(local - days * 86_400)
            let (year, month, day) = ISODate.civil(fromDays: days)
            let weekday = ISODate.weekday(ofDay: days) + 1   // Sunday is 1
            return Components(year: year, month: month, day: day, hour: inDay / 3600, minute: inDay / 60 % 60,
                              second: inDay % 60, weekday: weekday)
        case .foundation(let calendar):
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday],
                                            from: Date(timeIntervalSince1970: t.rounded(.down)))
            return Components(year: c.year ?? 0, month: c.month ?? 0, day: c.day ?? 0, hour: c.hour ?? 0,
                              minute: c.minute ?? 0, second: c.second ?? 0, weekday: c.weekday ?? 0)
        }
    }

    /// `t` moved by whole calendar days (the same wall-clock time, across
    /// daylight-saving changes), then by a fixed number of seconds.
    public func add(_ t: Double, days: Int, seconds: Double) -> Double {
        guard days != 0 else { return t + seconds }
        switch zone {
        case .rules(let rules):
            let whole = Self.wholeSeconds(t)
            // Past ±10^10 days (27 million years) the sum is not made, as the
            // Foundation path does when Foundation gives no date.
            guard days.magnitude < 10_000_000_000 else { return t + seconds }
            // A wall-clock time that happens twice is its earlier instant going
            // forward, and the one at t's own offset going back: Foundation's
            // choices (ZoneRulesTests compare them).
            let offset = rules.offset(at: whole)
            let moved = rules.instant(local: whole + Int64(offset) + Int64(days) * 86_400, prefer: days < 0 ? offset : nil)
            return Double(moved) + (t - Double(whole)) + seconds
        case .foundation(let calendar):
            var moved = t
            if let date = calendar.date(byAdding: .day, value: days, to: Date(timeIntervalSince1970: t)) {
                moved = date.timeIntervalSince1970
            }
            return moved + seconds
        }
    }

    /// The instant of a local wall-clock time, or nil when it is not a valid date.
    public func instant(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Double = 0) -> Double? {
        let whole = second.rounded(.down)
        // Fields out of range are no date, in both paths (Foundation would carry them over).
        guard (1...12).contains(month), year.magnitude < 1_000_000, (1...ISODate.daysIn(month: month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), whole >= 0, whole < 61 else { return nil }
        switch zone {
        case .rules(let rules):
            let local = ISODate.daysFromCivil(year: year, month: month, day: day) * 86_400
                + Int64(hour * 3600 + minute * 60) + Int64(whole)
            return Double(rules.instant(local: local)) + (second - whole)
        case .foundation(let calendar):
            var c = DateComponents()
            (c.year, c.month, c.day, c.hour, c.minute, c.second) = (year, month, day, hour, minute, Int(whole))
            guard let date = calendar.date(from: c) else { return nil }
            return date.timeIntervalSince1970 + (second - whole)
        }
    }

    /// Seconds east of UTC at `t`.
    public func utcOffset(_ t: Double) -> Int {
        switch zone {
        case .rules(let rules): return Int(rules.offset(at: Self.wholeSeconds(t)))
        case .foundation(let calendar): return calendar.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: t))
        }
    }

    /// Days since 1970-01-01 of `t`'s local date.
    private func localDay(of t: Double, _ rules: ZoneRules) -> Int64 {
        let whole = Self.wholeSeconds(t)
        return ISODate.floorDiv(whole + Int64(rules.offset(at: whole)), 86_400)
    }

    /// `t` rounded down to whole seconds, within ±2^50 s (35 million
    /// years, past every date a script can name; the arithmetic on it
    /// cannot overflow).
    private static func wholeSeconds(_ t: Double) -> Int64 {
        let limit = Double(1 << 50)
        guard t.isFinite else { return t.isNaN ? 0 : (t > 0 ? 1 << 50 : -(1 << 50)) }
        return Int64(min(max(t.rounded(.down), -limit), limit))
    }
}
