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

    /// Moves to `time`; a virtual clock never goes back.
    public func advance(to time: Double) {
        precondition(time >= self.time, "a virtual clock does not go back (\(time) < \(self.time))")
        self.time = time
    }

    /// Moves forward by `seconds`.
    public func advance(by seconds: Double) { advance(to: time + seconds) }
}
