// CHostFastPaths: C fast paths of the widget host's Swift functions (see
// LuaFastPath in LuaSandbox). Each answers its function's common, valid
// calls without entering Swift, and returns -1 for every other call, which
// the Swift body then runs, so errors and their messages stay Swift's.
#ifndef LUNETTE_CHOSTFASTPATHS_H
#define LUNETTE_CHOSTFASTPATHS_H

#include <lua.h>

/// clock.add(t, units) when units has only hours, minutes and seconds
/// (no days, which need the calendar): t plus the seconds, summed in the
/// table's order as the Swift body sums them, an integer when whole; -1
/// for any other call.
int lunette_clock_add(lua_State *L);

/// clock.now() on a virtual clock: its time, read from the double its
/// `LuaFastPath` data points to (atomically: a test may move the clock from
/// another thread), pushed as the Swift body pushes a date; -1 without data
/// (the system's clock, which the body reads).
int lunette_clock_now(lua_State *L);

/// The store glue's running(): whether the integer its `LuaFastPath` data
/// points to is not 0 (`StoreBinding`'s: 1 while a call runs).
int lunette_store_running(lua_State *L);

/// The store values the `get` fast path answers with: those it pushes
/// without allocating (no collector step, so no finalizer runs meanwhile).
typedef enum {
    LUNETTE_SCALAR_NIL,
    LUNETTE_SCALAR_BOOLEAN,   // in `integer`: 0 or 1
    LUNETTE_SCALAR_INTEGER,   // in `integer`
    LUNETTE_SCALAR_FLOAT      // in `number`
} lunette_scalar_kind;

typedef struct {
    lunette_scalar_kind kind;
    lua_Integer integer;
    lua_Number number;
} lunette_store_scalar;

/// Looks `key` (`length` bytes) up in group `handle` for the running call
/// without reading the database; 0 and `*out` set when it answers, -1
/// otherwise (the Swift body then runs). It runs no Lua.
typedef int (*lunette_store_lookup_fn)(void *context, lua_Integer handle, const char *key, size_t length,
                                       lunette_store_scalar *out);

/// What the `get` fast path's `LuaFastPath` data points to.
typedef struct {
    lunette_store_lookup_fn lookup;
    void *context;
} lunette_store_get_data;

/// The store glue's get(handle, key) when the handle is an integer, the
/// key a string and `lookup` answers: pushes the scalar; -1 for every
/// other call, which the Swift body then runs.
int lunette_store_get(lua_State *L);

/// A double read and written by several threads without a lock (a virtual
/// clock's time, read on every call while a test may move it): an atomic
/// load with acquire order, and an atomic store with release order.
static inline double lunette_load_double(const double *p) {
    double value;
    __atomic_load(p, &value, __ATOMIC_ACQUIRE);
    return value;
}

static inline void lunette_store_double(double *p, double value) {
    __atomic_store(p, &value, __ATOMIC_RELEASE);
}

#endif
