// See CLuaShims.h for why each function exists.
#define _GNU_SOURCE
#include "CLuaShims.h"
#include "CFastLock.h"
#include "calls.h"

#include <pthread.h>
#include <stdio.h>
#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__GLIBC__)
extern void *__libc_stack_end;   // glibc's: the main thread's stack start (exported by ld.so)
extern char **environ;
#endif
#include <stdlib.h>
#include <string.h>

// MARK: - Allocator

// Small and medium blocks come from a pool of the state's own. Most of
// what a call allocates and frees is small or medium (strings, tables,
// their node arrays, closures), and malloc plus free cost ≈ 200–330
// instructions a block where a free list costs ≈ 20. Each size class takes
// blocks from chunks aligned to their size, so a block's chunk is its
// address rounded down; Lua passes every block's size back (`osize`), which
// gives its class:
// - small: 16, 32, …, 128 bytes, from 1 KB chunks;
// - medium: 256, 384 and 512 bytes, from 2 KB chunks. Among them are the
//   node arrays of tables of 5 to 16 fields (8 and 16 nodes: 192 and 384
//   bytes), which a provider's entry makes on every call. (Classes 64
//   bytes apart, and 4 KB chunks, took 91 KB a loaded bundle against 73
//   with no medium classes; these take 83.)
// Chunks come from a process-wide supply for each chunk size, carved from
// regions of 64 that malloc gives as they are needed, and a chunk whose
// blocks are all free goes back to it: a state holds the chunks its live
// blocks are in, and one empty spare of each size (which spares a call that
// fills and empties a chunk the trip to the supply's lock). The memory cap
// holds for what the state really takes: while a script runs, growth is
// refused when the blocks outside the pool plus the chunks held would pass
// the cap, so a script that leaves one live block in each chunk cannot hold
// more than its cap. A shrink is never refused. Freed chunks stay in the
// supply for other states (its size is the most blocks alive at once).
// Under AddressSanitizer every block is malloc's, so that it can check them.
#if defined(__SANITIZE_ADDRESS__)
#define LUNETTE_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LUNETTE_POOL 0
#endif
#endif
#ifndef LUNETTE_POOL
#define LUNETTE_POOL 1
#endif

#define LUNETTE_SMALL_CLASSES 8
#define LUNETTE_SMALL_LARGEST 128
#define LUNETTE_POOL_LARGEST 512
#define LUNETTE_CHUNKS_PER_REGION 64
_Static_assert(LUNETTE_POOL_CLASSES == LUNETTE_SMALL_CLASSES + (LUNETTE_POOL_LARGEST - LUNETTE_SMALL_LARGEST) / 128,
               "the header's class count matches the classes here");

// A chunk size: 0 for small blocks' chunks, 1 for medium ones'.
static inline unsigned lunette_kind_of_class(unsigned cls) { return cls >= LUNETTE_SMALL_CLASSES; }
static inline size_t lunette_chunk_bytes(unsigned kind) { return kind ? 2048 : 1024; }

// The class of a block of `size` (1 ≤ size ≤ LUNETTE_POOL_LARGEST), and a class's block size.
static inline unsigned lunette_class(size_t size) {
    return size <= LUNETTE_SMALL_LARGEST ? (unsigned)((size - 1) >> 4)
                                         : LUNETTE_SMALL_CLASSES + (unsigned)((size - LUNETTE_SMALL_LARGEST - 1) >> 7);
}
static inline unsigned lunette_class_size(unsigned cls) {
    return cls < LUNETTE_SMALL_CLASSES ? (cls + 1) << 4 : LUNETTE_SMALL_LARGEST + ((cls - LUNETTE_SMALL_CLASSES + 1) << 7);
}

typedef struct lunette_chunk {
    struct lunette_chunk *next, *prev;   // in its class's list of chunks with a free block (or the supply's)
    void *free;                          // freed blocks, linked through their first word
    char *fresh;                         // the first block never handed out
    unsigned used;                       // blocks handed out and not freed
    unsigned size;                       // the class's block size
} lunette_chunk;

#define LUNETTE_CHUNK_FIRST ((sizeof(lunette_chunk) + 15) & ~(size_t)15)

// Per chunk size: free chunks (linked through `next`), and the part of the
// last region never handed out (carved as taken, so a region's pages are
// touched only when used).
typedef struct {
    lunette_chunk *free;
    char *carve, *carve_end;
} lunette_supply_of_size;

// The supply is shared by every state of the process (a fast lock: two
// atomic exchanges when no other thread holds it).
static lunette_fast_lock lunette_supply_lock;
static lunette_supply_of_size lunette_supply[2];

// Empty chunks a state keeps back for each chunk size, rather than give
// them to the supply: a widget call empties and fills about one and a half
// chunks, and with one spare each went back and forth through the supply.
#define LUNETTE_POOL_SPARES 2

// The state's real footprint: blocks outside the pool, and the chunks held.
static inline size_t lunette_footprint(const lunette_host *h) { return h->used - h->pool_live + h->pool_held; }

static void lunette_pool_release(lunette_host *h);

// Whether growing the footprint by `grow` passes the cap. The empty chunks
// kept back count in the footprint: before refusing, they go back to the
// supply (then a script is refused at the cap, not up to 6 KB before it).
static int lunette_over_cap(lunette_host *h, size_t grow) {
    if (lunette_footprint(h) + grow <= h->limit) return 0;
    if (h->pool_spares[0] + h->pool_spares[1] > 0) {
        lunette_pool_release(h);
        if (lunette_footprint(h) + grow <= h->limit) return 0;
    }
    return 1;
}

// A chunk of `kind` for the state; `capped`: refused (NULL) when it would pass the cap.
static lunette_chunk *lunette_chunk_take(lunette_host *h, unsigned kind, int capped) {
    lunette_chunk *c = h->pool_spare[kind];
    if (c != NULL) {
        h->pool_spare[kind] = c->next;
        h->pool_spares[kind]--;
        return c;
    }
    size_t bytes = lunette_chunk_bytes(kind);
    if (capped && lunette_over_cap(h, bytes)) {
        h->hit_limit = 1;
        h->last_refused = 1;
        return NULL;
    }
    lunette_supply_of_size *supply = &lunette_supply[kind];
    lunette_fast_lock_lock(&lunette_supply_lock);
    c = supply->free;
    if (c != NULL) {
        supply->free = c->next;
    } else {
        if (supply->carve == supply->carve_end) {
            void *region = NULL;
            if (posix_memalign(&region, bytes, bytes * LUNETTE_CHUNKS_PER_REGION) == 0) {
                supply->carve = region;
                supply->carve_end = (char *)region + bytes * LUNETTE_CHUNKS_PER_REGION;
            }
        }
        if (supply->carve != supply->carve_end) {
            c = (lunette_chunk *)supply->carve;
            supply->carve += bytes;
        }
    }
    lunette_fast_lock_unlock(&lunette_supply_lock);
    if (c != NULL) h->pool_held += bytes;
    return c;
}

static void lunette_supply_put(lunette_chunk *c, unsigned kind) {
    lunette_fast_lock_lock(&lunette_supply_lock);
    c->next = lunette_supply[kind].free;
    lunette_supply[kind].free = c;
    lunette_fast_lock_unlock(&lunette_supply_lock);
}

