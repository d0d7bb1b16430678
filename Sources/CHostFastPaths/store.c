#include "CHostFastPaths.h"

#include <stdint.h>

int lunette_store_running(lua_State *L) {
    const int64_t *running = (const int64_t *)lua_touserdata(L, lua_upvalueindex(3));
    if (running == NULL) return -1;
    lua_pushboolean(L, *running != 0);
    return 1;
}

int lunette_store_get(lua_State *L) {
    const lunette_store_get_data *data = (const lunette_store_get_data *)lua_touserdata(L, lua_upvalueindex(3));
    if (data == NULL || data->lookup == NULL) return -1;
    if (lua_gettop(L) < 2 || lua_type(L, 2) != LUA_TSTRING || !lua_isinteger(L, 1)) return -1;
    size_t length;
    // A string already: read in place, no conversion (nothing allocated).
    const char *key = lua_tolstring(L, 2, &length);
    lunette_store_scalar value;
    if (data->lookup(data->context, lua_tointeger(L, 1), key, length, &value) != 0) return -1;
    switch (value.kind) {
    case LUNETTE_SCALAR_NIL: lua_pushnil(L); return 1;
    case LUNETTE_SCALAR_BOOLEAN: lua_pushboolean(L, value.integer != 0); return 1;
    case LUNETTE_SCALAR_INTEGER: lua_pushinteger(L, value.integer); return 1;
    case LUNETTE_SCALAR_FLOAT: lua_pushnumber(L, value.number); return 1;
    }
    return -1;
}
