// Snapshots of what a bundle's main.lua builds (see CLuaShims.h): taken once,
// put back before each call, so that a call starts from the state main.lua
// left without running it again. Everything here runs in host mode,
// protected (lunette_host_pcall; the restore's closure through
// lunette_pcall_with, with no message handler): raw access only, no
// metamethod, no script code.
#include "CLuaShims.h"
#include "calls.h"

// MARK: - Layout

// Stands for nil among recorded upvalues (a light userdata scripts cannot make).
static const char lunette_nil_upvalue = 'n';

// A snapshot is a table: [1] the table records, flat (table, copy, metatable
// or false, entry count), [2] the function records, flat (function, upvalue
// count, values...); or, when the records fit in a C closure's upvalues,
// [3] that closure (lunette_restore_upvalues) instead: it restores from its
// upvalues, read where they are, instead of reading each record from [1]
// and [2] onto the stack (≈ 1,000 instructions fewer a restore). Its first
// upvalue is a userdata of counts (lunette_snap_counts), read as C memory:
// an integer upvalue costs ≈ 40 instructions to read, and a restore read
// two, then one per table and per function.
#define SNAP_TABLES 1
#define SNAP_FUNCTIONS 2
#define SNAP_RESTORE 3
// A C closure's upvalues, less the counts' userdata the closure keeps first.
#define SNAP_UPVALUES_MAX 254

// The closure's counts: its tables, its functions, then each table's entry
// count and each function's upvalue count, in record order.
typedef struct {
    int tables, functions;
    lua_Integer counts[];
} lunette_snap_counts;

// MARK: - Work lists

// A work list is a Lua array used as a stack, so that deep structures need
// no C recursion.
static void lunette_work_push(lua_State *L, int list, int value, lua_Integer *n) {
    lua_pushvalue(L, value);
    lua_rawseti(L, list, ++*n);
}

// Pushes the last item of the list and removes it.
static void lunette_work_pop(lua_State *L, int list, lua_Integer *n) {
    lua_rawgeti(L, list, *n);
    lua_pushnil(L);
    lua_rawseti(L, list, (*n)--);
}

static int lunette_collectable(int type) {
    return type == LUA_TTABLE || type == LUA_TFUNCTION || type == LUA_TUSERDATA || type == LUA_TTHREAD;
}

// MARK: - The host's objects

