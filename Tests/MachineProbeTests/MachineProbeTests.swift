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

    /// Each block of the chain adds its own number, so the result is the
    /// sum of the blocks its jumps reached: the cycle block k → (1,029 k +
    /// 1) mod 2,048 from block 0, which visits every block once before it
    /// starts again (a full run sums 0 + 1 + … + 2,047). A jump to the
    /// wrong block, or a run of the wrong length, changes the sum.
    @Test func theScatteredChainRunsTheBlocksOfItsCycle() {
        let blocks = Int(LUNETTE_CODE_PROBE_LINES)
        func expected(_ lines: Int) -> UInt64 {
            var sum: UInt64 = 0, block = 0
            for _ in 0..<lines {
                sum += UInt64(block)
                block = (block * 1029 + 1) & (blocks - 1)
            }
            return sum
        }
        for lines in [0, 1, 2, 3, 17, 256, 511, 2047, 2048, 2049, 5000] {
            #expect(lunette_code_probe_scattered(UInt64(lines)) == expected(lines), "\(lines) blocks")
        }
        #expect(lunette_code_probe_scattered(UInt64(blocks)) == UInt64(blocks * (blocks - 1) / 2), "a full cycle reaches every block once")
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
