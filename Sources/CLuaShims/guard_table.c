// Guarded table functions for the sandbox: insert, remove, move, concat and
// sort can loop in C for as long as a length (or a __len metamethod) says,
// without running one Lua instruction. These versions behave like Lua
// 5.4's and count their steps against the call's deadline
// (lunette_guard_steps). Written for Lunette from the reference manual.
#include "CLuaShims.h"

#include <limits.h>

#define NEED_READ  1
#define NEED_WRITE 2
#define NEED_LEN   4

// True when the metatable on top of the stack has field `name` (pushed).
static int lunette_has_metafield(lua_State *L, const char *name) {
    lua_pushstring(L, name);
    return lua_rawget(L, -2) != LUA_TNIL;
}

// Argument `arg` must be a table, or act like one for the operations in
// `need` through its metatable (as Lua's table library requires).
static void lunette_check_table_like(lua_State *L, int arg, int need) {
    if (lua_type(L, arg) == LUA_TTABLE) return;
    int pushed = 0, ok = 0;
    if (lua_getmetatable(L, arg)) {
        pushed = 1;
        ok = 1;
        if (ok && (need & NEED_READ)) { ok = lunette_has_metafield(L, "__index"); lua_pop(L, 1); }
        if (ok && (need & NEED_WRITE)) { ok = lunette_has_metafield(L, "__newindex"); lua_pop(L, 1); }
        if (ok && (need & NEED_LEN)) { ok = lunette_has_metafield(L, "__len"); lua_pop(L, 1); }
    }
    lua_pop(L, pushed);
    if (!ok) luaL_checktype(L, arg, LUA_TTABLE);   // raises Lua's own message
}

// #t of argument 1 (metamethods included), after checking it.
static lua_Integer lunette_length(lua_State *L, int need) {
    lunette_check_table_like(L, 1, need | NEED_LEN);
    return luaL_len(L, 1);
}

// table.insert(t, [pos,] value)
static int lunette_table_insert(lua_State *L) {
    lua_Integer first_empty = lunette_length(L, NEED_READ | NEED_WRITE) + 1;
    lua_Integer pos;
    switch (lua_gettop(L)) {
    case 2:
        pos = first_empty;
        break;
    case 3:
        pos = luaL_checkinteger(L, 2);
        luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)first_empty, 2, "position out of bounds");
        for (lua_Integer i = first_empty; i > pos; i--) {   // shift up
            lunette_guard_steps(L, 1);
            lua_geti(L, 1, i - 1);
            lua_seti(L, 1, i);
        }
        break;
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    lua_seti(L, 1, pos);
    return 0;
}

// table.remove(t [, pos])
static int lunette_table_remove(lua_State *L) {
    lua_Integer size = lunette_length(L, NEED_READ | NEED_WRITE);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    if (pos != size) {   // Lua 5.4 reports this one as argument #1
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1, "position out of bounds");
    }
    lua_geti(L, 1, pos);
    for (; pos < size; pos++) {   // shift down
        lunette_guard_steps(L, 1);
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);
    }
    lua_pushnil(L);
    lua_seti(L, 1, pos);
    return 1;
}

// table.move(a1, f, e, t [, a2])
static int lunette_table_move(lua_State *L) {
    lua_Integer from = luaL_checkinteger(L, 2);
    lua_Integer end = luaL_checkinteger(L, 3);
    lua_Integer to = luaL_checkinteger(L, 4);
    int dest = lua_isnoneornil(L, 5) ? 1 : 5;
    lunette_check_table_like(L, 1, NEED_READ);
    lunette_check_table_like(L, dest, NEED_WRITE);
    if (end >= from) {
        luaL_argcheck(L, from > 0 || end < LUA_MAXINTEGER + from, 3, "too many elements to move");
        lua_Integer count = end - from + 1;
        luaL_argcheck(L, to <= LUA_MAXINTEGER - count + 1, 4, "destination wrap around");
        int forward = to > end || to <= from || (dest != 1 && !lua_compare(L, 1, dest, LUA_OPEQ));
        for (lua_Integer k = 0; k < count; k++) {
            lua_Integer i = forward ? k : count - 1 - k;   // backwards when the ranges overlap
            lunette_guard_steps(L, 1);
            lua_geti(L, 1, from + i);
            lua_seti(L, dest, to + i);
        }
    }
    lua_pushvalue(L, dest);
    return 1;
}

// Appends t[i] to the buffer; it must be a string or a number.
static void lunette_concat_item(lua_State *L, luaL_Buffer *b, lua_Integer i) {
    lua_geti(L, 1, i);
    if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid value (%s) at index %I in table for 'concat'", luaL_typename(L, -1), (LUAI_UACINT)i);
    }
    luaL_addvalue(b);
}

