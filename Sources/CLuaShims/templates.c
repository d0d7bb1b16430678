// Table templates (see CLuaShims.h): a table the host pushes as an argument
// again and again (a widget's ctx) is kept as a template, and each call gets
// a copy made from it, with no string to hash and intern and no Swift value
// to walk. Raw access only; like the host's other pushes, these run outside
// a protected call, in host mode (no memory cap).
//
// A template is a Lua function compiled from a table constructor that
// spells the table's entries as constants ({ ["kind"] = "Tasks", ... }):
// a copy is one call of it, which Lua's own NEWTABLE and SETFIELD build,
// about a fifth cheaper than the same entries set one by one through the
// C API (each lua_rawset and lua_rawgeti finds its operands by stack index).
#include "CLuaShims.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The constructor's text, grown with realloc (not a luaL_Buffer: that may
// push onto the stack while the walk below holds indices into it).
typedef struct {
    char *text;
    size_t length, capacity;
    int failed;
} lunette_source;

static void lunette_source_add(lunette_source *s, const char *bytes, size_t length) {
    if (s->failed) return;
    if (s->length + length > s->capacity) {
        size_t capacity = s->capacity ? s->capacity * 2 : 256;
        while (capacity < s->length + length) capacity *= 2;
        char *grown = realloc(s->text, capacity);
        if (grown == NULL) {
            s->failed = 1;
            return;
        }
        s->text = grown;
        s->capacity = capacity;
    }
    memcpy(s->text + s->length, bytes, length);
    s->length += length;
}

static void lunette_source_text(lunette_source *s, const char *text) { lunette_source_add(s, text, strlen(text)); }

// A string literal for any bytes: printable ASCII as it is, every other
// byte (quotes, backslashes, controls, UTF-8's) as a decimal escape.
static void lunette_source_string(lunette_source *s, const char *bytes, size_t length) {
    lunette_source_add(s, "\"", 1);
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            lunette_source_add(s, (const char *)&c, 1);
        } else {
            char escape[5];
            snprintf(escape, sizeof escape, "\\%03u", (unsigned)c);
            lunette_source_add(s, escape, 4);
        }
    }
    lunette_source_add(s, "\"", 1);
}

// The number at `idx` as a literal of the same subtype and value: integers
// in decimal (the smallest one as an expression: its digits alone would
// overflow to a float), floats in hexadecimal (exact; the locale's decimal
// point, which printf uses, put back to the '.' Lua reads), infinities as
// divisions. 0 for NaN: a division would make the machine's NaN, whose
// sign need not be the value's (`tostring` shows it), so a table holding
// one has no template.
static int lunette_source_number(lunette_source *s, lua_State *L, int idx) {
    char literal[64];
    if (lua_isinteger(L, idx)) {
        lua_Integer n = lua_tointeger(L, idx);
        if (n == LUA_MININTEGER) snprintf(literal, sizeof literal, "(%" PRId64 "-1)", (int64_t)(n + 1));
        else snprintf(literal, sizeof literal, "%" PRId64, (int64_t)n);
    } else {
        double x = (double)lua_tonumber(L, idx);
        if (isnan(x)) return 0;
        if (isinf(x)) {
            snprintf(literal, sizeof literal, x > 0 ? "(1/0)" : "(-1/0)");
        } else {
            snprintf(literal, sizeof literal, "%a", x);
            const char *point = localeconv()->decimal_point;
            size_t width = point != NULL ? strlen(point) : 0;
            char *found = width > 0 && strcmp(point, ".") != 0 ? strstr(literal, point) : NULL;
            if (found != NULL) {
                *found = '.';
                memmove(found + 1, found + width, strlen(found + width) + 1);
            }
        }
    }
    lunette_source_text(s, literal);
    return 1;
}

// The value on top as a literal: 0 when it has none (see below).
static int lunette_template_source(lua_State *L, int t, int depth, lunette_source *s);
static int lunette_source_value(lunette_source *s, lua_State *L, int depth) {
    switch (lua_type(L, -1)) {
    case LUA_TNIL:
        lunette_source_text(s, "nil");
        return 1;
    case LUA_TBOOLEAN:
        lunette_source_text(s, lua_toboolean(L, -1) ? "true" : "false");
        return 1;
    case LUA_TNUMBER:
        return lunette_source_number(s, L, -1);
    case LUA_TSTRING: {
        size_t length;
        const char *value = lua_tolstring(L, -1, &length);
        lunette_source_string(s, value, length);
        return 1;
    }
    case LUA_TTABLE:
        return lunette_template_source(L, lua_gettop(L), depth - 1, s);
    default:
        return 0;
    }
}

// Writes a constructor for the table at absolute index `t`, `depth` levels
// deep at most; 0 when the table is deeper, has a metatable, has a key
// other than a string or an integer, a value other than a boolean, a
// number (not NaN), a string or such a table, or the stack cannot grow.
// Items 1 to the table's length come first, without keys and with nil in
// any hole, so that the copy has the array part the table has, and the
// same length (`#`) even where a hole makes the length ambiguous; the
// other entries follow with their keys.
static int lunette_template_source(lua_State *L, int t, int depth, lunette_source *s) {
    if (depth <= 0 || !lua_checkstack(L, 4)) return 0;
    if (lua_getmetatable(L, t)) {
        lua_pop(L, 1);
        return 0;
    }
    lunette_source_add(s, "{", 1);
    lua_Integer items = (lua_Integer)lua_rawlen(L, t);
    for (lua_Integer i = 1; i <= items; i++) {
        lua_rawgeti(L, t, i);
        int written = lunette_source_value(s, L, depth);
        lua_pop(L, 1);
        if (!written) return 0;
        lunette_source_add(s, ",", 1);
    }
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= items) {
            lua_pop(L, 1);   // an item, written above
            continue;
        }
        lunette_source_add(s, "[", 1);
        int key;
        if (lua_type(L, -2) == LUA_TSTRING) {
            size_t length;
            const char *bytes = lua_tolstring(L, -2, &length);
            lunette_source_string(s, bytes, length);
            key = 1;
        } else {
            key = lua_isinteger(L, -2) && lunette_source_number(s, L, -2);
        }
        lunette_source_add(s, "]=", 2);
        if (!key || !lunette_source_value(s, L, depth)) {
            lua_pop(L, 2);
            return 0;
        }
        lunette_source_add(s, ",", 1);
        lua_pop(L, 1);
    }
    lunette_source_add(s, "}", 1);
    return 1;
}

int lunette_template_make(lua_State *L, int idx, int max_depth) {
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) return LUA_NOREF;
    int top = lua_gettop(L);
    lunette_source s = { NULL, 0, 0, 0 };
    lunette_source_text(&s, "return ");
    int made = lunette_template_source(L, idx, max_depth, &s) && !s.failed
        && luaL_loadbufferx(L, s.text, s.length, "=(argument template)", "t") == LUA_OK;
    free(s.text);
    if (!made) {
        lua_settop(L, top);   // a failed load leaves its message
        return LUA_NOREF;
    }
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

int lunette_template_push(lua_State *L, int ref) {
    if (!lua_checkstack(L, 2)) return 0;
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_call(L, 0, 1);
    return 1;
}
