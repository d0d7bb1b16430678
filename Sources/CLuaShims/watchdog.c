// The deadline watchdog. Lua 5.4 runs every instruction through the hook
// dispatcher while a count hook is set (about 3x slower on tight code), so
// the sandbox sets no hook while a call is within its deadline. One
// watchdog thread per process watches the calls' deadlines; when one
// passes, it marks the call and signals the call's thread, whose handler
// sets the hook on the Lua thread running there (lua_sethook is meant to
// be called from signal handlers; see lua.c). Thread switches made by the
// kill-aware coroutine functions set the hook on the thread they switch
// to once the deadline has passed, so no coroutine escapes.
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

#include "sanitizers.h"
#ifdef LUNETTE_THREAD_SANITIZER
#define LUNETTE_WATCH_NO_SIGNALS 1
#endif

#define LUNETTE_WATCH_SIGNAL SIGURG      // ignored by default: harmless if it arrives late
#define LUNETTE_WATCH_SLOTS 256
#define LUNETTE_WATCH_PERIOD_NS 2000000  // 2 ms between checks while calls are armed

typedef struct {
    lunette_host *host;
    pthread_t thread;
    uint64_t deadline;
    int used;
} lunette_watch;

static pthread_mutex_t lunette_watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lunette_watch_wake = PTHREAD_COND_INITIALIZER;
static lunette_watch lunette_watches[LUNETTE_WATCH_SLOTS];
static int lunette_watch_count = 0;
static pthread_once_t lunette_watch_once = PTHREAD_ONCE_INIT;
static int lunette_watch_ready = 0;
static struct sigaction lunette_previous_action;

// The host whose call runs on this thread (for the signal handler).
static __thread lunette_host *lunette_thread_host = NULL;

static void lunette_on_watch_signal(int sig, siginfo_t *info, void *context) {
    // The interrupted code may be between a failing call and its read of
    // errno: leave errno as the handler found it.
    int saved_errno = errno;
    lunette_host *h = lunette_thread_host;
    if (h != NULL && LUNETTE_FLAG_GET(h->fired)) {
        lua_State *running = h->running;
        if (running != NULL) lunette_arm_hook(running, 1);
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
    pthread_mutex_lock(&lunette_watch_lock);
    for (;;) {
        while (lunette_watch_count == 0) pthread_cond_wait(&lunette_watch_wake, &lunette_watch_lock);
        uint64_t now = lunette_now_ns();
        for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
            lunette_watch *w = &lunette_watches[i];
            // Signal again every period until the call ends: a thread
            // switch may have raced with the first one.
            if (w->used && now >= w->deadline) {
                LUNETTE_FLAG_SET(w->host->fired, 1);
                pthread_kill(w->thread, LUNETTE_WATCH_SIGNAL);
            }
        }
        pthread_mutex_unlock(&lunette_watch_lock);
        struct timespec pause = { 0, LUNETTE_WATCH_PERIOD_NS };
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
        pthread_mutex_lock(&lunette_watch_lock);
    }
    return NULL;
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
    lunette_thread_host = h;
    h->watch_slot = -1;
    if (deadline == 0) return 0;
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
    // Without signals the call is still registered (no watchdog thread
    // reads the table then), so that lunette_watch_cancel finds it and
    // says a call was running; the count hook does the rest.
    int slot = -1;
    pthread_mutex_lock(&lunette_watch_lock);
    for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
        if (!lunette_watches[i].used) { slot = i; break; }
    }
    if (slot >= 0) {
        lunette_watches[slot] = (lunette_watch){ h, pthread_self(), deadline, 1 };
        if (lunette_watch_count++ == 0 && signals) pthread_cond_signal(&lunette_watch_wake);
    }
    pthread_mutex_unlock(&lunette_watch_lock);
    h->watch_slot = slot;
    return signals && slot >= 0;
}

void lunette_watch_end(lunette_host *h) {
    if (h->watch_slot >= 0) {
        pthread_mutex_lock(&lunette_watch_lock);
        lunette_watches[h->watch_slot].used = 0;
        lunette_watch_count--;
        pthread_mutex_unlock(&lunette_watch_lock);
        h->watch_slot = -1;
    }
    lunette_thread_host = h->previous_thread_host;
}

int lunette_watch_cancel(lunette_host *h) {
    int signalled = 0;
    pthread_mutex_lock(&lunette_watch_lock);
    LUNETTE_FLAG_SET(h->cancelled, 1);
    LUNETTE_FLAG_SET(h->fired, 1);   // a call without the watchdog sees it in its count hook
    for (int i = 0; i < LUNETTE_WATCH_SLOTS; i++) {
        lunette_watch *w = &lunette_watches[i];
        if (w->used && w->host == h) {
            if (lunette_watch_uses_signals()) pthread_kill(w->thread, LUNETTE_WATCH_SIGNAL);
            signalled = 1;
        }
    }
    pthread_mutex_unlock(&lunette_watch_lock);
    return signalled;
}
