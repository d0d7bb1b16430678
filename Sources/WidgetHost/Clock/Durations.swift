#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LunetteJSON

/// Durations as people write them: "24h", "90m", "1h30m", "45s", "2d", or seconds.
public enum Durations {
    public static func seconds(_ text: String) -> Double? {
        var rest = Substring(text.trimmingWhitespace())
        if rest.hasPrefix("+") { rest = rest.dropFirst() }
        if let plain = Double(rest) { return plain }
        var total = 0.0
        var sawUnit = false
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            guard let unit = rest.first else { return nil }
            rest = rest.dropFirst()
            switch unit {
            case "d": total += value * 86_400
            case "h": total += value * 3600
            case "m": total += value * 60
            case "s": total += value
            default: return nil
            }
            sawUnit = true
        }
        return sawUnit ? total : nil
    }

    static func seconds(_ value: JSONValue) -> Double? {
        switch value.kind {
        case .integer(let i): return Double(i)
        case .double(let d): return d.isFinite ? d : nil
        case .string(let s): return seconds(s)
        default: return nil
        }
    }

    /// An instant as people write one: an ISO 8601 date, or a duration
    /// after `now` ("+30m", "90s"). The error says what was expected.
    public static func instant(_ text: String, after now: Double, calendar: HostCalendar) -> Result<Double, ISODateError> {
        if !text.hasPrefix("+"), text.contains("-") || text.contains("T") { return ISODate.parse(text, calendar: calendar) }
        guard let offset = seconds(text), offset >= 0 else {
            return .failure(ISODateError(message: "expected an ISO 8601 date or a time from now like \"+30m\", got \"\(text)\""))
        }
        return .success(now + offset)
    }
}
