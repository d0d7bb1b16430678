// Guarded string functions for the sandbox. Lua's pattern matching can
// backtrack for hours on a few bytes of input, and string.rep('', huge)
// loops without allocating; neither runs a Lua instruction, so no hook
// fires. This is Lunette's own implementation of Lua 5.4 patterns
// (find, match, gmatch, gsub), written from the reference manual §6.4.1,
// that counts its steps against the call's deadline. Its results and
// error messages are checked against the stock library by the tests.
#include "CLuaShims.h"

#include <ctype.h>
#include <string.h>

#define PATTERN_ESCAPE '%'
#define PATTERN_SPECIALS "^$*+?.([%-"
#define MAX_CAPTURES 32            // LUA_MAXCAPTURES
#define MAX_MATCH_DEPTH 200        // nested matcher calls ("pattern too complex")
#define CAPTURE_OPEN (-1)          // capture started, not closed
#define CAPTURE_POSITION (-2)      // a () position capture

typedef struct lunette_matcher {
    const char *subject;           // first byte of the subject
    const char *subject_end;       // one past its last byte (a NUL is there)
    const char *pattern_end;
    lua_State *L;
    lunette_host *host;
    int depth_left;
    int level;                     // captures started
    struct { const char *start; ptrdiff_t len; } captures[MAX_CAPTURES];
} lunette_matcher;

// One unit of matching work; every 4096 the deadline is checked.
static inline void lunette_match_step(lunette_matcher *m) {
    lunette_guard_count(m->L, m->host, 1);
}

static void lunette_matcher_init(lunette_matcher *m, lua_State *L, const char *s, size_t ls, const char *p, size_t lp) {
    m->L = L;
    m->host = lunette_host_of(L);
    m->subject = s;
    m->subject_end = s + ls;
    m->pattern_end = p + lp;
}

static void lunette_matcher_reset(lunette_matcher *m) {
    m->level = 0;
    m->depth_left = MAX_MATCH_DEPTH;
}

// MARK: - Classes

// Does byte `c` belong to class letter `cl` (%a, %d, ...; upper case negates)?
static int lunette_in_class(int c, int cl) {
    int in;
    switch (tolower(cl)) {
    case 'a': in = isalpha(c); break;
    case 'c': in = iscntrl(c); break;
    case 'd': in = isdigit(c); break;
    case 'g': in = isgraph(c); break;
    case 'l': in = islower(c); break;
    case 'p': in = ispunct(c); break;
    case 's': in = isspace(c); break;
    case 'u': in = isupper(c); break;
    case 'w': in = isalnum(c); break;
    case 'x': in = isxdigit(c); break;
    case 'z': in = c == 0; break;   // deprecated in the manual, still accepted by Lua 5.4
    default: return cl == c;     // an escaped literal, like %. or %%
    }
    if (isupper(cl)) in = !in;
    return in;
}

// Does `c` match the set [ ... ] from `p` (at '[') to `last` (at ']')?
static int lunette_in_set(int c, const char *p, const char *last) {
    int wanted = 1;
    if (p[1] == '^') {
        wanted = 0;
        p++;
    }
    while (++p < last) {
        if (*p == PATTERN_ESCAPE) {
            p++;
            if (lunette_in_class(c, (unsigned char)*p)) return wanted;
        } else if (p[1] == '-' && p + 2 < last) {
            p += 2;
            if ((unsigned char)p[-2] <= c && c <= (unsigned char)*p) return wanted;
        } else if ((unsigned char)*p == c) {
            return wanted;
        }
    }
    return !wanted;
}

// Where the single-character class starting at `p` ends.
static const char *lunette_class_end(lunette_matcher *m, const char *p) {
    char c = *p++;
    if (c == PATTERN_ESCAPE) {
        if (p == m->pattern_end) luaL_error(m->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c == '[') {
        if (*p == '^') p++;
        do {   // the first character of a set is literal, even ']'
            if (p == m->pattern_end) luaL_error(m->L, "malformed pattern (missing ']')");
            if (*(p++) == PATTERN_ESCAPE && p < m->pattern_end) p++;
        } while (*p != ']');
        return p + 1;
    }
    return p;
}

// Does the subject byte at `s` match the class p..class_end?
static int lunette_single_match(lunette_matcher *m, const char *s, const char *p, const char *class_end) {
    lunette_match_step(m);
    if (s >= m->subject_end) return 0;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.': return 1;
    case PATTERN_ESCAPE: return lunette_in_class(c, (unsigned char)p[1]);
    case '[': return lunette_in_set(c, p, class_end - 1);
    default: return (unsigned char)*p == c;
    }
}

