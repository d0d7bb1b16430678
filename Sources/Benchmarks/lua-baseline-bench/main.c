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

// One state with the 10-field function, kept as a registry reference.
static lua_State *entry_state(int *fn) {
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_loadstring(L, LUNETTE_BENCH_ENTRY_SOURCE) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
        fprintf(stderr, "baseline: %s\n", lua_tostring(L, -1));
        exit(1);
    }
    *fn = luaL_ref(L, LUA_REGISTRYINDEX);
    return L;
}

// The 10-field call on `states` states, each with addresses of its own,
// hence a hash seed of its own (Lua seeds a state's string hashes from its
// address and the time). Where a state lives moves the call by more than
// 10%: where the entry's keys collide in its table under that seed, and
// where its memory falls (the same positions in a run of states were fast
// from process to process). With one state a process, each process drew
// one such place. So each state runs `warmup` batches of 1,000 calls, then
// `batches` timed ones; the figure is the mean of the states' medians,
// and *min and *max the fastest and slowest state's. The states stay open
// until all have run, so that no two share an address. Adds what it read
// to *sink.
static double calls_over_states(int states, int warmup, int batches, double *min, double *max, double *sink) {
    const int batch = 1000;
    lua_State **open = malloc(sizeof(lua_State *) * (size_t)states);
    double *per_call = NULL;
    double sum = 0;
    for (int s = 0; s < states; s++) {
        int fn;
        lua_State *L = open[s] = entry_state(&fn);
        // Made after the first state, never before: its size is the
        // batches', and an allocation before the state moved the state's
        // address, so --only-call 5 and --only-call 10 (the two sizes of
        // an instruction count) had two seeds under one fixed clock.
        if (per_call == NULL) per_call = malloc(sizeof(double) * (size_t)batches);
        for (int round = -warmup; round < batches; round++) {
            double start = now_ns();
            for (int i = 0; i < batch; i++) {
                lua_rawgeti(L, LUA_REGISTRYINDEX, fn);
                if (lua_pcall(L, 0, 1, 0) != LUA_OK) { fprintf(stderr, "baseline: %s\n", lua_tostring(L, -1)); exit(1); }
                *sink += walk(L);
                lua_pop(L, 1);
            }
            if (round >= 0) per_call[round] = (now_ns() - start) / batch;
        }
        double m = median(per_call, batches);
        sum += m;
        if (s == 0 || m < *min) *min = m;
        if (s == 0 || m > *max) *max = m;
    }
    for (int s = 0; s < states; s++) lua_close(open[s]);
    free(open);
    free(per_call);
    return sum / states;
}

// Usage: lua-baseline-bench [--quick | --only-call BATCHES | --only-trivial BATCHES]
// The --only modes run one call loop alone, on one state, BATCHES of 1,000
// calls after the same 10 warm-up batches, for instruction counts
// (lunette-bench runs each at two sizes under callgrind and differences
// them, with a fixed clock: one seed a pair).
int main(int argc, char **argv) {
    int batches = 100, batch = 1000, states = 2000;
    int call_states = 16, call_batches = 25;   // the 10-field call: 16 states, 25 timed batches each
    int calls = 1, trivials = 1, only = 0;
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) { batches = 20; states = 200; call_states = 4; call_batches = 10; }
    else if (argc > 2 && (strcmp(argv[1], "--only-call") == 0 || strcmp(argv[1], "--only-trivial") == 0)) {
        batches = atoi(argv[2]);
        if (batches <= 0) { fprintf(stderr, "baseline: %s BATCHES: BATCHES must be above 0\n", argv[1]); return 2; }
        calls = strcmp(argv[1], "--only-call") == 0;
        trivials = !calls;
        states = 0;
        only = 1;
    } else if (argc > 1) {
        fprintf(stderr, "usage: lua-baseline-bench [--quick | --only-call BATCHES | --only-trivial BATCHES]\n");
        return 2;
    }

    // 1. Call a Lua function returning a 10-field entry table, walk the result.
    double sink = 0, fastest = 0, slowest = 0;
    if (calls && only) {
        printf("call_ns %.1f\n", calls_over_states(1, 10, batches, &fastest, &slowest, &sink));
    } else if (calls) {
        printf("call_ns %.1f\n", calls_over_states(call_states, 3, call_batches, &fastest, &slowest, &sink));
        printf("call_states %d\n", call_states);
        printf("call_fastest_state_ns %.1f\n", fastest);
        printf("call_slowest_state_ns %.1f\n", slowest);
    }

    // 1b. A trivial call: a function of no arguments that returns nothing,
    // in a state made as the call's (one made bare instead ran 28 more
    // instructions a call, under callgrind).
    int entry;
    lua_State *L = entry_state(&entry);
    double *per_call = malloc(sizeof(double) * (size_t)batches);
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
