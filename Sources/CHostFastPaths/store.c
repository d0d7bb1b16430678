#include "CHostFastPaths.h"

#include <stdint.h>

int lunette_store_epoch(lua_State *L) {
    const int64_t *epoch = (const int64_t *)lua_touserdata(L, lua_upvalueindex(3));
    if (epoch == NULL) return -1;
    lua_pushinteger(L, (lua_Integer)*epoch);
    return 1;
}
