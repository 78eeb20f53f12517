/* lua/notebook/ljson.h - Lua values to JSON through jansson, for the notebook writers
 * (module mha.json) and the Jupyter kernel's messages. */
#ifndef MHA_LJSON_H
#define MHA_LJSON_H

#include <jansson.h>
#include <lua.h>

/* The value at idx as a new JSON value: nil -> null, booleans, integers, floats
 * (NaN and infinities as null), strings (bytes that are not UTF-8 as U+FFFD: json_utf8_clean),
 * tables as arrays when they are sequences (an empty table too) and as objects otherwise or when
 * marked by mha.json.object. NULL with a message pushed on failure. */
json_t *mha_lua_tojson(lua_State *L, int idx);

/* Pushes a JSON value as Lua: null -> nil ... objects and arrays as tables. */
void mha_lua_pushjson(lua_State *L, const json_t *v);

/* s (len bytes) with each byte sequence that is not UTF-8 (its maximal invalid subpart) replaced by
 * U+FFFD, as Python's decode(errors="replace") and so ipykernel do: a new NUL-terminated string of
 * *out_len bytes for the caller to free, or NULL when out of memory.
 * (Lua: mha.json.utf8_clean(s).) */
char *json_utf8_clean(const char *s, size_t len, size_t *out_len);

int luaopen_mha_json(lua_State *L);

#endif
