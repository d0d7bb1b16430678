// CLuaShims: the C side of Lunette's Lua boundary.
//
// Lua reports errors with longjmp, and a longjmp must never cross a Swift
// frame. Everything that may raise a Lua error on the host's behalf lives
// here, in C: the trampoline that calls Swift functions and raises their
// errors after Swift has returned, the protected-call helper with its
// traceback handler, print, and the counting allocator. Every function has
// the prefix `lunette_` and a sentence saying why it exists.
#ifndef LUNETTE_CLUASHIMS_H
#define LUNETTE_CLUASHIMS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

/// Size classes of the block pool: 16, 32, …, 128 bytes (small), then
/// 256, 384 and 512 bytes (medium).
#define LUNETTE_POOL_CLASSES 11

/// Tables whose keys lunette_tape_read remembers (the last ones recorded).
#define LUNETTE_KEY_SHAPES 2
/// The most fields a remembered table has.
#define LUNETTE_KEY_SHAPE_MAX 16

/// The string keys of a table read again and again (a provider's entries),
/// in Lua's traversal order, remembered by lunette_tape_read: a table
/// whose keys are the same string objects, in the same order, is read
/// without asking each key's type, bytes and place in key order (see
/// shims.c, "Remembered keys"). Each key is kept alive by the state's
/// anchor table while remembered, so an object's address names it.
typedef struct lunette_key_shape {
    unsigned n;       ///< keys; 0: none remembered
    unsigned busy;    ///< reads using or recording it now: not to be replaced
    const void *identity[LUNETTE_KEY_SHAPE_MAX];   ///< each key's string object (lua_topointer)
    const char *key[LUNETTE_KEY_SHAPE_MAX];        ///< its bytes
    size_t len[LUNETTE_KEY_SHAPE_MAX];
    size_t key_bytes;                              ///< the keys' bytes, all told
    uint64_t words[LUNETTE_KEY_SHAPE_MAX][2];      ///< as lunette_slot.key_words
    unsigned char sorted[LUNETTE_KEY_SHAPE_MAX];   ///< traversal positions in key order
} lunette_key_shape;

