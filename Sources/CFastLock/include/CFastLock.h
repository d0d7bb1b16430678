// A lock for the host's short critical sections on every call (the call
// canceller's handle, the store's read transaction): uncontended, it is one
// atomic exchange each way, where an NSLock is a pthread mutex behind two
// Swift calls (≈ 75 instructions a lock and unlock). Contended, it sleeps
// (a futex on Linux, os_unfair_lock on Apple's systems). Built from C11
// atomics in a C target of the project, so ThreadSanitizer builds see its
// ordering (they do not see the standard library's Mutex, which is built
// without instrumentation).
#ifndef LUNETTE_FAST_LOCK_H
#define LUNETTE_FAST_LOCK_H

#include <stdint.h>

#if defined(__APPLE__)
#include <os/lock.h>
typedef struct { os_unfair_lock lock; } lunette_fast_lock;
static inline void lunette_fast_lock_init(lunette_fast_lock *l) { l->lock = OS_UNFAIR_LOCK_INIT; }
static inline void lunette_fast_lock_lock(lunette_fast_lock *l) { os_unfair_lock_lock(&l->lock); }
static inline void lunette_fast_lock_unlock(lunette_fast_lock *l) { os_unfair_lock_unlock(&l->lock); }
#elif defined(__linux__)
#include <stdatomic.h>
// 0: free; 1: held; 2: held, and a thread may be waiting.
typedef struct { _Atomic uint32_t state; } lunette_fast_lock;
void lunette_fast_lock_wait(lunette_fast_lock *l);
void lunette_fast_lock_wake(lunette_fast_lock *l);
static inline void lunette_fast_lock_init(lunette_fast_lock *l) { atomic_init(&l->state, 0); }
static inline void lunette_fast_lock_lock(lunette_fast_lock *l) {
    uint32_t expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire, memory_order_relaxed)) {
        lunette_fast_lock_wait(l);
    }
}
static inline void lunette_fast_lock_unlock(lunette_fast_lock *l) {
    if (atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2) lunette_fast_lock_wake(l);
}
#else
#include <pthread.h>
typedef struct { pthread_mutex_t mutex; } lunette_fast_lock;
static inline void lunette_fast_lock_init(lunette_fast_lock *l) { pthread_mutex_init(&l->mutex, 0); }
static inline void lunette_fast_lock_lock(lunette_fast_lock *l) { pthread_mutex_lock(&l->mutex); }
static inline void lunette_fast_lock_unlock(lunette_fast_lock *l) { pthread_mutex_unlock(&l->mutex); }
#endif

#endif
