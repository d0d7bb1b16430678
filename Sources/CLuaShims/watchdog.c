// The deadline watchdog. Lua 5.4 runs every instruction through the hook
// dispatcher while a count hook is set (about 3x slower on tight code), so
// the sandbox sets no hook while a call is within its deadline. One
// watchdog thread per process watches the calls' deadlines; when one
// passes, it marks the call expired in its slot and signals the call's
// thread, whose handler checks the mark against the call running there,
// marks the call and sets the hook on the Lua thread running it
// (lua_sethook is meant to be called from signal handlers; see lua.c).
//
// A call reads no clock for its deadline: a precise read costs ~21 ns here,
// more than a trivial Lua call. It publishes its timeout, and the watchdog
// times it from a clock read at the first poll that sees it, which is after
// the call began: no call is ended before its timeout, and on an idle
// machine it is ended at most two periods (4 ms) after it. (Linux's coarse clock, ~3 ns a read, is no substitute:
// in this VM it lags the precise one by up to 8 ms, twice its resolution,
// so a deadline from it could end a call early.)
//
// Thread switches made by the kill-aware coroutine functions set the hook
// on the thread they switch to once the deadline has passed, so no
// coroutine escapes.
//
// A call's path takes no lock and no atomic read-modify-write: each thread
// that runs calls owns a slot (taken under the lock once, given back when
// the thread ends), and a call publishes its host and timeout there, and
// counts itself, with plain atomic stores. The watchdog only reads slots,
// marks expired calls and sends signals (under the lock, so that no thread
// ends and frees its descriptor meanwhile); the decision to end a call is taken
// on the call's own thread, so a signal that arrives late (the call ended,
// another began) changes nothing. The watchdog polls every 2 ms while
// calls come, and after two periods (4 ms) without one sleeps until the
// next. Each poll publishes the clock it read (`lunette_watch_clock`):
// while the watchdog is awake, a call the count hook does not time (a
// watched call, or one with no deadline) takes that as its start instead
// of reading a clock itself (see lunette_call_start_ns).
//
// Going to sleep is a handshake: a call stores its slot, then reads
// `sleeping`; the watchdog stores `sleeping`, then reads the slots. One of
// the two must see the other's store, which needs a full barrier on both
// sides. A full barrier on every call (a locked instruction, ~6 ns here)
// would be a tenth of a trivial call, so on Linux the call side has only a
// compiler barrier and the watchdog, which sleeps rarely, pays for both
// with membarrier(2): every thread of the process runs a full barrier
// before it returns. Where membarrier is missing (or refused), calls use a
// full fence.
//
// Under ThreadSanitizer no signal is used: TSan delivers a signal only when
// the thread next calls into the C library, which a pure Lua loop never
// does. There no watchdog thread runs: `lunette_watch_begin` only records
// the call (for lunette_watch_cancel) and returns 0, so the call keeps the
// count hook on, which reads the clock (and the cancel flag) every
// LUNETTE_HOOK_INTERVAL instructions: slower, but it stops every loop.
#define _GNU_SOURCE
#include "CLuaShims.h"
#include "calls.h"

#include <errno.h>
#include <pthread.h>
#if defined(__linux__)
#include <sys/syscall.h>
#ifdef SYS_membarrier
// The kernel's ABI values (linux/membarrier.h, since 4.14), spelled here:
// older headers define the command enum without them.
#define LUNETTE_MEMBARRIER_PRIVATE_EXPEDITED (1 << 3)
#define LUNETTE_MEMBARRIER_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#define LUNETTE_HAVE_MEMBARRIER 1
#endif
#endif
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


// The slots' counts and times are read and written whole, also from the
// signal handler.
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "64-bit atomics must be lock-free");

#define LUNETTE_WATCH_SIGNAL SIGURG      // ignored by default: harmless if it arrives late
#define LUNETTE_WATCH_PERIOD_NS 2000000  // 2 ms between checks while calls are armed
// Periods with no call running and none begun before the watchdog sleeps
// (the next call wakes it, for the price of a futex wake). Short: a process
// whose calls are far apart — a plugin's worker, which may see one call a
// second — would otherwise pay every period of the tail after each call.
// With 50 (100 ms), a host rotating over 1,000 workers woke their
// watchdogs ≈ 50 times a call (60 context switches a call instead of 8)
// and a call cost 500 µs instead of 260. A host whose calls come closer
// than the tail never sees the watchdog asleep either way.
#define LUNETTE_WATCH_IDLE_ROUNDS 2