/// Per-state bookkeeping shared by the allocator, the trampoline and the
/// protected-call helper. It is the allocator's `ud`; Swift owns its memory
/// and frees it after `lua_close`.
typedef struct lunette_host {
    size_t used;       ///< bytes currently allocated by the state
    size_t peak;       ///< highest `used` seen since the last reset
    size_t limit;      ///< cap for script code; 0 means none
    int in_host;       ///< > 0 while host (Swift or C helper) code runs: the cap is not enforced
    int hit_limit;     ///< set when an allocation was refused because of `limit`
    const void *kept_error; ///< error object whose traceback is already recorded (nested errors)

    // The current top-level call's limits (lunette_call_begin / lunette_call_end).
    int killed;                 ///< LUNETTE_KILL_*: why the call is being ended, or 0
    uint64_t start_ns;          ///< monotonic clock when the call began (at most a few ms early unless the count hook times the call: lunette_call_start_ns)
    uint64_t deadline_ns;       ///< monotonic deadline the count hook checks; 0: none, or the watchdog's (see watchdog.c)
    int64_t instructions_left;  ///< instruction budget left; < 0: none
    size_t output_used;         ///< bytes printed or logged by the call
    size_t output_limit;        ///< 0: none
    uint64_t cpu_start_ns;      ///< os.clock's zero: set on the call's first os.clock (0 until then)
    double clock_now;           ///< "now" for os.time / os.date when `has_clock_now`
    int has_clock_now;          ///< 0: os.time / os.date read the system clock
    uint32_t guard_steps;       ///< work of guarded C functions since the last clock check
    int close_depth;            ///< nesting of coroutine.close (see lunette_open_sandbox)
    int last_refused;           ///< the last allocation was refused by the cap
    int sandboxed;              ///< set by lunette_open_sandbox: deadlines and budgets apply
    int hook_always;            ///< this call keeps the count hook on (instruction budget)
    volatile sig_atomic_t fired;        ///< the watchdog saw the deadline pass (or the call was cancelled)
    volatile sig_atomic_t cancelled;    ///< lunette_watch_cancel ended the call
    lua_State *volatile running;        ///< the Lua thread running the call now
    void *watch;                        ///< the call's slot in the watchdog's table (a lunette_watch, private to CLuaShims), or NULL
    lua_Integer seed;                   ///< math.random seed of the call
    int seed_pending;                   ///< the call seeds math.random on its first draw (both profiles)
    struct lunette_host *previous_thread_host; ///< the thread's host before this call
    int active;                         ///< a top-level call is between lunette_call_begin and lunette_call_end
    char kill_source[256];              ///< where the script was when the call was ended (its chunk name), or "": written with `killed` by lunette_kill, so stale unless `killed` came from it (a timeout, an instruction budget, the output cap)
    int kill_line;                      ///< and its line, or -1
    /// Calls of functions whose result or effect belongs to the moment
    /// (clock, random, output, host services): a run of main.lua that made
    /// none can be snapshot instead of run again (lunette_snapshot_take).
    uint64_t effects;
    /// The state's pooled blocks (see lunette_alloc in shims.c): per size
    /// class, the chunks with a free block; and for each chunk size (small
    /// blocks', medium blocks'), up to LUNETTE_POOL_SPARES empty chunks
    /// kept back (a list through their `next`).
    void *pool_partial[LUNETTE_POOL_CLASSES];
    void *pool_spare[2];
    unsigned pool_spares[2];
    size_t pool_held;   ///< bytes of the chunks the state holds (the spare too)
    size_t pool_live;   ///< of `used`, the bytes of blocks in those chunks
    int closing;        ///< lunette_close has begun (finalizers may run): no fast paths
    int call_base;      ///< the stack's top when lunette_call_reference began
    int call_first;     ///< the index of that call's first result (or error object)
    /// The state's stack holds the message handler at index 1 of its base,
    /// below everything the host pushes (lunette_rest_handler): a top-level
    /// call made there uses it instead of pushing one of its own.
    int resting_handler;
    /// The sandbox's count hook may be set on the state's main thread: set
    /// by every lunette_arm_hook (also from the watchdog's signal handler);
    /// cleared when a top-level call's start or end removes the main
    /// thread's hook. A call asks Lua (lua_gethook, a call of its own) only
    /// when this is set. A hook a trusted script sets with debug.sethook is
    /// the script's: calls leave it in place.
    volatile sig_atomic_t hook_armed;
    /// The registry reference of the table that keeps remembered keys
    /// alive, made when the state opens; 0 before, LUA_NOREF in a state
    /// that opened the debug library. lunette_tape_read remembers keys only
    /// while it is above 0.
    int key_anchor;
    /// Keys of tables lunette_tape_read meets again and again (zeroed: none).
    lunette_key_shape key_shapes[LUNETTE_KEY_SHAPES];
    unsigned key_shape_next;          ///< the one a recording replaces first
    /// The first keys' objects of the last tables read in a key order met
    /// before: the next table that starts with one is recorded. Markers,
    /// never read through.
    const void *key_shape_wanted[LUNETTE_KEY_SHAPES];
    /// Tables read against remembered keys, all told (for tests and profiles).
    uint64_t key_shape_reads;
} lunette_host;

/// Why a call was ended by the host. A kill cannot be caught by the script.
#define LUNETTE_KILL_NONE         0
#define LUNETTE_KILL_TIMEOUT      1
#define LUNETTE_KILL_MEMORY       2
#define LUNETTE_KILL_INSTRUCTIONS 3
#define LUNETTE_KILL_OUTPUT       4

/// `fired` and `cancelled` are set by other threads (the watchdog, a
/// cancellation handler) while the call's thread reads them: always through
/// these, which make each access atomic (relaxed: a flag, not a fence).
#define LUNETTE_FLAG_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define LUNETTE_FLAG_SET(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)

/// Instructions between two runs of the count hook when it stays on (an
/// instruction budget, or no watchdog); once a call is being ended, 1.
#define LUNETTE_HOOK_INTERVAL 1000

