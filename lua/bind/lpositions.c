/* lua/bind/lpositions.c - the pieces of attention as language models run it, bound to Lua:
 * mha.rope, mha.alibi_slopes, mha.alibi_bias, mha.sliding_window_mask and mha.sample
 * (core/nn/rope.h, attention/positions.h, nn/sample.h). */
#include <math.h>
#include <string.h>

#include "attention/positions.h"
#include "lauxmha.h"
#include "lmha.h"
#include "nn/rope.h"
#include "nn/sample.h"

/* A whole number >= least at arg, named what in fname's error. */
static size_t checkcount(lua_State *L, int arg, const char *fname, const char *what, lua_Integer least,
                         const char *why) {
    lua_Integer n = luaL_checkinteger(L, arg);
    if (n < least) luaL_error(L, "%s: %s must be at least %I%s, got %I", fname, what, (LUAI_UACINT)least, why,
                              (LUAI_UACINT)n);
    return (size_t)n;
}

/* rope(x [, {base = 10000, layout = "half" | "interleaved", offset = 0}]): x (..., L, D) turned
 * pair by pair. */
static int l_rope(lua_State *L) {
    static const char *const options[] = {"base", "layout", "offset", NULL};
    static const char *const layouts[] = {"half", "interleaved", NULL};
    mha_tensor *x = lmha_checktensor(L, 1);
    lmha_checkoptions(L, 2, "rope", options);
    char shape[MHA_SHAPE_BUF], context[MHA_SHAPE_BUF + 16];
    snprintf(context, sizeof context, " (x of shape %s)", lmha_shape(shape, x));
    mha_rope_options opt = {10000.0, MHA_ROPE_HALF, 0};
    opt.base = lmha_optnumber(L, 2, "base", 10000.0, "rope");
    opt.offset = (size_t)lmha_optcount(L, 2, "offset", 0, 0, "rope", context);
    if (!lua_isnoneornil(L, 2) && lua_getfield(L, 2, "layout") != LUA_TNIL) {
        const char *layout = lua_tostring(L, -1);
        size_t i = 0;
        while (layout && layouts[i] && strcmp(layout, layouts[i]) != 0) i++;
        if (lua_type(L, -1) != LUA_TSTRING || !layouts[i])
            return luaL_error(L, "rope: option layout must be \"half\" (GPT-NeoX, Hugging Face) or \"interleaved\" "
                              "(RoFormer, GPT-J, Meta's LLaMA), got %s%s", luaL_tolstring(L, -1, NULL), context);
        opt.layout = i == 0 ? MHA_ROPE_HALF : MHA_ROPE_INTERLEAVED;
    }
    lua_settop(L, 2);
    return lmha_result(L, mha_ag_rope(lmha_newtensor(L), x, &opt));
}

/* alibi_slopes(H) -> (H) */
static int l_alibi_slopes(lua_State *L) {
    size_t H = checkcount(L, 1, "alibi_slopes", "H", 1, " (one slope per head)");
    return lmha_result(L, mha_alibi_slopes(lmha_newtensor(L), H));
}

/* alibi_bias(H, L [, S]) -> (H, L, S), the queries being the last L of the S positions */
static int l_alibi_bias(lua_State *L) {
    size_t H = checkcount(L, 1, "alibi_bias", "H", 1, " (one slope per head)");
    size_t len = checkcount(L, 2, "alibi_bias", "L", 0, "");
    size_t S = lua_isnoneornil(L, 3) ? len : checkcount(L, 3, "alibi_bias", "S", 0, "");
    lua_settop(L, 3);
    return lmha_result(L, mha_alibi_bias(lmha_newtensor(L), H, len, S));
}

/* sliding_window_mask(L, W [, {sinks = 0, S = L}]) -> (L, S) bool, true: a query may not look. */
static int l_sliding_window_mask(lua_State *L) {
    static const char *const options[] = {"sinks", "S", NULL};
    size_t len = checkcount(L, 1, "sliding_window_mask", "L", 0, "");
    size_t W = checkcount(L, 2, "sliding_window_mask", "W", 1, " (a query sees itself)");
    lmha_checkoptions(L, 3, "sliding_window_mask", options);
    size_t sinks = (size_t)lmha_optcount(L, 3, "sinks", 0, 0, "sliding_window_mask", "");
    size_t S = (size_t)lmha_optcount(L, 3, "S", (lua_Integer)len, 0, "sliding_window_mask", "");
    lua_settop(L, 3);
    return lmha_result(L, mha_sliding_window_mask(lmha_newtensor(L), len, W, sinks, S));
}

/* sample(logits [, {temperature = 1, top_k =, top_p =, seed =}]): the 1-based index drawn from each
 * row of logits (..., V): a Lua integer for logits (V), else a (...) tensor. seed = s is
 * mha.seed(s) before the draw. */
static int l_sample(lua_State *L) {
    static const char *const options[] = {"temperature", "top_k", "top_p", "seed", NULL};
    mha_tensor *logits = lmha_totensor(L, 1, "sample");
    lmha_checkoptions(L, 2, "sample", options);
    mha_sample_options opt = {1.0, 0, 1.0, false, 0};
    opt.temperature = lmha_optnumber(L, 2, "temperature", 1.0, "sample");
    opt.top_k = (size_t)lmha_optcount(L, 2, "top_k", 0, 1, "sample", "");
    opt.top_p = lmha_optnumber(L, 2, "top_p", 1.0, "sample");
    if (!lua_isnoneornil(L, 2)) {
        opt.has_seed = lua_getfield(L, 2, "seed") != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (opt.has_seed) opt.seed = (uint64_t)lmha_optcount(L, 2, "seed", 0, 0, "sample", "");
    lua_settop(L, 2);
    mha_tensor *zero_based = lmha_newtensor(L);
    mha_status st = mha_sample(zero_based, logits, &opt);
    if (st != MHA_OK) return lmha_fail(L, st, "sample", NULL);
    if (logits->ndim == 1) {
        lua_pushinteger(L, (lua_Integer)mha_f32(zero_based)[0] + 1);
        return 1;
    }
    return lmha_result(L, mha_binary_scalar(lmha_newtensor(L), MHA_ADD, zero_based, 1.0f, false));
}

static const luaL_Reg positions_functions[] = {
    {"rope", l_rope},
    {"alibi_slopes", l_alibi_slopes},
    {"alibi_bias", l_alibi_bias},
    {"sliding_window_mask", l_sliding_window_mask},
    {"sample", l_sample},
    {NULL, NULL}
};

int lmha_open_positions(lua_State *L) {
    luaL_setfuncs(L, positions_functions, 0);
    return 0;
}
