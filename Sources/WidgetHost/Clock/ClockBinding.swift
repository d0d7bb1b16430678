import CHostFastPaths
import LuaSandbox

/// The `clock` module of scripts (docs/widgets.md): the host's clock and
/// calendar arithmetic in the host's time zone. `os.time` and `os.date`
/// read the same clock: the sandbox sets each call's `LuaCallOptions.now`
/// from it (nil for the system clock).
public struct ClockBinding {
    public let clock: HostClock
    public let calendar: HostCalendar

    public init(clock: HostClock, calendar: HostCalendar) {
        self.clock = clock
        self.calendar = calendar
    }

    /// Gives `state` the global `clock`.
    public func install(in state: LuaState) throws(LuaError) {
        let clock = self.clock, calendar = self.calendar
        var module = LuaModule(name: "clock")
        // The one-result form: these run many times a call, with no array per call.
        // A stored time (a virtual clock's, a worker's) is read in C (the
        // body's closure keeps the clock, hence the storage, alive with the state).
        if let stored = storedTime(of: clock) {
            module.addReturningOne("now", fastPath: LuaFastPath(lunette_clock_now, data: UnsafeMutableRawPointer(stored.storage))) { _ in
                Self.date(clock.now())
            }
        } else {
            module.addReturningOne("now") { _ in Self.date(clock.now()) }
        }
        // The units, made once: a widget's provider adds dates many times a call.
        let daysKey: LuaString = "days", hoursKey: LuaString = "hours", minutesKey: LuaString = "minutes", secondsKey: LuaString = "seconds"
        // Hours, minutes and seconds are added in C (lunette_clock_add, the
        // same sums); days, and every error, here.
        // A sum of its arguments: replayable (a snapshot may stand in for it).
        module.addReturningOne("add", replayable: true, fastPath: LuaFastPath(lunette_clock_add)) { args in
            let t = try args.number(1)
            var days = 0, seconds = 0.0
            try args.forEachNumberField(2) { key, amount throws(LuaFunctionError) in
                if key == daysKey {
                    guard let whole = Int(exactly: amount) else { throw args.badArgument(2, "days must be a whole number, got \(amount)") }
                    days = whole
                } else if key == hoursKey {
                    seconds += amount * 3600
                } else if key == minutesKey {
                    seconds += amount * 60
                } else if key == secondsKey {
                    seconds += amount
                } else {
                    throw args.badArgument(2, "unknown unit '\(key.displayText)' (use days, hours, minutes, seconds)")
                }
            }
            return Self.date(calendar.add(t, days: days, seconds: seconds))
        }
        module.addReturningOne("startOfDay") { args in Self.date(calendar.startOfDay(try args.number(1))) }
        module.addReturningOne("nextMidnight") { args in Self.date(calendar.nextMidnight(try args.number(1))) }
        module.add("components") { args in
            let c = calendar.components(try args.number(1))
            return [.table(LuaTable(fields: [
                "year": .integer(Int64(c.year)), "month": .integer(Int64(c.month)), "day": .integer(Int64(c.day)),
                "hour": .integer(Int64(c.hour)), "minute": .integer(Int64(c.minute)), "second": .integer(Int64(c.second)),
                "weekday": .integer(Int64(c.weekday)),
            ]))]
        }
        module.add("iso") { args in [.string(ISODate.format(try args.number(1)))] }
        module.add("parse") { args in
            guard args.typeName(1) == "string" else { throw args.badArgument(1, "string expected, got \(args.typeName(1))") }
            switch ISODate.parse(try args.text(1), calendar: calendar) {
            case .success(let t): return [Self.date(t)]
            case .failure(let error): return [.nil, .string(error.message)]
            }
        }
        try state.register(module)
    }

    /// A date as Lua sees it: an integer when whole, else a float.
    static func date(_ t: Double) -> LuaValue {
        if let whole = Int64(exactly: t) { return .integer(whole) }
        return .number(t)
    }
}
