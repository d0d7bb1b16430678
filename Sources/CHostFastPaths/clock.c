#include "CHostFastPaths.h"

#include <string.h>

// The sums must round as Swift's do, one operation at a time: no fused
// multiply-add (clang contracts `a += b * c` on arm64 by default).
#pragma STDC FP_CONTRACT OFF

// A date as the Swift side pushes it (ClockBinding.date): an integer when
// the number is one exactly (Int64(exactly:)), else a float.
static void push_date(lua_State *L, lua_Number t) {
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0 && (lua_Number)(lua_Integer)t == t) {
        lua_pushinteger(L, (lua_Integer)t);
    } else {
        lua_pushnumber(L, t);
    }
}

// The number at `idx` (a number: the caller checked) as a float, as
// lua_tonumber gives it. An integer is read with lua_tointegerx, which
// takes it as it is (lua_tonumberx converts it in a call of Lua's own,
// ≈ 50 instructions; dates and most amounts are integers).
static inline lua_Number number_at(lua_State *L, int idx) {
    int exact = 0;
    lua_Integer integer = lua_tointegerx(L, idx, &exact);
    return exact ? (lua_Number)integer : lua_tonumber(L, idx);
}

int lunette_clock_now(lua_State *L) {
    const double *now = (const double *)lua_touserdata(L, lua_upvalueindex(3));
    if (now == NULL) return -1;
    push_date(L, lunette_load_double(now));
    return 1;
}

int lunette_clock_add(lua_State *L) {
    if (lua_gettop(L) != 2 || lua_type(L, 1) != LUA_TNUMBER || lua_type(L, 2) != LUA_TTABLE) return -1;
    lua_Number seconds = 0;
    int fields = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        // The Swift body reads at most 8 fields; anything else is its to refuse.
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TNUMBER || ++fields > 8) {
            lua_settop(L, 2);
            return -1;
        }
        size_t length;
        const char *key = lua_tolstring(L, -2, &length);
        lua_Number amount = number_at(L, -1);
        if (length == 5 && memcmp(key, "hours", 5) == 0) {
            seconds += amount * 3600;
        } else if (length == 7 && memcmp(key, "minutes", 7) == 0) {
            seconds += amount * 60;
        } else if (length == 7 && memcmp(key, "seconds", 7) == 0) {
            seconds += amount;
        } else {
            // days (the calendar's), or a unit the body names in its error.
            lua_settop(L, 2);
            return -1;
        }
        lua_pop(L, 1);
    }
    push_date(L, number_at(L, 1) + seconds);
    return 1;
}