// The watchdog's own view of each slot: the call it saw last and when it
// first saw it (the start it times the call from). Touched by the watchdog only.
static uint64_t lunette_watch_seen_call[LUNETTE_WATCH_SLOTS];
static uint64_t lunette_watch_seen_at[LUNETTE_WATCH_SLOTS];

static pthread_mutex_t lunette_watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lunette_watch_wake = PTHREAD_COND_INITIALIZER;
lunette_watch lunette_watches[LUNETTE_WATCH_SLOTS];
static pthread_once_t lunette_watch_once = PTHREAD_ONCE_INIT;
static int lunette_watch_ready = 0;
static struct sigaction lunette_previous_action;
// Set by the watchdog before it sleeps (under the lock); a call that sees it wakes it.
int lunette_watch_sleeping = 0;
// The monotonic clock as the watchdog read it at the start of its last poll; 0 before the first.
uint64_t lunette_watch_clock = 0;
// membarrier(2) is registered: calls need only a compiler barrier (see above).
// Written before the watchdog starts (in lunette_watch_once), read-only after.
int lunette_watch_heavy_barrier = 0;
// Gives a thread's slot back when the thread ends.
static pthread_key_t lunette_watch_key;
static pthread_once_t lunette_watch_key_once = PTHREAD_ONCE_INIT;
static int lunette_watch_key_ready = 0;

// The host whose call runs on this thread (for the signal handler), and the thread's slot.
__thread lunette_host *lunette_thread_host = NULL;
static __thread int lunette_thread_slot = -1;
__thread lunette_watch *lunette_thread_watch = NULL;

static void lunette_on_watch_signal(int sig, siginfo_t *info, void *context) {
    // The interrupted code may be between a failing call and its read of
    // errno: leave errno as the handler found it.
    int saved_errno = errno;
    int ended = 0;
    // The call that owns this thread's slot (the outermost watched one):
    // ended when the watchdog marked it, and only it (a signal that comes
    // late finds another call's count in the slot).
    int slot = lunette_thread_slot;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (slot >= 0) {
        lunette_watch *w = &lunette_watches[slot];
        lunette_host *owner = __atomic_load_n(&w->host, __ATOMIC_RELAXED);
        if (owner != NULL && owner->active) {
            if (__atomic_load_n(&w->expired, __ATOMIC_RELAXED) == __atomic_load_n(&w->calls, __ATOMIC_RELAXED)) {
                LUNETTE_FLAG_SET(owner->fired, 1);
            }
            if (LUNETTE_FLAG_GET(owner->fired)) {
                lua_State *running = owner->running;
                if (running != NULL) lunette_arm_hook(running, 1);
                ended = 1;
            }
        }
    }
    // The call running on the thread now, when lunette_watch_cancel ended it.
    lunette_host *h = __atomic_load_n(&lunette_thread_host, __ATOMIC_RELAXED);
    if (h != NULL && LUNETTE_FLAG_GET(h->fired)) {
        lua_State *running = h->running;
        if (running != NULL) lunette_arm_hook(running, 1);
        ended = 1;
    }
#ifdef SI_TKILL
    int ours = info != NULL && info->si_code == SI_TKILL && info->si_pid == getpid();
#else
    int ours = info != NULL && info->si_pid == getpid();   // Darwin has no SI_TKILL
#endif
    if (ended) {
        // Done.
    } else if (ours) {
        // The watchdog's, late: the call it was for has ended.
    } else if (lunette_previous_action.sa_flags & SA_SIGINFO) {
        // Not ours: pass it on to whoever handled the signal before.
        if (lunette_previous_action.sa_sigaction != NULL) lunette_previous_action.sa_sigaction(sig, info, context);
    } else if (lunette_previous_action.sa_handler != SIG_DFL && lunette_previous_action.sa_handler != SIG_IGN) {
        lunette_previous_action.sa_handler(sig);
    }
    errno = saved_errno;
}

// Every call registered so far, over all slots (under lunette_watch_lock:
// a slot's count survives its thread, so the sum never goes back).
static uint64_t lunette_watch_activity(void) {
    uint64_t sum = 0;
    for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) sum += __atomic_load_n(&lunette_watches[i].calls, __ATOMIC_RELAXED);
    return sum;
}

