// What the processor's front end does with code of a given size, and what
// a fresh page costs: the machine's side of the widget call's wall time,
// measured by lunette-bench in the same process and round as the widget
// figures (docs/ARCHITECTURE.md, the twenty-second stop). Two regions of
// code, each 2,048 64-byte lines (128 KB):
//
// - straight: 16 four-byte additions a line over eight registers (eight
//   independent chains), no branch. A call enters `lines` lines before its
//   end, by one indirect jump that goes to the same place on every call of
//   a size, and runs them: 16 × lines instructions. Instructions a
//   nanosecond, against the size, show where this code stops fitting the
//   processor's cache of decoded instructions (the op cache) and the L1i.
//   Dense code without taken branches: real code fills the op cache less
//   densely, so its own limit is not this one.
// - scattered: a chain of blocks, each alone on its line (four
//   instructions, then padding); block k jumps straight to block
//   (1,029 k + 1) mod 2,048, a full cycle over the 2,048 whose steps are
//   about half the region apart, so that no prefetcher following
//   addresses in order helps. A call runs the first `lines` blocks of the
//   cycle: past 512 lines (32 KB) each comes from beyond the L1i, from the
//   L2, along direct jumps the processor predicts. The best case for code
//   that does not fit the L1i: a lower bound on what a line costs.
//
// x86-64 with an ELF assembler only (the code is written in assembly so
// that each line is a known size at a known place); elsewhere
// `lunette_code_probe_supported` is 0 and lunette-bench says so.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "machine_probe.h"

#if defined(__x86_64__) && defined(__ELF__)

#define LUNETTE_PROBE_ADDS(r1, r2, r3, r4) \
    "  add $1, %" r1 "\n  add $1, %" r2 "\n  add $1, %" r3 "\n  add $1, %" r4 "\n"

// The straight region returns how many times it added to %r8d (twice a
// line); a size over 2,048 lines is refused (0) before anything runs, as
// the entry jump would land outside the region.
__asm__(
    ".text\n"
    ".p2align 6\n"
    ".globl lunette_code_probe_straight\n"
    ".type lunette_code_probe_straight,@function\n"
    "lunette_code_probe_straight:\n"
    "  xor %eax, %eax\n"
    "  cmp $2048, %rdi\n"
    "  ja .Llunette_straight_refused\n"
    "  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
    "  xor %r8d, %r8d\n"
    "  lea .Llunette_straight_end(%rip), %rax\n"
    "  shl $6, %rdi\n"
    "  sub %rdi, %rax\n"
    "  jmp *%rax\n"
    ".p2align 6\n"
    ".rept 2048\n"
    LUNETTE_PROBE_ADDS("r8d", "r9d", "r10d", "r11d")
    LUNETTE_PROBE_ADDS("r12d", "r13d", "r14d", "r15d")
    LUNETTE_PROBE_ADDS("r8d", "r9d", "r10d", "r11d")
    LUNETTE_PROBE_ADDS("r12d", "r13d", "r14d", "r15d")
    ".endr\n"
    ".Llunette_straight_end:\n"
    "  mov %r8d, %eax\n"
    "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n"
    ".Llunette_straight_refused:\n"
    "  ret\n"
    ".size lunette_code_probe_straight, . - lunette_code_probe_straight\n"

    // Each block: add its own number to the result, count down the
    // lines left (%rdi), stop at 0, jump to the next block of the cycle;
    // .Llunette_probe_k numbers the blocks as the assembler repeats them.
    // The result is the sum of the numbers of the blocks run, so it tells
    // which blocks the jumps reached (MachineProbeTests).
    ".text\n"
    ".p2align 6\n"
    ".globl lunette_code_probe_scattered\n"
    ".type lunette_code_probe_scattered,@function\n"
    "lunette_code_probe_scattered:\n"
    "  xor %eax, %eax\n"
    "  test %rdi, %rdi\n"
    "  jz .Llunette_scattered_done\n"
    "  jmp .Llunette_scattered_blocks\n"
    ".p2align 6\n"
    ".Llunette_scattered_blocks:\n"
    ".set .Llunette_probe_k, 0\n"
    ".rept 2048\n"
    "  .p2align 6\n"
    "  add $.Llunette_probe_k, %rax\n"
    "  sub $1, %rdi\n"
    "  jz .Llunette_scattered_done\n"
    "  jmp .Llunette_scattered_blocks + ((.Llunette_probe_k * 1029 + 1) & 2047) * 64\n"
    "  .set .Llunette_probe_k, .Llunette_probe_k + 1\n"
    ".endr\n"
    ".Llunette_scattered_done:\n"
    "  ret\n"
    ".size lunette_code_probe_scattered, . - lunette_code_probe_scattered\n");

const int lunette_code_probe_supported = 1;

#else

// Stand-ins with the same results, so that callers and tests see one
// contract; lunette_code_probe_supported says their times mean nothing.
uint64_t lunette_code_probe_straight(uint64_t lines) { return lines > LUNETTE_CODE_PROBE_LINES ? 0 : 2 * lines; }
uint64_t lunette_code_probe_scattered(uint64_t lines) {
    uint64_t sum = 0, block = 0;
    for (uint64_t i = 0; i < lines; i++) {
        sum += block;
        block = (block * 1029 + 1) & (LUNETTE_CODE_PROBE_LINES - 1);
    }
    return sum;
}
const int lunette_code_probe_supported = 0;

#endif

static double lunette_probe_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double lunette_code_probe_ns(uint64_t (*probe)(uint64_t), uint64_t lines, int rounds) {
    if (lines < 1 || lines > LUNETTE_CODE_PROBE_LINES || rounds < 1) return -1;
    // About 6,400 lines a round, whatever the size (≈ 100 k instructions
    // of the straight region, ≈ 26 k of the scattered chain).
    int calls = (int)(6400 / lines) + 1;
    double best = -1;
    uint64_t sink = 0;
    for (int r = 0; r < rounds; r++) {
        double start = lunette_probe_now_ns();
        for (int i = 0; i < calls; i++) sink += probe(lines);
        double ns = (lunette_probe_now_ns() - start) / calls;
        if (best < 0 || ns < best) best = ns;
    }
    // The probes are other objects' code called through a pointer, so the
    // calls stay; the sink is only read so that no compiler could think
    // otherwise (its value means nothing).
    return sink == UINT64_MAX ? -1 : best;
}

double lunette_fresh_page_ns(size_t bytes, int rounds) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || rounds < 1 || bytes < (size_t)page) return -1;
    double best = -1;
    for (int r = 0; r < rounds; r++) {
        unsigned char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return -1;
        // Pages of the system's size, each faulted in on its first write,
        // as the heap's fresh pages are where transparent huge pages are
        // off or on request only ("madvise", Debian's default); under
        // "always" the heap may take 2 MB at a fault instead.
#ifdef MADV_NOHUGEPAGE
        madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
        double start = lunette_probe_now_ns();
        for (size_t i = 0; i < bytes; i += (size_t)page) p[i] = 1;
        double ns = (lunette_probe_now_ns() - start) / (double)(bytes / (size_t)page);
        munmap(p, bytes);
        if (best < 0 || ns < best) best = ns;
    }
    return best;
}
