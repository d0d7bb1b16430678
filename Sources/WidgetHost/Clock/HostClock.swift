import Foundation

/// Where the host reads "now": the system's clock in real use, a virtual
/// clock in simulations and tests. Dates are seconds since the Unix epoch.
///
/// Deadlines of calls never use this clock: they run on a monotonic clock,
/// so a simulated day still gives each call its real time limit.
public protocol HostClock: AnyObject {
    /// Seconds since the Unix epoch.
    func now() -> Double
}

/// The system's wall clock.
public final class SystemClock: HostClock {
    public init() {}

    public func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A clock that moves only when told to: simulations advance it from event
/// to event, tests set it to the instant they need.
public final class VirtualClock: HostClock {
    /// The current virtual time.
    public private(set) var time: Double

    public init(_ time: Double) { self.time = time }

    public func now() -> Double { time }

    /// Moves to `time`. A virtual clock never goes back, and only to a
    /// finite time: anything else is an error and the clock stays where it is.
    public func advance(to time: Double) throws(ClockError) {
        guard time.isFinite else { throw ClockError(message: "a virtual clock moves only to a finite time, not \(time)") }
        guard time >= self.time else {
            throw ClockError(message: "a virtual clock does not go back: \(ISODate.format(time)) is before \(ISODate.format(self.time))")
        }
        self.time = time
    }

    /// Moves forward by `seconds` (not negative).
    public func advance(by seconds: Double) throws(ClockError) { try advance(to: time + seconds) }
}

/// A virtual clock asked to go back (or to a time that is not finite).
public struct ClockError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
