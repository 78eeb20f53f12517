/* lua/notebook/ljson.h - Lua values to JSON through jansson, for the notebook writers (module mha.json) and
 * the Jupyter kernel's messages. */
#ifndef MHA_LJSON_H
#define MHA_LJSON_H

#include <jansson.h>
#include <lua.h>

/* The value at idx as a new JSON value: nil -> null, booleans, integers, floats (NaN and infinities as
 * null), strings (valid UTF-8 only), tables as arrays when they are sequences (an empty table too) and
 * as objects otherwise or when marked by mha.json.object. NULL with a message pushed on failure. */
json_t *mha_lua_tojson(lua_State *L, int idx);

/* Pushes a JSON value as Lua: null -> nil ... objects and arrays as tables. */
void mha_lua_pushjson(lua_State *L, const json_t *v);

int luaopen_mha_json(lua_State *L);

#endif
