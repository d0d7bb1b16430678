// machine_probe.c: the machine's front end and fresh pages, measured
// (lunette-bench's widget figures).
#ifndef LUNETTE_MACHINE_PROBE_H
#define LUNETTE_MACHINE_PROBE_H

#include <stddef.h>
#include <stdint.h>

/// Lines (64 bytes each) of each probe's code.
#define LUNETTE_CODE_PROBE_LINES 2048

/// Runs the last `lines` lines of the straight-line region (16
/// instructions a line); returns a count that keeps it from being elided.
uint64_t lunette_code_probe_straight(uint64_t lines);
/// Runs the first `lines` blocks of the scattered chain (one a line).
uint64_t lunette_code_probe_scattered(uint64_t lines);
/// 1 where the probes are real (x86-64, ELF), 0 where they are stand-ins.
extern const int lunette_code_probe_supported;

/// The fastest of `rounds` rounds: ns a call of `probe` over `lines`
/// (1...LUNETTE_CODE_PROBE_LINES; -1 outside it).
double lunette_code_probe_ns(uint64_t (*probe)(uint64_t), uint64_t lines, int rounds);
/// The fastest of `rounds` rounds: ns to fault in a fresh 4 KB page of
/// anonymous memory on its first write, over `bytes`; -1 when mmap fails.
double lunette_fresh_page_ns(size_t bytes, int rounds);

#endif