static void lunette_chunk_give(lunette_host *h, lunette_chunk *c, unsigned kind) {
    if (h->pool_spares[kind] >= LUNETTE_POOL_SPARES) {
        h->pool_held -= lunette_chunk_bytes(kind);
        lunette_supply_put(c, kind);
    } else {
        c->next = h->pool_spare[kind];
        h->pool_spare[kind] = c;
        h->pool_spares[kind]++;
    }
}

static inline lunette_chunk *lunette_chunk_of(void *block, unsigned kind) {
    return (lunette_chunk *)((uintptr_t)block & ~(uintptr_t)(lunette_chunk_bytes(kind) - 1));
}

static inline int lunette_pooled(size_t size) { return LUNETTE_POOL && size <= LUNETTE_POOL_LARGEST; }

// No free block, and no room for a fresh one (offsets, not pointers: a
// pointer past the chunk could be past its region too).
static inline int lunette_chunk_full(const lunette_chunk *c) {
    return c->free == NULL
        && (size_t)(c->fresh - (const char *)c) + c->size > lunette_chunk_bytes(c->size > LUNETTE_SMALL_LARGEST);
}

static inline void lunette_chunk_unlink(lunette_host *h, lunette_chunk *c, unsigned cls) {
    if (c->prev) c->prev->next = c->next; else h->pool_partial[cls] = c->next;
    if (c->next) c->next->prev = c->prev;
    c->next = c->prev = NULL;
}

static inline void lunette_chunk_push(lunette_host *h, lunette_chunk *c, unsigned cls) {
    c->prev = NULL;
    c->next = h->pool_partial[cls];
    if (c->next) c->next->prev = c;
    h->pool_partial[cls] = c;
}

// A block of `size` (of class `cls`) from `c`, one of that class's chunks with room.
static inline void *lunette_chunk_block(lunette_host *h, lunette_chunk *c, unsigned cls, size_t size) {
    void *block;
    if (c->free != NULL) {
        block = c->free;
        c->free = *(void **)block;
    } else {
        block = c->fresh;
        c->fresh += c->size;
    }
    c->used++;
    h->pool_live += size;
    if (lunette_chunk_full(c)) lunette_chunk_unlink(h, c, cls);
    return block;
}

static void *lunette_pool_alloc(lunette_host *h, size_t size, int capped) {
    unsigned cls = lunette_class(size);
    lunette_chunk *c = h->pool_partial[cls];
    if (c == NULL) {
        c = lunette_chunk_take(h, lunette_kind_of_class(cls), capped);
        if (c == NULL) return NULL;
        c->free = NULL;
        c->used = 0;
        c->size = lunette_class_size(cls);
        c->fresh = (char *)c + LUNETTE_CHUNK_FIRST;
        lunette_chunk_push(h, c, cls);
    }
    return lunette_chunk_block(h, c, cls, size);
}

__attribute__((always_inline)) static inline void lunette_pool_free(lunette_host *h, void *block, size_t size) {
    unsigned cls = lunette_class(size);
    unsigned kind = lunette_kind_of_class(cls);
    lunette_chunk *c = lunette_chunk_of(block, kind);
    int was_full = lunette_chunk_full(c);
    *(void **)block = c->free;
    c->free = block;
    c->used--;
    h->pool_live -= size;
    if (c->used == 0) {
        if (!was_full) lunette_chunk_unlink(h, c, cls);
        lunette_chunk_give(h, c, kind);
    } else if (was_full) {
        lunette_chunk_push(h, c, cls);
    }
}

// Whether growing a state by `grow` bytes is subject to its cap: only
// growth, only with a cap, only while script code runs.
static inline int lunette_capped(const lunette_host *h, size_t grow) {
    return grow > 0 && h->limit != 0 && h->in_host == 0;
}

// Counts a block of `old` bytes that is now `nsize`, and the script's peak:
// host-mode allocations (arguments, the traceback of a failure) are not
// counted in it, so it never passes the cap.
static inline void lunette_count(lunette_host *h, size_t old, size_t nsize) {
    h->last_refused = 0;
    h->used = h->used - old + nsize;
    if (h->used > h->peak && h->in_host == 0) h->peak = h->used;
}

// What lunette_alloc does not take itself: new blocks the pool cannot give
// from a chunk with room, and every resize. Refuses growth past the cap
// while script code runs (the footprint is never less than `used`). In host
// mode an allocation never fails by policy: a failure there would longjmp
// through Swift, so a real out-of-memory aborts instead.
__attribute__((noinline)) static void *lunette_alloc_general(lunette_host *h, void *ptr, size_t osize, size_t nsize) {
    size_t old = ptr ? osize : 0;
    int capped = lunette_capped(h, nsize > old ? nsize - old : 0);
    if (capped && lunette_over_cap(h, nsize - old)) {
        h->hit_limit = 1;
        h->last_refused = 1;
        return NULL;
    }
    void *p;
    if (ptr != NULL && !lunette_pooled(old) && !lunette_pooled(nsize)) {
        p = realloc(ptr, nsize);
    } else if (ptr != NULL && lunette_pooled(old) && lunette_pooled(nsize) && lunette_class(old) == lunette_class(nsize)) {
        p = ptr;   // the same class: the block already fits
        h->pool_live = h->pool_live - old + nsize;
    } else {
        // A new block is malloc's (realloc(NULL, n) is the same with one more step).
        p = lunette_pooled(nsize) ? lunette_pool_alloc(h, nsize, capped) : malloc(nsize);
        if (p != NULL && ptr != NULL) {
            memcpy(p, ptr, old < nsize ? old : nsize);
            if (lunette_pooled(old)) lunette_pool_free(h, ptr, old); else free(ptr);
        }
    }
    if (p == NULL) {
        if (h->in_host > 0) {
            fprintf(stderr, "lunette: out of memory in host code (%zu bytes)\n", nsize);
            abort();
        }
        h->last_refused = 0;
        return NULL;
    }
    lunette_count(h, old, nsize);
    return p;
}

// Lua's allocator (see lunette_alloc_general for the cap). Frees, and new
// pooled blocks from a chunk with room under the cap, are taken here with
// no more work than they need; the rest goes to lunette_alloc_general.
static void *lunette_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    lunette_host *h = (lunette_host *)ud;
    if (nsize == 0) {
        // Lua frees empty parts (a table's missing array part, say) as NULL
        // blocks: 25 a widget call.
        if (ptr != NULL) {
            if (lunette_pooled(osize)) lunette_pool_free(h, ptr, osize); else free(ptr);
            h->used -= osize;
        }
        return NULL;
    }
    if (LUNETTE_POOL && ptr == NULL && nsize <= LUNETTE_POOL_LARGEST) {
        unsigned cls = lunette_class(nsize);
        lunette_chunk *c = h->pool_partial[cls];
        if (c != NULL && !(lunette_capped(h, nsize) && lunette_footprint(h) + nsize > h->limit)) {
            void *block = lunette_chunk_block(h, c, cls, nsize);
            lunette_count(h, 0, nsize);
            return block;
        }
    }
    return lunette_alloc_general(h, ptr, osize, nsize);
}

int lunette_pool_enabled(void) { return LUNETTE_POOL; }

