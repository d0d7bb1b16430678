import CHostFastPaths
#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import LunetteSystem

/// Where the host reads "now": the system's clock in real use, a virtual
/// clock in simulations and tests. Dates are seconds since the Unix epoch.
///
/// Deadlines of calls never use this clock: they run on a monotonic clock,
/// so a simulated day still gives each call its real time limit.
public protocol HostClock: AnyObject, Sendable {
    /// Seconds since the Unix epoch.
    func now() -> Double
}

/// A time that threads read and set without a lock: one double, loaded and
/// stored atomically. The clocks whose time is a stored value keep it here
/// (`storedTime(of:)`), and scripts' `clock.now` reads it in C
/// (`lunette_clock_now`, given `storage`).
final class StoredTime: @unchecked Sendable {
    let storage: UnsafeMutablePointer<Double>

    init(_ time: Double) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: time)
    }

    deinit { storage.deallocate() }

    var value: Double { lunette_load_double(storage) }

    func set(_ time: Double) { lunette_store_double(storage, time) }
}

/// The `StoredTime` of a clock that keeps its time in one (a virtual
/// clock, a worker's), else nil. Found by class: the first cast of a value
/// to a protocol scans every conformance record of the binary (≈ 0.25 M
/// instructions, 1% of `lunette timeline`'s start).
func storedTime(of clock: any HostClock) -> StoredTime? {
    if let virtual = clock as? VirtualClock { return virtual.storedTime }
    if let worker = clock as? WorkerClock { return worker.storedTime }
    return nil
}

/// A plugin worker's clock: the host's time, set at each call (WorkerMain).
final class WorkerClock: HostClock, @unchecked Sendable {
    let storedTime = StoredTime(0)

    func now() -> Double { storedTime.value }
    func set(_ t: Double) { storedTime.set(t) }
}

/// The system's wall clock.
public final class SystemClock: HostClock, Sendable {
    public init() {}

    public func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A clock that moves only when told to: simulations advance it from event
/// to event, tests set it to the instant they need.
///
/// Safe to share between threads: a test can move it while an actor that
/// owns an engine reads it.
public final class VirtualClock: HostClock, @unchecked Sendable {
    /// Serializes moves; reads take no lock (the engine reads the time
    /// several times on every reload).
    private let lock = FastLock()
    let storedTime: StoredTime

    /// The current virtual time.
    public var time: Double { storedTime.value }

    public init(_ time: Double) { storedTime = StoredTime(time) }

    public func now() -> Double { time }

    /// Moves to `time`. A virtual clock never goes back, and only to a
    /// finite time: anything else is an error and the clock stays where it is.
    public func advance(to time: Double) throws(ClockError) {
        try move { _ in time }
    }

    /// Moves forward by `seconds` (not negative).
    public func advance(by seconds: Double) throws(ClockError) {
        try move { $0 + seconds }
    }

    /// Moves to `target(now)`, as one step under the lock.
    private func move(_ target: (Double) -> Double) throws(ClockError) {
        lock.lock()
        defer { lock.unlock() }
        let now = storedTime.value
        let time = target(now)
        guard time.isFinite else { throw ClockError(message: "a virtual clock moves only to a finite time, not \(time)") }
        guard time >= now else {
            throw ClockError(message: "a virtual clock does not go back: \(ISODate.format(time)) is before \(ISODate.format(now))")
        }
        storedTime.set(time)
    }
}

/// A virtual clock asked to go back (or to a time that is not finite).
public struct ClockError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The system's clock, moved ahead by steps: `lunette dev` shows later
/// entries without waiting for them (+5 min, +1 h, the next reload). Real
/// time goes on from there; it never goes back.
public final class SteppedClock: HostClock, @unchecked Sendable {
    private let lock = FastLock()
    private var offset = 0.0
    private let system = SystemClock()

    public init() {}

    public func now() -> Double { system.now() + lock.withLock { offset } }

    /// How far ahead of the system's clock it is, in seconds.
    public var ahead: Double { lock.withLock { offset } }

    /// Moves ahead by `seconds` (not negative, finite).
    public func step(by seconds: Double) throws(ClockError) {
        guard seconds.isFinite, seconds >= 0 else {
            throw ClockError(message: "the clock steps ahead only, by a finite time, not \(seconds) s")
        }
        lock.withLock { offset += seconds }
    }

    /// Moves ahead to `time` (nothing when it is not ahead).
    public func step(to time: Double) throws(ClockError) {
        try step(by: max(0, time - now()))
    }
}