// The watchdog's half of the sleep handshake, after storing `sleeping`.
static void lunette_watch_heavy_fence(void) {
#ifdef LUNETTE_HAVE_MEMBARRIER
    if (lunette_watch_heavy_barrier && syscall(SYS_membarrier, LUNETTE_MEMBARRIER_PRIVATE_EXPEDITED, 0, 0) == 0) return;
    // Registered but refused now (cannot happen short of a seccomp filter
    // added later): the calls' side has no fence, so never sleep on it.
    if (lunette_watch_heavy_barrier) {
        __atomic_store_n(&lunette_watch_sleeping, 0, __ATOMIC_RELAXED);
        return;
    }
#endif
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void *lunette_watchdog(void *unused) {
    (void)unused;
    pthread_mutex_lock(&lunette_watch_lock);
    uint64_t seen = lunette_watch_activity();
    pthread_mutex_unlock(&lunette_watch_lock);
    int idle = 0;
    for (;;) {
        uint64_t now = lunette_now_ns();
        __atomic_store_n(&lunette_watch_clock, now, __ATOMIC_RELAXED);
        int running = 0;
        pthread_mutex_lock(&lunette_watch_lock);
        uint64_t activity = lunette_watch_activity();
        for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
            lunette_watch *w = &lunette_watches[i];
            uint64_t call = __atomic_load_n(&w->calls, __ATOMIC_ACQUIRE);
            if (__atomic_load_n(&w->host, __ATOMIC_ACQUIRE) == NULL) continue;
            running = 1;
            uint64_t timeout = __atomic_load_n(&w->timeout, __ATOMIC_RELAXED);
            // A call that began meanwhile is timed from the next round.
            if (__atomic_load_n(&w->calls, __ATOMIC_ACQUIRE) != call) continue;
            if (lunette_watch_seen_call[i] != call) {
                // Timed from a clock read after the call was seen
                // registered, so from no earlier than its start (`now` was
                // read before the lock and the scan: it could be earlier).
                lunette_watch_seen_call[i] = call;
                lunette_watch_seen_at[i] = lunette_now_ns();
                continue;
            }
            // Signal again every period until the call ends: a thread
            // switch may have raced with the first one. The handler ends
            // the call only if it is still the one marked.
            if (now >= lunette_watch_seen_at[i] && now - lunette_watch_seen_at[i] >= timeout) {
                __atomic_store_n(&w->expired, call, __ATOMIC_RELAXED);
                pthread_kill(w->thread, LUNETTE_WATCH_SIGNAL);
            }
        }
        pthread_mutex_unlock(&lunette_watch_lock);
        idle = (running || activity != seen) ? 0 : idle + 1;
        seen = activity;
        if (idle >= LUNETTE_WATCH_IDLE_ROUNDS) {
            // Sleep until a call registers (the handshake above). A call
            // that saw `sleeping` takes the lock to signal, which it cannot
            // get before this waits.
            pthread_mutex_lock(&lunette_watch_lock);
            __atomic_store_n(&lunette_watch_sleeping, 1, __ATOMIC_RELAXED);
            lunette_watch_heavy_fence();
            while (__atomic_load_n(&lunette_watch_sleeping, __ATOMIC_RELAXED) && lunette_watch_activity() == seen) {
                pthread_cond_wait(&lunette_watch_wake, &lunette_watch_lock);
            }
            // Calls take the published clock as their start while the
            // watchdog is awake (lunette_call_start_ns): one from before
            // the sleep would be far too early. A fresh one first, then
            // awake (release: a call that sees this sees the clock).
            __atomic_store_n(&lunette_watch_clock, lunette_now_ns(), __ATOMIC_RELAXED);
            __atomic_store_n(&lunette_watch_sleeping, 0, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&lunette_watch_lock);
            idle = 0;
            continue;
        }
        struct timespec pause = { 0, LUNETTE_WATCH_PERIOD_NS };
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
    }
    return NULL;
}

// A thread that owned a slot ends: the slot is free for another.
static void lunette_watch_release_slot(void *slot) {
    int i = (int)(intptr_t)slot - 1;
    // A call made later in the thread's exit (another key's destructor)
    // takes a slot again instead of using this one.
    lunette_thread_watch = NULL;
    lunette_thread_slot = -1;
    pthread_mutex_lock(&lunette_watch_lock);
    __atomic_store_n(&lunette_watches[i].host, NULL, __ATOMIC_RELEASE);
    lunette_watches[i].owned = 0;
    pthread_mutex_unlock(&lunette_watch_lock);
}

