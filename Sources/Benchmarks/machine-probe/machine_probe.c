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
//   nanosecond, against the size, show where the code stops fitting the
//   processor's cache of decoded instructions (the op cache) and the L1i.
// - scattered: a chain of blocks, each alone on its line (four
//   instructions, then padding), each jumping straight to the block 1,029
//   lines on (modulo 2,048: a full cycle), so that no prefetcher following
//   addresses in order helps. A call runs the first `lines` blocks: past
//   512 lines (32 KB) each line comes from beyond the L1i, along jumps the
//   processor predicts.
//
// x86-64 with an ELF assembler only (the code is written in assembly so
// that each line is a known size at a known place); elsewhere
// `lunette_code_probe_supported` is 0 and lunette-bench says so.
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "machine_probe.h"

#if defined(__x86_64__) && defined(__ELF__)

#define LUNETTE_PROBE_ADDS(r1, r2, r3, r4) \
    "  add $1, %" r1 "\n  add $1, %" r2 "\n  add $1, %" r3 "\n  add $1, %" r4 "\n"

__asm__(
    ".text\n"
    ".p2align 6\n"
    ".globl lunette_code_probe_straight\n"
    ".type lunette_code_probe_straight,@function\n"
    "lunette_code_probe_straight:\n"
    "  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
    "  xor %r8d, %r8d\n"
    "  lea lunette_code_probe_straight_end(%rip), %rax\n"
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
    "lunette_code_probe_straight_end:\n"
    "  mov %r8d, %eax\n"
    "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n"
    "  ret\n"
    ".size lunette_code_probe_straight, . - lunette_code_probe_straight\n"

    // Each block: add the lines left (%rdi) to the result, count down,
    // stop at 0, jump to the next block; lunette_probe_k numbers the
    // blocks as the assembler repeats them.
    ".text\n"
    ".p2align 6\n"
    ".globl lunette_code_probe_scattered\n"
    ".type lunette_code_probe_scattered,@function\n"
    "lunette_code_probe_scattered:\n"
    "  xor %eax, %eax\n"
    "  test %rdi, %rdi\n"
    "  jz lunette_code_probe_scattered_done\n"
    "  jmp lunette_code_probe_scattered_blocks\n"
    ".p2align 6\n"
    "lunette_code_probe_scattered_blocks:\n"
    ".set lunette_probe_k, 0\n"
    ".rept 2048\n"
    "  .p2align 6\n"
    "  add %rdi, %rax\n"
    "  sub $1, %rdi\n"
    "  jz lunette_code_probe_scattered_done\n"
    "  jmp lunette_code_probe_scattered_blocks + ((lunette_probe_k * 1029 + 1) & 2047) * 64\n"
    "  .set lunette_probe_k, lunette_probe_k + 1\n"
    ".endr\n"
    "lunette_code_probe_scattered_done:\n"
    "  ret\n"
    ".size lunette_code_probe_scattered, . - lunette_code_probe_scattered\n");

const int lunette_code_probe_supported = 1;

#else

uint64_t lunette_code_probe_straight(uint64_t lines) { return lines; }
uint64_t lunette_code_probe_scattered(uint64_t lines) { return lines; }
const int lunette_code_probe_supported = 0;

#endif

static double lunette_probe_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double lunette_code_probe_ns(uint64_t (*probe)(uint64_t), uint64_t lines, int rounds) {
    if (lines < 1 || lines > LUNETTE_CODE_PROBE_LINES) return -1;
    // About 100 k instructions a round, whatever the size.
    int calls = (int)(6400 / lines) + 1;
    double best = -1;
    uint64_t sink = 0;
    for (int r = 0; r < rounds; r++) {
        double start = lunette_probe_now_ns();
        for (int i = 0; i < calls; i++) sink += probe(lines);
        double ns = (lunette_probe_now_ns() - start) / calls;
        if (best < 0 || ns < best) best = ns;
    }
    // The sink is never 1 (each call returns lines, a multiple of it, or a
    // sum of counts): reading it keeps the calls.
    return sink == 1 ? -1 : best;
}

double lunette_fresh_page_ns(size_t bytes, int rounds) {
    long page = 4096;
    double best = -1;
    for (int r = 0; r < rounds; r++) {
        unsigned char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return -1;
        // Not huge pages: each 4 KB page is faulted in on its first write,
        // as the heap's fresh pages are under transparent huge pages'
        // default "madvise" mode.
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
