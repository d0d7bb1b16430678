// Lua raises errors with longjmp, across the C functions of this target.
// Distributions build liblua with _FORTIFY_SOURCE (Debian's liblua5.4 does),
// which turns its longjmp into glibc's __longjmp_chk, and ThreadSanitizer
// intercepts setjmp and longjmp but not __longjmp_chk. Every Lua error that
// unwinds instrumented frames (a kill raised from the count hook, an
// argument error in a guarded function, the trampoline's raise) then leaves
// their entries on TSan's shadow stack: after some tens of thousands of
// errors on one thread it overflows into TSan's own memory, and the process
// dies in the runtime with a SEGV (or hangs while reporting it).
//
// Under ThreadSanitizer on glibc, this definition in the executable
// interposes glibc's (liblua's reference binds to it): it jumps with
// longjmp, which TSan intercepts, so TSan unwinds its shadow stack to the
// matching setjmp. It drops only __longjmp_chk's fortify check (that the
// jump goes up the stack), in sanitizer builds. Other builds define nothing.
#include "sanitizers.h"

#include <setjmp.h>

#if defined(LUNETTE_THREAD_SANITIZER) && defined(__GLIBC__)
void __longjmp_chk(struct __jmp_buf_tag env[1], int value) __attribute__((noreturn));

void __longjmp_chk(struct __jmp_buf_tag env[1], int value) {
    longjmp(env, value);
}
#else
// ISO C forbids an empty translation unit.
typedef int lunette_tsan_longjmp_unused;
#endif
