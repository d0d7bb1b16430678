// The protected call the host's calls share (shims.c's lunette_pcall*,
// sandbox.c's top-level calls): private to CLuaShims, not part of the
// module Swift sees.
#ifndef LUNETTE_CALLS_H
#define LUNETTE_CALLS_H

#include "CLuaShims.h"

#include <pthread.h>

#include "sanitizers.h"
#ifdef LUNETTE_THREAD_SANITIZER
#define LUNETTE_WATCH_NO_SIGNALS 1
#endif

#define LUNETTE_HIDDEN __attribute__((visibility("hidden")))

/// The message handler of every protected call the host makes: records a
/// traceback beside the error and returns the error object unchanged
/// (shims.c).
LUNETTE_HIDDEN int lunette_msgh(lua_State *L);

/// Makes the registry's first references fast to read (shims.c): the first
/// thing each state's opening does, while the registry holds nothing else.
/// May raise (memory): protected calls only.
LUNETTE_HIDDEN void lunette_reserve_references(lua_State *L);

/// Makes the registry's anchor table for the keys lunette_tape_read
/// remembers (shims.c, "Remembered keys"), unless there is one: part of
/// each state's opening. May raise (memory): protected calls only.
LUNETTE_HIDDEN void lunette_make_key_anchor(lua_State *L);
/// Instead, for a state that opens the debug library (which reaches the
/// registry and makes light userdata of any address): the state
/// remembers no keys. May raise (memory): protected calls only.
LUNETTE_HIDDEN void lunette_forgo_key_anchor(lua_State *L);

/// After a script-mode protected call failed: running out of memory ends
/// the call (a kill the script cannot catch). Out of line: calls that
/// succeed never come here.
LUNETTE_HIDDEN void lunette_note_call_failure(lua_State *L, lunette_host *h, int status);

/// A script-mode protected call with the message handler at absolute
/// index `handler` (below the function): the memory cap applies (in_host
/// 0), and running out of memory ends the call. The running thread is the
/// caller's to set: a top-level call's start makes it `L` and its end
/// clears it, with nothing in between.
__attribute__((always_inline))
static inline int lunette_pcall_script(lua_State *L, lunette_host *h, int nargs, int nresults, int handler) {
    int saved = h->in_host;
    h->in_host = 0;
    int status = lua_pcall(L, nargs, nresults, handler);
    h->in_host = saved;
    if (status != LUA_OK) lunette_note_call_failure(L, h, status);
    return status;
}

/// The protected call of every other caller: script mode (a nested call,
/// which makes `L` the running thread for its length), or host mode
/// (lunette_host_pcall: in_host counted up, so no cap applies, and nothing
/// charged to the script).
__attribute__((always_inline))
static inline int lunette_pcall_with(lua_State *L, lunette_host *h, int nargs, int nresults, int host_mode, int handler) {
    if (!host_mode) {
        lua_State *running = h->running;
        h->running = L;
        int status = lunette_pcall_script(L, h, nargs, nresults, handler);
        h->running = running;
        return status;
    }
    int saved = h->in_host;
    h->in_host = saved + 1;
    int status = lua_pcall(L, nargs, nresults, handler);
    h->in_host = saved;
    return status;
}

// MARK: - The watchdog's per-call half (see watchdog.c)
//
// Inline in the call path: a top-level call registers with the watchdog
// and unregisters with a few stores, and no call of its own.

#define LUNETTE_WATCH_SLOTS 256

// A thread's slot. `host` is non-NULL while a call with a deadline runs on
// the thread; `timeout` is that call's and `calls` counts it. Written by the
// owning thread only (atomics; `timeout`, then `calls`, then `host`), read by
// the watchdog and by lunette_watch_cancel. `expired` is the watchdog's: the
// count of the call whose deadline it saw pass.
typedef struct {
    lunette_host *host;
    uint64_t timeout;
    uint64_t calls;     ///< calls registered here, ever (a slot's count survives its thread)
    uint64_t expired;   ///< `calls` of the call found past its deadline, or UINT64_MAX
    pthread_t thread;
    int owned;          ///< a thread owns it (under lunette_watch_lock)
} lunette_watch;

