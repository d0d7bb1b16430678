/// Median of samples (they are sorted in place).
func median(_ samples: [Double]) -> Double {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return .nan }
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// Mean of samples.
func mean(_ samples: [Double]) -> Double {
    samples.isEmpty ? .nan : samples.reduce(0, +) / Double(samples.count)
}

/// The lowest and highest of samples as "lo–hi", each a `figure`.
func span(_ samples: [Double], decimals: Int = 1) -> String {
    "\(figure(samples.min()!, decimals: decimals))–\(figure(samples.max()!, decimals: decimals))"
}

/// Nanoseconds taken by `body`.
func measureNanoseconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let (seconds, attoseconds) = (clock.now - start).components
    return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
}

/// A fixed-width figure for the report.
func figure(_ value: Double, decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    if decimals == 0, let whole = Int(exactly: rounded) { return String(whole) }   // "7236", not "7236.0"
    var text = String(rounded)
    if let dot = text.firstIndex(of: ".") {
        let have = text.distance(from: dot, to: text.endIndex) - 1
        if have < decimals { text += String(repeating: "0", count: decimals - have) }
    }
    return text
}
