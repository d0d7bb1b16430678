// machine_probe.c: the machine's front end and fresh pages, measured
// (lunette-bench's widget figures).
#ifndef LUNETTE_MACHINE_PROBE_H
#define LUNETTE_MACHINE_PROBE_H

#include <stddef.h>
#include <stdint.h>

/// Lines (64 bytes each) of each probe's code.
#define LUNETTE_CODE_PROBE_LINES 2048

/// Runs the last `lines` (0...LUNETTE_CODE_PROBE_LINES) lines of the
/// straight-line region, 16 instructions a line, and returns 2 × lines
/// (the additions to one of its registers); more lines are refused: 0,
/// nothing run.
uint64_t lunette_code_probe_straight(uint64_t lines);
/// Runs the first `lines` blocks of the scattered chain (one a line, from
/// block 0, block k jumping to block (1,029 k + 1) mod
/// LUNETTE_CODE_PROBE_LINES; past that many the cycle starts again) and
/// returns the sum of the numbers of the blocks run.
uint64_t lunette_code_probe_scattered(uint64_t lines);
/// 1 where the probes are real (x86-64, ELF); 0 where they are stand-ins
/// that return the same but whose times mean nothing.
extern const int lunette_code_probe_supported;

/// The fastest of `rounds` rounds: ns a call of `probe` over `lines`;
/// -1 when `lines` is outside 1...LUNETTE_CODE_PROBE_LINES or `rounds` < 1.
double lunette_code_probe_ns(uint64_t (*probe)(uint64_t), uint64_t lines, int rounds);
/// The fastest of `rounds` rounds: ns to fault in a fresh page of
/// anonymous memory (the system's page size) on its first write, over
/// `bytes`; -1 when the memory cannot be mapped, `bytes` is under a page
/// or `rounds` < 1.
double lunette_fresh_page_ns(size_t bytes, int rounds);

#endif