// Adds the values at first...last, and everything their tables reach
// through keys, values and metatables, to the set `seen`: the walk that
// copies skips them. Functions, userdata and threads are added, not entered.
static void lunette_mark_host(lua_State *L, int seen, int list, int first, int last) {
    lua_Integer pending = 0;
    for (int i = first; i <= last; i++) {
        if (lunette_collectable(lua_type(L, i))) lunette_work_push(L, list, i, &pending);
    }
    while (pending > 0) {
        lunette_work_pop(L, list, &pending);
        int object = lua_gettop(L);
        lua_pushvalue(L, object);
        if (lua_rawget(L, seen) != LUA_TNIL) { lua_pop(L, 2); continue; }
        lua_pop(L, 1);
        lua_pushvalue(L, object);
        lua_pushboolean(L, 1);
        lua_rawset(L, seen);
        if (lua_type(L, object) == LUA_TTABLE) {
            lua_pushnil(L);
            while (lua_next(L, object) != 0) {
                if (lunette_collectable(lua_type(L, -2))) lunette_work_push(L, list, lua_gettop(L) - 1, &pending);
                if (lunette_collectable(lua_type(L, -1))) lunette_work_push(L, list, lua_gettop(L), &pending);
                lua_pop(L, 1);
            }
            if (lua_getmetatable(L, object)) {
                lunette_work_push(L, list, lua_gettop(L), &pending);
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
}

// MARK: - Taking

static int lunette_restore_upvalues(lua_State *L);

// Arguments: the most entries to copy, the count of host values, the host
// values, then the roots. Marks the host's objects (the globals and the
// host values), then copies what the roots reach. Returns the snapshot, or
// nil and the LUNETTE_SNAPSHOT_* code of what stopped it.
static int lunette_take_protected(lua_State *L) {
    lua_Integer max_slots = lua_tointeger(L, 1);
    int nhost = (int)lua_tointeger(L, 2);
    int n = lua_gettop(L);
    lua_newtable(L);
    int seen = lua_gettop(L);
    lua_newtable(L);
    int list = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lunette_mark_host(L, seen, list, lua_gettop(L), lua_gettop(L));
    lunette_mark_host(L, seen, list, 3, 2 + nhost);
    lua_pop(L, 1);
    lua_createtable(L, 3, 0);
    int snapshot = lua_gettop(L);
    lua_newtable(L);
    int tables = lua_gettop(L);
    lua_newtable(L);
    int functions = lua_gettop(L);
    lua_Integer pending = 0, ntables = 0, nfunctions = 0, slots = 0;
    for (int i = 3 + nhost; i <= n; i++) {
        if (lunette_collectable(lua_type(L, i))) lunette_work_push(L, list, i, &pending);
    }
    int refused = LUNETTE_SNAPSHOT_TAKEN;
    while (pending > 0 && refused == LUNETTE_SNAPSHOT_TAKEN) {
        lunette_work_pop(L, list, &pending);
        int object = lua_gettop(L);
        int type = lua_type(L, object);
        lua_pushvalue(L, object);
        int skip = lua_rawget(L, seen) != LUA_TNIL;
        lua_pop(L, 1);
        if (skip) { lua_pop(L, 1); continue; }
        lua_pushvalue(L, object);
        lua_pushboolean(L, 1);
        lua_rawset(L, seen);
        if (type == LUA_TTABLE) {
            // The record: the table, a copy of its raw contents, its metatable, its size.
            lua_pushvalue(L, object);
            lua_rawseti(L, tables, ++ntables);
            lua_newtable(L);
            int copy = lua_gettop(L);
            lua_Integer count = 0;
            lua_pushnil(L);
            while (lua_next(L, object) != 0) {
                if (lunette_collectable(lua_type(L, -2))) lunette_work_push(L, list, lua_gettop(L) - 1, &pending);
                if (lunette_collectable(lua_type(L, -1))) lunette_work_push(L, list, lua_gettop(L), &pending);
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_rawset(L, copy);
                count++;
            }
            lua_rawseti(L, tables, ++ntables);
            if (lua_getmetatable(L, object)) {
                lunette_work_push(L, list, lua_gettop(L), &pending);
            } else {
                lua_pushboolean(L, 0);
            }
            lua_rawseti(L, tables, ++ntables);
            lua_pushinteger(L, count);
            lua_rawseti(L, tables, ++ntables);
            slots += count + 1;
        } else if (type == LUA_TFUNCTION) {
            // The record: the function, its upvalue count, their values. A C
            // function without upvalues (a library's) records nothing.
            int nups = 0;
            while (lua_getupvalue(L, object, nups + 1) != NULL) {
                nups++;
                if (lunette_collectable(lua_type(L, -1))) lunette_work_push(L, list, lua_gettop(L), &pending);
                if (nups == 1) {
                    lua_pushvalue(L, object);
                    lua_rawseti(L, functions, ++nfunctions);
                    lua_pushinteger(L, 0);   // the count, set below
                    lua_rawseti(L, functions, ++nfunctions);
                }
                if (lua_isnil(L, -1)) {
                    lua_pop(L, 1);
                    lua_pushlightuserdata(L, (void *)&lunette_nil_upvalue);
                }
                lua_rawseti(L, functions, ++nfunctions);
            }
            if (nups > 0) {
                lua_pushinteger(L, nups);
                lua_rawseti(L, functions, nfunctions - nups);
            }
            slots += nups + 1;
        } else if (type == LUA_TTHREAD) {
            refused = LUNETTE_SNAPSHOT_COROUTINE;
        } else {
            refused = LUNETTE_SNAPSHOT_USERDATA;
        }
        if (slots > max_slots) refused = LUNETTE_SNAPSHOT_TOO_LARGE;
        lua_pop(L, 1);
    }
    if (refused != LUNETTE_SNAPSHOT_TAKEN) {
        lua_pushnil(L);
        lua_pushinteger(L, refused);
        return 2;
    }
    // The closure's records: each table's three values (its count goes to
    // the counts) and each function with its upvalues' values.
    lua_Integer nrecords = ntables / 4 * 3;
    lua_Integer ncounts = ntables / 4;
    for (lua_Integer i = 1; i < nfunctions;) {
        lua_rawgeti(L, functions, i + 1);
        lua_Integer nups = lua_tointeger(L, -1);
        lua_pop(L, 1);
        nrecords += 1 + nups;
        ncounts++;
        i += 2 + nups;
    }
    if (nrecords <= SNAP_UPVALUES_MAX && lua_checkstack(L, (int)nrecords + 3)) {
        // The closure's upvalues: the counts, then the records (which it
        // holds instead of [1] and [2]).
        lunette_snap_counts *c = lua_newuserdatauv(L, sizeof *c + (size_t)ncounts * sizeof c->counts[0], 0);
        c->tables = (int)(ntables / 4);
        c->functions = (int)(ncounts - ntables / 4);
        int k = 0;
        for (lua_Integer i = 1; i + 3 <= ntables; i += 4) {
            lua_rawgeti(L, tables, i);
            lua_rawgeti(L, tables, i + 1);
            lua_rawgeti(L, tables, i + 2);
            lua_rawgeti(L, tables, i + 3);
            c->counts[k++] = lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
        for (lua_Integer i = 1; i < nfunctions;) {
            lua_rawgeti(L, functions, i);
            lua_rawgeti(L, functions, i + 1);
            lua_Integer nups = lua_tointeger(L, -1);
            lua_pop(L, 1);
            c->counts[k++] = nups;
            for (lua_Integer u = 1; u <= nups; u++) lua_rawgeti(L, functions, i + 1 + u);
            i += 2 + nups;
        }
        lua_pushcclosure(L, lunette_restore_upvalues, (int)nrecords + 1);
        lua_rawseti(L, snapshot, SNAP_RESTORE);
    } else {
        lua_pushvalue(L, tables);
        lua_rawseti(L, snapshot, SNAP_TABLES);
        lua_pushvalue(L, functions);
        lua_rawseti(L, snapshot, SNAP_FUNCTIONS);
    }
    lua_pushvalue(L, snapshot);
    return 1;
}

// A full collection: the walk's sets and copies it threw away would stay
// in an idle state until it allocates again (about 10 KB a state).
static int lunette_collect_protected(lua_State *L) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

int lunette_snapshot_take(lua_State *L, int nhost, int n, size_t max_slots) {
    lua_pushcfunction(L, lunette_take_protected);
    lua_pushinteger(L, (lua_Integer)(max_slots > (size_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : max_slots));
    lua_pushinteger(L, nhost);
    lua_rotate(L, -nhost - n - 3, 3);
    int status = lunette_host_pcall(L, nhost + n + 2, 2);
    int code = LUNETTE_SNAPSHOT_TAKEN;
    if (status != LUA_OK) {
        lua_pop(L, 1);
        code = LUNETTE_SNAPSHOT_FAILED;
    } else if (lua_isnil(L, -2)) {
        code = (int)lua_tointeger(L, -1);
        lua_pop(L, 2);
    } else {
        lua_pop(L, 1);
    }
    lua_pushcfunction(L, lunette_collect_protected);
    if (lunette_host_pcall(L, 0, 0) != LUA_OK) lua_pop(L, 1);
    return code;
}

// MARK: - Restoring

// The same value, of the same subtype: 1 and 1.0 are raw-equal in Lua 5.4,
// but math.type tells them apart, so a restore must too.
static int lunette_same(lua_State *L, int a, int b) {
    int type = lua_type(L, a);
    if (type != lua_type(L, b)) return 0;
    if (type == LUA_TNUMBER && lua_isinteger(L, a) != lua_isinteger(L, b)) return 0;
    return lua_rawequal(L, a, b);
}

// Puts a table back: entries it gained go, entries that changed or went
// come back, and its metatable.
static void lunette_restore_table(lua_State *L, int t, int copy, int metatable, lua_Integer count) {
    lua_Integer matched = 0;
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        // Clearing or changing an existing field during a traversal is allowed.
        lua_pushvalue(L, -2);
        lua_rawget(L, copy);
        if (lua_isnil(L, -1)) {
            lua_pushvalue(L, -3);
            lua_pushnil(L);
            lua_rawset(L, t);
        } else {
            matched++;
            if (!lunette_same(L, -1, -2)) {
                lua_pushvalue(L, -3);
                lua_pushvalue(L, -2);
                lua_rawset(L, t);
            }
        }
        lua_pop(L, 2);
    }
    if (matched != count) {
        // Entries that went: put them back (t is not being traversed).
        lua_pushnil(L);
        while (lua_next(L, copy) != 0) {
            lua_pushvalue(L, -2);
            if (lua_rawget(L, t) == LUA_TNIL) {
                lua_pushvalue(L, -3);
                lua_pushvalue(L, -3);
                lua_rawset(L, t);
            }
            lua_pop(L, 2);
        }
    }
    // The metatables compared as objects: the recorded one (false for none:
    // no pointer) and the table's now (≈ 60 instructions fewer than
    // pushing false and lua_rawequal).
    const void *now = NULL;
    if (lua_getmetatable(L, t)) {
        now = lua_topointer(L, -1);
        lua_pop(L, 1);
    }
    if (now != lua_topointer(L, metatable)) {
        if (lua_toboolean(L, metatable)) lua_pushvalue(L, metatable); else lua_pushnil(L);
        lua_setmetatable(L, t);
    }
}

// Puts back upvalue `u` of the function at `f` from the recorded value at
// `value` (lunette_nil_upvalue stands for nil): both restores' step, the
// record read onto the stack or in place.
static void lunette_restore_upvalue(lua_State *L, int f, int u, int value) {
    if (lua_getupvalue(L, f, u) == NULL) return;
    if (lua_touserdata(L, value) == (void *)&lunette_nil_upvalue) {
        if (!lua_isnil(L, -1)) {
            lua_pushnil(L);
            lua_setupvalue(L, f, u);
        }
    } else if (!lunette_same(L, value, -1)) {
        lua_pushvalue(L, value);
        lua_setupvalue(L, f, u);
    }
    lua_pop(L, 1);
}

static int lunette_restore_protected(lua_State *L) {
    lua_rawgeti(L, 1, SNAP_TABLES);
    int tables = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, tables);
    for (lua_Integer i = 1; i + 3 <= n; i += 4) {
        lua_rawgeti(L, tables, i);
        lua_rawgeti(L, tables, i + 1);
        lua_rawgeti(L, tables, i + 2);
        lua_rawgeti(L, tables, i + 3);
        lua_Integer count = lua_tointeger(L, -1);
        int top = lua_gettop(L);
        lunette_restore_table(L, top - 3, top - 2, top - 1, count);
        lua_settop(L, top - 4);
    }
    lua_rawgeti(L, 1, SNAP_FUNCTIONS);
    int functions = lua_gettop(L);
    n = (lua_Integer)lua_rawlen(L, functions);
    for (lua_Integer i = 1; i < n;) {
        lua_rawgeti(L, functions, i);
        int f = lua_gettop(L);
        lua_rawgeti(L, functions, i + 1);
        int nups = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        for (int u = 1; u <= nups; u++) {
            lua_rawgeti(L, functions, i + 1 + u);
            lunette_restore_upvalue(L, f, u, lua_gettop(L));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        i += 2 + nups;
    }
    return 0;
}

// The same restore from the records kept as its upvalues (see SNAP_RESTORE):
// upvalue 1 the counts, then the records, each value read where it is.
static int lunette_restore_upvalues(lua_State *L) {
    const lunette_snap_counts *c = lua_touserdata(L, lua_upvalueindex(1));
    int u = 2, k = 0;
    for (int i = 0; i < c->tables; i++, k++, u += 3) {
        lunette_restore_table(L, lua_upvalueindex(u), lua_upvalueindex(u + 1), lua_upvalueindex(u + 2), c->counts[k]);
    }
    for (int i = 0; i < c->functions; i++, k++) {
        int f = lua_upvalueindex(u);
        int nups = (int)c->counts[k];
        for (int v = 1; v <= nups; v++) lunette_restore_upvalue(L, f, v, lua_upvalueindex(u + v));
        u += 1 + nups;
    }
    return 0;
}

int lunette_snapshot_restore(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    if (lua_rawgeti(L, idx, SNAP_RESTORE) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        lua_pushcfunction(L, lunette_restore_protected);
        lua_pushvalue(L, idx);
        return lunette_host_pcall(L, 1, 0);
    }
    // Protected, in host mode, with no message handler: it runs no script
    // code, and can only fail out of memory, whose message needs no
    // traceback (≈ 120 instructions fewer than lunette_host_pcall's
    // handler, put in below the closure and taken out after).
    return lunette_pcall_with(L, lunette_host_of(L), 0, 0, 1, 0);
}