/// The limits of one top-level call.
typedef struct lunette_limits {
    uint64_t timeout_ns;      ///< 0: no deadline
    int64_t instructions;     ///< < 0: no instruction budget
    size_t memory;            ///< memory cap in bytes; 0: none
    size_t output;            ///< bytes of print/log output; 0: no cap
    lua_Integer random_seed;  ///< math.randomseed for the call
    double clock_now;         ///< os.time / os.date "now" when has_clock_now
    int has_clock_now;
} lunette_limits;

/// A top-level call: arms `limits` on `L` (resets the peak, the output
/// count and the kill flag, starts the deadline, marks math.random to be
/// seeded at the call's first draw), calls
/// as lunette_pcall_at (whose check for a call being ended cannot be true
/// just after arming, so it is not made), and disarms them; the kill reason stays in the host
/// until the next call. Reads the precise clock only when the count hook
/// must time the call; otherwise (the watchdog times it, or it has no
/// deadline) none while the watchdog is awake (it takes the clock of the
/// watchdog's last poll) and else the coarse one (see watchdog.c); none at
/// the end: a call that succeeded needs no elapsed time (see
/// lunette_call_elapsed).
int lunette_call_outermost(lua_State *L, const lunette_limits *limits, int handler, int nargs, int nresults);

/// lunette_call_reference's answers besides a lua_pcall status.
#define LUNETTE_CALL_RETURNED_NOTHING (-1)  ///< the call succeeded with no results; the stack is as it was
#define LUNETTE_CALL_STACK_FULL       (-2)  ///< the stack could not grow by 3 slots; nothing was called

/// A whole top-level call of the function at registry index `reference`
/// with no arguments, in one C call (the host's trivial calls cost little
/// more than Lua's own): stores the stack's top in the host's `call_base`,
/// pushes the function (and the message handler below it, unless the
/// state's resting handler serves: see lunette_rest_handler), calls as
/// lunette_call_outermost with all results, and returns
/// LUNETTE_CALL_RETURNED_NOTHING when it succeeded with none (the stack
/// back at `call_base`). Otherwise the status, with the results or the
/// error object from the host's `call_first` to the top; the caller sets
/// the top back to `call_base`. (The base goes through the host, not an
/// out-parameter: a local whose address is taken gives the Swift caller a
/// stack protector.)
int lunette_call_reference(lua_State *L, const lunette_limits *limits, int reference);

/// Pushes the message handler onto the empty stack of a newly opened
/// state, where it stays: index 1 of the state's base. Top-level calls of
/// no arguments made at the base (no Lua frame below them: `in_host` is 1,
/// the base's host mode, and no call is active) use it rather than pushing and
/// removing one of their own, ≈ 45 instructions a call. The host never
/// sets the base's top below 1 after this. Does nothing (and the state
/// keeps pushing its handlers) unless the stack is empty and has room.
void lunette_rest_handler(lua_State *L);

/// Monotonic nanoseconds since the last top-level call began (for the
/// report of a call that failed). A call the count hook does not time takes its
/// start from the clock of the watchdog's last poll (2 ms apart while calls
/// come) or from Linux's coarse clock, so this may exceed the time it ran
/// by a few milliseconds (more on a machine too busy to run the watchdog).
uint64_t lunette_call_elapsed(lua_State *L);

/// The monotonic clock in nanoseconds.
uint64_t lunette_now_ns(void);

/// Opens the sandbox profile on a new state (see docs/sandbox.md): the
/// allowed libraries with kill-aware pcall/xpcall/coroutine functions,
/// guarded C functions, a clock-backed os, read-only library tables, no
/// __gc, text-only load, host-only require; and installs the count hook.
/// Returns the lua_pcall status.
int lunette_open_sandbox(lua_State *L);

/// Replaces the global table `name` by a read-only view of it (writes and
/// rawset fail; reads and pairs see the real table); require(name) then
/// returns the view. Runs in a protected call; returns its status.
int lunette_protect_global(lua_State *L, const char *name);
/// Makes `rawset` refuse the table at `idx` in a sandboxed state, as it
/// refuses the library views (`name` stands for it in the set of them);
/// the table's own metatable must refuse every other write. No effect in
/// a state without the sandbox. Raw access; allocates, in host mode only.
void lunette_seal_table(lua_State *L, int idx, const char *name);

