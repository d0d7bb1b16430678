#include "CHostFastPaths.h"

#include <stdint.h>

int lunette_store_running(lua_State *L) {
    const int64_t *running = (const int64_t *)lua_touserdata(L, lua_upvalueindex(3));
    if (running == NULL) return -1;
    lua_pushboolean(L, *running != 0);
    return 1;
}
