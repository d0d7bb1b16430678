// The system's Lua 5.4 headers. Include paths and link flags come from
// pkg-config (lua5.4), so nothing here names a directory.
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>
