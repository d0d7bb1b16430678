#include "CFastLock.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

// The contended path (Drepper, "Futexes Are Tricky", mutex 2): mark the
// lock as having a waiter and sleep until it is free; the unlock that sees
// the mark wakes one sleeper.
void lunette_fast_lock_wait(lunette_fast_lock *l) {
    while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0) {
        syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    }
}

void lunette_fast_lock_wake(lunette_fast_lock *l) {
    syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#endif
