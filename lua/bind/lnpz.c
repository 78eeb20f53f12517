/* lua/bind/lnpz.c - checkpoints: mha.save and mha.load of NumPy .npz archives, a Lua table name ->
 * tensor on one side and np.savez's zip of NAME.npy members on the other
 * (core/io/npz.c reads and writes the zip).
 *
 *   mha.save("m.npz", m:state_dict())            -- np.load("m.npz") reads it
 *   sd = mha.load("m.npz")                       -- sd.weight, ... */
#include <stdlib.h>
#include <string.h>

#include "lauxmha.h"
#include "lmha.h"
#include "io/npz.h"

#define MHA_NPZ_SCRATCH_T "mha.npz" /* an archive on its way into Lua: __gc frees what is not handed
                                       over */

static int scratch_gc(lua_State *L) {
    mha_npz_release((mha_npz *)luaL_checkudata(L, 1, MHA_NPZ_SCRATCH_T));
    return 0;
}

static mha_npz *new_scratch(lua_State *L) {
    mha_npz *archive = (mha_npz *)lua_newuserdatauv(L, sizeof *archive, 0);
    memset(archive, 0, sizeof *archive);
    if (luaL_newmetatable(L, MHA_NPZ_SCRATCH_T)) {
        lua_pushcfunction(L, scratch_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return archive;
}

int lmha_npz_path(const char *path) {
    size_t len = strlen(path);
    return len >= 4 && (strcmp(path + len - 4, ".npz") == 0 || strcmp(path + len - 4, ".NPZ") == 0);
}

/* Pushes the archive at path as a table name -> tensor. */
int lmha_npz_load(lua_State *L, const char *path) {
    mha_npz *archive = new_scratch(L);
    mha_status st = mha_npz_load(archive, path);
    if (st != MHA_OK) return lmha_fail(L, st, "load", NULL);
    lua_createtable(L, 0, (int)archive->count);
    for (size_t i = 0; i < archive->count; i++) {
        lmha_result(L, mha_share(lmha_newtensor(L), &archive->entries[i].tensor));
        lua_setfield(L, -2, archive->entries[i].name);
    }
    mha_npz_release(archive); /* the tensors share the storages; the scratch is collected empty */
    return 1;
}

/* True when the table at idx has a string key: a name -> tensor table, which only a .npz can
 * hold. */
int lmha_npz_named_table(lua_State *L, int idx) {
    if (!lua_istable(L, idx)) return 0;
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING) { lua_pop(L, 1); return 1; }
    }
    return 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds name -> the value at the top (popped) to the table at `values`, refusing a name given
 * twice. */
static void add_member(lua_State *L, int values, const char *path, const char *name) {
    if (lua_getfield(L, values, name) != LUA_TNIL)
        luaL_error(L, "save: '%s': the name '%s' is given twice (the integer key k is saved as arr_<k-1>, as np.savez "
                   "names positional arrays)", path, name);
    lua_pop(L, 1);
    lua_setfield(L, values, name);
}

/* A module (mha.nn's, whose metatable has __module_class, or a MultiheadAttention) rather than its
 * state. */
static int is_module(lua_State *L, int idx) {
    if (luaL_testudata(L, idx, MHA_MULTIHEAD_T)) return 1;
    if (!lua_getmetatable(L, idx)) return 0;
    int module = lua_getfield(L, -1, "__module_class") != LUA_TNIL;
    lua_pop(L, 2);
    return module;
}

/* mha.save(path, value [, {compressed = false}]) for a .npz path: value is a table name -> tensor
 * (or number or nested table), its integer keys 1, 2, ... saved as arr_0, arr_1, ... as np.savez
 * names positional arrays, or a single tensor saved as arr_0. Members are written in sorted name
 * order. */
int lmha_npz_save(lua_State *L, const char *path, int value, int opts) {
    static const char *const options[] = {"compressed", NULL};
    value = lua_absindex(L, value);
    lmha_checkoptions(L, opts, "save", options);
    int compress = lmha_optboolean(L, opts, "compressed", 0, "save");
    if (is_module(L, value))
        return luaL_error(L, "save: '%s': save the module's state: mha.save(\"%s\", m:state_dict())", path, path);
    lua_newtable(L);
    int values = lua_gettop(L);
    if (lmha_testtensor(L, value) || lua_type(L, value) == LUA_TNUMBER) {
        lua_pushvalue(L, value);
        add_member(L, values, path, "arr_0");
    } else if (lua_istable(L, value)) {
        lua_pushnil(L);
        while (lua_next(L, value)) {
            lua_pushvalue(L, -2);
            if (lua_type(L, -1) == LUA_TSTRING) {
                size_t len;
                const char *name = lua_tolstring(L, -1, &len);
                if (len == 0 || strlen(name) != len)
                    return luaL_error(L, "save: '%s': a tensor name must be a non-empty string without NUL bytes", path);
                lua_pushvalue(L, -2);
                add_member(L, values, path, name);
                lua_pop(L, 1);
            } else if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1) {
                const char *name = lua_pushfstring(L, "arr_%I", (LUAI_UACINT)(lua_tointeger(L, -1) - 1));
                lua_pushvalue(L, -3);
                add_member(L, values, path, name);
                lua_pop(L, 2);
            } else {
                return luaL_error(L, "save: '%s': the table has the key %s; a .npz holds tensors by name (string keys) "
                                  "or by position (1, 2, ...)", path, luaL_tolstring(L, -1, NULL));
            }
            lua_pop(L, 1);
        }
    } else {
        return luaL_error(L, "save: '%s': a .npz archive holds a table name -> tensor, got %s", path,
                          luaL_typename(L, value));
    }
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, values)) { lua_pop(L, 1); n++; }
    const char **names = (const char **)lua_newuserdatauv(L, (n ? n : 1) * sizeof *names, 0);
    const mha_tensor **tensors = (const mha_tensor **)lua_newuserdatauv(L, (n ? n : 1) * sizeof *tensors, 0);
    size_t k = 0;
    lua_pushnil(L);
    /* the keys stay in values */
    while (lua_next(L, values)) { lua_pop(L, 1); names[k++] = lua_tostring(L, -1); }
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        lua_getfield(L, values, names[i]);
        /* ragged tables are named so */
        lua_pushfstring(L, "save: '%s': member '%s'", path, names[i]);
        mha_tensor *t = lmha_totensor(L, -2, lua_tostring(L, -1));
        if (t->storage == NULL) return luaL_error(L, "save: '%s': member '%s' is a closed tensor", path, names[i]);
        tensors[i] = t;
        lua_pop(L, 1);
        lua_setfield(L, values, names[i]); /* the converted tensor replaces the value, which keeps
                                              it alive */
    }
    mha_status st = mha_npz_save(path, names, tensors, n, compress);
    if (st != MHA_OK) return lmha_fail(L, st, "save", NULL);
    return 0;
}