// MARK: - Matching

static const char *lunette_match(lunette_matcher *m, const char *s, const char *p);

// Longest run of the class, then back off until the rest matches.
static const char *lunette_match_greedy(lunette_matcher *m, const char *s, const char *p, const char *ep) {
    ptrdiff_t n = 0;
    while (lunette_single_match(m, s + n, p, ep)) n++;
    for (; n >= 0; n--) {
        const char *end = lunette_match(m, s + n, ep + 1);
        if (end != NULL) return end;
    }
    return NULL;
}

// Shortest run of the class for which the rest matches.
static const char *lunette_match_lazy(lunette_matcher *m, const char *s, const char *p, const char *ep) {
    for (;;) {
        const char *end = lunette_match(m, s, ep + 1);
        if (end != NULL) return end;
        if (!lunette_single_match(m, s, p, ep)) return NULL;
        s++;
    }
}

static const char *lunette_open_capture(lunette_matcher *m, const char *s, const char *p, ptrdiff_t kind) {
    if (m->level >= MAX_CAPTURES) luaL_error(m->L, "too many captures");
    m->captures[m->level].start = s;
    m->captures[m->level].len = kind;
    m->level++;
    const char *end = lunette_match(m, s, p);
    if (end == NULL) m->level--;
    return end;
}

static const char *lunette_close_capture(lunette_matcher *m, const char *s, const char *p) {
    int open = -1;
    for (int k = m->level - 1; k >= 0; k--) {
        if (m->captures[k].len == CAPTURE_OPEN) { open = k; break; }
    }
    if (open < 0) luaL_error(m->L, "invalid pattern capture");
    m->captures[open].len = s - m->captures[open].start;
    const char *end = lunette_match(m, s, p);
    if (end == NULL) m->captures[open].len = CAPTURE_OPEN;
    return end;
}

// %1-%9 in a pattern: the index of a closed capture.
static int lunette_capture_index(lunette_matcher *m, int digit) {
    int k = digit - '1';
    if (k < 0 || k >= m->level || m->captures[k].len == CAPTURE_OPEN) {
        luaL_error(m->L, "invalid capture index %%%d", k + 1);
    }
    return k;
}

// %bxy: a balanced run from x to the matching y.
static const char *lunette_match_balance(lunette_matcher *m, const char *s, const char *p) {
    if (p >= m->pattern_end - 1) luaL_error(m->L, "malformed pattern (missing arguments to '%%b')");
    if (*s != *p) return NULL;     // at the subject's end *s is its NUL
    char open = p[0], close = p[1];
    int depth = 1;
    while (++s < m->subject_end) {
        lunette_match_step(m);
        if (*s == close) {
            if (--depth == 0) return s + 1;
        } else if (*s == open) {
            depth++;
        }
    }
    return NULL;
}

