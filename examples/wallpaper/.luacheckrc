-- Lunette's globals for luacheck, written by `lunette types` (Lunette 0.1.0).
-- Do not edit: run `lunette types` again (it replaces a file that starts
-- with the line above). Reference: docs/authoring.md.
std = "lunette"
-- A provider's arguments are fixed by the host (ctx, config): not using one is fine.
unused_args = false
max_line_length = false
-- The definitions of `lunette types`, here and in the bundles of a folder of bundles.
exclude_files = { ".lunette/*", "**/.lunette/*" }
stds.lunette = {
  read_globals = {
    "assert",
    "error",
    "getmetatable",
    "ipairs",
    "next",
    "pairs",
    "pcall",
    "print",
    "rawequal",
    "rawget",
    "rawlen",
    "rawset",
    "select",
    "setmetatable",
    "tonumber",
    "tostring",
    "type",
    "xpcall",
    "warn",
    "load",
    "require",
    "_G",
    "_VERSION",
    string = { fields = { "byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "pack", "packsize", "rep", "reverse", "sub", "unpack", "upper" } },
    table = { fields = { "concat", "insert", "move", "pack", "remove", "sort", "unpack" } },
    math = { fields = { "abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log", "max", "maxinteger", "min", "mininteger", "modf", "pi", "rad", "random", "randomseed", "sin", "sqrt", "tan", "tointeger", "type", "ult" } },
    utf8 = { fields = { "char", "charpattern", "codepoint", "codes", "len", "offset" } },
    coroutine = { fields = { "close", "create", "isyieldable", "resume", "running", "status", "wrap", "yield" } },
    store = { fields = { "group" } },
    clock = { fields = { "now", "add", "startOfDay", "nextMidnight", "components", "iso", "parse" } },
    reload = { fields = { "timelines", "all", "controls", "allControls" } },
    host = { fields = { "usage" } },
    log = { fields = { "debug", "info", "warn", "error" } },
    activities = { fields = { "request", "list", "get", "enabled" } },
    os = { fields = { "time", "date", "clock" } },
    "widget",
    "intent",
    "query",
    "control",
    "activity",
  },
}
stds.lunette_tests = { read_globals = { "test" } }
files["**/tests/*.lua"] = { std = "+lunette_tests" }
files["**/*_test.lua"] = { std = "+lunette_tests" }