/// Installs print, warn and the `log` table (debug, info, warn, error).
/// Every line is counted against the call's output cap and passed to the
/// function on top of the stack (popped) as (level, line), levels 0-3.
/// Protected; returns the status.
int lunette_install_log(lua_State *L);

/// Keeps math.randomseed for seeding calls on a trusted state, and wraps
/// math.random and math.randomseed as the sandbox does, so that a call
/// seeds the generator at its first draw (the sandbox does both as it
/// opens). Protected; returns the status.
int lunette_remember_randomseed(lua_State *L);

/// For guarded C functions: counts `steps` units of work and, every 4096,
/// checks the call's deadline; raises the kill when it has passed.
void lunette_guard_steps(lua_State *L, uint32_t steps);

/// The check behind lunette_guard_steps: raises the call's kill if it is
/// being ended or its deadline has passed.
void lunette_guard_check(lua_State *L);

/// lunette_guard_steps for callers that already hold the host (hot loops).
static inline void lunette_guard_count(lua_State *L, lunette_host *h, uint32_t steps) {
    h->guard_steps += steps;
    if (h->guard_steps >= 4096) {
        h->guard_steps = 0;
        lunette_guard_check(L);
    }
}

/// True when a failure with `status` (error object on top) was running out
/// of memory: LUA_ERRMEM, or the auxiliary library's "not enough memory"
/// error right after the cap refused an allocation (string buffers raise a
/// plain error instead of LUA_ERRMEM).
int lunette_is_memory_failure(lua_State *L, int status);

/// Sets the count hook on `L` (every `count` instructions).
void lunette_arm_hook(lua_State *L, int count);

/// 1 when deadlines are enforced by the watchdog's signal; 0 in builds under
/// ThreadSanitizer, which holds signals back until the thread calls into
/// the C library (a pure Lua loop never does): there every sandboxed call
/// with a deadline keeps the count hook on, which reads the clock every
/// LUNETTE_HOOK_INTERVAL instructions.
int lunette_watch_uses_signals(void);

/// With `held` 1, no watchdog thread starts: calls with a deadline that
/// begin on a thread that has not made one before keep the count hook
/// (their deadline still holds, checked every LUNETTE_HOOK_INTERVAL
/// instructions). 0 lets it start again. For a process that must stay
/// single-threaded while it runs calls: a fork server's warm-up. Call it
/// when no call is running.
void lunette_watch_hold_thread(int held);

/// Whether the last call was ended by `lunette_watch_cancel`.
int lunette_call_was_cancelled(const lunette_host *h);

/// Ends the call running with `h` as soon as it can, as its deadline would:
/// callable from any thread (a task's cancellation handler). Returns 1 when
/// a call with a deadline was registered (its thread was signalled, or,
/// without signals, its count hook sees the flag).
int lunette_watch_cancel(lunette_host *h);

/// Raises the error of the call's kill (h->killed must be set). Never returns.
int lunette_raise_kill(lua_State *L);

/// Pushes the message of the call's kill (h->killed must be set).
void lunette_push_kill_message(lua_State *L);

/// Opens the guarded string and table functions into the real `string`
/// and `table` library tables on top of the stack (string below table).
void lunette_install_guards(lua_State *L, int string_index, int table_index);

/// The table half of lunette_install_guards.
void lunette_install_table_guards(lua_State *L, int table_index);

/// A lua_CFunction for tests: returns a table of the guarded functions
/// (find, match, gmatch, gsub, rep, insert, remove, move, concat, sort), so
/// they can be compared with the stock ones in one state.
int lunette_push_guarded_functions(lua_State *L);

/// A Swift function body as seen from C. It reads its arguments from the
/// stack and returns the number of results it pushed, or one of the
/// LUNETTE_RAISE codes with the error value on top of the stack.
typedef int (*lunette_dispatch_fn)(lua_State *L, void *box);

