// The deadline watchdog. Lua 5.4 runs every instruction through the hook
// dispatcher while a count hook is set (about 3x slower on tight code), so
// the sandbox sets no hook while a call is within its deadline. One
// watchdog thread per process watches the calls' deadlines; when one
// passes, it signals the call's thread, whose handler checks the deadline
// of the call running there, marks it and sets the hook on the Lua thread
// running it (lua_sethook is meant to be called from signal handlers; see
// lua.c). Thread switches made by the kill-aware coroutine functions set
// the hook on the thread they switch to once the deadline has passed, so
// no coroutine escapes.
//
// A call's path takes no lock: each thread that runs calls owns a slot
// (taken under the lock once, given back when the thread ends), and a call
// publishes its host and deadline there with atomic stores. The watchdog
// only reads slots and sends signals (under the lock, so that no thread
// ends and frees its descriptor meanwhile); the decision to end a call is taken
// on the call's own thread, so a signal that arrives late (the call ended,
// another began) changes nothing. The watchdog polls every 2 ms while
// calls come, and after 100 ms without one sleeps until the next.
//
// Under ThreadSanitizer no signal is used: TSan delivers a signal only when
// the thread next calls into the C library, which a pure Lua loop never
// does. There no watchdog thread runs: `lunette_watch_begin` only records
// the call (for lunette_watch_cancel) and returns 0, so the call keeps the
// count hook on, which reads the clock (and the cancel flag) every
// LUNETTE_HOOK_INTERVAL instructions: slower, but it stops every loop.
#define _GNU_SOURCE
#include "CLuaShims.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sanitizers.h"
#ifdef LUNETTE_THREAD_SANITIZER
#define LUNETTE_WATCH_NO_SIGNALS 1
#endif

#define LUNETTE_WATCH_SIGNAL SIGURG      // ignored by default: harmless if it arrives late
#define LUNETTE_WATCH_SLOTS 256
#define LUNETTE_WATCH_PERIOD_NS 2000000  // 2 ms between checks while calls are armed
#define LUNETTE_WATCH_IDLE_ROUNDS 50     // periods without a call before the watchdog sleeps

// A thread's slot. `host` is non-NULL while a call with a deadline runs on
// the thread; `deadline` is that call's. Written by the owning thread only
// (atomics), read by the watchdog and by lunette_watch_cancel.
typedef struct {
    lunette_host *host;
    uint64_t deadline;
    pthread_t thread;
    int owned;          ///< a thread owns it (under lunette_watch_lock)
} lunette_watch;

static pthread_mutex_t lunette_watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lunette_watch_wake = PTHREAD_COND_INITIALIZER;
static lunette_watch lunette_watches[LUNETTE_WATCH_SLOTS];
static pthread_once_t lunette_watch_once = PTHREAD_ONCE_INIT;
static int lunette_watch_ready = 0;
static struct sigaction lunette_previous_action;
// Bumped by every call that registers: the watchdog stays awake while it moves.
static uint64_t lunette_watch_activity = 0;
// Set by the watchdog before it sleeps (under the lock); a call that sees it wakes it.
static int lunette_watch_sleeping = 0;
// Gives a thread's slot back when the thread ends.
static pthread_key_t lunette_watch_key;
static pthread_once_t lunette_watch_key_once = PTHREAD_ONCE_INIT;
static int lunette_watch_key_ready = 0;

// The host whose call runs on this thread (for the signal handler), and the thread's slot.
static __thread lunette_host *lunette_thread_host = NULL;
static __thread int lunette_thread_slot = -1;

