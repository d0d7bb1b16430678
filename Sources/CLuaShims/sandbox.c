// The sandbox: per-call limits, the count hook, kills that scripts cannot
// catch, and the library profile scripts get. See docs/sandbox.md.
#define _GNU_SOURCE
#include "CLuaShims.h"
#include "calls.h"

#include <math.h>
#include <string.h>
#include <time.h>

// Registry keys (their addresses are the keys).
static const char lunette_kill_messages_key = 'k';
static const char lunette_readonly_key = 'r';
static const char lunette_next_key = 'n';
static const char lunette_modules_key = 'm';
static const char lunette_randomseed_key = 's';

// MARK: - Clocks

uint64_t lunette_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// A call's start, for what it reports (the elapsed time of a call that
// failed, os.clock's zero): the deadline needs no clock (see watchdog.c).
// Linux's coarse monotonic clock is the same clock as of the last timer
// tick: ~3 ns a read against ~21 ns for the precise one here, and behind
// it by up to a few ticks (8 ms seen in this VM). Elsewhere, the precise clock.
static uint64_t lunette_coarse_now_ns(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
    return lunette_now_ns();
}

// The start of a call that needs no precise one (see lunette_call_begin):
// no deadline, or one the watchdog times. While the watchdog is awake, the
// clock of its last poll: it polls every period (2 ms) while calls come (this
// one's or other threads'), so that is before the call began and, on a
// machine that runs the watchdog when it asks, at most a couple of periods
// before; no clock read at all (one was ≈ 7% of a trivial call's time, in
// the vDSO). Otherwise (asleep, or never started) the coarse clock.
static inline uint64_t lunette_call_start_ns(void) {
    // Acquire: a watchdog that woke publishes a fresh clock before it
    // clears `sleeping` (release), so a clock read after seeing it awake
    // is never the one from before its sleep.
    if (!__atomic_load_n(&lunette_watch_sleeping, __ATOMIC_ACQUIRE)) {
        uint64_t polled = __atomic_load_n(&lunette_watch_clock, __ATOMIC_RELAXED);
        if (polled != 0) return polled;
    }
    return lunette_coarse_now_ns();
}

// CPU time of the calling thread (os.clock measures the call's CPU time).
static uint64_t lunette_thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// MARK: - Kills

void lunette_push_kill_message(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    // Pushing a string made at setup allocates nothing, so this works at the
    // cap. A trusted state has none: its message is made now.
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_kill_messages_key) == LUA_TTABLE) {
        lua_rawgeti(L, -1, h->killed);
        lua_remove(L, -2);
    } else {
        lua_pop(L, 1);
        lua_pushstring(L, h->killed == LUNETTE_KILL_MEMORY ? "memory cap exceeded" : "killed");
    }
}

int lunette_raise_kill(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    if (h->sandboxed) lunette_arm_hook(L, 1);
    lunette_push_kill_message(L);
    return lua_error(L);
}

// Notes where the script was when its call is ended: the innermost Lua
// function with a current line (a guarded C function has none), so a
// timeout can say which line was running. Allocates nothing.
static void lunette_note_kill_place(lua_State *L, lunette_host *h) {
    lua_Debug ar;
    h->kill_line = -1;
    h->kill_source[0] = 0;
    for (int level = 0; level < 64 && lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        const char *source = ar.source;
        size_t length = ar.srclen;
        if (length > 0 && (source[0] == '@' || source[0] == '=')) { source++; length--; }
        if (length >= sizeof h->kill_source) length = sizeof h->kill_source - 1;
        memcpy(h->kill_source, source, length);
        h->kill_source[length] = 0;
        h->kill_line = ar.currentline;
        return;
    }
}

// Ends the call for `reason` unless it is already ending.
static int lunette_kill(lua_State *L, int reason) {
    lunette_host *h = lunette_host_of(L);
    if (h->killed == LUNETTE_KILL_NONE) {
        h->killed = reason;
        lunette_note_kill_place(L, h);
    }
    return lunette_raise_kill(L);
}

// The count hook. It is on while a call is being ended (every instruction,
// so no __close handler or metamethod can prolong it), or every
// LUNETTE_HOOK_INTERVAL instructions for an instruction budget. Found on a
// thread with nothing to do (armed in an earlier call), it switches itself off.
static void lunette_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    lunette_host *h = lunette_host_of(L);
    if (h->killed != LUNETTE_KILL_NONE) lunette_raise_kill(L);
    if (LUNETTE_FLAG_GET(h->fired)) lunette_kill(L, LUNETTE_KILL_TIMEOUT);
    if (h->hook_always && h->deadline_ns != 0 && lunette_now_ns() >= h->deadline_ns) lunette_kill(L, LUNETTE_KILL_TIMEOUT);
    if (h->instructions_left >= 0) {
        h->instructions_left -= LUNETTE_HOOK_INTERVAL;
        if (h->instructions_left < 0) lunette_kill(L, LUNETTE_KILL_INSTRUCTIONS);
    }
    if (!h->hook_always) lua_sethook(L, NULL, 0, 0);
}

