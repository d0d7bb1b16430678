import Testing
import CMachineProbe

/// The machine probe's code (lunette-bench's widget figures): each region
/// runs the lines it is asked for and no others, sizes past the region are
/// refused, and the timing helpers refuse what they cannot measure. The
/// times themselves are benchmarks' business, not tests'.
@Suite("Machine probe")
struct MachineProbeTests {
    /// The straight region adds to its result register twice a line, so
    /// its result counts the lines it ran; past 2,048 it runs nothing.
    @Test func theStraightRegionRunsTheLinesAskedFor() {
        for lines: UInt64 in [0, 1, 2, 255, 256, 1024, 2047, 2048] {
            #expect(lunette_code_probe_straight(lines) == 2 * lines, "\(lines) lines")
        }
        for lines: UInt64 in [2049, 4096, .max] {
            #expect(lunette_code_probe_straight(lines) == 0, "\(lines) lines is refused")
        }
    }

    /// Each block of the chain adds the lines left, so a run of n blocks
    /// returns n + (n − 1) + … + 1, also past one full cycle.
    @Test func theScatteredChainRunsTheBlocksAskedFor() {
        for lines: UInt64 in [0, 1, 2, 3, 256, 2047, 2048, 2049, 5000] {
            #expect(lunette_code_probe_scattered(lines) == lines * (lines + 1) / 2, "\(lines) blocks")
        }
    }

    /// The chain's jumps, block k to (1,029 k + 1) mod 2,048, visit every
    /// block once a cycle (a full-period linear congruential step: the
    /// increment odd, the multiplier 1 more than a multiple of 4), so a
    /// run of n ≤ 2,048 blocks touches n distinct lines.
    @Test func theChainsStepVisitsEveryBlockOnceACycle() {
        var seen = Set<Int>(), k = 0
        for _ in 0..<Int(LUNETTE_CODE_PROBE_LINES) {
            seen.insert(k)
            k = (k * 1029 + 1) & (Int(LUNETTE_CODE_PROBE_LINES) - 1)
        }
        #expect(seen.count == Int(LUNETTE_CODE_PROBE_LINES))
        #expect(k == 0)
    }

    @Test func theTimersRefuseWhatTheyCannotMeasure() {
        #expect(lunette_code_probe_ns(lunette_code_probe_straight, 0, 1) == -1)
        #expect(lunette_code_probe_ns(lunette_code_probe_straight, UInt64(LUNETTE_CODE_PROBE_LINES) + 1, 1) == -1)
        #expect(lunette_code_probe_ns(lunette_code_probe_straight, 64, 0) == -1)
        #expect(lunette_code_probe_ns(lunette_code_probe_scattered, 64, 2) > 0)
        #expect(lunette_fresh_page_ns(1, 1) == -1, "under a page")
        #expect(lunette_fresh_page_ns(1 << 20, 0) == -1, "no rounds")
        #expect(lunette_fresh_page_ns(1 << 20, 1) > 0)
    }
}
