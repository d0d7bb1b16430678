// Snapshots of what a bundle's main.lua builds (see CLuaShims.h): taken once,
// put back before each call, so that a call starts from the state main.lua
// left without running it again. Everything here runs in host mode through
// lunette_host_pcall: raw access only, no metamethod, no script code.
#include "CLuaShims.h"

// MARK: - Registry keys and layout

// The set of the host's objects (object -> true): a snapshot never copies,
// enters or restores them.
static const char lunette_host_objects_key = 'h';
// Stands for nil among recorded upvalues (a light userdata scripts cannot make).
static const char lunette_nil_upvalue = 'n';

// A snapshot is a table: [1] the table records, flat (table, copy, metatable
// or false, entry count), [2] the function records, flat (function, upvalue
// count, values...).
#define SNAP_TABLES 1
#define SNAP_FUNCTIONS 2

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

// Marks the values given (and what their tables reach) as the host's.
static int lunette_mark_host_protected(lua_State *L) {
    int n = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_host_objects_key);
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_host_objects_key);
    }
    int set = lua_gettop(L);
    lua_newtable(L);
    int list = lua_gettop(L);
    lua_Integer pending = 0;
    for (int i = 1; i <= n; i++) {
        if (lunette_collectable(lua_type(L, i))) lunette_work_push(L, list, i, &pending);
    }
    while (pending > 0) {
        lunette_work_pop(L, list, &pending);
        int object = lua_gettop(L);
        lua_pushvalue(L, object);
        if (lua_rawget(L, set) != LUA_TNIL) { lua_pop(L, 2); continue; }
        lua_pop(L, 1);
        lua_pushvalue(L, object);
        lua_pushboolean(L, 1);
        lua_rawset(L, set);
        if (lua_type(L, object) == LUA_TTABLE) {
            // Functions, userdata and threads are marked, not entered.
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
    return 0;
}

int lunette_snapshot_mark_host(lua_State *L, int n) {
    lua_pushcfunction(L, lunette_mark_host_protected);
    lua_insert(L, -n - 1);
    return lunette_host_pcall(L, n, 0);
}

static int lunette_forget_host_protected(lua_State *L) {
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lunette_host_objects_key);
    // An idle state collects nothing until it allocates again: give the
    // set (and the walk's work lists) back now.
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

int lunette_snapshot_forget_host(lua_State *L) {
    lua_pushcfunction(L, lunette_forget_host_protected);
    return lunette_host_pcall(L, 0, 0);
}

// MARK: - Taking

// Arguments: the most entries to copy, then the roots. Returns the snapshot,
// or nil and the LUNETTE_SNAPSHOT_* code of what stopped it.
static int lunette_take_protected(lua_State *L) {
    lua_Integer max_slots = lua_tointeger(L, 1);
    int n = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lunette_host_objects_key);
    int host = lua_gettop(L);
    lua_newtable(L);
    int seen = lua_gettop(L);
    lua_newtable(L);
    int list = lua_gettop(L);
    lua_createtable(L, 2, 0);
    int snapshot = lua_gettop(L);
    lua_newtable(L);
    int tables = lua_gettop(L);
    lua_newtable(L);
    int functions = lua_gettop(L);
    lua_Integer pending = 0, ntables = 0, nfunctions = 0, slots = 0;
    for (int i = 2; i <= n; i++) {
        if (lunette_collectable(lua_type(L, i))) lunette_work_push(L, list, i, &pending);
    }
    int refused = LUNETTE_SNAPSHOT_TAKEN;
    while (pending > 0 && refused == LUNETTE_SNAPSHOT_TAKEN) {
        lunette_work_pop(L, list, &pending);
        int object = lua_gettop(L);
        int type = lua_type(L, object);
        int skip = 0;
        if (lua_type(L, host) == LUA_TTABLE) {
            lua_pushvalue(L, object);
            skip = lua_rawget(L, host) != LUA_TNIL;
            lua_pop(L, 1);
        }
        if (!skip) {
            lua_pushvalue(L, object);
            skip = lua_rawget(L, seen) != LUA_TNIL;
            lua_pop(L, 1);
        }
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
    lua_pushvalue(L, tables);
    lua_rawseti(L, snapshot, SNAP_TABLES);
    lua_pushvalue(L, functions);
    lua_rawseti(L, snapshot, SNAP_FUNCTIONS);
    lua_pushvalue(L, snapshot);
    return 1;
}

int lunette_snapshot_take(lua_State *L, int n, size_t max_slots) {
    lua_pushcfunction(L, lunette_take_protected);
    lua_pushinteger(L, (lua_Integer)(max_slots > (size_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : max_slots));
    lua_rotate(L, -n - 2, 2);
    int status = lunette_host_pcall(L, n + 1, 2);
    if (status != LUA_OK) {
        lua_pop(L, 1);
        return LUNETTE_SNAPSHOT_FAILED;
    }
    if (lua_isnil(L, -2)) {
        int code = (int)lua_tointeger(L, -1);
        lua_pop(L, 2);
        return code;
    }
    lua_pop(L, 1);
    return LUNETTE_SNAPSHOT_TAKEN;
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
    int has = lua_getmetatable(L, t);
    if (!has) lua_pushboolean(L, 0);
    if (!lua_rawequal(L, -1, metatable)) {
        if (lua_toboolean(L, metatable)) lua_pushvalue(L, metatable); else lua_pushnil(L);
        lua_setmetatable(L, t);
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
            if (lua_touserdata(L, -1) == (void *)&lunette_nil_upvalue) {
                lua_pop(L, 1);
                lua_pushnil(L);
            }
            if (lua_getupvalue(L, f, u) == NULL) { lua_pop(L, 1); continue; }
            if (!lunette_same(L, -1, -2)) {
                lua_pop(L, 1);
                lua_setupvalue(L, f, u);
            } else {
                lua_pop(L, 2);
            }
        }
        lua_pop(L, 1);
        i += 2 + nups;
    }
    return 0;
}

int lunette_snapshot_restore(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    lua_pushcfunction(L, lunette_restore_protected);
    lua_pushvalue(L, idx);
    return lunette_host_pcall(L, 1, 0);
}