void lunette_arm_hook(lua_State *L, int count) {
    lunette_host_of(L)->hook_armed = 1;
    lua_sethook(L, lunette_hook, LUA_MASKCOUNT, count);
}

// Before running Lua thread `L` (a coroutine being resumed, or the resumer
// again): make it the call's running thread and give it the hook it needs.
static void lunette_enter_thread(lunette_host *h, lua_State *L) {
    h->running = L;
    if (!h->sandboxed) return;
    if (LUNETTE_FLAG_GET(h->fired) || h->killed != LUNETTE_KILL_NONE) lunette_arm_hook(L, 1);
    else if (h->hook_always && lua_gethook(L) != lunette_hook) lunette_arm_hook(L, LUNETTE_HOOK_INTERVAL);
}

void lunette_guard_steps(lua_State *L, uint32_t steps) {
    lunette_guard_count(L, lunette_host_of(L), steps);
}

void lunette_guard_check(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    if (h->killed != LUNETTE_KILL_NONE) lunette_raise_kill(L);
    if (LUNETTE_FLAG_GET(h->fired) || (h->deadline_ns != 0 && lunette_now_ns() >= h->deadline_ns)) lunette_kill(L, LUNETTE_KILL_TIMEOUT);
}

int lunette_is_memory_failure(lua_State *L, int status) {
    if (status == LUA_ERRMEM) return 1;
    if (!lunette_host_of(L)->last_refused || lua_type(L, -1) != LUA_TSTRING) return 0;
    size_t len;
    const char *message = lua_tolstring(L, -1, &len);
    return len == 17 && memcmp(message, "not enough memory", 17) == 0;
}

void lunette_note_call_failure(lua_State *L, lunette_host *h, int status) {
    if (!lunette_is_memory_failure(L, status)) return;
    if (h->killed == LUNETTE_KILL_NONE) h->killed = LUNETTE_KILL_MEMORY;
    if (h->sandboxed) lunette_arm_hook(L, 1);
}

// After a protected call inside the script failed with `status` (error
// object on top): running out of memory or a kill goes on up; anything
// else is the script's to handle.
static void lunette_check_kill(lua_State *L, int status) {
    lunette_host *h = lunette_host_of(L);
    if (h->killed == LUNETTE_KILL_NONE && lunette_is_memory_failure(L, status)) h->killed = LUNETTE_KILL_MEMORY;
    if (h->killed != LUNETTE_KILL_NONE) lunette_raise_kill(L);
}

// MARK: - Calls

// Seeds math.random with the call's seed (Lua's own randomseed, kept in the
// registry; it allocates nothing).
static void lunette_seed_random(lua_State *L, lunette_host *h) {
    h->seed_pending = 0;
    if (!lua_checkstack(L, 3)) return;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_randomseed_key);
    if (lua_type(L, -1) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return;
    }
    lua_pushinteger(L, h->seed);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);   // cannot fail for an integer
}

// Removes the sandbox's count hook from the main thread at a top-level
// call's start or end (between calls nothing arms it: the watchdog's
// signal handler arms only an active call's). Out of line: most calls
// have none to remove.
static __attribute__((noinline)) void lunette_clear_hook(lua_State *L, lunette_host *h) {
    if (lua_gethook(L) == lunette_hook) lua_sethook(L, NULL, 0, 0);
    h->hook_armed = 0;
}

