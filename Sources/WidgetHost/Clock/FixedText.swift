#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem

/// `value` with `decimals` (0...9) digits after the point, exactly as
/// printf's `%.*f` writes it ("0.80", "-0.00", "0.01" for 0.005), in plain
/// Swift: the one way the host writes fixed-point figures (durations,
/// coordinates). Foundation's `String(format:)`, and C's `vsnprintf`
/// through `withVaList`, cost about 2 M instructions on their first use
/// (run-time conformance checks of their arguments), a tenth of
/// `lunette timeline`'s own work.
///
/// Like printf it rounds the exact binary value to the nearest, ties to
/// even: a finite double is `m × 2^e` (integer `m` < 2^53), so
/// `value × 10^decimals` is `m × 10^decimals / 2^-e`, computed in 128 bits.
/// Values of 2^52 and more, and those whose scaled value passes 2^63, go
/// to `String(format:)`: no output prints them.
package func fixedText(_ value: Double, decimals: Int) -> String {
    precondition(decimals >= 0 && decimals <= 9, "fixedText: 0...9 decimals")
    var scale: UInt64 = 1
    for _ in 0..<decimals { scale *= 10 }
    let magnitude = value.magnitude
    guard magnitude.isFinite, magnitude < 4_503_599_627_370_496, magnitude * Double(scale) < 9.2e18 else {
        return cFormat("%.*f", Int32(decimals), value)
    }
    let scaled = magnitude == 0 ? 0 : FixedPoint.roundedScaled(magnitude, scale)
    let sign = value.sign == .minus ? "-" : ""
    let whole = String(scaled / scale)
    guard decimals > 0 else { return sign + whole }
    let fraction = String(scaled % scale)
    return sign + whole + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
}

private enum FixedPoint {
    /// `magnitude × scale` (0 < magnitude < 2^52, the product < 2^63),
    /// rounded to the nearest integer, ties to even, from the exact value.
    static func roundedScaled(_ magnitude: Double, _ scale: UInt64) -> UInt64 {
        let m = magnitude.significandBitPattern | (magnitude.isNormal ? 1 << 52 : 0)
        let k = magnitude.isNormal ? 1075 - Int(magnitude.exponentBitPattern) : 1074   // magnitude = m / 2^k, k ≥ 1
        let (high, low) = m.multipliedFullWidth(by: scale)                                  // P = m × scale < 2^83
        if k >= 128 { return 0 }                                                            // P < 2^83 < half
        // q = P >> k; the remainder r = P mod 2^k against half = 2^(k - 1).
        let q: UInt64
        let above: Bool, tie: Bool
        if k < 64 {
            q = (high << (64 - k)) | (low >> k)
            let r = low & ((1 << k) - 1), half: UInt64 = 1 << (k - 1)
            above = r > half
            tie = r == half
        } else {
            q = high >> (k - 64)
            let rHigh = k == 64 ? 0 : high & ((1 << (k - 64)) - 1)
            let (halfHigh, halfLow): (UInt64, UInt64) = k == 64 ? (0, 1 << 63) : (1 << (k - 65), 0)
            above = rHigh > halfHigh || (rHigh == halfHigh && low > halfLow)
            tie = rHigh == halfHigh && low == halfLow
        }
        return above || (tie && q & 1 == 1) ? q + 1 : q
    }
}