/// Raise the value on top of the stack as it is.
#define LUNETTE_RAISE (-1)
/// Raise the string on top of the stack, prefixed with the caller's
/// "chunk:line: " like luaL_error does.
#define LUNETTE_RAISE_WHERE (-2)
/// Raise the error value on top, prefixed with the position of the caller's
/// caller: for Swift functions called from a host glue wrapper.
#define LUNETTE_RAISE_WHERE_CALLER (-3)

/// Creates a state whose allocations are counted in `host` (cap off while
/// `host->in_host` > 0). Starts in host mode. Returns NULL when out of memory.
lua_State *lunette_newstate(lunette_host *host);

/// Closes a state made by lunette_newstate (`lua_close`) and gives its
/// small-block pool's spare chunk back to the supply.
void lunette_close(lua_State *L);

/// 1 when small blocks come from the pool; 0 under AddressSanitizer, where
/// every block is malloc's.
int lunette_pool_enabled(void);

/// The bookkeeping of the state `L` belongs to: kept in the thread's extra
/// space (LUA_EXTRASPACE, copied into every thread the state makes), so
/// finding it is a load, not a call of lua_getallocf.
static inline lunette_host *lunette_host_of(lua_State *L) {
    return *(lunette_host **)lua_getextraspace(L);
}

/// Installs the single Swift entry point the trampoline calls. Set once.
void lunette_set_dispatch(lunette_dispatch_fn fn);

/// Pushes a C closure that calls the dispatcher with `box` (a light
/// userdata upvalue). Lua errors from Swift are raised by this closure in C,
/// after the Swift frame has returned.
void lunette_push_swift_function(lua_State *L, void *box);

/// Pushes a Swift function with a C fast path: `fast` gets the call's
/// arguments and answers the calls it can (common, valid arguments),
/// returning its number of results; for any other call it returns -1, with
/// the stack as it found it, and the Swift body runs in the same frame, so
/// results, errors and their positions are the body's. It must not raise.
/// It is not called while the state closes (the body refuses then).
/// `data` (may be NULL) is its upvalue 3, a light userdata: what it reads
/// (`lua_touserdata(L, lua_upvalueindex(3))`). With `counts_effect`, each
/// call it answers counts as an effect (see `effects`), as the body's do.
void lunette_push_swift_function_with(lua_State *L, void *box, lua_CFunction fast, void *data, int counts_effect);

/// Calls the function below `nargs` arguments in protected mode with a
/// message handler that records a traceback (see lunette_take_traceback).
/// Script code runs with the memory cap armed. A memory failure is a kill
/// like a deadline: it is recorded, the hook is armed, and the trampoline
/// raises it again when the Swift function that made this call returns.
/// While the call is being ended nothing runs: the kill comes back at once.
/// The caller must have reserved one extra stack slot. Returns the
/// lua_pcall status.
int lunette_pcall(lua_State *L, int nargs, int nresults);

/// Pushes the message handler lunette_pcall uses, for lunette_pcall_at.
void lunette_push_message_handler(lua_State *L);

/// lunette_pcall for a caller that pushed the message handler
/// (lunette_push_message_handler) just below the function, at absolute
/// index `handler`: it stays below the results or the error, and no stack
/// entries move (lunette_pcall inserts and removes it, two rotations of
/// the stack).
int lunette_pcall_at(lua_State *L, int nargs, int nresults, int handler);

/// lunette_pcall for the host's own work (opening libraries, read-only
/// views, host glue): it runs in host mode, so its allocations are never
/// charged to the script's cap and never refused by it.
int lunette_host_pcall(lua_State *L, int nargs, int nresults);

/// Pushes the traceback recorded by the last failed lunette_pcall (a string)
/// or nil, and forgets it.
void lunette_take_traceback(lua_State *L);

/// For re-raising a nested error: pops a traceback string and records it as
/// the traceback of the error object now on top of the stack, so the outer
/// handler keeps the innermost traceback instead of writing its own.
void lunette_keep_traceback(lua_State *L);

/// Opens the standard libraries named by `mask` (bits LUNETTE_LIB_*) in a
/// protected call. Returns the lua_pcall status.
int lunette_open_libraries(lua_State *L, unsigned mask);