// Arms `limits` for a top-level call on `L`: resets the peak, the output
// count and the kill flag, starts the deadline, marks math.random to be
// seeded at the call's first draw. Runs no script code.
__attribute__((always_inline))
static inline void lunette_call_begin(lua_State *L, lunette_host *h, const lunette_limits *limits) {
    h->killed = LUNETTE_KILL_NONE;   // kill_line and kill_source are written with it (lunette_kill)
    LUNETTE_FLAG_SET(h->fired, 0);
    LUNETTE_FLAG_SET(h->cancelled, 0);
    h->hit_limit = 0;
    h->last_refused = 0;
    h->peak = h->used;
    h->limit = limits->memory;
    h->output_used = 0;
    h->output_limit = limits->output;
    h->instructions_left = h->sandboxed ? limits->instructions : -1;
    h->guard_steps = 0;
    h->close_depth = 0;
    h->clock_now = limits->clock_now;
    h->has_clock_now = limits->has_clock_now;
    h->cpu_start_ns = 0;   // read on first use (lunette_os_clock)
    h->running = L;
    h->seed = limits->random_seed;
    // Seeded on the call's first use of math.random (both profiles wrap it).
    h->seed_pending = 1;
    h->active = 1;
    // The watchdog ends the call at its deadline, timing it itself; the hook
    // stays off until then unless an instruction budget needs it. A call the
    // watchdog does not take (nested in another on this thread, no signals,
    // no slot) keeps the hook on, which compares the precise clock with a
    // deadline read now.
    uint64_t timeout = h->sandboxed ? limits->timeout_ns : 0;
    int watched = lunette_watch_begin(h, timeout);
    if (timeout != 0 && !watched) {
        h->start_ns = lunette_now_ns();
        h->deadline_ns = h->start_ns + timeout;
    } else {
        h->start_ns = lunette_call_start_ns();
        h->deadline_ns = 0;
    }
    h->hook_always = h->sandboxed && (h->instructions_left >= 0 || h->deadline_ns != 0);
    if (h->hook_always) lunette_arm_hook(L, LUNETTE_HOOK_INTERVAL);
    else if (h->hook_armed) lunette_clear_hook(L, h);
    // A cancel that came while the call was being armed (after `fired` was
    // cleared above) may have found no slot to signal, or had its hook
    // replaced just now: the call starts with the hook that ends it.
    if (h->sandboxed && LUNETTE_FLAG_GET(h->fired)) lunette_arm_hook(L, 1);
}

// Disarms the limits after a top-level call; the kill reason stays in the
// host until the next begin. Reads no clock (a call that succeeded needs
// no elapsed time): see lunette_call_elapsed.
__attribute__((always_inline))
static inline void lunette_call_end(lua_State *L, lunette_host *h) {
    lunette_watch_end(h);
    h->active = 0;
    if (h->hook_armed) lunette_clear_hook(L, h);
    h->deadline_ns = 0;
    h->instructions_left = -1;
    h->hook_always = 0;
    h->output_limit = 0;
    h->limit = 0;
    h->running = NULL;
}

// Arms, calls (as lunette_pcall_at) and disarms. Just armed, the call is
// not being ended: lunette_pcall_at's check of the kill cannot be true.
// Inlined into both callers: as a call of its own it cost ≈ 20
// instructions a call (its frame, its arguments) on the trivial call.
__attribute__((always_inline))
static inline int lunette_call_armed(lua_State *L, lunette_host *h, const lunette_limits *limits, int handler, int nargs, int nresults) {
    lunette_call_begin(L, h, limits);
    int status = lunette_pcall_script(L, h, nargs, nresults, handler);
    lunette_call_end(L, h);
    return status;
}

int lunette_call_outermost(lua_State *L, const lunette_limits *limits, int handler, int nargs, int nresults) {
    return lunette_call_armed(L, lunette_host_of(L), limits, handler, nargs, nresults);
}

void lunette_rest_handler(lua_State *L) {
    if (lua_gettop(L) != 0 || !lua_checkstack(L, 1)) return;
    lua_pushcfunction(L, lunette_msgh);
    lunette_host_of(L)->resting_handler = 1;
}

int lunette_call_reference(lua_State *L, const lunette_limits *limits, int reference) {
    lunette_host *h = lunette_host_of(L);
    int b = lua_gettop(L);
    h->call_base = b;
    // The frame this runs in has at least LUA_MINSTACK slots: Lua gives
    // them to the state's base frame, to every C function it calls (a
    // finalizer's, say) and to hooks, and lua_checkstack only ever raises a
    // frame's room. So three more need no check while the frame holds at
    // most LUA_MINSTACK - 3 values.
    if (b > LUA_MINSTACK - 3 && !lua_checkstack(L, 3)) return LUNETTE_CALL_STACK_FULL;
    // At the state's base the resting handler is at index 1. The base is
    // in host mode (in_host 1) with no call armed. Every way from Lua into
    // the host's Swift code passes the trampoline, which counts in_host up
    // (and a call armed below resets it to 0 first, and is active), so
    // anywhere above the base one of the two differs.
    int resting = h->resting_handler && h->in_host == 1 && !h->active && b >= 1;
    if (!resting) lua_pushcfunction(L, lunette_msgh);
    int first = resting ? b + 1 : b + 2;
    h->call_first = first;
    lua_rawgeti(L, LUA_REGISTRYINDEX, reference);
    int status = lunette_call_armed(L, h, limits, resting ? 1 : b + 1, 0, LUA_MULTRET);
    if (status == LUA_OK && lua_gettop(L) < first) {
        if (!resting) lua_settop(L, b);
        return LUNETTE_CALL_RETURNED_NOTHING;
    }
    return status;
}