// Gives the state's spare (empty) chunks back to the supply: at the cap
// (lunette_over_cap), and after lua_close, when every block is free and
// only the spares are left.
static void lunette_pool_release(lunette_host *h) {
    for (unsigned kind = 0; kind < 2; kind++) {
        while (h->pool_spare[kind] != NULL) {
            lunette_chunk *c = h->pool_spare[kind];
            h->pool_spare[kind] = c->next;
            h->pool_held -= lunette_chunk_bytes(kind);
            lunette_supply_put(c, kind);
        }
        h->pool_spares[kind] = 0;
    }
}

// Reached only if an error escapes every protected call: a bug in the host.
static int lunette_panic(lua_State *L) {
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(error object is not a string)";
    fprintf(stderr, "lunette: unprotected Lua error (host bug): %s\n", msg);
    abort();
    return 0;
}

lua_State *lunette_newstate(lunette_host *host) {
    host->in_host = 1;
    // Remembered keys name objects of one state, kept alive by its anchor
    // table: a new state starts with none.
    host->key_anchor = 0;   // until its opening makes the anchor table
    memset(host->key_shapes, 0, sizeof host->key_shapes);
    memset(host->key_shape_wanted, 0, sizeof host->key_shape_wanted);
    host->key_shape_next = 0;
    host->instructions_left = -1;
    lua_State *L = lua_newstate(lunette_alloc, host);
    if (L != NULL) {
        lua_atpanic(L, lunette_panic);
        // Every thread made later copies the main thread's extra space.
        *(lunette_host **)lua_getextraspace(L) = host;
    } else {
        lunette_pool_release(host);
    }
    return L;
}

void lunette_close(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    h->closing = 1;
    lua_close(L);
    lunette_pool_release(h);
}

// MARK: - Trampoline

static lunette_dispatch_fn lunette_dispatch = NULL;

void lunette_set_dispatch(lunette_dispatch_fn fn) { lunette_dispatch = fn; }

// The one C function behind every Swift function: Swift runs and returns,
// then this frame raises if Swift asked for it.
static int lunette_trampoline(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    void *box = lua_touserdata(L, lua_upvalueindex(1));
    h->in_host++;
    int n = lunette_dispatch(L, box);
    h->in_host--;
    // A kill the Swift body saw (and may have swallowed) ends the call here.
    if (h->active && h->killed != LUNETTE_KILL_NONE) return lunette_raise_kill(L);
    // A deadline or cancel that came while Swift ran (its signal may have
    // found another call on this thread, nested in the body): end it now.
    if (h->active && h->sandboxed && LUNETTE_FLAG_GET(h->fired)) lunette_arm_hook(L, 1);
    if (n >= 0) return n;
    if (n == LUNETTE_RAISE_WHERE || n == LUNETTE_RAISE_WHERE_CALLER) {
        luaL_where(L, n == LUNETTE_RAISE_WHERE ? 1 : 2);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

void lunette_push_swift_function(lua_State *L, void *box) {
    lua_pushlightuserdata(L, box);
    lua_pushcclosure(L, lunette_trampoline, 1);
}

// A Swift function with a C fast path (upvalue 2; its data, upvalue 3):
// the fast path answers, or says -1 and the body runs, exactly as through
// the trampoline. Never while the state closes, when Swift bodies refuse
// to run.
static int lunette_fast_entry(lua_State *L) {
    if (!lunette_host_of(L)->closing) {
        lua_CFunction fast = lua_tocfunction(L, lua_upvalueindex(2));
        int n = fast(L);
        if (n >= 0) return n;
    }
    return lunette_trampoline(L);
}

// The same for a function whose calls are effects: one the fast path
// answers counts as the body's would (LuaFunctionBox.invoke).
static int lunette_fast_entry_effect(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    if (!h->closing) {
        lua_CFunction fast = lua_tocfunction(L, lua_upvalueindex(2));
        int n = fast(L);
        if (n >= 0) {
            h->effects++;
            return n;
        }
    }
    return lunette_trampoline(L);
}

void lunette_push_swift_function_with(lua_State *L, void *box, lua_CFunction fast, void *data, int counts_effect) {
    lua_pushlightuserdata(L, box);
    lua_pushcfunction(L, fast);   // a light C function: no allocation
    lua_pushlightuserdata(L, data);
    lua_pushcclosure(L, counts_effect ? lunette_fast_entry_effect : lunette_fast_entry, 3);
}

// MARK: - Protected calls

static const char lunette_traceback_key = 't';

// Message handler: records a traceback beside the error and returns the error
// object unchanged. Runs no script code (no __tostring) and in host mode, so
// it cannot fail for the cap.
LUNETTE_HIDDEN int lunette_msgh(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    const void *p = lua_topointer(L, 1);
    h->in_host++;
    if (p == NULL || p != h->kept_error) {
        luaL_traceback(L, L, NULL, 1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_traceback_key);
    }
    h->kept_error = NULL;
    h->in_host--;
    lua_settop(L, 1);
    return 1;
}

// The call is being ended: run nothing, hand back the kill (function and
// arguments are replaced by the kill's message).
static int lunette_refuse_killed(lua_State *L, int nargs) {
    lua_settop(L, lua_gettop(L) - nargs - 1);
    lunette_push_kill_message(L);
    return LUA_ERRRUN;
}

// lunette_pcall and lunette_host_pcall: the handler goes in below the
// function for the call, and out after it.
static int lunette_pcall_in(lua_State *L, int nargs, int nresults, int host_mode) {
    lunette_host *h = lunette_host_of(L);
    if (!host_mode && h->active && h->killed != LUNETTE_KILL_NONE) return lunette_refuse_killed(L, nargs);
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, lunette_msgh);
    lua_insert(L, base);
    int status = lunette_pcall_with(L, h, nargs, nresults, host_mode, base);
    lua_remove(L, base);
    return status;
}

void lunette_push_message_handler(lua_State *L) {
    lua_pushcfunction(L, lunette_msgh);
}

int lunette_pcall_at(lua_State *L, int nargs, int nresults, int handler) {
    lunette_host *h = lunette_host_of(L);
    if (h->active && h->killed != LUNETTE_KILL_NONE) return lunette_refuse_killed(L, nargs);
    return lunette_pcall_with(L, h, nargs, nresults, 0, handler);
}

int lunette_pcall(lua_State *L, int nargs, int nresults) {
    return lunette_pcall_in(L, nargs, nresults, 0);
}

int lunette_host_pcall(lua_State *L, int nargs, int nresults) {
    return lunette_pcall_in(L, nargs, nresults, 1);
}

void lunette_take_traceback(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_traceback_key);
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_traceback_key);
}

void lunette_keep_traceback(lua_State *L) {
    lunette_host *h = lunette_host_of(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_traceback_key);
    h->kept_error = lua_topointer(L, -1);
}

// MARK: - References