#define LUNETTE_LIB_BASE      (1u << 0)
#define LUNETTE_LIB_PACKAGE   (1u << 1)
#define LUNETTE_LIB_COROUTINE (1u << 2)
#define LUNETTE_LIB_TABLE     (1u << 3)
#define LUNETTE_LIB_IO        (1u << 4)
#define LUNETTE_LIB_OS        (1u << 5)
#define LUNETTE_LIB_STRING    (1u << 6)
#define LUNETTE_LIB_MATH      (1u << 7)
#define LUNETTE_LIB_UTF8      (1u << 8)
#define LUNETTE_LIB_DEBUG     (1u << 9)

/// Loads a text chunk (mode "t"; binary chunks are refused). Same result as
/// luaL_loadbufferx; run in host mode so the compile is not capped.
int lunette_load(lua_State *L, const void *buf, size_t len, const char *chunkname);

/// Loads a binary chunk (mode "b") that the host compiled itself, in this
/// process from text and kept (`lunette_dump_function`,
/// `LuaCompiledChunks`), or at build time from its own glue with the same
/// Lua library (`LuaState.seedCompiledGlue`): never bytes from anywhere
/// else, which Lua does not check. Scripts' own binary chunks the sandbox refuses.
int lunette_load_host_binary(lua_State *L, const void *buf, size_t len, const char *chunkname);

/// The linked Lua library's `lua_ident` ("$LuaVersion: Lua 5.4.4 …"): a
/// binary chunk compiled at build time is used only by the same library.
const char *lunette_lua_ident(void);

/// `lunette_load` (binary 0) or `lunette_load_host_binary` (binary 1) from
/// a Swift function a script called, charged to that script: during a call,
/// the load runs at the script's level, so the memory cap applies (a load
/// past it returns LUA_ERRMEM) and the peak counts it, as a `load` made by
/// the script itself would. Outside a call it is the plain load.
int lunette_load_charged(lua_State *L, const void *buf, size_t len, const char *chunkname, int binary);

/// The Lua function on top of the stack as a binary chunk with its debug
/// information (`lua_dump`), in memory from malloc (free it with `free`);
/// NULL when it cannot be written.
void *lunette_dump_function(lua_State *L, size_t *len);

/// Writes `len` bytes and a newline to standard output (buffered stdio;
/// Swift 6 cannot name C's `stdout` global safely).
void lunette_write_line(const void *buf, size_t len);

/// True when `s[0..<n]` is well-formed UTF-8 (no overlongs, no surrogates,
/// nothing above U+10FFFF).
int lunette_utf8_valid(const unsigned char *s, size_t n);

// MARK: - Snapshots

/// Results of lunette_snapshot_take.
#define LUNETTE_SNAPSHOT_TAKEN     0
/// A coroutine of the script's is reachable: its stack cannot be copied.
#define LUNETTE_SNAPSHOT_COROUTINE 1
/// A userdata that is not the host's is reachable (a string.gmatch iterator's state, say).
#define LUNETTE_SNAPSHOT_USERDATA  2
/// More than `max_slots` entries and upvalues would be copied.
#define LUNETTE_SNAPSHOT_TOO_LARGE 3
/// The protected call failed (out of memory).
#define LUNETTE_SNAPSHOT_FAILED    4

/// Copies what the `n` values on top of the stack (popped) reach, except
/// the host's objects: each table's raw entries and metatable, each
/// function's upvalues. The host's objects are the state's globals, the
/// `nhost` values below those `n` (popped too), and everything their tables
/// reach through keys, values and metatables (functions, userdata and
/// threads on the way are not entered): a snapshot treats them as
/// constants. Returns LUNETTE_SNAPSHOT_TAKEN and pushes the snapshot (keep
/// it with a registry reference), or another code and pushes nothing; then
/// collects the garbage the walk left. Runs in host mode; no metamethod runs.
int lunette_snapshot_take(lua_State *L, int nhost, int n, size_t max_slots);

/// Puts back every table (entries and metatable) and every upvalue of the
/// snapshot at `idx` as they were when it was taken. What a call created
/// since is unreachable from them afterwards. Objects are the same ones:
/// identities hold. Runs no script code; protected, returns the status.
int lunette_snapshot_restore(lua_State *L, int idx);

// MARK: - Flattening values