uint64_t lunette_call_elapsed(lua_State *L) {
    return lunette_now_ns() - lunette_host_of(L)->start_ns;
}

// math.random / math.randomseed, in the sandbox and in trusted states
// (upvalue 1: Lua's generator state, as Lua's own functions expect;
// upvalue 2: Lua's function).
static int lunette_sandbox_random(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    h->effects++;
    if (h->seed_pending) lunette_seed_random(L, h);
    lua_CFunction stock = lua_tocfunction(L, lua_upvalueindex(2));
    return stock(L);
}

static int lunette_sandbox_randomseed(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    h->seed_pending = 0;
    h->effects++;
    lua_CFunction stock = lua_tocfunction(L, lua_upvalueindex(2));
    return stock(L);
}

// Replaces math[name] by `fn` over the same generator state.
static void lunette_wrap_random(lua_State *L, int math, const char *name, lua_CFunction fn) {
    math = lua_absindex(L, math);
    lua_getfield(L, math, name);
    lua_getupvalue(L, -1, 1);
    lua_insert(L, -2);
    lua_pushcclosure(L, fn, 2);
    lua_setfield(L, math, name);
}

// MARK: - pcall, xpcall

// Continuation of pcall and xpcall (also runs after a yield inside them).
static int lunette_finish_pcall(lua_State *L, int status, lua_KContext extra) {
    if (status != LUA_OK && status != LUA_YIELD) {
        lunette_check_kill(L, status);
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

// pcall(f, ...): as Lua's, except that a kill is raised again.
static int lunette_sandbox_pcall(lua_State *L) {
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, lunette_finish_pcall);
    return lunette_finish_pcall(L, status, 0);
}

// The message handler xpcall installs: the script's handler (upvalue 1)
// runs only for the script's own errors, never for a kill.
static int lunette_xpcall_handler(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    if (h->killed != LUNETTE_KILL_NONE) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

// xpcall(f, msgh, ...): as Lua's, except for kills.
static int lunette_sandbox_xpcall(lua_State *L) {
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, lunette_xpcall_handler, 1);
    lua_replace(L, 2);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2);   // 1 f, 2 handler, 3 true, 4 f, 5... args
    int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, lunette_finish_pcall);
    return lunette_finish_pcall(L, status, 2);
}

// MARK: - Coroutines

static lua_State *lunette_check_coroutine(lua_State *L, int arg) {
    lua_State *co = lua_tothread(L, arg);
    luaL_argexpected(L, co != NULL, arg, "coroutine");
    return co;
}

// Resumes `co` with the top `nargs` values of L. On success moves the
// results to L and returns their count; on failure moves the error object
// and returns -1 (`*status` holds lua_resume's status).
static int lunette_resume(lua_State *L, lua_State *co, int nargs, int *status) {
    *status = LUA_OK;
    if (!lua_checkstack(co, nargs)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, nargs);
    int nresults = 0;
    lunette_host *h = lunette_host_of(L);
    lunette_enter_thread(h, co);
    *status = lua_resume(co, L, nargs, &nresults);
    lunette_enter_thread(h, L);
    if (*status == LUA_OK || *status == LUA_YIELD) {
        if (!lua_checkstack(L, nresults + 1)) {
            lua_pop(co, nresults);
            lua_pushliteral(L, "too many results to resume");
            return -1;
        }
        lua_xmove(co, L, nresults);
        return nresults;
    }
    lua_xmove(co, L, 1);
    return -1;
}

// coroutine.resume(co, ...): as Lua's, except that a kill or a memory error
// inside the coroutine goes on up instead of becoming `false, message`.
static int lunette_sandbox_resume(lua_State *L) {
    lua_State *co = lunette_check_coroutine(L, 1);
    int status;
    int n = lunette_resume(L, co, lua_gettop(L) - 1, &status);
    if (n < 0) {
        lunette_check_kill(L, status);
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(n + 1));
    return n + 1;
}