extern LUNETTE_HIDDEN lunette_watch lunette_watches[LUNETTE_WATCH_SLOTS];
/// The host whose call runs on this thread (for the signal handler).
extern LUNETTE_HIDDEN __thread lunette_host *lunette_thread_host;
/// The calling thread's slot once everything a watched call needs is in
/// place (the watchdog started and its signal unblocked on this thread,
/// where signals are used; the slot taken): a call then checks one
/// pointer, not each of those.
extern LUNETTE_HIDDEN __thread lunette_watch *lunette_thread_watch;
/// Set by the watchdog before it sleeps; a call that sees it wakes it.
extern LUNETTE_HIDDEN int lunette_watch_sleeping;
/// The monotonic clock (ns) the watchdog read at the start of its last
/// poll, a period (2 ms) apart while it is awake; 0 before its first.
extern LUNETTE_HIDDEN uint64_t lunette_watch_clock;
/// membarrier(2) is registered: calls need only a compiler barrier.
extern LUNETTE_HIDDEN int lunette_watch_heavy_barrier;

/// Puts in place what the calling thread's watched calls need
/// (lunette_thread_watch); NULL when something cannot be (the call then
/// keeps the count hook), tried again on the thread's next call.
LUNETTE_HIDDEN lunette_watch *lunette_watch_prepare_thread(void);
/// Wakes the sleeping watchdog (takes its lock).
LUNETTE_HIDDEN void lunette_watch_wake_up(void);

/// Makes `h` the calling thread's current call and registers its timeout
/// (0: none) with the process's watchdog thread, which times the call from
/// the first time it sees it (so never ends it early, and typically at
/// most two of its 2 ms periods late). Returns 1 when the watchdog will end
/// the call at its deadline; 0 when it will not (no timeout, the watchdog
/// could not take it, or no signals are used, see
/// lunette_watch_uses_signals): the call then keeps the count hook on.
static inline int lunette_watch_begin(lunette_host *h, uint64_t timeout) {
    h->previous_thread_host = lunette_thread_host;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&lunette_thread_host, h, __ATOMIC_RELAXED);
    h->watch = NULL;
    if (timeout == 0) return 0;
    // Without signals the call is still registered (no watchdog thread
    // runs then), so that lunette_watch_cancel finds it and says a call
    // was running; the count hook does the rest.
    lunette_watch *w = lunette_thread_watch;
    if (w == NULL && (w = lunette_watch_prepare_thread()) == NULL) return 0;
    if (__atomic_load_n(&w->host, __ATOMIC_RELAXED) != NULL) {
        // A call nested in another on this thread (another state's, from a
        // Swift function): the outer call keeps the slot, and this one the
        // count hook.
        return 0;
    }
    __atomic_store_n(&w->timeout, timeout, __ATOMIC_RELAXED);
    // Only this thread writes its slot's count: no read-modify-write.
    __atomic_store_n(&w->calls, __atomic_load_n(&w->calls, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&w->host, h, __ATOMIC_RELEASE);
    h->watch = w;
#ifdef LUNETTE_WATCH_NO_SIGNALS
    return 0;
#else
    // The handshake with a watchdog going to sleep (see watchdog.c).
    if (lunette_watch_heavy_barrier) __atomic_signal_fence(__ATOMIC_SEQ_CST);
    else __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&lunette_watch_sleeping, __ATOMIC_RELAXED)) lunette_watch_wake_up();
    return 1;
#endif
}

/// Unregisters the call from the watchdog.
static inline void lunette_watch_end(lunette_host *h) {
    if (h->watch != NULL) {
        __atomic_store_n(&((lunette_watch *)h->watch)->host, NULL, __ATOMIC_RELEASE);
        h->watch = NULL;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&lunette_thread_host, h->previous_thread_host, __ATOMIC_RELAXED);
    // Nothing after this (the hook's removal, lunette_call_end) moves above
    // it: past here no signal handler arms a hook for this call.
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

#endif