/// One value in a flattened tree. Tables refer to their children through
/// `lunette_tape.order`: `count` array items from `array_at`, then
/// `nfields` string-keyed items from `fields_at`, sorted by key bytes.
/// String pointers point into Lua strings that stay alive while the value
/// being read is on the stack; after lunette_tape_read_range, those of
/// strings over LUNETTE_SHORT_STRING bytes point into the tape's arena.
typedef struct lunette_slot {
    int type;              ///< LUA_TNIL, LUA_TBOOLEAN, LUA_TNUMBER, LUA_TSTRING or LUA_TTABLE
    int is_integer;        ///< numbers: 1 for an integer
    lua_Integer integer;   ///< integer value, or boolean (0/1)
    lua_Number number;     ///< float value
    const char *str;       ///< string value
    size_t len;
    const char *key;       ///< the key when this slot is a field's value
    size_t key_len;
    /// Strings of up to 16 bytes (LUNETTE_SHORT_STRING), value and key:
    /// their bytes in two words, memory order, zero-padded — what LuaString
    /// keeps inline, so Swift makes one without copying bytes.
    uint64_t str_words[2];
    uint64_t key_words[2];
    size_t count;          ///< tables: array items
    size_t nfields;        ///< tables: string-keyed fields
    size_t array_at;       ///< tables: index in `order` of the first array item
    size_t fields_at;      ///< tables: index in `order` of the first field
    /// 1 when the value read from this slot holds a reference (Swift
    /// allocates for it: a table, a string or, for a field, a key over
    /// LUNETTE_SHORT_STRING bytes): what LuaFields' deinit must destroy.
    int holds;
} lunette_slot;

/// The longest string a slot also gives as `str_words` / `key_words`.
#define LUNETTE_SHORT_STRING 16

/// A child of a table being read: its slot, and for fields the first eight
/// key bytes as a big-endian number (sorting compares these first).
typedef struct lunette_field {
    uint64_t prefix;
    size_t child;
    size_t position;   ///< place in traversal order
} lunette_field;

/// Tables with up to this many string keys remember their last key order.
#define LUNETTE_SHAPE_MAX 32

/// Table templates: a table the host pushes as an argument again and again
/// (a widget's ctx) is copied from a template kept in the registry: a Lua
/// function compiled from a constructor that spells its entries.
/// Makes the template of the table at `idx` (no metatable, at most
/// `max_depth` levels of tables, string and integer keys, values
/// booleans, numbers other than NaN, strings or such tables) and returns
/// its registry reference, or LUA_NOREF when the table does not qualify.
/// Raw access; allocates, in host mode only.
int lunette_template_make(lua_State *L, int idx, int max_depth);
/// Pushes a new table with the entries of the template's table, its tables
/// made the same way, by calling the template's constructor. Returns 0,
/// with nothing pushed, when the stack cannot grow. The constructor is Lua code run
/// unprotected: only between calls, with no hook armed (the arguments of
/// an outermost call), where nothing in it can raise. Allocates, in host
/// mode only.
int lunette_template_push(lua_State *L, int ref);

/// Working memory of lunette_tape_read, reused between reads (owned by the host).
typedef struct lunette_tape {
    lunette_slot *slots; size_t nslots, slots_cap;
    size_t *order; size_t norder, order_cap;
    lunette_field *pending; size_t npending, pending_cap;   ///< children of tables being read
    const void **path; size_t npath, path_cap;       ///< tables on the current path
    size_t budget;                                   ///< bytes left
    /// For each field count n ≤ LUNETTE_SHAPE_MAX, the sorted order of the
    /// last table read with n fields, as traversal positions. A provider
    /// returns tables of the same shape again and again, and Lua traverses
    /// them in the same order, so checking that this order is sorted (n - 1
    /// comparisons) usually replaces the sort. Zeroed memory is a valid start.
    unsigned char shapes[LUNETTE_SHAPE_MAX + 1][LUNETTE_SHAPE_MAX];
    /// lunette_tape_read_range copies strings longer than
    /// LUNETTE_SHORT_STRING here (values and keys) once its walk is done,
    /// and their `str` / `key` point into it: what it read stays readable
    /// whatever Lua frees.
    char *arena; size_t narena, arena_cap;
    /// Strings (values and keys) over LUNETTE_SHORT_STRING bytes the walk
    /// met: with none, lunette_tape_read_range has nothing to copy.
    size_t nlong;
} lunette_tape;