// The function coroutine.wrap returns (upvalue 1: the coroutine).
static int lunette_wrapped(lua_State *L) {
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int status;
    int n = lunette_resume(L, co, lua_gettop(L), &status);
    if (n >= 0) return n;
    lunette_check_kill(L, status);
    int co_status = lua_status(co);
    if (co_status != LUA_OK && co_status != LUA_YIELD) {   // the coroutine died: close it
        lunette_host *h = lunette_host_of(L);
        lunette_enter_thread(h, co);
        co_status = lua_resetthread(co);
        lunette_enter_thread(h, L);
        lua_xmove(co, L, 1);
        lunette_check_kill(L, co_status);
    }
    if (co_status != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {   // add the caller's position
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

// coroutine.wrap(f).
static int lunette_sandbox_wrap(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    lua_pushcclosure(L, lunette_wrapped, 1);
    return 1;
}

// Nested coroutine.close calls recurse in C without Lua's C-stack count in
// Debian's 5.4.4 (fixed upstream in 5.4.5), so a chain of them can crash
// the process: bound the nesting.
#define LUNETTE_MAX_CLOSE_DEPTH 64

// coroutine.close(co): as Lua's, with the nesting bound and kill checks.
static int lunette_sandbox_close(lua_State *L) {
    lua_State *co = lunette_check_coroutine(L, 1);
    lunette_host *h = lunette_host_of(L);
    const char *state;
    if (co == L) state = "running";
    else {
        switch (lua_status(co)) {
        case LUA_YIELD: state = NULL; break;
        case LUA_OK: {
            lua_Debug ar;
            if (lua_getstack(co, 0, &ar)) state = "normal";      // it resumed another one
            else state = NULL;                                   // suspended at start, or dead
            break;
        }
        default: state = NULL; break;                            // dead with an error
        }
    }
    if (state != NULL) return luaL_error(L, "cannot close a %s coroutine", state);
    if (h->close_depth >= LUNETTE_MAX_CLOSE_DEPTH) return luaL_error(L, "too many nested coroutine.close calls");
    h->close_depth++;
    lunette_enter_thread(h, co);
    int status = lua_resetthread(co);
    lunette_enter_thread(h, L);
    h->close_depth--;
    if (status == LUA_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_xmove(co, L, 1);
    lunette_check_kill(L, status);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

// MARK: - Base library wrappers (upvalue 1: Lua's own function, called directly
// so that its argument errors keep their names)

#define LUNETTE_BINARY_REFUSED "attempt to load a binary chunk (the sandbox loads text chunks only)"

static int lunette_call_stock(lua_State *L) {
    lua_CFunction stock = lua_tocfunction(L, lua_upvalueindex(1));
    return stock(L);
}

// The reader load gets for a mode without "t" (upvalue 1: the script's
// reader; upvalue 2: true once the first piece was seen). Such a mode lets
// Lua's own check pass binary chunks, which the sandbox never loads, so a
// first piece that starts a binary chunk is refused here.
static int lunette_text_only_reader(lua_State *L) {
    lua_settop(L, 0);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_call(L, 0, 1);
    if (!lua_toboolean(L, lua_upvalueindex(2))) {
        lua_pushboolean(L, 1);
        lua_replace(L, lua_upvalueindex(2));
        size_t len;
        const char *piece = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
        if (piece != NULL && len > 0 && piece[0] == LUA_SIGNATURE[0]) return luaL_error(L, LUNETTE_BINARY_REFUSED);
    }
    return 1;
}

// load(chunk [, chunkname [, mode [, env]]]): text chunks only. A mode
// that allows text ("t", "bt", none) becomes "t", so Lua refuses binary
// chunks; a mode without "t" ("b") goes to Lua as it is, so a text chunk
// is refused as stock Lua refuses it ("attempt to load a text chunk (mode
// is 'b')"), and a binary chunk is refused here. A mode of another type
// keeps Lua's own error.
static int lunette_sandbox_load(lua_State *L) {
    if (lua_gettop(L) < 3) lua_settop(L, 3);
    int mode_type = lua_type(L, 3);
    if (mode_type == LUA_TSTRING && strchr(lua_tostring(L, 3), 't') == NULL) {
        if (lua_type(L, 1) == LUA_TFUNCTION) {
            lua_pushvalue(L, 1);
            lua_pushboolean(L, 0);
            lua_pushcclosure(L, lunette_text_only_reader, 2);
            lua_replace(L, 1);
        } else if (lua_type(L, 1) == LUA_TSTRING && lua_tostring(L, 1)[0] == LUA_SIGNATURE[0]) {
            luaL_pushfail(L);
            lua_pushliteral(L, LUNETTE_BINARY_REFUSED);
            return 2;
        }
    } else if (mode_type == LUA_TNIL || mode_type == LUA_TSTRING) {
        lua_pushliteral(L, "t");
        lua_replace(L, 3);
    }
    return lunette_call_stock(L);
}

// True when the value at `idx` is a read-only library view.
static int lunette_is_readonly(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE) return 0;
    idx = lua_absindex(L, idx);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_readonly_key);
    lua_pushvalue(L, idx);
    int found = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return found;
}

// setmetatable(t, mt): refuses metatables with __gc (finalizers run with
// hooks off, outside any deadline).
static int lunette_sandbox_setmetatable(lua_State *L) {
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        int has_gc = lua_rawget(L, 2) != LUA_TNIL;
        lua_pop(L, 1);
        if (has_gc) return luaL_argerror(L, 2, "metatables with __gc are not allowed in the sandbox");
    }
    return lunette_call_stock(L);
}

// rawset(t, k, v): refuses the read-only library views.
static int lunette_sandbox_rawset(lua_State *L) {
    if (lunette_is_readonly(L, 1)) return luaL_error(L, "attempt to modify a read-only table");
    return lunette_call_stock(L);
}

// require(name): host modules (and the standard library views) only.
static int lunette_sandbox_require(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_modules_key);
    if (lua_getfield(L, -1, name) != LUA_TNIL) return 1;
    return luaL_error(L, "module '%s' not found (only bundle and host modules can be required)", name);
}

// MARK: - os

static double lunette_clock_now(lunette_host *h) {
    if (h->has_clock_now) return h->clock_now;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// os.time([t]): the host's clock; with a table, Lua's own normalisation.
static int lunette_os_time(lua_State *L) {
    if (lua_isnoneornil(L, 1)) {
        lunette_host_of(L)->effects++;
        lua_pushinteger(L, (lua_Integer)floor(lunette_clock_now(lunette_host_of(L))));
        return 1;
    }
    return lunette_call_stock(L);
}

// os.date([format [, t]]): Lua's own, with t defaulting to the host's clock.
static int lunette_os_date(lua_State *L) {
    if (lua_isnoneornil(L, 2)) {
        lunette_host_of(L)->effects++;
        lua_settop(L, 1);
        lua_pushinteger(L, (lua_Integer)floor(lunette_clock_now(lunette_host_of(L))));
    }
    return lunette_call_stock(L);
}

// os.clock(): CPU seconds used by the current call. Reading a thread's CPU
// time is a system call (about 0.7 µs here), so it is read on the call's
// first os.clock, and the time before that counts as the wall time since the
// call began (a script runs on its thread without pause until then, unless
// the machine is busy or a host function blocks).
static int lunette_os_clock(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    h->effects++;
    uint64_t now = lunette_thread_cpu_ns();
    if (h->cpu_start_ns == 0) {
        uint64_t wall = lunette_now_ns() - h->start_ns;
        h->cpu_start_ns = now > wall ? now - wall : 1;
    }
    lua_pushnumber(L, (lua_Number)(now - h->cpu_start_ns) / 1e9);
    return 1;
}

// MARK: - Read-only views

// A view's metatable holds only its table (__index) and three values shared
// by every view: these two light C functions (no closure to allocate per
// view) and false (__metatable). What is particular to a view — its name for
// errors — is in the registry's weak set of views, `view -> name`.

// __newindex of a view: refuses, naming the view.
static int lunette_readonly_newindex(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_readonly_key);
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    const char *name = lua_tostring(L, -1);
    return luaL_error(L, "attempt to modify read-only table '%s'", name ? name : "?");
}

// __pairs of a view: iterate the real table (the metatable's __index) with
// the base library's next as the sandbox opened it (kept in the registry).
static int lunette_readonly_pairs(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_next_key);
    if (!lua_getmetatable(L, 1)) return luaL_error(L, "read-only view without its metatable");
    lua_pushliteral(L, "__index");
    lua_rawget(L, -2);
    lua_remove(L, -2);
    lua_pushnil(L);
    return 3;
}

