/* lua/notebook/ljson.c - module "mha.json": Lua values to and from JSON through jansson, so that
 * the notebook writers and the Jupyter kernel never build JSON text by hand. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ljson.h"

#define OBJECT_MT  "mha.json.object"   /* metatable marking a table as a JSON object (even when
                                          empty) */
#define MAX_DEPTH  64             /* deeper (or cyclic) tables are an error, not a stack overflow */

static int is_sequence(lua_State *L, int idx, size_t *n) {
    if (luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
        int object = strcmp(lua_tostring(L, -1), OBJECT_MT) == 0;
        lua_pop(L, 1);
        if (object) return 0;
    }
    size_t count = 0, len = lua_rawlen(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || (size_t)lua_tointeger(L, -1) > len) {
            lua_pop(L, 1);
            return 0;
        }
        count++;
    }
    *n = len;
    return count == len;
}

static json_t *tojson(lua_State *L, int idx, int depth) {
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return json_null();
    case LUA_TBOOLEAN: return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) return json_integer((json_int_t)lua_tointeger(L, idx));
        return isfinite(lua_tonumber(L, idx)) ? json_real(lua_tonumber(L, idx)) : json_null();
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        json_t *v = json_stringn(s, len);
        if (!v) {   /* not UTF-8: its bad bytes as U+FFFD, as ipykernel sends them */
            char *clean = json_utf8_clean(s, len, &len);
            v = clean ? json_stringn_nocheck(clean, len) : NULL;
            free(clean);
        }
        if (!v) lua_pushliteral(L, "json.encode: out of memory");
        return v;
    }
    case LUA_TTABLE: {
        if (depth >= MAX_DEPTH) {
            lua_pushliteral(L, "json.encode: tables nested too deep (or a cycle)");
            return NULL;
        }
        luaL_checkstack(L, 4, "json.encode");
        size_t n;
        if (is_sequence(L, idx, &n)) {
            json_t *array = json_array();
            for (size_t i = 1; array && i <= n; i++) {
                lua_rawgeti(L, idx, (lua_Integer)i);
                json_t *item = tojson(L, -1, depth + 1);
                if (!item) { lua_remove(L, -2); json_decref(array); return NULL; }
                lua_pop(L, 1);
                json_array_append_new(array, item);
            }
            return array;
        }
        json_t *object = json_object();
        lua_pushnil(L);
        while (object && lua_next(L, idx)) {
            if (lua_type(L, -2) != LUA_TSTRING) {
                const char *type = luaL_typename(L, -2);
                lua_pop(L, 2);
                json_decref(object);
                lua_pushfstring(L, "json.encode: an object's key is a %s, not a string", type);
                return NULL;
            }
            json_t *item = tojson(L, -1, depth + 1);
            if (!item) { lua_replace(L, -3); lua_pop(L, 1); json_decref(object); return NULL; }
            size_t keylen;
            const char *key = lua_tolstring(L, -2, &keylen);
            char *clean = json_utf8_clean(key, keylen, &keylen);   /* a key is UTF-8 too, and may
                                                                      hold a NUL */
            if (!clean) {
                json_decref(item);
                json_decref(object);
                lua_pop(L, 2);
                lua_pushliteral(L, "json.encode: out of memory");
                return NULL;
            }
            json_object_setn_new_nocheck(object, clean, keylen, item);
            free(clean);
            lua_pop(L, 1);
        }
        return object;
    }
    default:
        lua_pushfstring(L, "json.encode: a %s has no JSON form", luaL_typename(L, idx));
        return NULL;
    }
}

json_t *mha_lua_tojson(lua_State *L, int idx) {
    return tojson(L, idx, 0);
}

void mha_lua_pushjson(lua_State *L, const json_t *v) {
    luaL_checkstack(L, 4, "json.decode");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *item;
        lua_createtable(L, 0, (int)json_object_size(v));
        luaL_setmetatable(L, OBJECT_MT);
        json_object_foreach((json_t *)v, key, item) {
            mha_lua_pushjson(L, item);
            lua_setfield(L, -2, key);
        }
        break;
    }
    case JSON_ARRAY:
        lua_createtable(L, (int)json_array_size(v), 0);
        for (size_t i = 0; i < json_array_size(v); i++) {
            mha_lua_pushjson(L, json_array_get(v, i));
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
    case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    default: lua_pushnil(L); break;
    }
}

