// lunette-glue-compiler: compiles the host's Lua glue at build time (the
// CompileGlue plugin runs it for WidgetHost), so that no process compiles
// it again at run time (docs/ARCHITECTURE.md, "What the eighteenth stop
// changed").
//
//   lunette-glue-compiler OUTPUT.swift FILE.lua...
//
// Each FILE is compiled as LuaState.runGlue compiles it (text only, chunk
// name "@[host STEM]", STEM its name without ".lua") and dumped with its
// debug information, so its errors still name their lines. OUTPUT is a
// Swift file declaring `CompiledGlue`: each binary (as 64-bit words, which
// the Swift compiler reads far faster than one literal a byte), the length
// and FNV-1a hash of the text it came from, and `lua_ident` of the Lua
// library that compiled it. At run time a binary is used only by a Lua
// library with the same `lua_ident`, for the same text.
#include <lauxlib.h>
#include <lua.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned char *bytes; size_t length, capacity; } buffer;

static int append(lua_State *L, const void *p, size_t size, void *ud) {
    (void)L;
    buffer *b = ud;
    if (b->length + size > b->capacity) {
        size_t capacity = b->capacity ? b->capacity * 2 : 4096;
        while (capacity < b->length + size) capacity *= 2;
        unsigned char *grown = realloc(b->bytes, capacity);
        if (grown == NULL) return 1;
        b->bytes = grown;
        b->capacity = capacity;
    }
    memcpy(b->bytes + b->length, p, size);
    b->length += size;
    return 0;
}

static int read_file(const char *path, buffer *out) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return -1;
    unsigned char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (append(NULL, chunk, n, out) != 0) { fclose(f); errno = ENOMEM; return -1; }
    }
    int failed = ferror(f);
    fclose(f);
    return failed ? -1 : 0;
}

// FNV-1a, 64 bits: LuaState.seedCompiledGlue computes the same.
static uint64_t fnv1a(const unsigned char *bytes, size_t length) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < length; i++) { h ^= bytes[i]; h *= 0x100000001b3ULL; }
    return h;
}

static void swift_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) fprintf(out, "\\u{%x}", c);
        else fputc(c, out);
    }
    fputc('"', out);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: lunette-glue-compiler OUTPUT.swift FILE.lua...\n");
        return 2;
    }
    lua_State *L = luaL_newstate();
    if (L == NULL) { fprintf(stderr, "lunette-glue-compiler: cannot make a Lua state\n"); return 1; }
    // Written to a temporary file, then renamed: a failed run leaves no half-written output.
    size_t outlen = strlen(argv[1]);
    char *temporary = malloc(outlen + 5);
    if (temporary == NULL) return 1;
    memcpy(temporary, argv[1], outlen);
    memcpy(temporary + outlen, ".tmp", 5);
    FILE *out = fopen(temporary, "w");
    if (out == NULL) { fprintf(stderr, "lunette-glue-compiler: %s: %s\n", temporary, strerror(errno)); return 1; }
    fprintf(out, "// Generated at build time by lunette-glue-compiler (the CompileGlue plugin); not in the repository.\n");
    fprintf(out, "enum CompiledGlue {\n    struct Chunk {\n        let textLength: Int\n        let textHash: UInt64\n        let byteCount: Int\n        let words: [UInt64]\n    }\n\n");
    fprintf(out, "    /// `lua_ident` of the Lua library that compiled the chunks.\n    static let luaIdent = ");
    swift_string(out, lua_ident);
    fprintf(out, "\n\n    /// By the glue's name (its file's, without \".lua\").\n    static let chunks: [String: Chunk] = [\n");
    for (int i = 2; i < argc; i++) {
        const char *path = argv[i];
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        size_t stem = strlen(base);
        if (stem > 4 && strcmp(base + stem - 4, ".lua") == 0) stem -= 4;
        // The stem names the glue in Swift and in Lua's errors: plain characters only, each stem once.
        for (size_t k = 0; k < stem; k++) {
            char c = base[k];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
                fprintf(stderr, "%s: a glue file's name may hold letters, digits, '_' and '-' only\n", path);
                fclose(out); remove(temporary); return 1;
            }
        }
        for (int j = 2; j < i; j++) {
            const char *other = strrchr(argv[j], '/');
            other = other ? other + 1 : argv[j];
            if (strncmp(other, base, stem) == 0 && (other[stem] == 0 || strcmp(other + stem, ".lua") == 0)) {
                fprintf(stderr, "%s: another glue file has the name %.*s (%s)\n", path, (int)stem, base, argv[j]);
                fclose(out); remove(temporary); return 1;
            }
        }
        buffer text = {0}, binary = {0};
        if (read_file(path, &text) != 0) {
            fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
            fclose(out); remove(temporary); return 1;
        }
        char name[512];
        snprintf(name, sizeof name, "@[host %.*s]", (int)stem, base);
        if (luaL_loadbufferx(L, (const char *)text.bytes, text.length, name, "t") != LUA_OK) {
            fprintf(stderr, "%s: %s\n", path, lua_tostring(L, -1));
            fclose(out); remove(temporary); return 1;
        }
        if (lua_dump(L, append, &binary, 0) != 0 || binary.length == 0) {
            fprintf(stderr, "%s: cannot dump its compiled form\n", path);
            fclose(out); remove(temporary); return 1;
        }
        lua_pop(L, 1);
        fprintf(out, "        \"%.*s\": Chunk(textLength: %zu, textHash: 0x%016llx, byteCount: %zu, words: [", (int)stem, base,
                text.length, (unsigned long long)fnv1a(text.bytes, text.length), binary.length);
        for (size_t w = 0; w < (binary.length + 7) / 8; w++) {
            uint64_t word = 0;   // little-endian, whatever this machine's order
            for (size_t k = 0; k < 8 && w * 8 + k < binary.length; k++) word |= (uint64_t)binary.bytes[w * 8 + k] << (8 * k);
            fprintf(out, "%s%s0x%llx", w ? "," : "", w % 8 == 0 ? "\n            " : " ", (unsigned long long)word);
        }
        fprintf(out, "]),\n");
        free(text.bytes);
        free(binary.bytes);
    }
    fprintf(out, "    ]\n}\n");
    if (fclose(out) != 0 || rename(temporary, argv[1]) != 0) {
        fprintf(stderr, "lunette-glue-compiler: cannot write %s: %s\n", argv[1], strerror(errno));
        remove(temporary);
        return 1;
    }
    lua_close(L);
    free(temporary);
    return 0;
}