// Pushes a read-only view of the table at `idx`, named `name` in errors.
static void lunette_push_readonly(lua_State *L, int idx, const char *name) {
    idx = lua_absindex(L, idx);
    lua_createtable(L, 0, 0);                 // the view
    lua_createtable(L, 0, 4);                 // its metatable
    lua_pushvalue(L, idx);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, lunette_readonly_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, lunette_readonly_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lunette_seal_table(L, -1, name);
}

// Replaces global `name` (a table) by a read-only view; also what require(name) returns.
static void lunette_protect(lua_State *L, const char *name) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    if (lua_getfield(L, -1, name) != LUA_TTABLE) { lua_pop(L, 2); return; }
    if (lunette_is_readonly(L, -1)) { lua_pop(L, 2); return; }
    lunette_push_readonly(L, -1, name);
    lua_pushvalue(L, -1);
    lua_setfield(L, -4, name);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_modules_key);
    if (lua_type(L, -1) == LUA_TTABLE) {
        lua_pushvalue(L, -2);
        lua_setfield(L, -2, name);
    }
    lua_pop(L, 4);
}

static int lunette_protect_global_protected(lua_State *L) {
    lunette_protect(L, lua_tostring(L, 1));
    return 0;
}

int lunette_protect_global(lua_State *L, const char *name) {
    lua_pushcfunction(L, lunette_protect_global_protected);
    lua_pushstring(L, name);
    return lunette_host_pcall(L, 1, 0);
}