// table.concat(t [, sep [, i [, j]]])
static int lunette_table_concat(lua_State *L) {
    lua_Integer last = lunette_length(L, NEED_READ);
    size_t sep_len;
    const char *sep = luaL_optlstring(L, 2, "", &sep_len);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    last = luaL_optinteger(L, 4, last);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; i < last; i++) {
        lunette_guard_steps(L, 1);
        lunette_concat_item(L, &b, i);
        luaL_addlstring(&b, sep, sep_len);
    }
    if (i == last) lunette_concat_item(L, &b, i);
    luaL_pushresult(&b);
    return 1;
}

// MARK: - sort

// a < b for the values at absolute indices `a` and `b`: the comparator at
// index 2, or Lua's `<`.
static int lunette_sort_less(lua_State *L, int a, int b) {
    lunette_guard_steps(L, 1);
    if (lua_isnil(L, 2)) return lua_compare(L, a, b, LUA_OPLT);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a);
    lua_pushvalue(L, b);
    lua_call(L, 2, 1);
    int less = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return less;
}

// Swaps t[i] and t[j].
static void lunette_sort_swap(lua_State *L, lua_Integer i, lua_Integer j) {
    lua_geti(L, 1, i);
    lua_geti(L, 1, j);
    lua_seti(L, 1, i);
    lua_seti(L, 1, j);
}

// Swaps t[i] and t[j] when t[j] < t[i].
static void lunette_sort_order(lua_State *L, lua_Integer i, lua_Integer j) {
    lua_geti(L, 1, i);
    lua_geti(L, 1, j);
    int top = lua_gettop(L);
    if (lunette_sort_less(L, top, top - 1)) {
        lua_seti(L, 1, i);
        lua_seti(L, 1, j);
    } else {
        lua_pop(L, 2);
    }
}

// Quicksort of t[lo..hi]: median of three, then a partition around the
// pivot whose scans stop at the sorted ends. A comparator that is not a
// strict order can run a scan past its end: that is reported as Lua does.
static void lunette_quicksort(lua_State *L, lua_Integer lo, lua_Integer hi) {
    while (hi > lo) {
        lunette_sort_order(L, lo, hi);
        if (hi - lo == 1) return;
        lua_Integer mid = lo + (hi - lo) / 2;
        lunette_sort_order(L, lo, mid);
        lunette_sort_order(L, mid, hi);
        if (hi - lo == 2) return;
        // Now t[lo] <= pivot <= t[hi]; park the pivot at hi - 1.
        lunette_sort_swap(L, mid, hi - 1);
        lua_geti(L, 1, hi - 1);
        int pivot = lua_gettop(L);
        lua_Integer i = lo, j = hi - 1;
        for (;;) {
            for (;;) {   // up from the left while t[i] < pivot
                lua_geti(L, 1, ++i);
                int less = lunette_sort_less(L, pivot + 1, pivot);
                lua_pop(L, 1);
                if (!less) break;
                if (i >= hi) luaL_error(L, "invalid order function for sorting");
            }
            for (;;) {   // down from the right while pivot < t[j]
                lua_geti(L, 1, --j);
                int less = lunette_sort_less(L, pivot, pivot + 1);
                lua_pop(L, 1);
                if (!less) break;
                if (j <= lo) luaL_error(L, "invalid order function for sorting");
            }
            if (j < i) break;
            lunette_sort_swap(L, i, j);
        }
        lunette_sort_swap(L, i, hi - 1);   // the pivot to its place
        lua_pop(L, 1);
        // Recurse into the smaller part, loop on the larger (stack depth log n).
        if (i - lo < hi - i) {
            lunette_quicksort(L, lo, i - 1);
            lo = i + 1;
        } else {
            lunette_quicksort(L, i + 1, hi);
            hi = i - 1;
        }
    }
}

// table.sort(t [, comp])
static int lunette_table_sort(lua_State *L) {
    lua_Integer n = lunette_length(L, NEED_READ | NEED_WRITE);
    if (n > 1) {
        luaL_argcheck(L, n < INT_MAX, 1, "array too big");
        if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TFUNCTION);
        lua_settop(L, 2);
        luaL_checkstack(L, 8, "sort");
        lunette_quicksort(L, 1, n);
    }
    return 0;
}

void lunette_install_table_guards(lua_State *L, int table_index) {
    static const luaL_Reg guarded[] = {
        { "insert", lunette_table_insert }, { "remove", lunette_table_remove }, { "move", lunette_table_move },
        { "concat", lunette_table_concat }, { "sort", lunette_table_sort }, { NULL, NULL },
    };
    table_index = lua_absindex(L, table_index);
    for (const luaL_Reg *r = guarded; r->name != NULL; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, table_index, r->name);
    }
}
