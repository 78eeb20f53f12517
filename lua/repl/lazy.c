/* lua/repl/lazy.c - the REPL's lazy globals: `plot` and `help` exist from the start but load their
 * module on first use, so startup stays fast (mha.plot and the help docs are the largest
 * helpers). */
#include <string.h>

#include <lauxlib.h>

#include "lazy.h"

/* `plot` is require "mha.plot"; `help` is require("mha.repl").help, mha.help's help() with the
 * REPL's commands handed to it, so that help() lists them in a script too. */
static const struct { const char *name, *module, *field; } lazy_globals[] = {
    {"plot", "mha.plot", NULL},
    {"help", "mha.repl", "help"},
    {NULL, NULL, NULL}
};

/* __index of _G's metatable: loads a lazy global, stores it with rawset, and returns it. */
static int lazy_index(lua_State *L) {
    if (lua_type(L, 2) != LUA_TSTRING) return 0;
    const char *key = lua_tostring(L, 2);
    for (int i = 0; lazy_globals[i].name; i++) {
        if (strcmp(key, lazy_globals[i].name) != 0) continue;
        lua_getglobal(L, "require");
        lua_pushstring(L, lazy_globals[i].module);
        lua_call(L, 1, 1);
        if (lazy_globals[i].field) lua_getfield(L, -1, lazy_globals[i].field);
        lua_pushvalue(L, 2);
        lua_pushvalue(L, -2);
        lua_rawset(L, 1);
        return 1;
    }
    return 0;
}

void repl_lazy_globals(lua_State *L) {
    lua_pushglobaltable(L);
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, lazy_index);
    lua_setfield(L, -2, "__index");
    lua_createtable(L, 0, 2);
    for (int i = 0; lazy_globals[i].name; i++) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, lazy_globals[i].name);
    }
    lua_setfield(L, -2, "__lazy");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
}
