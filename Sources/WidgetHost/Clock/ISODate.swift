/// ISO 8601 dates as scripts, scenarios and the CLI write them.
///
/// Written: UTC, "2026-11-21T09:30:00Z", with milliseconds when the time
/// has a fraction ("…:00.250Z"). Read: "YYYY-MM-DD", "YYYY-MM-DDTHH:MM",
/// "YYYY-MM-DDTHH:MM:SS" with an optional fraction, then "Z", "±HH:MM",
/// "±HHMM" or nothing (a space may stand for "T"). Without an offset the
/// time is local to the host's time zone; a date alone is its start of day.
public enum ISODate {
    /// `t` as UTC ISO 8601 text.
    public static func format(_ t: Double) -> String {
        guard t.isFinite, abs(t) < 253_402_300_800 else { return t.isNaN ? "nan" : (t > 0 ? "+inf" : "-inf") }
        let whole = t.rounded(.down)
        var millis = Int(((t - whole) * 1000).rounded())
        var seconds = Int64(whole)
        if millis == 1000 { seconds += 1; millis = 0 }
        let days = floorDiv(seconds, 86_400)
        let inDay = Int(seconds - days * 86_400)
        let (y, m, d) = civil(fromDays: days)
        var text = "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(inDay / 3600, 2)):\(pad(inDay / 60 % 60, 2)):\(pad(inDay % 60, 2))"
        if millis != 0 { text += "." + pad(millis, 3) }
        return text + "Z"
    }

    /// The instant `text` names, or a message saying what is wrong with it.
    public static func parse(_ text: String, calendar: HostCalendar) -> Result<Double, ISODateError> {
        var scanner = Scanner(Array(text.utf8))
        func fail(_ what: String) -> Result<Double, ISODateError> {
            .failure(ISODateError(message: "invalid date \"\(text)\": \(what) (expected e.g. 2026-11-21T09:30:00Z)"))
        }
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2), scanner.skip("-"),
              let day = scanner.digits(2) else { return fail("expected YYYY-MM-DD") }
        guard (1...12).contains(month) else { return fail("month \(month) is not 1...12") }
        guard (1...daysIn(month: month, year: year)).contains(day) else { return fail("day \(day) is not in month \(month)") }
        var hour = 0, minute = 0
        var second = 0.0
        var hasTime = false
        if scanner.skip("T") || scanner.skip("t") || scanner.skip(" ") {
            hasTime = true
            guard let h = scanner.digits(2), scanner.skip(":"), let m = scanner.digits(2) else { return fail("expected HH:MM after the date") }
            guard h < 24 else { return fail("hour \(h) is not 0...23") }
            guard m < 60 else { return fail("minute \(m) is not 0...59") }
            (hour, minute) = (h, m)
            if scanner.skip(":") {
                guard let s = scanner.digits(2), s < 60 else { return fail("seconds must be two digits 00...59") }
                second = Double(s)
                if scanner.skip(".") || scanner.skip(",") {
                    let start = scanner.i
                    var scale = 0.1
                    while let digit = scanner.digit() { second += Double(digit) * scale; scale /= 10 }
                    if scanner.i == start { return fail("digits expected after the decimal point") }
                }
            }
        }
        var offset: Int? = nil
        if scanner.skip("Z") || scanner.skip("z") {
            guard hasTime else { return fail("a zone needs a time") }
            offset = 0
        } else if let sign = scanner.sign() {
            guard hasTime else { return fail("a zone needs a time") }
            guard let h = scanner.digits(2) else { return fail("expected ±HH:MM") }
            _ = scanner.skip(":")
            guard let m = scanner.digits(2), h < 24, m < 60 else { return fail("expected ±HH:MM") }
            offset = sign * (h * 3600 + m * 60)
        }
        guard scanner.atEnd else { return fail("unexpected text at byte \(scanner.i + 1)") }
        if let offset {
            let days = daysFromCivil(year: year, month: month, day: day)
            return .success(Double(days * 86_400 + Int64(hour * 3600 + minute * 60 - offset)) + second)
        }
        guard let t = calendar.instant(year: year, month: month, day: day, hour: hour, minute: minute, second: second) else {
            return fail("not a valid local time")
        }
        return .success(t)
    }

    // MARK: Civil dates (proleptic Gregorian, days since 1970-01-01)

    /// `a / b` rounded toward minus infinity (`b` > 0): the day of an instant before 1970 too.
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    /// The weekday of day `days` since 1970-01-01 (a Thursday): 0 is Sunday.
    static func weekday(ofDay days: Int64) -> Int { Int(((days % 7) + 7 + 4) % 7) }

    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private struct Scanner {
        let bytes: [UInt8]
        var i = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var atEnd: Bool { i == bytes.count }
        mutating func skip(_ c: Character) -> Bool {
            guard i < bytes.count, bytes[i] == c.asciiValue! else { return false }
            i += 1
            return true
        }
        mutating func digit() -> Int? {
            guard i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 else { return nil }
            i += 1
            return Int(bytes[i - 1] - 0x30)
        }
        mutating func digits(_ n: Int) -> Int? {
            var value = 0
            for _ in 0..<n {
                guard let d = digit() else { return nil }
                value = value * 10 + d
            }
            return value
        }
        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}

/// Why a date could not be read.
public struct ISODateError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
