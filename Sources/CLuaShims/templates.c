// Table templates (see CLuaShims.h): a table the host pushes as an argument
// again and again (a widget's ctx) is kept as a template, and each call gets
// a copy made from it in C, with no string to hash and intern and no Swift
// value to walk. Raw access only; like the host's other pushes, these run
// outside a protected call, in host mode (no memory cap).
#include "CLuaShims.h"

// A template is a Lua array: [1] and [2] the new table's sizes (array items,
// other entries: hints only, since an array with holes has fewer items than
// its border), [3] the count of entries, then key, value, key, value... for
// every entry; a value that is a table is that table's own template.
#define TEMPLATE_HEADER 3

// Pushes a template of the table at absolute index `t`, `depth` levels deep
// at most; 0 (nothing pushed) when the table is deeper, has a metatable, or
// the stack cannot grow.
static int lunette_template_of(lua_State *L, int t, int depth) {
    if (depth <= 0 || !lua_checkstack(L, 6)) return 0;
    if (lua_getmetatable(L, t)) {
        lua_pop(L, 1);
        return 0;
    }
    lua_Integer narr = (lua_Integer)lua_rawlen(L, t), nrec = 0, n = TEMPLATE_HEADER;
    lua_newtable(L);
    int out = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        if (!(lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= narr)) nrec++;
        lua_pushvalue(L, -2);
        lua_rawseti(L, out, ++n);
        if (lua_type(L, -1) == LUA_TTABLE) {
            if (!lunette_template_of(L, lua_gettop(L), depth - 1)) {
                lua_settop(L, out - 1);
                return 0;
            }
            lua_remove(L, -2);
        }
        lua_rawseti(L, out, ++n);
    }
    lua_pushinteger(L, narr);
    lua_rawseti(L, out, 1);
    lua_pushinteger(L, nrec);
    lua_rawseti(L, out, 2);
    lua_pushinteger(L, (n - TEMPLATE_HEADER) / 2);
    lua_rawseti(L, out, 3);
    return 1;
}

int lunette_template_make(lua_State *L, int idx, int max_depth) {
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE || !lunette_template_of(L, idx, max_depth)) return LUA_NOREF;
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

// Pushes a copy of the table the template at absolute index `tpl` stands for.
static void lunette_template_copy(lua_State *L, int tpl) {
    lua_rawgeti(L, tpl, 1);
    lua_rawgeti(L, tpl, 2);
    lua_rawgeti(L, tpl, 3);
    int narr = (int)lua_tointeger(L, -3), nrec = (int)lua_tointeger(L, -2);
    lua_Integer entries = lua_tointeger(L, -1);
    lua_pop(L, 3);
    lua_createtable(L, narr, nrec);
    int out = lua_gettop(L);
    lua_Integer end = TEMPLATE_HEADER + 2 * entries;
    for (lua_Integer i = TEMPLATE_HEADER + 1; i < end; i += 2) {
        lua_rawgeti(L, tpl, i);
        if (lua_rawgeti(L, tpl, i + 1) == LUA_TTABLE) {
            lunette_template_copy(L, out + 2);
            lua_remove(L, out + 2);
        }
        lua_rawset(L, out);
    }
}

int lunette_template_push(lua_State *L, int ref, int depth) {
    // Each level holds its template, its copy, a key and a value.
    if (!lua_checkstack(L, 4 * depth + 4)) return 0;
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    int tpl = lua_gettop(L);
    lunette_template_copy(L, tpl);
    lua_remove(L, tpl);
    return 1;
}
