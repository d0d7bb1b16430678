import Foundation

/// Calendar arithmetic in the host's time zone: what `clock.startOfDay`,
/// `clock.nextMidnight`, `clock.components` and `clock.add` compute, and how
/// ISO 8601 text is read and written. Gregorian calendar; weekday 1 is
/// Sunday, as in Lua's `os.date("*t")`.
public struct HostCalendar: Sendable {
    /// The time zone days start and end in.
    public let timeZone: TimeZone
    private let calendar: Calendar

    public init(timeZone: TimeZone) {
        self.timeZone = timeZone
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    /// The calendar of an IANA time zone name ("Europe/Paris", "UTC"), or
    /// nil when the name is unknown.
    public init?(timeZoneNamed name: String) {
        guard let zone = TimeZone(identifier: name) else { return nil }
        self.init(timeZone: zone)
    }

    /// The time zone named by `TZ` in the environment (with or without the
    /// leading ":"), else the system's.
    public static func fromEnvironment() -> HostCalendar {
        // getenv, not ProcessInfo's environment, which copies all of it into a dictionary.
        if let value = getenv("TZ"), case var name = String(cString: value), !name.isEmpty {
            if name.hasPrefix(":") { name.removeFirst() }
            if let calendar = HostCalendar(timeZoneNamed: name) { return calendar }
        }
        return HostCalendar(timeZone: .current)
    }

    /// UTC.
    public static let utc = HostCalendar(timeZone: TimeZone(identifier: "UTC")!)

    // MARK: Days

    /// The first instant of the day that contains `t`.
    public func startOfDay(_ t: Double) -> Double {
        calendar.startOfDay(for: Date(timeIntervalSince1970: t)).timeIntervalSince1970
    }

    /// The first instant of the day after the one that contains `t`.
    public func nextMidnight(_ t: Double) -> Double {
        let start = calendar.startOfDay(for: Date(timeIntervalSince1970: t))
        guard let next = calendar.date(byAdding: .day, value: 1, to: start) else { return startOfDay(t) + 86_400 }
        return next.timeIntervalSince1970
    }

    /// Local date and time of `t`.
    public struct Components: Sendable, Equatable {
        public var year, month, day, hour, minute, second, weekday: Int
    }

    /// The local date and time of `t` (seconds rounded down).
    public func components(_ t: Double) -> Components {
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday],
                                        from: Date(timeIntervalSince1970: t.rounded(.down)))
        return Components(year: c.year ?? 0, month: c.month ?? 0, day: c.day ?? 0, hour: c.hour ?? 0,
                          minute: c.minute ?? 0, second: c.second ?? 0, weekday: c.weekday ?? 0)
    }

    /// `t` moved by whole calendar days (the same wall-clock time, across
    /// daylight-saving changes), then by a fixed number of seconds.
    public func add(_ t: Double, days: Int, seconds: Double) -> Double {
        var moved = t
        if days != 0, let date = calendar.date(byAdding: .day, value: days, to: Date(timeIntervalSince1970: t)) {
            moved = date.timeIntervalSince1970
        }
        return moved + seconds
    }

    /// The instant of a local wall-clock time, or nil when it is not a valid date.
    public func instant(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Double = 0) -> Double? {
        var c = DateComponents()
        (c.year, c.month, c.day, c.hour, c.minute, c.second) = (year, month, day, hour, minute, Int(second.rounded(.down)))
        guard let date = calendar.date(from: c) else { return nil }
        return date.timeIntervalSince1970 + (second - second.rounded(.down))
    }

    /// Seconds east of UTC at `t`.
    public func utcOffset(_ t: Double) -> Int {
        timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: t))
    }
}