// Registry references (luaL_ref) are integer keys of the registry. A key
// within the table's array part is read with an index; one outside it is
// read from the hash part, through an integer division (Lua hashes integer
// keys modulo the node count) and a chain walk: about 3 ns of a 36 ns
// trivial call here. A reference made after the registry last grew sits
// in the hash part until the next rehash, which may never come.
//
// So each state's opening, while the registry holds only Lua's own two
// entries, fills keys LUA_RIDX_LAST + 1 ... LUNETTE_RESERVED_REFERENCES in
// order (each overflow of the empty hash part rehashes, and the dense keys
// move into a grown array part) with luaL_ref's free list of Lua 5.4.3
// and later: the header at LUA_RIDX_LAST + 1 names the first free
// reference, each free entry the next, 0 ends it. References are then
// handed out from the array part first, and every later rehash keeps these
// non-nil keys there (BoundaryTests checks both). A Lua whose lauxlib keeps
// its list elsewhere (5.4.0 to 5.4.2: at index 0) ignores these entries
// and hands out references after them, as correct and only as fast as
// before. Costs 1 KiB and ~0.5 µs per state (≈ 1 µs in lunette-bench's
// fresh state).
#define LUNETTE_RESERVED_REFERENCES 64

LUNETTE_HIDDEN void lunette_reserve_references(lua_State *L) {
    const int header = LUA_RIDX_LAST + 1;
    // Only on a registry that no luaL_ref has used yet: over live
    // references these writes would free them.
    int used = lua_rawgeti(L, LUA_REGISTRYINDEX, header) != LUA_TNIL;
    lua_pop(L, 1);
    if (used) return;
    for (int i = header; i <= LUNETTE_RESERVED_REFERENCES; i++) {
        lua_pushinteger(L, i < LUNETTE_RESERVED_REFERENCES ? i + 1 : 0);
        lua_rawseti(L, LUA_REGISTRYINDEX, i);
    }
}

// MARK: - Libraries

LUNETTE_HIDDEN void lunette_make_key_anchor(lua_State *L) {
    // Made once, with an array part for every key remembered: recording a
    // key stores into it and never allocates, so it is safe outside a
    // protected call. Never replaced: remembered keys rely on it. Held by
    // a registry reference, which the opening's reserved references give
    // without growing the registry (a key of its own grew its hash part:
    // ≈ 8 k instructions a fresh state).
    lunette_host *h = lunette_host_of(L);
    if (h->key_anchor != 0) return;
    lua_createtable(L, LUNETTE_KEY_SHAPES * LUNETTE_KEY_SHAPE_MAX, 0);
    h->key_anchor = luaL_ref(L, LUA_REGISTRYINDEX);
}

LUNETTE_HIDDEN void lunette_forgo_key_anchor(lua_State *L) {
    // No anchor table, and none made later: nothing remembered so far is
    // used (its keys would no longer be kept alive), nothing is recorded.
    lunette_host *h = lunette_host_of(L);
    if (h->key_anchor > 0) luaL_unref(L, LUA_REGISTRYINDEX, h->key_anchor);
    h->key_anchor = LUA_NOREF;
    memset(h->key_shapes, 0, sizeof h->key_shapes);
    memset(h->key_shape_wanted, 0, sizeof h->key_shape_wanted);
}

// Runs inside lunette_pcall: luaL_requiref may raise (memory), so never call it from Swift.
static int lunette_open_libraries_protected(lua_State *L) {
    lunette_reserve_references(L);
    unsigned libraries = (unsigned)lua_tointeger(L, 1);
    // The debug library reaches the registry (the anchor table) and makes
    // light userdata of any address (debug.upvalueid): a state that has it
    // remembers no keys ("Remembered keys" below).
    if (libraries & LUNETTE_LIB_DEBUG) lunette_forgo_key_anchor(L);
    else lunette_make_key_anchor(L);
    static const struct { unsigned bit; const char *name; lua_CFunction open; } libs[] = {
        { LUNETTE_LIB_BASE, LUA_GNAME, luaopen_base },
        { LUNETTE_LIB_PACKAGE, LUA_LOADLIBNAME, luaopen_package },
        { LUNETTE_LIB_COROUTINE, LUA_COLIBNAME, luaopen_coroutine },
        { LUNETTE_LIB_TABLE, LUA_TABLIBNAME, luaopen_table },
        { LUNETTE_LIB_IO, LUA_IOLIBNAME, luaopen_io },
        { LUNETTE_LIB_OS, LUA_OSLIBNAME, luaopen_os },
        { LUNETTE_LIB_STRING, LUA_STRLIBNAME, luaopen_string },
        { LUNETTE_LIB_MATH, LUA_MATHLIBNAME, luaopen_math },
        { LUNETTE_LIB_UTF8, LUA_UTF8LIBNAME, luaopen_utf8 },
        { LUNETTE_LIB_DEBUG, LUA_DBLIBNAME, luaopen_debug },
    };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        if (libraries & libs[i].bit) {
            luaL_requiref(L, libs[i].name, libs[i].open, 1);
            lua_pop(L, 1);
        }
    }
    return 0;
}

int lunette_open_libraries(lua_State *L, unsigned mask) {
    lua_pushcfunction(L, lunette_open_libraries_protected);
    lua_pushinteger(L, (lua_Integer)mask);
    return lunette_host_pcall(L, 1, 0);
}

// MARK: - Loading

static int lunette_reserve(void **buf, size_t *cap, size_t need, size_t size);

int lunette_load(lua_State *L, const void *buf, size_t len, const char *chunkname) {
    return luaL_loadbufferx(L, buf != NULL ? (const char *)buf : "", len, chunkname, "t");
}

int lunette_load_host_binary(lua_State *L, const void *buf, size_t len, const char *chunkname) {
    return luaL_loadbufferx(L, (const char *)buf, len, chunkname, "b");
}

const char *lunette_lua_ident(void) { return lua_ident; }

int lunette_load_charged(lua_State *L, const void *buf, size_t len, const char *chunkname, int binary) {
    lunette_host *h = lunette_host_of(L);
    int saved = h->in_host;
    // Back to the level of the script that called the Swift function (the
    // trampoline counted one up): the cap applies and the peak counts. The
    // load catches its own errors, a refused allocation among them.
    if (h->active && h->in_host > 0) h->in_host--;
    int status = binary ? lunette_load_host_binary(L, buf, len, chunkname) : lunette_load(L, buf, len, chunkname);
    h->in_host = saved;
    // Out of memory in a script's load ends its call, as everywhere in the
    // sandbox: the trampoline raises the kill when the Swift function returns.
    if (status == LUA_ERRMEM && h->active && h->killed == LUNETTE_KILL_NONE) h->killed = LUNETTE_KILL_MEMORY;
    return status;
}

typedef struct { unsigned char *bytes; size_t len, cap; } lunette_dump_buffer;

static int lunette_dump_writer(lua_State *L, const void *p, size_t size, void *ud) {
    (void)L;
    lunette_dump_buffer *b = (lunette_dump_buffer *)ud;
    if (!lunette_reserve((void **)&b->bytes, &b->cap, b->len + size, 1)) return 1;
    memcpy(b->bytes + b->len, p, size);
    b->len += size;
    return 0;
}

// Lua 5.4's lua_dump allocates nothing (it hands the prototype's bytes to
// the writer), so it cannot raise outside a protected call. Later versions
// build a table while dumping: check before building against one.
#if LUA_VERSION_NUM != 504
#error "lunette_dump_function relies on Lua 5.4's lua_dump, which cannot raise"
#endif

