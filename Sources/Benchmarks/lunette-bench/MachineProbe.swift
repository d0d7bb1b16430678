import CMachineProbe

/// The machine's side of the widget call's wall time (issue 18, point 1;
/// docs/ARCHITECTURE.md, the twenty-second stop), measured in this process
/// in each round of the widget figures, beside the loops it explains:
/// how fast the processor runs code that fits its op cache and code that
/// does not (straight-line code of known sizes, `machine_probe.c`), what a
/// line from beyond the L1i costs along predicted jumps, and what a fresh
/// page costs.
enum MachineProbe {
    /// Sizes of the straight-line probe, in lines of 16 instructions.
    static let straightLines = [64, 128, 256, 320, 336, 384, 512, 1024, 2048]

    struct FrontEnd {
        /// Instructions a ns of straight-line code at each of `straightLines`.
        var instructionsPerNanosecond: [Int: Double]
        /// ns a line of the scattered chain at 256 lines (in the L1i) and 2,048 (128 KB).
        var scatteredIn: Double, scatteredOut: Double

        /// 4,096 distinct instructions (fit the op cache) against 16,384 (do not).
        var slowdown: Double { instructionsPerNanosecond[256]! / instructionsPerNanosecond[1024]! }
    }

    /// The front end's figures, best of `rounds` rounds each; nil where
    /// the probe is not real (it needs x86-64 and ELF).
    static func frontEnd(rounds: Int = 200) -> FrontEnd? {
        guard lunette_code_probe_supported != 0 else { return nil }
        var rates: [Int: Double] = [:]
        for lines in straightLines {
            rates[lines] = Double(16 * lines) / lunette_code_probe_ns(lunette_code_probe_straight, UInt64(lines), Int32(rounds))
        }
        return FrontEnd(instructionsPerNanosecond: rates,
                        scatteredIn: lunette_code_probe_ns(lunette_code_probe_scattered, 256, Int32(rounds)) / 256,
                        scatteredOut: lunette_code_probe_ns(lunette_code_probe_scattered, 2048, Int32(rounds)) / 2048)
    }

    /// µs to fault in a fresh 4 KB page (best of five rounds over 32 MB);
    /// nil when the memory cannot be mapped.
    static func freshPageMicroseconds() -> Double? {
        let ns = lunette_fresh_page_ns(32 << 20, 5)
        return ns < 0 ? nil : ns / 1000
    }
}
