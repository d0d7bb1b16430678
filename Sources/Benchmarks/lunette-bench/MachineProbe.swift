import CMachineProbe

/// The machine's side of the widget call's wall time (issue 18, point 1;
/// docs/ARCHITECTURE.md, the twenty-second stop), measured in this process
/// in each round of the widget figures, beside the loops it explains:
/// how fast the processor runs straight-line code that fits its op cache
/// and code that does not (`machine_probe.c`), what a line from beyond the
/// L1i costs along predicted jumps (a lower bound), and what a fresh page
/// costs.
enum MachineProbe {
    /// Runs of each size; each figure is the fastest.
    static let rounds = 200
    /// Sizes of the straight-line probe, in lines of 16 instructions, for
    /// `--only-machine`'s curve.
    static let straightLines = [64, 128, 256, 320, 336, 384, 512, 1024, 2048]
    /// The sizes the widget figures compare, in lines: 4,096 instructions
    /// (16 KB, within the op cache), 5,120 (just within it), 6,144 (24 KB:
    /// past the op cache, within the 32 KB L1i) and 16,384 (64 KB, past
    /// both).
    static let fitting = 256, edge = 320, pastOpCache = 384, pastL1i = 1024

    /// The front end's figures of one round.
    struct FrontEnd {
        /// Instructions a ns of straight-line code, by size in lines (at
        /// least `straightLines`' sizes).
        var rates: [Int: Double]
        /// ns a line of the scattered chain at 256 lines (in the L1i) and
        /// 2,048 (128 KB, from the L2).
        var scatteredIn: Double, scatteredOut: Double

        /// Instructions a ns at `lines` (one of `straightLines`).
        func rate(_ lines: Int) -> Double {
            guard let rate = rates[lines] else { preconditionFailure("the straight-line probe was not run at \(lines) lines") }
            return rate
        }

        /// How much slower straight-line code runs once it no longer fits
        /// the op cache (still within the L1i): 4,096 instructions against
        /// 6,144.
        var slowdown: Double { rate(MachineProbe.fitting) / rate(MachineProbe.pastOpCache) }
    }

    /// The front end's figures; nil where the probe is not real (it needs
    /// x86-64 and ELF) or a measurement failed.
    static func frontEnd() -> FrontEnd? {
        guard lunette_code_probe_supported != 0 else { return nil }
        var rates: [Int: Double] = [:]
        for lines in straightLines {
            let ns = lunette_code_probe_ns(lunette_code_probe_straight, UInt64(lines), Int32(rounds))
            guard ns > 0 else { return nil }
            rates[lines] = Double(16 * lines) / ns
        }
        let inL1i = lunette_code_probe_ns(lunette_code_probe_scattered, 256, Int32(rounds))
        let pastL1i = lunette_code_probe_ns(lunette_code_probe_scattered, 2048, Int32(rounds))
        guard inL1i > 0, pastL1i > 0 else { return nil }
        return FrontEnd(rates: rates, scatteredIn: inL1i / 256, scatteredOut: pastL1i / 2048)
    }

    /// µs to fault in a fresh page (best of five rounds over 32 MB); nil
    /// when the memory cannot be mapped.
    static func freshPageMicroseconds() -> Double? {
        let ns = lunette_fresh_page_ns(32 << 20, 5)
        return ns > 0 ? ns / 1000 : nil
    }
}