void *lunette_dump_function(lua_State *L, size_t *len) {
    lunette_dump_buffer b = { NULL, 0, 0 };
    // Debug information kept: errors and tracebacks name the chunk and lines.
    if (lua_dump(L, lunette_dump_writer, &b, 0) != 0) {
        free(b.bytes);
        *len = 0;
        return NULL;
    }
    *len = b.len;
    return b.bytes;
}

void lunette_write_line(const void *buf, size_t len) {
    if (len > 0) fwrite(buf, 1, len, stdout);
    fputc('\n', stdout);
}

// MARK: - UTF-8

int lunette_utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        // Fast path: eight ASCII bytes at a time.
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if ((w & 0x8080808080808080ULL) == 0) { i += 8; continue; }
        }
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n) return 0;
        for (size_t k = 1; k < len; k++) {
            unsigned char cc = s[i + k];
            if ((cc & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;   // overlong
        if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                             // surrogate
        if (cp > 0x10FFFF) return 0;
        i += len;
    }
    return 1;
}

// MARK: - Flattening values

// Grows `*buf` (of `*cap` elements of `size` bytes) to hold `need`; 0 when out of memory.
static int lunette_reserve(void **buf, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 1;
    // From 16: each state keeps two tapes (its conversions' and its results
    // read in place), and most values are small (a slot is 120 bytes).
    size_t next = *cap ? *cap * 2 : 16;
    while (next < need) next *= 2;
    void *p = realloc(*buf, next * size);
    if (p == NULL) return 0;
    *buf = p;
    *cap = next;
    return 1;
}

// The bytes of a string of up to 16 as two words in memory order,
// zero-padded (LuaString's inline form). Reads only the string's own bytes,
// with at most two loads a word: a copy of a variable length compiles to a
// call to memcpy (≈ 30 instructions), and a tape has one for most keys.
__attribute__((always_inline)) static inline void lunette_pack_short(const char *s, size_t len, uint64_t words[2]) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const unsigned char *k = (const unsigned char *)s;
    uint64_t w0 = 0, w1 = 0;
    if (len >= 8) {
        memcpy(&w0, k, 8);
        // Bytes 8..<len: the last eight, shifted past the ones already in w0.
        if (len > 8) { memcpy(&w1, k + len - 8, 8); w1 >>= 8 * (16 - len); }
    } else if (len >= 4) {
        // The first four and the last four (they overlap when len < 8).
        uint32_t first, last;
        memcpy(&first, k, 4);
        memcpy(&last, k + len - 4, 4);
        w0 = (uint64_t)first | ((uint64_t)last << (8 * (len - 4)));
    } else if (len > 0) {
        // The first, the middle and the last byte (some are the same).
        w0 = (uint64_t)k[0] | ((uint64_t)k[len / 2] << (8 * (len / 2))) | ((uint64_t)k[len - 1] << (8 * (len - 1)));
    }
    words[0] = w0;
    words[1] = w1;
#else
    unsigned char bytes[16] = { 0 };
    memcpy(bytes, s, len);
    memcpy(words, bytes, 16);
#endif
}

// The first eight bytes of a key as a big-endian number (zero-padded), so
// that comparing two prefixes as integers orders keys as memcmp does; from
// the key's first word when it is short, which holds the same bytes.
static inline uint64_t lunette_key_prefix(const char *key, size_t len, const uint64_t words[2]) {
    uint64_t word;
    if (len <= LUNETTE_SHORT_STRING) word = words[0];
    else memcpy(&word, key, 8);   // a fixed-size copy compiles to one load
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return word;
#else
    return __builtin_bswap64(word);
#endif
}

// memcmp order, then length: the order of LuaFields. The prefixes decide
// almost always; equal prefixes fall back to the bytes.
static inline int lunette_field_less(const lunette_slot *slots, const lunette_field *a, const lunette_field *b) {
    if (a->prefix != b->prefix) return a->prefix < b->prefix;
    const lunette_slot *x = &slots[a->child], *y = &slots[b->child];
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    return c != 0 ? c < 0 : x->key_len < y->key_len;
}

// Sorts fields by key: insertion sort for the usual small tables, Shell
// sort (Ciura gaps) beyond.
static void lunette_sort_fields(const lunette_slot *slots, lunette_field *items, size_t n) {
    static const size_t gaps[] = { 1750, 701, 301, 132, 57, 23, 10, 4, 1 };
    size_t first = n <= 16 ? sizeof gaps / sizeof gaps[0] - 1 : 0;   // small: gap 1 only
    for (size_t g = first; g < sizeof gaps / sizeof gaps[0]; g++) {
        size_t gap = gaps[g];
        if (gap >= n) continue;
        for (size_t i = gap; i < n; i++) {
            lunette_field item = items[i];
            size_t j = i;
            while (j >= gap && lunette_field_less(slots, &item, &items[j - gap])) {
                items[j] = items[j - gap];
                j -= gap;
            }
            items[j] = item;
        }
    }
}

// Writes the children of `items` (fields in traversal order) to `out` in
// key order, trying the order remembered for tables with as many fields
// first (see lunette_tape.shapes).
static int lunette_order_fields(lunette_tape *t, lunette_field *items, size_t n, size_t *out) {
    size_t k;
    if (n == 0) return 0;
    if (n <= LUNETTE_SHAPE_MAX) {
        // Written out while checked: when the remembered order holds (the
        // usual case), the output is already in place.
        const unsigned char *shape = t->shapes[n];
        const lunette_field *previous = &items[shape[0]];
        out[0] = previous->child;
        for (k = 1; k < n; k++) {
            const lunette_field *next = &items[shape[k]];
            if (!lunette_field_less(t->slots, previous, next)) break;
            out[k] = next->child;
            previous = next;
        }
        if (k >= n) return 1;   // strictly ascending: the remembered order is this table's order
    }
    lunette_sort_fields(t->slots, items, n);
    for (k = 0; k < n; k++) out[k] = items[k].child;
    if (n <= LUNETTE_SHAPE_MAX) {
        for (k = 0; k < n; k++) t->shapes[n][k] = (unsigned char)items[k].position;
    }
    return 0;
}

static inline int lunette_tape_walk(lua_State *L, int idx, lunette_tape *t, int depth, int max_depth);

// MARK: Remembered keys
//
// A provider returns tables of the same keys call after call, built by the
// same constructor, so Lua traverses them in the same order and their keys
// are the same string objects (short strings are interned). The state
// remembers the keys of up to LUNETTE_KEY_SHAPES such tables
// (lunette_host.key_shapes): each key's object, bytes, packed words and
// place in key order. A table whose first key is a remembered table's
// first key is read against it (lunette_tape_known): each key's object is
// compared with the one remembered at its place (lua_topointer: one API
// call, where a key otherwise costs two, its type and its bytes, then
// packing, a prefix and sorting). When all match and the count is the
// same, the remembered key order is the table's; at the first key that
// does not, the walk goes on the usual way from there. The keys' bytes
// are charged to the budget at once (one update of it, where one a key
// made the loop a chain of stores and loads, ≈ 5% of a 10-field call);
// when a value then cannot be read, the table is read again the usual
// way, which decides whether the read fails.
//
// Sound because every remembered key is kept alive by the state's anchor
// table (lunette_host.key_anchor): while it lives, no other object can
// have its address, so an equal address is the same string, with the same
// bytes. A key that is not a string cannot have a live string's address
// either: numbers and booleans give NULL, tables and full userdata their
// own live objects, and light userdata come only from the host's C code,
// none pointing at a Lua string, and from the debug library
// (debug.upvalueid makes one of any upvalue's address, which may be a
// string's once the upvalue is gone). The debug library also reaches the
// registry, so the anchor table. A state that opens it therefore
// remembers no keys (lunette_forgo_key_anchor); scripts never get it.
//
// Recording costs a store into the anchor table per key, so only a table
// worth it is recorded: one that starts with the first key of one of the
// last LUNETTE_KEY_SHAPES tables that were read in the same key order as
// the last table of as many fields (the tape's remembered order) and had
// only keys that can be remembered, i.e. a shape seen at least twice. Only
// tables of 1 to LUNETTE_KEY_SHAPE_MAX string keys of up to
// LUNETTE_SHORT_STRING bytes are remembered. A table whose first key
// starts a remembered table but whose other keys differ is read against
// it up to the first difference, and never recorded over it.