void lunette_seal_table(lua_State *L, int idx, const char *name) {
    if (lua_type(L, idx) != LUA_TTABLE) return;
    idx = lua_absindex(L, idx);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_readonly_key) == LUA_TTABLE) {
        lua_pushvalue(L, idx);
        lua_pushstring(L, name);
        lua_rawset(L, -3);
    }
    lua_pop(L, 1);
}

// MARK: - Output

// print / log.*: tostring of each argument, tab-separated; counted against
// the call's output cap, then handed to the sink (upvalue 1) with the level
// (upvalue 2). warn (upvalue 3 true) concatenates strings and skips "@" controls.
static int lunette_log(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    h->effects++;
    int n = lua_gettop(L);
    int is_warn = lua_toboolean(L, lua_upvalueindex(3));
    if (is_warn) {
        luaL_checkstring(L, 1);
        for (int i = 2; i <= n; i++) luaL_checkstring(L, i);
        if (n == 1 && lua_tostring(L, 1)[0] == '@') return 0;   // control message
    }
    luaL_Buffer b;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, lua_upvalueindex(2));
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1 && !is_warn) luaL_addchar(&b, '\t');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    size_t len = lua_rawlen(L, -1);
    h->output_used += len + 1;
    if (h->output_limit != 0 && h->output_used > h->output_limit) return lunette_kill(L, LUNETTE_KILL_OUTPUT);
    lua_call(L, 2, 0);
    return 0;
}

static void lunette_push_log(lua_State *L, int sink, int level, int is_warn) {
    lua_pushvalue(L, sink);
    lua_pushinteger(L, level);
    lua_pushboolean(L, is_warn);
    lua_pushcclosure(L, lunette_log, 3);
}

static int lunette_install_log_protected(lua_State *L) {
    static const char *const names[] = { "debug", "info", "warn", "error" };
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lua_createtable(L, 0, 4);
    for (int level = 0; level < 4; level++) {
        lunette_push_log(L, 1, level, 0);
        lua_setfield(L, -2, names[level]);
    }
    lua_setfield(L, -2, "log");
    lunette_push_log(L, 1, 1, 0);
    lua_setfield(L, -2, "print");
    lunette_push_log(L, 1, 2, 1);
    lua_setfield(L, -2, "warn");
    return 0;
}

int lunette_install_log(lua_State *L) {
    lua_pushcfunction(L, lunette_install_log_protected);
    lua_insert(L, -2);
    return lunette_host_pcall(L, 1, 0);
}

// A trusted state's math.random and math.randomseed are wrapped as the
// sandbox's are, so that a call seeds the generator when it first uses it:
// seeding every call as it began cost ≈ 800 instructions (Lua's
// randomseed, called protected) a call that draws no number.
static int lunette_remember_randomseed_protected(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    if (lua_getfield(L, -1, "math") == LUA_TTABLE && lua_getfield(L, -1, "randomseed") == LUA_TFUNCTION) {
        lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_randomseed_key);
        lunette_wrap_random(L, -1, "random", lunette_sandbox_random);
        lunette_wrap_random(L, -1, "randomseed", lunette_sandbox_randomseed);
    }
    return 0;
}

int lunette_remember_randomseed(lua_State *L) {
    lua_pushcfunction(L, lunette_remember_randomseed_protected);
    return lunette_host_pcall(L, 0, 0);
}

// MARK: - The profile

// Sets field `name` of the table at `t` to a closure of `fn` over the
// table's current value of `name` (Lua's own function).
static void lunette_wrap_field(lua_State *L, int t, const char *name, lua_CFunction fn) {
    t = lua_absindex(L, t);
    lua_getfield(L, t, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, t, name);
}

static void lunette_set_field(lua_State *L, int t, const char *name, lua_CFunction fn) {
    t = lua_absindex(L, t);
    lua_pushcfunction(L, fn);
    lua_setfield(L, t, name);
}