static void lunette_watch_make_key(void) {
    lunette_watch_key_ready = pthread_key_create(&lunette_watch_key, lunette_watch_release_slot) == 0;
}

static void lunette_watch_start(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = lunette_on_watch_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(LUNETTE_WATCH_SIGNAL, &action, &lunette_previous_action) != 0) return;
#ifdef LUNETTE_HAVE_MEMBARRIER
    lunette_watch_heavy_barrier = syscall(SYS_membarrier, LUNETTE_MEMBARRIER_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    if (pthread_create(&thread, &attr, lunette_watchdog, NULL) == 0) lunette_watch_ready = 1;
    pthread_attr_destroy(&attr);
}

// The calling thread's slot, taken on its first call (-1 when all are taken).
static int lunette_watch_slot(void) {
    if (lunette_thread_slot >= 0) return lunette_thread_slot;
    pthread_once(&lunette_watch_key_once, lunette_watch_make_key);
    if (!lunette_watch_key_ready) return -1;
    int slot = -1;
    pthread_mutex_lock(&lunette_watch_lock);
    for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
        if (!lunette_watches[i].owned) {
            lunette_watches[i].owned = 1;
            lunette_watches[i].thread = pthread_self();
            __atomic_store_n(&lunette_watches[i].host, NULL, __ATOMIC_RELEASE);
            __atomic_store_n(&lunette_watches[i].expired, UINT64_MAX, __ATOMIC_RELAXED);
            slot = i;
            break;
        }
    }
    pthread_mutex_unlock(&lunette_watch_lock);
    if (slot >= 0) {
        lunette_thread_slot = slot;
        pthread_setspecific(lunette_watch_key, (void *)(intptr_t)(slot + 1));
    }
    return slot;
}

// Threads inherit their signal mask, and dispatch's worker threads block
// nearly every signal (so do threads and processes started from them).
static __thread int lunette_thread_unblocked = 0;

int lunette_watch_uses_signals(void) {
#ifdef LUNETTE_WATCH_NO_SIGNALS
    return 0;
#else
    return 1;
#endif
}

int lunette_call_was_cancelled(const lunette_host *h) {
    return LUNETTE_FLAG_GET(h->cancelled) != 0;
}

// Set while no watchdog thread may start (lunette_watch_hold_thread).
static int lunette_watch_held = 0;

void lunette_watch_hold_thread(int held) {
    __atomic_store_n(&lunette_watch_held, held, __ATOMIC_RELAXED);
}

// Puts that in place for the calling thread; NULL when something cannot be
// (the call then keeps the count hook), and tried again on its next call.
lunette_watch *lunette_watch_prepare_thread(void) {
    if (__atomic_load_n(&lunette_watch_held, __ATOMIC_RELAXED)) return NULL;
    if (lunette_watch_uses_signals()) {
        pthread_once(&lunette_watch_once, lunette_watch_start);
        if (!lunette_watch_ready) return NULL;
        if (!lunette_thread_unblocked) {
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, LUNETTE_WATCH_SIGNAL);
            if (pthread_sigmask(SIG_UNBLOCK, &set, NULL) != 0) return NULL;
            lunette_thread_unblocked = 1;
        }
    }
    int slot = lunette_watch_slot();
    if (slot < 0) return NULL;
    lunette_thread_watch = &lunette_watches[slot];
    return lunette_thread_watch;
}

void lunette_watch_wake_up(void) {
    pthread_mutex_lock(&lunette_watch_lock);
    pthread_cond_signal(&lunette_watch_wake);
    pthread_mutex_unlock(&lunette_watch_lock);
}

int lunette_watch_cancel(lunette_host *h) {
    LUNETTE_FLAG_SET(h->cancelled, 1);
    LUNETTE_FLAG_SET(h->fired, 1);   // a call without the watchdog sees it in its count hook
    int signalled = 0;
    pthread_mutex_lock(&lunette_watch_lock);
    for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
        lunette_watch *w = &lunette_watches[i];
        if (__atomic_load_n(&w->host, __ATOMIC_ACQUIRE) == h) {
            if (lunette_watch_uses_signals()) pthread_kill(w->thread, LUNETTE_WATCH_SIGNAL);
            signalled = 1;
        }
    }
    pthread_mutex_unlock(&lunette_watch_lock);
    return signalled;
}