// The remembered table whose first key's object is `first`, or NULL.
static inline lunette_key_shape *lunette_key_shape_find(lunette_host *h, const void *first) {
    for (unsigned e = 0; e < LUNETTE_KEY_SHAPES; e++) {
        lunette_key_shape *s = &h->key_shapes[e];
        if (s->n != 0 && s->identity[0] == first) return s;
    }
    return NULL;
}

// Starts recording the table being walked, whose first key and value are
// on top of the stack: clears a remembered table no walk is using and puts
// the anchor table under the key. NULL (nothing pushed) when none is free.
// Tables are marked for recording only in a state with an anchor table.
__attribute__((noinline)) static lunette_key_shape *lunette_key_shape_record(lua_State *L, lunette_host *h, const void *first) {
    for (unsigned k = 0; k < LUNETTE_KEY_SHAPES; k++) {
        if (h->key_shape_wanted[k] == first) h->key_shape_wanted[k] = NULL;
    }
    lunette_key_shape *s = NULL;
    for (unsigned k = 0; k < LUNETTE_KEY_SHAPES && s == NULL; k++) {
        lunette_key_shape *candidate = &h->key_shapes[(h->key_shape_next + k) % LUNETTE_KEY_SHAPES];
        if (candidate->busy == 0) s = candidate;
    }
    if (s == NULL) return NULL;
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->key_anchor);   // marked only when there is one
    lua_insert(L, -3);
    h->key_shape_next = (unsigned)(s - h->key_shapes + 1) % LUNETTE_KEY_SHAPES;
    s->n = 0;
    s->key_bytes = 0;
    s->busy++;
    return s;
}

// Whether a table starting with key object `first` is to be recorded.
static inline int lunette_key_shape_wanted(const lunette_host *h, const void *first) {
    for (unsigned k = 0; k < LUNETTE_KEY_SHAPES; k++) {
        if (h->key_shape_wanted[k] == first) return 1;
    }
    return 0;
}

// Marks tables starting with key object `first` to be recorded, in place
// of the oldest mark.
__attribute__((noinline)) static void lunette_key_shape_want(lunette_host *h, const void *first) {
    // A state that cannot keep keys alive marks none, so never asks for
    // the anchor table it does not have.
    if (h->key_anchor <= 0 || lunette_key_shape_wanted(h, first)) return;
    for (unsigned k = LUNETTE_KEY_SHAPES - 1; k > 0; k--) h->key_shape_wanted[k] = h->key_shape_wanted[k - 1];
    h->key_shape_wanted[0] = first;
}

// Gives the table in slot `self` its `nfields` fields and `count` array
// items, which take the next places in `order` (nfields first): where the
// caller writes them.
static inline size_t *lunette_table_slot(lunette_tape *t, size_t self, size_t nfields, size_t count) {
    lunette_slot *slot = &t->slots[self];
    slot->nfields = nfields;
    slot->count = count;
    slot->fields_at = t->norder;
    slot->array_at = t->norder + nfields;
    return t->order + t->norder;
}

// What lunette_tape_known did.
enum { LUNETTE_KNOWN_FAILED, LUNETTE_KNOWN_READ, LUNETTE_KNOWN_LEFT, LUNETTE_KNOWN_LEFT_AT_END, LUNETTE_KNOWN_AGAIN };

// Reads the table at `idx` against remembered table `s`, its first key and
// value on top of the stack (above `top`): LUNETTE_KNOWN_READ when every
// key matched, the table's fields then read and ordered (children and
// slot `self` filled, as lunette_tape_table does). Otherwise the fields
// matched so far are pending, as the usual walk leaves them, with the key
// and value that did not match on the stack (LUNETTE_KNOWN_LEFT) or none
// left (LUNETTE_KNOWN_LEFT_AT_END: fewer keys than remembered); or
// LUNETTE_KNOWN_AGAIN when a value could not be read: the keys' bytes are
// charged at once (one update of the budget, not one a key), so a table
// that then turns out to have other keys ran its values short of bytes
// the usual walk would have had. The tape is then as it was before the
// table's fields, and the caller reads the table again the usual way,
// which decides; LUNETTE_KNOWN_FAILED when out of memory.
static int lunette_tape_known(lua_State *L, int idx, lunette_tape *t, lunette_key_shape *s, size_t self, int top, int depth, int max_depth) {
    size_t n = s->n, p = 0;
    size_t children[LUNETTE_KEY_SHAPE_MAX];
    if (t->budget < s->key_bytes) return LUNETTE_KNOWN_AGAIN;
    t->budget -= s->key_bytes;
    s->busy++;
    for (;;) {
        size_t child = t->nslots;
        if (!lunette_tape_walk(L, top + 2, t, depth + 1, max_depth)) {
            s->busy--;
            return LUNETTE_KNOWN_AGAIN;
        }
        lunette_slot *field = &t->slots[child];
        field->key = s->key[p];
        field->key_len = s->len[p];
        field->key_words[0] = s->words[p][0];
        field->key_words[1] = s->words[p][1];
        children[p++] = child;
        lua_settop(L, top + 1);   // pop the value, keep the key
        if (lua_next(L, idx) == 0) break;
        if (p >= n || lua_topointer(L, -2) != s->identity[p]) break;
    }
    s->busy--;
    int at_end = lua_gettop(L) == top;
    if (p == n && at_end) {
        if (!lunette_reserve((void **)&t->order, &t->order_cap, t->norder + n, sizeof *t->order)) return LUNETTE_KNOWN_FAILED;
        size_t *out = lunette_table_slot(t, self, n, 0);
        for (size_t k = 0; k < n; k++) out[k] = children[s->sorted[k]];
        t->norder += n;
        lunette_host_of(L)->key_shape_reads++;
        return LUNETTE_KNOWN_READ;
    }
    // The keys not met are given back, and the fields read become what the
    // usual walk leaves for sorting.
    for (size_t k = p; k < n; k++) t->budget += s->len[k];
    if (!lunette_reserve((void **)&t->pending, &t->pending_cap, t->npending + p, sizeof *t->pending)) return LUNETTE_KNOWN_FAILED;
    for (size_t k = 0; k < p; k++) {
        const lunette_slot *field = &t->slots[children[k]];
        t->pending[t->npending++] = (lunette_field){ lunette_key_prefix(field->key, field->key_len, field->key_words), children[k], k };
    }
    return lua_gettop(L) == top ? LUNETTE_KNOWN_LEFT_AT_END : LUNETTE_KNOWN_LEFT;
}

