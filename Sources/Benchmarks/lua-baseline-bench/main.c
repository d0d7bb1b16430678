// Bare C baseline for scripts/bench: the same Lua work as lunette-bench,
// against the same liblua5.4, with nothing of Lunette in between.
// Prints "name value" lines that lunette-bench reads.
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entry_source.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n) {
    qsort(values, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Walks the table on top of the stack with lua_next, touching every key and value.
static double walk(lua_State *L) {
    double sink = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
        size_t len = 0;
        lua_tolstring(L, -2, &len);
        sink += (double)len;
        switch (lua_type(L, -1)) {
        case LUA_TNUMBER: sink += lua_isinteger(L, -1) ? (double)lua_tointeger(L, -1) : lua_tonumber(L, -1); break;
        case LUA_TSTRING: lua_tolstring(L, -1, &len); sink += (double)len; break;
        case LUA_TBOOLEAN: sink += lua_toboolean(L, -1); break;
        default: break;
        }
        lua_pop(L, 1);
    }
    return sink;
}

// Usage: lua-baseline-bench [--quick | --only-call BATCHES | --only-trivial BATCHES]
// The --only modes run one call loop alone, BATCHES of 1,000 calls after
// the same 10 warm-up batches, for instruction counts (lunette-bench runs
// each at two sizes under callgrind and differences them).
int main(int argc, char **argv) {
    int batches = 100, batch = 1000, states = 2000;
    int calls = 1, trivials = 1;
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) { batches = 20; states = 200; }
    else if (argc > 2 && (strcmp(argv[1], "--only-call") == 0 || strcmp(argv[1], "--only-trivial") == 0)) {
        batches = atoi(argv[2]);
        if (batches <= 0) { fprintf(stderr, "baseline: %s BATCHES: BATCHES must be above 0\n", argv[1]); return 2; }
        calls = strcmp(argv[1], "--only-call") == 0;
        trivials = !calls;
        states = 0;
    } else if (argc > 1) {
        fprintf(stderr, "usage: lua-baseline-bench [--quick | --only-call BATCHES | --only-trivial BATCHES]\n");
        return 2;
    }

    // 1. Call a Lua function returning a 10-field entry table, walk the result.
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_loadstring(L, LUNETTE_BENCH_ENTRY_SOURCE) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
        fprintf(stderr, "baseline: %s\n", lua_tostring(L, -1));
        return 1;
    }
    int fn = luaL_ref(L, LUA_REGISTRYINDEX);
    double sink = 0;
    double *per_call = malloc(sizeof(double) * (size_t)batches);
    for (int round = -10; calls && round < batches; round++) {   // 10 warm-up batches
        double start = now_ns();
        for (int i = 0; i < batch; i++) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, fn);
            if (lua_pcall(L, 0, 1, 0) != LUA_OK) { fprintf(stderr, "baseline: %s\n", lua_tostring(L, -1)); return 1; }
            sink += walk(L);
            lua_pop(L, 1);
        }
        if (round >= 0) per_call[round] = (now_ns() - start) / batch;
    }
    if (calls) printf("call_ns %.1f\n", median(per_call, batches));

    // 1b. A trivial call: a function of no arguments that returns nothing.
    if (luaL_loadstring(L, "return function() end") != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
        fprintf(stderr, "baseline: %s\n", lua_tostring(L, -1));
        return 1;
    }
    int trivial = luaL_ref(L, LUA_REGISTRYINDEX);
    for (int round = -10; trivials && round < batches; round++) {
        double start = now_ns();
        for (int i = 0; i < batch; i++) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, trivial);
            if (lua_pcall(L, 0, 0, 0) != LUA_OK) { fprintf(stderr, "baseline: %s\n", lua_tostring(L, -1)); return 1; }
        }
        if (round >= 0) per_call[round] = (now_ns() - start) / batch;
    }
    if (trivials) printf("trivial_call_ns %.1f\n", median(per_call, batches));
    lua_close(L);

    // 2. Fresh state: luaL_newstate + luaL_openlibs + lua_close.
    double *per_state = malloc(sizeof(double) * (size_t)states);
    for (int i = -50; states > 0 && i < states; i++) {
        double start = now_ns();
        lua_State *S = luaL_newstate();
        luaL_openlibs(S);
        lua_close(S);
        if (i >= 0) per_state[i] = (now_ns() - start) / 1000.0;
    }
    if (states > 0) printf("fresh_state_us %.2f\n", median(per_state, states));
    printf("sink %.0f\n", sink);
    free(per_call);
    free(per_state);
    return 0;
}