/* The UTF-8 sequence that starts at s (n bytes left): its length, or 0 when the bytes there are not
 * one. *taken is how many bytes to step over: the sequence, or its maximal invalid subpart
 * (the bytes that could start a sequence, Unicode 15 section 3.9), at least 1. Table 3-7 of the
 * standard, row by row. */
static size_t utf8_sequence(const unsigned char *s, size_t n, size_t *taken) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;   /* the range of the second byte */
    size_t len;
    if (c < 0x80) { *taken = 1; return 1; }
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;   /* no overlong form */
        if (c == 0xED) hi = 0x9F;   /* no surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;   /* no overlong form */
        if (c == 0xF4) hi = 0x8F;   /* nothing past U+10FFFF */
    } else { *taken = 1; return 0; }
    size_t i = 1;
    for (; i < len && i < n; i++) {
        unsigned char b = s[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) break;
    }
    *taken = i;
    return i == len ? len : 0;
}

char *json_utf8_clean(const char *s, size_t len, size_t *out_len) {
    if (len > (SIZE_MAX - 1) / 3) return NULL;   /* a lone byte becomes 3 */
    char *out = malloc(len * 3 + 1);
    if (!out) return NULL;
    const unsigned char *in = (const unsigned char *)s;
    size_t o = 0, taken;
    for (size_t i = 0; i < len; i += taken) {
        if (utf8_sequence(in + i, len - i, &taken)) {
            memcpy(out + o, in + i, taken);
            o += taken;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);   /* U+FFFD */
            o += 3;
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

/* json.utf8_clean(s) -> s when it is UTF-8, else a copy with each bad sequence replaced by
 * U+FFFD */
static int l_utf8_clean(lua_State *L) {
    size_t len, taken;
    const char *s = luaL_checklstring(L, 1, &len);
    size_t i = 0;
    while (i < len && utf8_sequence((const unsigned char *)s + i, len - i, &taken)) i += taken;
    if (i == len) {
        lua_settop(L, 1);
        return 1;
    }
    size_t out_len;
    char *out = json_utf8_clean(s, len, &out_len);
    if (!out) return luaL_error(L, "%s", "json.utf8_clean: out of memory");
    lua_pushlstring(L, out, out_len);
    free(out);
    return 1;
}

/* json.encode(value [, indent]) -> text; keys sorted, so the same value always gives the same
 * bytes */
static int l_encode(lua_State *L) {
    lua_Integer indent = luaL_optinteger(L, 2, 0);
    luaL_argcheck(L, indent >= 0 && indent <= 8, 2, "indent must be 0 to 8");
    lua_settop(L, 1);
    json_t *v = mha_lua_tojson(L, 1);
    if (!v) return lua_error(L);
    size_t flags = JSON_SORT_KEYS | JSON_ENCODE_ANY | (indent ? JSON_INDENT((size_t)indent) : JSON_COMPACT);
    char *text = json_dumps(v, flags);
    json_decref(v);
    if (!text) return luaL_error(L, "%s", "json.encode: out of memory");
    lua_pushstring(L, text);
    free(text);
    return 1;
}

/* json.decode(text) -> value, or nil and "json.decode: line L column C: why" */
static int l_decode(lua_State *L) {
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    json_error_t err;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &err);
    if (!v) {
        luaL_pushfail(L);
        lua_pushfstring(L, "json.decode: line %d column %d: %s", err.line, err.column, err.text);
        return 2;
    }
    mha_lua_pushjson(L, v);
    json_decref(v);
    return 1;
}

/* json.object([t]) -> t marked as an object, so that an empty one is written {} and not [] */
static int l_object(lua_State *L) {
    if (lua_isnoneornil(L, 1)) lua_newtable(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    luaL_setmetatable(L, OBJECT_MT);
    return 1;
}

static const luaL_Reg json_lib[] = {
    {"encode", l_encode},
    {"decode", l_decode},
    {"object", l_object},
    {"utf8_clean", l_utf8_clean},
    {NULL, NULL}
};

int luaopen_mha_json(lua_State *L) {
    luaL_newmetatable(L, OBJECT_MT);
    lua_pop(L, 1);
    luaL_newlib(L, json_lib);
    return 1;
}