// Reads the table at absolute index `idx` into slot `self`. Not inlined:
// it is the walk's only recursion, while the values it reads are inlined.
__attribute__((noinline)) static int lunette_tape_table(lua_State *L, int idx, lunette_tape *t, size_t self, int depth, int max_depth) {
    const void *identity = lua_topointer(L, idx);
    if (depth >= max_depth) return 0;
    for (size_t i = 0; i < t->npath; i++) if (t->path[i] == identity) return 0;   // cycle
    if (!lua_checkstack(L, 4)) return 0;
    if (!lunette_reserve((void **)&t->path, &t->path_cap, t->npath + 1, sizeof *t->path)) return 0;
    t->path[t->npath++] = identity;

    lunette_host *h = lunette_host_of(L);
    size_t first_pending = t->npending;
    lua_Integer integer_keys = 0, largest = 0;
    const int base = lua_gettop(L);   // what every way out leaves
    int top = base;                   // under the key lua_next walks with: one up while the anchor table is there
    const void *first_key = NULL;     // the first key's object
    lunette_key_shape *recording = NULL;
    int short_keys = 1;               // every string key so far short enough to remember
    lua_pushnil(L);
    int more = lua_next(L, idx);
    if (more) {
        first_key = lua_topointer(L, -2);
        lunette_key_shape *known = lunette_key_shape_find(h, first_key);
        if (known != NULL) {
            // What the tape held, for a read again: a value that fails
            // leaves its own slots, pending fields and path behind.
            size_t nslots = t->nslots, norder = t->norder, npath = t->npath, nlong = t->nlong, budget = t->budget;
            switch (lunette_tape_known(L, idx, t, known, self, top, depth, max_depth)) {
            case LUNETTE_KNOWN_READ:
                t->npath--;
                return 1;
            case LUNETTE_KNOWN_FAILED: goto fail;
            case LUNETTE_KNOWN_LEFT_AT_END: more = 0; break;
            case LUNETTE_KNOWN_AGAIN:   // the tape as it was, and the fields again the usual way
                t->nslots = nslots;
                t->norder = norder;
                t->npending = first_pending;
                t->npath = npath;
                t->nlong = nlong;
                t->budget = budget;
                lua_settop(L, base);
                lua_pushnil(L);
                more = lua_next(L, idx);
                break;
            default: break;
            }
        } else if (first_key != NULL && lunette_key_shape_wanted(h, first_key) && (recording = lunette_key_shape_record(L, h, first_key)) != NULL) {
            top++;
        }
    }
    for (; more; more = lua_next(L, idx)) {
        int key_type = lua_type(L, -2);
        if (key_type == LUA_TSTRING) {
            size_t key_len, position = t->npending - first_pending;
            const char *key = lua_tolstring(L, -2, &key_len);
            if (t->budget < key_len) goto fail;
            t->budget -= key_len;
            size_t child = t->nslots;
            if (!lunette_tape_walk(L, top + 2, t, depth + 1, max_depth)) goto fail;
            lunette_slot *field = &t->slots[child];
            field->key = key;
            field->key_len = key_len;
            if (key_len <= LUNETTE_SHORT_STRING) lunette_pack_short(key, key_len, field->key_words);
            else { t->nlong++; field->holds = 1; short_keys = 0; }
            if (!lunette_reserve((void **)&t->pending, &t->pending_cap, t->npending + 1, sizeof *t->pending)) goto fail;
            t->pending[t->npending] = (lunette_field){ lunette_key_prefix(key, key_len, field->key_words), child, position };
            t->npending++;
            if (recording != NULL) {
                // What cannot be remembered (a long key, too many keys, an
                // integer key) is not recorded at the end.
                if (position < LUNETTE_KEY_SHAPE_MAX && key_len <= LUNETTE_SHORT_STRING) {
                    recording->identity[position] = lua_topointer(L, -2);
                    recording->key[position] = key;
                    recording->len[position] = key_len;
                    recording->words[position][0] = field->key_words[0];
                    recording->words[position][1] = field->key_words[1];
                    recording->key_bytes += key_len;
                    // Kept alive in the anchor table's array part (no allocation).
                    lua_pushvalue(L, -2);
                    lua_rawseti(L, base + 1, (lua_Integer)((recording - h->key_shapes) * LUNETTE_KEY_SHAPE_MAX + position) + 1);
                }
            }
        } else if (key_type == LUA_TNUMBER && lua_isinteger(L, -2)) {
            lua_Integer k = lua_tointeger(L, -2);
            if (k < 1) goto fail;
            integer_keys++;
            if (k > largest) largest = k;
        } else {
            goto fail;
        }
        lua_settop(L, top + 1);   // pop the value, keep the key
    }
    if (top != base) {   // the anchor table
        lua_settop(L, base);
        top = base;
    }
    if (integer_keys != largest) goto fail;   // holes: the slow path says where

    size_t nfields = t->npending - first_pending;
    if (!lunette_reserve((void **)&t->pending, &t->pending_cap, t->npending + (size_t)integer_keys, sizeof *t->pending)) goto fail;
    for (lua_Integer i = 1; i <= integer_keys; i++) {
        lua_rawgeti(L, idx, i);
        size_t child = t->nslots;
        if (!lunette_tape_walk(L, top + 1, t, depth + 1, max_depth)) goto fail;
        lua_settop(L, top);
        t->pending[t->npending++] = (lunette_field){ 0, child, 0 };
    }

    // Children of nested tables were moved to `order` already, so this
    // table's own children are the last entries of `pending`.
    size_t total = nfields + (size_t)integer_keys;
    if (!lunette_reserve((void **)&t->order, &t->order_cap, t->norder + total, sizeof *t->order)) goto fail;
    size_t *out = lunette_table_slot(t, self, nfields, (size_t)integer_keys);
    int repeated = lunette_order_fields(t, t->pending + first_pending, nfields, out);
    // A table that can be remembered: 1 to LUNETTE_KEY_SHAPE_MAX fields,
    // all of short string keys.
    int rememberable = integer_keys == 0 && short_keys && nfields > 0 && nfields <= LUNETTE_KEY_SHAPE_MAX;
    if (recording != NULL) {
        if (rememberable) {
            // lunette_order_fields left this table's key order in the tape.
            memcpy(recording->sorted, t->shapes[nfields], nfields);
            recording->n = (unsigned)nfields;
        }
        recording->busy--;
    } else if (repeated && rememberable && lunette_key_shape_find(h, first_key) == NULL) {
        lunette_key_shape_want(h, first_key);
    }
    for (size_t k = nfields; k < total; k++) out[k] = t->pending[first_pending + k].child;
    t->norder += total;
    t->npending = first_pending;
    t->npath--;
    return 1;

fail:
    if (recording != NULL) recording->busy--;
    lua_settop(L, base);
    return 0;
}

