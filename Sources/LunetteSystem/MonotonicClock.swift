#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The monotonic clock (CLOCK_MONOTONIC) in nanoseconds, for times measured
/// on hot paths (a read transaction's age, a widget call's elapsed time):
/// integers to subtract and compare, not `ContinuousClock` instants and
/// 128-bit `Duration` arithmetic.
package enum MonotonicClock {
    package static func nanoseconds() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}