// Matches pattern `p` at subject position `s`; returns the end of the
// match or NULL. Tail positions loop instead of recursing.
static const char *lunette_match(lunette_matcher *m, const char *s, const char *p) {
    if (m->depth_left-- == 0) luaL_error(m->L, "pattern too complex");
    while (p != m->pattern_end && s != NULL) {
        lunette_match_step(m);
        if (*p == '(') {
            s = p[1] == ')' ? lunette_open_capture(m, s, p + 2, CAPTURE_POSITION)
                            : lunette_open_capture(m, s, p + 1, CAPTURE_OPEN);
            break;
        }
        if (*p == ')') {
            s = lunette_close_capture(m, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == m->pattern_end) {
            if (s != m->subject_end) s = NULL;
            break;
        }
        if (*p == PATTERN_ESCAPE && p[1] == 'b') {
            s = lunette_match_balance(m, s, p + 2);
            if (s != NULL) p += 4;
            continue;
        }
        if (*p == PATTERN_ESCAPE && p[1] == 'f') {
            p += 2;
            if (*p != '[') luaL_error(m->L, "missing '[' after '%%f' in pattern");
            const char *ep = lunette_class_end(m, p);
            int before = s == m->subject ? 0 : (unsigned char)s[-1];
            int here = (unsigned char)*s;   // NUL at the end of the subject
            if (!lunette_in_set(before, p, ep - 1) && lunette_in_set(here, p, ep - 1)) {
                p = ep;
                continue;
            }
            s = NULL;
            break;
        }
        if (*p == PATTERN_ESCAPE && isdigit((unsigned char)p[1])) {
            int k = lunette_capture_index(m, (unsigned char)p[1]);
            size_t len = (size_t)m->captures[k].len;
            if ((size_t)(m->subject_end - s) >= len && memcmp(m->captures[k].start, s, len) == 0) {
                s += len;
                p += 2;
                continue;
            }
            s = NULL;
            break;
        }
        // A single-character class with an optional repetition suffix.
        const char *ep = lunette_class_end(m, p);
        if (!lunette_single_match(m, s, p, ep)) {
            if (*ep == '*' || *ep == '?' || *ep == '-') {   // zero repetitions are fine
                p = ep + 1;
                continue;
            }
            s = NULL;
            break;
        }
        if (*ep == '?') {
            const char *end = lunette_match(m, s + 1, ep + 1);
            if (end != NULL) {
                s = end;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (*ep == '+') {
            s = lunette_match_greedy(m, s + 1, p, ep);
            break;
        }
        if (*ep == '*') {
            s = lunette_match_greedy(m, s, p, ep);
            break;
        }
        if (*ep == '-') {
            s = lunette_match_lazy(m, s, p, ep);
            break;
        }
        s++;
        p = ep;
    }
    m->depth_left++;
    return s;
}

// MARK: - Captures

// Capture k as a value: a string, or an integer for a position capture.
// Without captures, capture 0 is the whole match s..e.
static void lunette_push_capture(lunette_matcher *m, int k, const char *s, const char *e) {
    if (k >= m->level) {
        if (k != 0) luaL_error(m->L, "invalid capture index %%%d", k + 1);
        lua_pushlstring(m->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t len = m->captures[k].len;
    if (len == CAPTURE_OPEN) luaL_error(m->L, "unfinished capture");
    if (len == CAPTURE_POSITION) {
        lua_pushinteger(m->L, (m->captures[k].start - m->subject) + 1);
    } else {
        lua_pushlstring(m->L, m->captures[k].start, (size_t)len);
    }
}

// Pushes all captures (or the whole match when there are none and `s` is
// given); returns how many.
static int lunette_push_captures(lunette_matcher *m, const char *s, const char *e) {
    int n = (m->level == 0 && s != NULL) ? 1 : m->level;
    luaL_checkstack(m->L, n, "too many captures");
    for (int k = 0; k < n; k++) lunette_push_capture(m, k, s, e);
    return n;
}

// MARK: - find and match

// Lua's start position for find/match/gmatch: 1-based, negative from the end.
static size_t lunette_start_index(lua_Integer pos, size_t len) {
    if (pos > 0) return (size_t)pos;
    if (pos == 0) return 1;
    if (pos < -(lua_Integer)len) return 1;
    return len + (size_t)pos + 1;
}

// True when the pattern has no special characters (NULs included).
static int lunette_is_plain(const char *p, size_t lp) {
    size_t at = 0;
    do {
        if (strpbrk(p + at, PATTERN_SPECIALS) != NULL) return 0;
        at += strlen(p + at) + 1;   // past the next NUL
    } while (at <= lp);
    return 1;
}

// memmem with step counting: the first `needle` in `hay`, or NULL.
static const char *lunette_find_plain(lua_State *L, const char *hay, size_t hay_len, const char *needle, size_t len) {
    if (len == 0) return hay;
    if (len > hay_len) return NULL;
    const char *last = hay + (hay_len - len);
    const char *at = hay;
    while (at <= last) {
        const char *first = memchr(at, *needle, (size_t)(last - at) + 1);
        if (first == NULL) return NULL;
        lunette_guard_steps(L, 1 + (uint32_t)(len < 64 ? len / 8 : 8));
        if (memcmp(first + 1, needle + 1, len - 1) == 0) return first;
        at = first + 1;
    }
    return NULL;
}

static int lunette_find_or_match(lua_State *L, int find) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = lunette_start_index(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || lunette_is_plain(p, lp))) {
        const char *at = lunette_find_plain(L, s + init, ls - init, p, lp);
        if (at == NULL) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, (at - s) + 1);
        lua_pushinteger(L, (at - s) + (lua_Integer)lp);
        return 2;
    }
    lunette_matcher m;
    int anchored = *p == '^';
    if (anchored) {
        p++;
        lp--;
    }
    lunette_matcher_init(&m, L, s, ls, p, lp);
    const char *from = s + init;
    do {
        lunette_matcher_reset(&m);
        const char *end = lunette_match(&m, from, p);
        if (end != NULL) {
            if (find) {
                lua_pushinteger(L, (from - s) + 1);
                lua_pushinteger(L, end - s);
                return lunette_push_captures(&m, NULL, NULL) + 2;
            }
            return lunette_push_captures(&m, from, end);
        }
    } while (from++ < m.subject_end && !anchored);
    luaL_pushfail(L);
    return 1;
}

// string.find(s, pattern [, init [, plain]])
static int lunette_string_find(lua_State *L) { return lunette_find_or_match(L, 1); }

// string.match(s, pattern [, init])
static int lunette_string_match(lua_State *L) { return lunette_find_or_match(L, 0); }

// MARK: - gmatch

typedef struct lunette_gmatch {
    const char *at;          // where the next search starts
    const char *pattern;
    const char *last_end;    // end of the last match (no empty match there again)
    lunette_matcher m;
} lunette_gmatch;

// The iterator gmatch returns (upvalues: subject, pattern, state).
static int lunette_gmatch_next(lua_State *L) {
    lunette_gmatch *g = (lunette_gmatch *)lua_touserdata(L, lua_upvalueindex(3));
    g->m.L = L;
    g->m.host = lunette_host_of(L);
    for (const char *from = g->at; from <= g->m.subject_end; from++) {
        lunette_matcher_reset(&g->m);
        const char *end = lunette_match(&g->m, from, g->pattern);
        if (end != NULL && end != g->last_end) {
            g->at = g->last_end = end;
            return lunette_push_captures(&g->m, from, end);
        }
    }
    return 0;
}

// string.gmatch(s, pattern [, init])
static int lunette_string_gmatch(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = lunette_start_index(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls) init = ls + 1;    // past the end: no matches
    lua_settop(L, 2);
    lunette_gmatch *g = (lunette_gmatch *)lua_newuserdatauv(L, sizeof *g, 0);
    lunette_matcher_init(&g->m, L, s, ls, p, lp);
    g->at = s + init;
    g->pattern = p;
    g->last_end = NULL;
    lua_pushcclosure(L, lunette_gmatch_next, 3);
    return 1;
}

// MARK: - gsub

// Appends the replacement string (argument 3) with %0-%9 and %% expanded.
static void lunette_add_replacement(lunette_matcher *m, luaL_Buffer *b, const char *s, const char *e) {
    lua_State *L = m->L;
    size_t len;
    const char *r = lua_tolstring(L, 3, &len);
    const char *escape;
    while ((escape = memchr(r, PATTERN_ESCAPE, len)) != NULL) {
        lunette_match_step(m);
        luaL_addlstring(b, r, (size_t)(escape - r));
        char c = escape[1];     // NUL when '%' ends the string
        if (c == PATTERN_ESCAPE) {
            luaL_addchar(b, c);
        } else if (c == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else if (isdigit((unsigned char)c)) {
            lunette_push_capture(m, c - '1', s, e);
            luaL_tolstring(L, -1, NULL);   // a position capture is a number
            lua_remove(L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(L, "invalid use of '%c' in replacement string", PATTERN_ESCAPE);
        }
        len -= (size_t)(escape + 2 - r);
        r = escape + 2;
    }
    luaL_addlstring(b, r, len);
}

// The output of a gsub. Subject bytes go into the buffer only when a
// substitution follows them (from `copied` on), so a gsub that changes
// nothing copies nothing and returns its subject, as Lua's does.
typedef struct lunette_gsub_output {
    luaL_Buffer b;
    const char *copied;            // subject bytes before this are in the buffer
    int changed;                   // something was substituted
    int slot;                      // a stack slot below the buffer, for a replacement value
} lunette_gsub_output;

// Appends the subject bytes from `copied` up to `upto`.
static void lunette_gsub_flush(lunette_gsub_output *out, const char *upto) {
    luaL_addlstring(&out->b, out->copied, (size_t)(upto - out->copied));
    out->copied = upto;
}

// Substitutes the match s..e by the kind of argument 3. A function or table
// that gives nil or false keeps the match (it stays with the uncopied bytes).
static void lunette_add_substitute(lunette_matcher *m, lunette_gsub_output *out, const char *s, const char *e, int kind) {
    lua_State *L = m->L;
    if (kind == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = lunette_push_captures(m, s, e);
        lua_call(L, n, 1);
    } else if (kind == LUA_TTABLE) {
        lunette_push_capture(m, 0, s, e);
        lua_gettable(L, 3);
    } else {
        lunette_gsub_flush(out, s);
        lunette_add_replacement(m, &out->b, s, e);
        out->copied = e;
        out->changed = 1;
        return;
    }
    if (!lua_toboolean(L, -1)) {          // nil or false: keep the match
        lua_pop(L, 1);
        return;
    }
    if (!lua_isstring(L, -1)) luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    lua_replace(L, out->slot);            // the buffer must be on top to take the bytes before it
    lunette_gsub_flush(out, s);
    lua_pushvalue(L, out->slot);
    luaL_addvalue(&out->b);
    out->copied = e;
    out->changed = 1;
}

// string.gsub(s, pattern, repl [, n])
static int lunette_string_gsub(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int kind = lua_type(L, 3);
    lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argexpected(L, kind == LUA_TNUMBER || kind == LUA_TSTRING || kind == LUA_TFUNCTION || kind == LUA_TTABLE,
                     3, "string/function/table");
    int anchored = *p == '^';
    if (anchored) {
        p++;
        lp--;
    }
    lunette_matcher m;
    lunette_matcher_init(&m, L, s, ls, p, lp);
    lunette_gsub_output out = { .copied = s, .changed = 0 };
    lua_settop(L, 4);
    lua_pushnil(L);
    out.slot = lua_gettop(L);
    luaL_buffinit(L, &out.b);
    const char *at = s, *last_end = NULL;
    lua_Integer count = 0;
    while (count < max) {
        lunette_matcher_reset(&m);
        const char *end = lunette_match(&m, at, p);
        if (end != NULL && end != last_end) {
            count++;
            lunette_add_substitute(&m, &out, at, end, kind);
            at = last_end = end;
        } else if (at < m.subject_end) {
            at++;
        } else {
            break;
        }
        if (anchored) break;
    }
    if (out.changed) {
        lunette_gsub_flush(&out, m.subject_end);
        luaL_pushresult(&out.b);
    } else {
        lua_pushvalue(L, 1);
    }
    lua_pushinteger(L, count);
    return 2;
}

// MARK: - rep

// string.rep(s, n [, sep]): Lua's own (upvalue 1), except that an empty
// result is returned at once instead of after n empty copies.
static int lunette_string_rep(lua_State *L) {
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n > 0 && l == 0 && lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    lua_CFunction stock = lua_tocfunction(L, lua_upvalueindex(1));
    return stock(L);
}

void lunette_install_guards(lua_State *L, int string_index, int table_index) {
    static const luaL_Reg guarded[] = {
        { "find", lunette_string_find }, { "match", lunette_string_match }, { "gmatch", lunette_string_gmatch },
        { "gsub", lunette_string_gsub }, { NULL, NULL },
    };
    string_index = lua_absindex(L, string_index);
    table_index = lua_absindex(L, table_index);
    for (const luaL_Reg *r = guarded; r->name != NULL; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, string_index, r->name);
    }
    lua_getfield(L, string_index, "rep");
    lua_pushcclosure(L, lunette_string_rep, 1);
    lua_setfield(L, string_index, "rep");
    lunette_install_table_guards(L, table_index);
}

int lunette_push_guarded_functions(lua_State *L) {
    lua_createtable(L, 0, 10);                      // string functions, then all
    lua_createtable(L, 0, 5);                       // table functions
    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 0);
    lua_getfield(L, -1, "rep");                     // Lua's rep, for the guarded one to wrap
    lua_setfield(L, -4, "rep");
    lua_pop(L, 1);
    lunette_install_guards(L, -2, -1);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {                  // copy the table functions over
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -5);
    }
    lua_pop(L, 1);
    return 1;
}