// Reads the value at absolute index `idx` into a new slot. Always inlined
// into the table walk, so a field that is not a table costs no call.
__attribute__((always_inline)) static inline int lunette_tape_walk(lua_State *L, int idx, lunette_tape *t, int depth, int max_depth) {
    if (t->budget < 16) return 0;
    t->budget -= 16;
    if (!lunette_reserve((void **)&t->slots, &t->slots_cap, t->nslots + 1, sizeof *t->slots)) return 0;
    size_t self = t->nslots++;
    lunette_slot *slot = &t->slots[self];
    int type = lua_type(L, idx);
    slot->type = type;
    slot->key = NULL;
    slot->key_len = 0;
    slot->holds = 0;
    // A chain of tests, most common first, each on the type as
    // lunette_opaque_int returns it so that they are not merged into a jump
    // table: its one indirect jump mispredicted as the type changed from
    // field to field (docs/ARCHITECTURE.md, *What the twenty-sixth stop changed*).
    if (type == LUA_TNUMBER) {
        if (lua_isinteger(L, idx)) { slot->is_integer = 1; slot->integer = lua_tointeger(L, idx); }
        else { slot->is_integer = 0; slot->number = lua_tonumber(L, idx); }
        return 1;
    }
    if (lunette_opaque_int(type) == LUA_TSTRING) {
        slot->str = lua_tolstring(L, idx, &slot->len);
        if (t->budget < slot->len) return 0;
        t->budget -= slot->len;
        if (slot->len <= LUNETTE_SHORT_STRING) lunette_pack_short(slot->str, slot->len, slot->str_words);
        else { t->nlong++; slot->holds = 1; }
        return 1;
    }
    if (lunette_opaque_int(type) == LUA_TBOOLEAN) {
        slot->integer = lua_toboolean(L, idx);
        return 1;
    }
    if (lunette_opaque_int(type) == LUA_TTABLE) {
        slot->holds = 1;
        return lunette_tape_table(L, idx, t, self, depth, max_depth);
    }
    return type == LUA_TNIL;
}

int lunette_tape_read(lua_State *L, int idx, lunette_tape *tape, int max_depth, size_t max_bytes) {
    tape->nslots = tape->norder = tape->npending = tape->npath = tape->nlong = 0;
    tape->budget = max_bytes;
    return lunette_tape_walk(L, idx > 0 ? idx : lua_absindex(L, idx), tape, 0, max_depth);
}

// For lunette_tape_read_range: copies a long string into the arena and
// returns its offset there (the arena may move while it grows). SIZE_MAX
// when it cannot grow.
static size_t lunette_arena_copy(lunette_tape *t, const char *bytes, size_t len) {
    if (!lunette_reserve((void **)&t->arena, &t->arena_cap, t->narena + len, 1)) return SIZE_MAX;
    size_t at = t->narena;
    memcpy(t->arena + at, bytes, len);
    t->narena += len;
    return at;
}

int lunette_tape_read_range(lua_State *L, int first, int count, lunette_tape *tape, int max_depth, size_t max_bytes, size_t *roots) {
    tape->nslots = tape->norder = tape->npending = tape->npath = tape->narena = tape->nlong = 0;
    tape->budget = max_bytes;
    for (int i = 0; i < count; i++) {
        roots[i] = tape->nslots;
        if (!lunette_tape_walk(L, first + i, tape, 0, max_depth)) return i;
    }
    if (tape->nlong == 0) return count;   // every string is packed in its slot: nothing to copy
    // The walk compared keys through Lua's pointers (the values are on the
    // stack, and nothing ran that could free them); now the long strings
    // are copied, their offsets kept in the pointers while the arena may
    // still move, then made pointers. Short ones are packed in the slots.
    // Only a field's slot has a key (others have key_len 0).
    for (size_t i = 0; i < tape->nslots; i++) {
        lunette_slot *slot = &tape->slots[i];
        if (slot->type == LUA_TSTRING && slot->len > LUNETTE_SHORT_STRING) {
            size_t at = lunette_arena_copy(tape, slot->str, slot->len);
            if (at == SIZE_MAX) return 0;
            slot->str = (const char *)(uintptr_t)at;
        }
        if (slot->key_len > LUNETTE_SHORT_STRING) {
            size_t at = lunette_arena_copy(tape, slot->key, slot->key_len);
            if (at == SIZE_MAX) return 0;
            slot->key = (const char *)(uintptr_t)at;
        }
    }
    for (size_t i = 0; i < tape->nslots; i++) {
        lunette_slot *slot = &tape->slots[i];
        if (slot->type == LUA_TSTRING && slot->len > LUNETTE_SHORT_STRING) slot->str = tape->arena + (uintptr_t)slot->str;
        if (slot->key_len > LUNETTE_SHORT_STRING) slot->key = tape->arena + (uintptr_t)slot->key;
    }
    return count;
}

void lunette_tape_free(lunette_tape *tape) {
    free(tape->arena);
    free(tape->slots);
    free(tape->order);
    free(tape->pending);
    free(tape->path);
    memset(tape, 0, sizeof *tape);
}

// MARK: - Numbers

int lunette_format_number(lua_Number n, char *buf, size_t size) {
    int len = snprintf(buf, size, LUA_NUMBER_FMT, (LUAI_UACNUMBER)n);
    if (len < 0 || (size_t)len >= size) return 0;
    if (buf[strspn(buf, "-0123456789")] == '\0' && (size_t)len + 2 < size) {  // looks like an int
        buf[len++] = '.';
        buf[len++] = '0';
        buf[len] = '\0';
    }
    return len;
}

// MARK: - Thread stacks

__thread size_t lunette_cached_stack_size = (size_t)-1;

// The first measure on a thread (out of line: lunette_thread_stack_size,
// inline in its callers, reads the cached answer).
__attribute__((noinline)) size_t lunette_measure_thread_stack(void) {
    size_t size = 0;
#if defined(__APPLE__)
    size = pthread_get_stacksize_np(pthread_self());
#elif defined(__linux__)
#if defined(__GLIBC__)
    // The main thread's stack may grow to RLIMIT_STACK, which holds the
    // arguments and environment above the stack's start too. That is what
    // glibc's pthread_getattr_np reports for it (the limit less the area
    // above __libc_stack_end), after reading /proc/self/maps with sscanf:
    // ≈ 0.11 M instructions and a file on every process's first call. Here
    // the area's top is the end of the highest environment string (the
    // kernel puts them at the top, below only the executable's name).
    struct rlimit limit;
    if (syscall(SYS_gettid) == getpid() && getrlimit(RLIMIT_STACK, &limit) == 0) {
        uintptr_t start = (uintptr_t)__libc_stack_end, top = start;
        for (char **e = environ; e != NULL && *e != NULL; e++) {
            uintptr_t end = (uintptr_t)*e + strlen(*e) + 1;
            if (end > top && end - start < (64u << 20)) top = end;   // strings a process set later live elsewhere
        }
        size_t above = (size_t)(top - start) + 4096;   // and the executable's name, and alignment
        size = limit.rlim_cur == RLIM_INFINITY ? SIZE_MAX / 2 : (size_t)limit.rlim_cur;
        size = size > above ? size - above : 0;
        lunette_cached_stack_size = size;
        return size;
    }
#endif
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr = NULL;
        if (pthread_attr_getstack(&attr, &addr, &size) != 0) size = 0;
        pthread_attr_destroy(&attr);
    }
#endif
    lunette_cached_stack_size = size;
    return size;
}