/// Flattens the value at `idx` with raw access only (no metamethod runs,
/// nothing raises). Returns 1 on success (slot 0 is the root), 0 when the
/// value is not plain data or breaks a limit: the caller then reads it the
/// slow way to say why. `max_depth` and `max_bytes` match LuaConversionLimits.
int lunette_tape_read(lua_State *L, int idx, lunette_tape *tape, int max_depth, size_t max_bytes);

/// As lunette_tape_read for the `count` values from absolute index `first`
/// up, into one tape, one budget for all: `roots[i]` gets the slot of value
/// i. Strings longer than LUNETTE_SHORT_STRING are copied into the tape's
/// arena, so nothing it read points into Lua's memory. Returns `count` on
/// success, else the position of the first value refused (the caller reads
/// it the slow way to say why).
int lunette_tape_read_range(lua_State *L, int first, int count, lunette_tape *tape, int max_depth, size_t max_bytes, size_t *roots);

/// Frees the tape's memory.
void lunette_tape_free(lunette_tape *tape);

/// Formats a float exactly as Lua's tostring does ("%.14g", plus ".0" when
/// the result looks like an integer). Returns the length written.
int lunette_format_number(lua_Number n, char *buf, size_t size);

/// The calling thread's stack size once measured, else (size_t)-1 (see
/// lunette_thread_stack_size; not for Swift, which cannot read a C
/// thread-local safely).
extern __thread size_t lunette_cached_stack_size __attribute__((availability(swift, unavailable)));
/// Measures the calling thread's stack and caches the answer.
size_t lunette_measure_thread_stack(void);
/// Size in bytes of the calling thread's stack (0 when unknown), cached per
/// thread. Lua must run on stacks of at least 8 MiB. Inline: every
/// top-level call asks, and a call of its own was ≈ 12 instructions of a
/// trivial call's ≈ 640.
static inline size_t lunette_thread_stack_size(void) {
    size_t size = lunette_cached_stack_size;
    return size != (size_t)-1 ? size : lunette_measure_thread_stack();
}

/// `x`, unchanged, hidden from the optimiser: tests of a value against
/// several constants, each on the value as this returns it, stay a chain of
/// conditional branches instead of being merged into a jump table. On
/// value reads, where a value's type changes from one value to the next,
/// the one indirect jump of a table was mispredicted far more often than
/// the branches of a chain (a 10-field call ≈ 2.5–6% faster; docs/ARCHITECTURE.md,
/// *What the twenty-sixth stop changed*). No instruction.
static inline int lunette_opaque_int(int x) {
#if defined(__GNUC__) || defined(__clang__)
    __asm__ volatile("" : "+r"(x));
#endif
    return x;
}

// MARK: - Macro shims (Lua API macros are not visible to Swift)

/// lua_pop(L, n).
static inline void lunette_pop(lua_State *L, int n) { lua_settop(L, -(n) - 1); }
/// The Lua release the package was built against (LUA_VERSION_RELEASE_NUM:
/// 50404 for 5.4.4).
static inline int lunette_lua_release_number(void) { return LUA_VERSION_RELEASE_NUM; }

/// LUA_REGISTRYINDEX.
static inline int lunette_registry_index(void) { return LUA_REGISTRYINDEX; }
/// lua_upvalueindex(i).
static inline int lunette_upvalue_index(int i) { return lua_upvalueindex(i); }
/// lua_newtable(L).
static inline void lunette_newtable(lua_State *L) { lua_createtable(L, 0, 0); }
/// lua_pushcfunction(L, f).
static inline void lunette_pushcfunction(lua_State *L, lua_CFunction f) { lua_pushcclosure(L, f, 0); }
/// LUA_RIDX_GLOBALS of the registry: pushes the global table (raw access).
static inline void lunette_pushglobaltable(lua_State *L) { lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS); }

#endif
