extension HostCalendar {
    /// The UTC offset at `t` as ISO 8601 writes it: "+01:00", "-05:30", "+00:00".
    public func offsetText(_ t: Double) -> String {
        let offset = utcOffset(t)
        let minutes = abs(offset) / 60
        return (offset < 0 ? "-" : "+") + Self.pad(minutes / 60) + ":" + Self.pad(minutes % 60)
    }

    /// A local time with its offset, the one way the text outputs print a
    /// time: "09:30+01:00" ("09:30:15+01:00" when the seconds are not zero);
    /// with `day`, "2026-11-21 09:30+01:00".
    public func timeText(_ t: Double, day: Bool) -> String {
        let c = components(t)
        let time = Self.pad(c.hour) + ":" + Self.pad(c.minute) + (c.second != 0 ? ":" + Self.pad(c.second) : "") + offsetText(t)
        return day ? "\(c.year)-\(Self.pad(c.month))-\(Self.pad(c.day)) " + time : time
    }

    private static func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