static int lunette_open_sandbox_protected(lua_State *L) {
    lunette_reserve_references(L);
    lunette_make_key_anchor(L);
    static const struct { const char *name; lua_CFunction open; } libs[] = {
        { LUA_GNAME, luaopen_base }, { LUA_COLIBNAME, luaopen_coroutine }, { LUA_TABLIBNAME, luaopen_table },
        { LUA_STRLIBNAME, luaopen_string }, { LUA_MATHLIBNAME, luaopen_math }, { LUA_UTF8LIBNAME, luaopen_utf8 },
    };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        luaL_requiref(L, libs[i].name, libs[i].open, 1);
        lua_pop(L, 1);
    }

    // Registry: kill messages (made now, so raising a kill allocates nothing),
    // the set of read-only views, the modules require can return.
    static const char *const kills[] = {
        "killed", "deadline exceeded", "memory cap exceeded", "instruction budget exceeded", "output limit exceeded",
    };
    lua_createtable(L, 5, 0);
    for (int i = 0; i < 5; i++) {
        lua_pushstring(L, kills[i]);
        lua_rawseti(L, -2, i);
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_kill_messages_key);
    lua_createtable(L, 0, 8);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_readonly_key);
    lua_createtable(L, 0, 8);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_modules_key);

    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    int G = lua_gettop(L);
    // The base library's next, for the views' __pairs (a script may
    // replace the global).
    lua_getfield(L, G, "next");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_next_key);

    // Base library: no files, no collector control; checked load, setmetatable, rawset.
    static const char *const removed[] = { "dofile", "loadfile", "collectgarbage" };
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        lua_pushnil(L);
        lua_setfield(L, G, removed[i]);
    }
    lunette_wrap_field(L, G, "load", lunette_sandbox_load);
    lunette_wrap_field(L, G, "setmetatable", lunette_sandbox_setmetatable);
    lunette_wrap_field(L, G, "rawset", lunette_sandbox_rawset);
    lunette_set_field(L, G, "pcall", lunette_sandbox_pcall);
    lunette_set_field(L, G, "xpcall", lunette_sandbox_xpcall);
    lunette_set_field(L, G, "require", lunette_sandbox_require);

    // coroutine: kill-aware resume, wrap and close.
    lua_getfield(L, G, LUA_COLIBNAME);
    lunette_set_field(L, -1, "resume", lunette_sandbox_resume);
    lunette_set_field(L, -1, "wrap", lunette_sandbox_wrap);
    lunette_set_field(L, -1, "close", lunette_sandbox_close);
    lua_pop(L, 1);

    // string and table: guarded functions, in the real tables that the
    // string metatable's __index points to; no string.dump.
    lua_getfield(L, G, LUA_STRLIBNAME);
    lua_getfield(L, G, LUA_TABLIBNAME);
    lunette_install_guards(L, -2, -1);
    lua_pushnil(L);
    lua_setfield(L, -3, "dump");
    lua_pop(L, 2);

    // os: time, date and clock only, backed by the host's clocks.
    lua_pushcfunction(L, luaopen_os);
    lua_call(L, 0, 1);
    lua_createtable(L, 0, 3);
    lua_getfield(L, -2, "time");
    lua_pushcclosure(L, lunette_os_time, 1);
    lua_setfield(L, -2, "time");
    lua_getfield(L, -2, "date");
    lua_pushcclosure(L, lunette_os_date, 1);
    lua_setfield(L, -2, "date");
    lunette_set_field(L, -1, "clock", lunette_os_clock);
    // Also in the loaded-modules table, where luaL_argerror looks for the
    // name of a function called from C (pcall(os.date, "%Ez") says 'os.date').
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "os");
    lua_pop(L, 1);
    lua_setfield(L, G, "os");
    lua_pop(L, 1);

    // math.random is seeded with the call's seed when first used in the call.
    lua_getfield(L, G, LUA_MATHLIBNAME);
    lua_getfield(L, -1, "randomseed");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_randomseed_key);
    lunette_wrap_random(L, -1, "random", lunette_sandbox_random);
    lunette_wrap_random(L, -1, "randomseed", lunette_sandbox_randomseed);
    lua_pop(L, 1);

    // Read-only views of the library tables, and of the string metatable:
    // getmetatable("") returns a read-only stand-in whose __index reads string.
    static const char *const views[] = { LUA_COLIBNAME, LUA_TABLIBNAME, LUA_STRLIBNAME, LUA_MATHLIBNAME, LUA_UTF8LIBNAME, "os" };
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) lunette_protect(L, views[i]);
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_createtable(L, 0, 1);
    lua_getfield(L, G, LUA_STRLIBNAME);
    lua_setfield(L, -2, "__index");
    lunette_push_readonly(L, -1, "string metatable");
    lua_setfield(L, -3, "__metatable");
    lua_pop(L, 3);

    // _G stays the script's own table, but its metatable is fixed: no
    // setmetatable(_G, ...) to intercept global lookups.
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, G);

    lunette_host_of(L)->sandboxed = 1;
    return 0;
}

int lunette_open_sandbox(lua_State *L) {
    lua_pushcfunction(L, lunette_open_sandbox_protected);
    return lunette_host_pcall(L, 0, 0);
}
