/* lua/sys/ldir.c - module "mha.dir": the names in a folder, read with opendir/readdir, so no Lua
 * helper needs a shell (`ls` through io.popen runs whatever a folder name holds: "$(touch x)"). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>

#include "lsys.h"

#define DIR_T "mha.dir.Handle"

/* An open folder, boxed so that __gc closes it if pushing a name raises (out of memory). */
typedef struct dir_box {
    DIR *d;
} dir_box;

static int box_gc(lua_State *L) {
    dir_box *box = (dir_box *)luaL_checkudata(L, 1, DIR_T);
    if (box->d != NULL) closedir(box->d);
    box->d = NULL;
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* dir.list(path) -> {names...} sorted bytewise, without "." and ".." | nil, message
 * The names are plain strings: nothing in them is ever interpreted. */
static int dir_list(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    dir_box *box = (dir_box *)lua_newuserdatauv(L, sizeof *box, 0);
    box->d = NULL;
    luaL_setmetatable(L, DIR_T);
    box->d = opendir(path);
    if (box->d == NULL) {
        luaL_pushfail(L);
        lua_pushfstring(L, "%s: %s", path, strerror(errno));
        return 2;
    }
    lua_newtable(L);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(box->d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        lua_pushstring(L, e->d_name);
        lua_rawseti(L, -2, (lua_Integer)++n);
    }
    closedir(box->d);
    box->d = NULL;
    /* sorted here, so the order never depends on the file system: pointers into the strings the
     * table keeps alive, sorted, then written back in order */
    const char **names = (const char **)lua_newuserdatauv(L, (n ? n : 1) * sizeof *names, 0);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, -2, (lua_Integer)i + 1);
        names[i] = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    qsort(names, n, sizeof *names, by_name);
    lua_createtable(L, n < 1u << 20 ? (int)n : 0, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static const luaL_Reg dir_funcs[] = {
    {"list", dir_list},
    {NULL, NULL}
};

int luaopen_mha_dir(lua_State *L) {
    if (luaL_newmetatable(L, DIR_T)) {
        lua_pushcfunction(L, box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    luaL_newlib(L, dir_funcs);
    return 1;
}