static void lunette_on_watch_signal(int sig, siginfo_t *info, void *context) {
    // The interrupted code may be between a failing call and its read of
    // errno: leave errno as the handler found it.
    int saved_errno = errno;
    lunette_host *h = __atomic_load_n(&lunette_thread_host, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (h != NULL && h->active && !LUNETTE_FLAG_GET(h->fired) && h->deadline_ns != 0 && lunette_now_ns() >= h->deadline_ns) {
        LUNETTE_FLAG_SET(h->fired, 1);
    }
    int ours = info != NULL && info->si_code == SI_TKILL && info->si_pid == getpid();
    if (h != NULL && LUNETTE_FLAG_GET(h->fired)) {
        lua_State *running = h->running;
        if (running != NULL) lunette_arm_hook(running, 1);
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

static void *lunette_watchdog(void *unused) {
    (void)unused;
    uint64_t seen = __atomic_load_n(&lunette_watch_activity, __ATOMIC_SEQ_CST);
    int idle = 0;
    for (;;) {
        uint64_t now = lunette_now_ns();
        int running = 0;
        pthread_mutex_lock(&lunette_watch_lock);
        for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
            lunette_watch *w = &lunette_watches[i];
            if (__atomic_load_n(&w->host, __ATOMIC_ACQUIRE) == NULL) continue;
            running = 1;
            // Signal again every period until the call ends: a thread
            // switch may have raced with the first one. The handler checks
            // the deadline of whatever call runs there by then.
            if (now >= __atomic_load_n(&w->deadline, __ATOMIC_ACQUIRE)) pthread_kill(w->thread, LUNETTE_WATCH_SIGNAL);
        }
        pthread_mutex_unlock(&lunette_watch_lock);
        uint64_t activity = __atomic_load_n(&lunette_watch_activity, __ATOMIC_SEQ_CST);
        idle = (running || activity != seen) ? 0 : idle + 1;
        seen = activity;
        if (idle >= LUNETTE_WATCH_IDLE_ROUNDS) {
            // Sleep until a call registers. A call stores its slot, then
            // reads `sleeping`; this stores `sleeping`, then reads the
            // activity (both sequentially consistent), so one of the two
            // sees the other.
            pthread_mutex_lock(&lunette_watch_lock);
            __atomic_store_n(&lunette_watch_sleeping, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&lunette_watch_activity, __ATOMIC_SEQ_CST) == seen) {
                pthread_cond_wait(&lunette_watch_wake, &lunette_watch_lock);
            }
            __atomic_store_n(&lunette_watch_sleeping, 0, __ATOMIC_SEQ_CST);
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

int lunette_watch_begin(lunette_host *h, uint64_t deadline) {
    h->previous_thread_host = lunette_thread_host;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&lunette_thread_host, h, __ATOMIC_RELAXED);
    h->watch_slot = -1;
    if (deadline == 0) return 0;
    // Without signals the call is still registered (no watchdog thread
    // runs then), so that lunette_watch_cancel finds it and says a call
    // was running; the count hook does the rest.
    int signals = lunette_watch_uses_signals();
    if (signals) {
        pthread_once(&lunette_watch_once, lunette_watch_start);
        if (!lunette_watch_ready) return 0;
        if (!lunette_thread_unblocked) {
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, LUNETTE_WATCH_SIGNAL);
            if (pthread_sigmask(SIG_UNBLOCK, &set, NULL) != 0) return 0;
            lunette_thread_unblocked = 1;
        }
    }
    int slot = lunette_watch_slot();
    if (slot < 0) return 0;
    lunette_watch *w = &lunette_watches[slot];
    if (__atomic_load_n(&w->host, __ATOMIC_RELAXED) != NULL) {
        // A call nested in another on this thread (another state's, from a
        // Swift function): the outer call keeps the slot, and this one the
        // count hook.
        return 0;
    }
    __atomic_store_n(&w->deadline, deadline, __ATOMIC_RELEASE);
    __atomic_store_n(&w->host, h, __ATOMIC_SEQ_CST);
    h->watch_slot = slot;
    if (signals) {
        __atomic_add_fetch(&lunette_watch_activity, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&lunette_watch_sleeping, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&lunette_watch_lock);
            pthread_cond_signal(&lunette_watch_wake);
            pthread_mutex_unlock(&lunette_watch_lock);
        }
    }
    return signals;
}

void lunette_watch_end(lunette_host *h) {
    if (h->watch_slot >= 0) {
        __atomic_store_n(&lunette_watches[h->watch_slot].host, NULL, __ATOMIC_RELEASE);
        h->watch_slot = -1;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&lunette_thread_host, h->previous_thread_host, __ATOMIC_RELAXED);
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
