/* lua/bind/lautograd.c - the Lua face of core/autograd: t:requires_grad, t:grad, t:backward,
 * t:detach, t:zero_grad, mha.no_grad, and the plain backward functions a lesson can call by
 * hand. */
#include "lautograd.h"

#include <lauxlib.h>

#include "autograd/autograd_ops.h"
#include "attention/attention.h"
#include "lauxmha.h"
#include "nn/nn.h"
#include "attention/sdpa.h"

#include <math.h>
#include <string.h>

/* t:requires_grad(true|false) marks a leaf and returns t; t:requires_grad() reads the flag. */
static int t_requires_grad(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (lua_isnone(L, 2)) {
        lua_pushboolean(L, mha_ag_requires(t));
        return 1;
    }
    if (!lua_isboolean(L, 2))
        return luaL_error(L, "requires_grad: the flag must be true or false, got %s", luaL_typename(L, 2));
    if (mha_requires_grad(t, lua_toboolean(L, 2)) != MHA_OK) return lmha_fail(L, MHA_E_ARG, "requires_grad", NULL);
    lua_settop(L, 1);
    return 1;
}

/* t:grad(): the gradient accumulated by backward (a tensor of t's shape), or nil before any. */
static int t_grad(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (!t->ag || !t->ag->grad.storage) {
        lua_pushnil(L);
        return 1;
    }
    return lmha_result(L, mha_grad(lmha_newtensor(L), t));
}

/* t:zero_grad(): forget the gradient (t:grad() is nil again), as torch's
 * zero_grad(set_to_none=True). */
static int t_zero_grad(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    mha_zero_grad(t);
    lua_settop(L, 1);
    return 1;
}

/* t:set_grad(g or nil): sets the gradient to a copy of g (t.grad = g in torch). */
static int t_set_grad(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    mha_tensor *g = lua_isnoneornil(L, 2) ? NULL : lmha_checktensor(L, 2);
    mha_status st = mha_set_grad(t, g);
    if (st != MHA_OK) return lmha_fail(L, st, "set_grad", NULL);
    lua_settop(L, 1);
    return 1;
}

/* A table that holds options ({retain_graph = true}, {gradient = g}), not a gradient's numbers
 * ({{1, 2}}). */
static bool is_options(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE) return false;
    bool numbers = lua_rawgeti(L, idx, 1) != LUA_TNIL;
    lua_pop(L, 1);
    return !numbers;
}

/* loss:backward() for a one-element loss; y:backward(grad) with grad of y's shape otherwise;
 * options last: loss:backward{retain_graph = true}, y:backward(grad, {retain_graph = true}) or
 * y:backward{gradient = grad, ...}. retain_graph keeps the graph's saved tensors for another
 * backward (torch's retain_graph=True). */
static int t_backward(lua_State *L) {
    static const char *const names[] = {"gradient", "retain_graph", NULL};
    mha_tensor *t = lmha_checktensor(L, 1);
    int opts = is_options(L, 2) ? 2 : 3, garg = 2;
    lmha_checkoptions(L, opts, "backward", names);
    if (opts == 2) { /* the gradient, if any, is an option */
        lua_settop(L, 2);
        lua_getfield(L, 2, "gradient"); /* at 3 */
        garg = 3;
    }
    mha_tensor *g = lua_isnoneornil(L, garg) ? NULL : lmha_totensor(L, garg, "backward");
    bool retain = lmha_optboolean(L, opts, "retain_graph", false, "backward");
    mha_status st = mha_backward_retain(t, g, retain);
    if (st != MHA_OK) return lmha_fail(L, st, "backward", NULL);
    return 0;
}

/* t:detach(): the same data (shared storage), outside the graph. */
static int t_detach(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    return lmha_result(L, mha_detach(lmha_newtensor(L), t));
}

/* t:is_leaf(): true for a tensor not made by a recorded op. */
static int t_is_leaf(lua_State *L) {
    lua_pushboolean(L, mha_ag_is_leaf(lmha_checktensor(L, 1)));
    return 1;
}

/* t:grad_fn(): the name of the op that made t ("mul", "matmul", ...), or nil for a leaf. */
static int t_grad_fn(lua_State *L) {
    const char *name = mha_ag_fn_name(lmha_checktensor(L, 1));
    if (name) lua_pushstring(L, name);
    else lua_pushnil(L);
    return 1;
}

/* mha.no_grad(f, ...): f(...) with nothing recorded; the mode is restored when f raises too. */
static int l_no_grad(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    mha_no_grad_enter();
    int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    mha_no_grad_exit();
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

/* mha.is_grad_enabled(): false inside mha.no_grad. */
static int l_is_grad_enabled(lua_State *L) {
    lua_pushboolean(L, mha_grad_enabled());
    return 1;
}

/* ---- ops new with gradients: log_softmax, embedding, cross_entropy ---- */

/* The 1-based class/row indices at arg (a tensor of whole numbers, a number or a nested table),
 * each in [1, count] or equal to *ignore (when ignore is not NULL), as a new 0-based float tensor
 * pushed on the stack (an ignored entry becomes *ignore - 1). */
static mha_tensor *checkindices(lua_State *L, int arg, size_t count, const float *ignore, const char *fname,
                                const char *argname) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *given = lmha_totensor(L, arg, fname);
    if (given->dtype != MHA_FLOAT32)
        luaL_error(L, "%s: %s %s is bool; expected whole numbers from 1 to %I", fname, argname, lmha_shape(shape, given),
                   (LUAI_UACINT)count);
    mha_tensor c = MHA_TENSOR_EMPTY;
    if (mha_contiguous(&c, given) != MHA_OK) lmha_fail(L, MHA_E_NOMEM, fname, NULL);
    const float *p = mha_f32(&c);
    for (size_t i = 0, n = mha_numel(&c); i < n; i++) {
        if (ignore && p[i] == *ignore) continue;
        if (!(p[i] >= 1.0f && p[i] <= (float)count && p[i] == floorf(p[i]))) {
            double bad = p[i];
            mha_release(&c);
            /* 5, not 5.0 */
            if (bad == floor(bad) && fabs(bad) < 1e15) lua_pushfstring(L, "%I", (LUAI_UACINT)bad);
            else lua_pushfstring(L, "%f", (lua_Number)bad);
            luaL_error(L, "%s: %s %s: entry %I is %s; expected a whole number from 1 to %I (1-based)", fname, argname,
                       lmha_shape(shape, given), (LUAI_UACINT)(i + 1), lua_tostring(L, -1), (LUAI_UACINT)count);
        }
    }
    mha_release(&c);
    mha_tensor *zero_based = lmha_newtensor(L);
    lmha_result(L, mha_binary_scalar(zero_based, MHA_SUB, given, 1.0f, false));
    return zero_based;
}

/* log_softmax(x, dim): log(softmax(x)) computed stably; the dim is required, as for softmax. */
static int l_log_softmax(lua_State *L) {
    mha_tensor *x = lmha_totensor(L, 1, "log_softmax");
    size_t dim = lmha_checktdim(L, 2, x, x->ndim, "log_softmax");
    return lmha_result(L, mha_ag_log_softmax(lmha_newtensor(L), x, dim));
}

/* embedding(indices, weight): the rows of weight (num_embeddings, E) at the 1-based indices. */
static int l_embedding(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *weight = lmha_checktensor(L, 2);
    if (weight->ndim != 2)
        return luaL_error(L, "embedding: weight %s must be 2-D (num_embeddings, embedding_dim)", lmha_shape(shape, weight));
    mha_tensor *indices = checkindices(L, 1, weight->shape[0], NULL, "embedding", "indices");
    return lmha_result(L, mha_ag_embedding(lmha_newtensor(L), indices, weight));
}

/* The number of classes of logits: dim 2, or dim 1 of 1-D logits (torch's layout). */
static size_t classes_of(lua_State *L, const mha_tensor *logits) {
    if (logits->ndim == 0) luaL_error(L, "%s", "cross_entropy: logits () is a scalar; expected (C), (N,C) or (N,C,d1,...)");
    return logits->shape[logits->ndim == 1 ? 0 : 1];
}

/* The options of cross_entropy at idx, torch's: {ignore_index = -100, reduction = "mean",
 * label_smoothing = 0}. ignore_index is compared with the targets as the user gives them (1-based);
 * *ignore receives it. */
static mha_ce_options checkceoptions(lua_State *L, int idx, float *ignore, const char *fname) {
    static const char *const names[] = {"ignore_index", "reduction", "label_smoothing", NULL};
    static const char *const reductions[] = {"mean", "sum", "none", NULL};
    lmha_checkoptions(L, idx, fname, names);
    mha_ce_options opt = {MHA_REDUCTION_MEAN, true, -101.0f, 0.0f};
    *ignore = -100.0f;
    if (lua_isnoneornil(L, idx)) return opt;
    if (lua_getfield(L, idx, "ignore_index") != LUA_TNIL) {
        int whole = 0;
        lua_Integer v = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &whole) : 0;
        if (!whole)
            luaL_error(L, "%s: option ignore_index must be a whole number (a target value to skip), got %s", fname,
                       luaL_tolstring(L, -1, NULL));
        if (v < -(1 << 24) || v > (1 << 24))
            luaL_error(L, "%s: option ignore_index %I is out of range (at most 2^24 in size)", fname, (LUAI_UACINT)v);
        *ignore = (float)v;
    }
    if (lua_getfield(L, idx, "reduction") != LUA_TNIL) {
        const char *r = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int i = 0;
        while (r && reductions[i] && strcmp(r, reductions[i]) != 0) i++;
        if (!r || !reductions[i])
            luaL_error(L, "%s: option reduction must be \"mean\", \"sum\" or \"none\", got %s", fname,
                       luaL_tolstring(L, -1, NULL));
        opt.reduction = i == 0 ? MHA_REDUCTION_MEAN : i == 1 ? MHA_REDUCTION_SUM : MHA_REDUCTION_NONE;
    }
    if (lua_getfield(L, idx, "label_smoothing") != LUA_TNIL) {
        if (lua_type(L, -1) != LUA_TNUMBER || !(lua_tonumber(L, -1) >= 0.0 && lua_tonumber(L, -1) <= 1.0))
            luaL_error(L, "%s: option label_smoothing must be a number from 0 to 1, got %s", fname,
                       luaL_tolstring(L, -1, NULL));
        opt.label_smoothing = (float)lua_tonumber(L, -1);
    }
    lua_pop(L, 3);
    opt.ignore_index = *ignore - 1.0f; /* the core sees 0-based targets */
    return opt;
}

/* cross_entropy(logits, targets [, {ignore_index=, reduction=, label_smoothing=}]): torch's
 * F.cross_entropy with 1-based targets. */
static int l_cross_entropy(lua_State *L) {
    mha_tensor *logits = lmha_checktensor(L, 1);
    float ignore;
    mha_ce_options opt = checkceoptions(L, 3, &ignore, "cross_entropy");
    lua_settop(L, 3); /* the converted targets go above the arguments */
    mha_tensor *targets = checkindices(L, 2, classes_of(L, logits), &ignore, "cross_entropy", "targets");
    return lmha_result(L, mha_ag_cross_entropy(lmha_newtensor(L), logits, targets, &opt));
}

/* ---- the plain backward functions ---- */

/* softmax_backward(dy, y, dim) -> dx, for y = softmax(x, dim) */
static int l_softmax_backward(lua_State *L) {
    mha_tensor *dy = lmha_checktensor(L, 1), *y = lmha_checktensor(L, 2);
    size_t dim = lmha_checktdim(L, 3, y, y->ndim, "softmax_backward");
    return lmha_result(L, mha_softmax_backward(lmha_newtensor(L), dy, y, dim));
}

/* log_softmax_backward(dy, y, dim) -> dx, for y = log_softmax(x, dim) */
static int l_log_softmax_backward(lua_State *L) {
    mha_tensor *dy = lmha_checktensor(L, 1), *y = lmha_checktensor(L, 2);
    size_t dim = lmha_checktdim(L, 3, y, y->ndim, "log_softmax_backward");
    return lmha_result(L, mha_log_softmax_backward(lmha_newtensor(L), dy, y, dim));
}

/* linear_backward(dy, x, W) -> dx, dW, db */
static int l_linear_backward(lua_State *L) {
    mha_tensor *dy = lmha_checktensor(L, 1), *x = lmha_checktensor(L, 2), *W = lmha_checktensor(L, 3);
    mha_tensor *dx = lmha_newtensor(L), *dW = lmha_newtensor(L), *db = lmha_newtensor(L);
    mha_status st = mha_linear_backward(dx, dW, db, dy, x, W);
    if (st != MHA_OK) return lmha_fail(L, st, "linear_backward", NULL);
    return 3;
}

/* layer_norm_backward(dy, x, normalized_ndim [, weight [, eps]]) -> dx, dweight, dbias */
static int l_layer_norm_backward(lua_State *L) {
    mha_tensor *dy = lmha_checktensor(L, 1), *x = lmha_checktensor(L, 2);
    lua_Integer nd = luaL_checkinteger(L, 3);
    if (nd < 1 || (size_t)nd > x->ndim)
        return luaL_error(L, "layer_norm_backward: normalized_ndim %I must be from 1 to x's %I dims", (LUAI_UACINT)nd,
                          (LUAI_UACINT)x->ndim);
    mha_tensor *w = lua_isnoneornil(L, 4) ? NULL : lmha_checktensor(L, 4);
    float eps = (float)luaL_optnumber(L, 5, 1e-5);
    lua_settop(L, 5);
    mha_tensor *dx = lmha_newtensor(L), *dw = lmha_newtensor(L), *db = lmha_newtensor(L);
    mha_status st = mha_layer_norm_backward(dx, dw, db, dy, x, (size_t)nd, w, eps);
    if (st != MHA_OK) return lmha_fail(L, st, "layer_norm_backward", NULL);
    return 3;
}

/* embedding_backward(dy, indices, num_embeddings) -> dweight (indices 1-based) */
static int l_embedding_backward(lua_State *L) {
    mha_tensor *dy = lmha_checktensor(L, 1);
    lua_Integer count = luaL_checkinteger(L, 3);
    if (count < 1) return luaL_error(L, "embedding_backward: num_embeddings %I must be positive", (LUAI_UACINT)count);
    mha_tensor *indices = checkindices(L, 2, (size_t)count, NULL, "embedding_backward", "indices");
    return lmha_result(L, mha_embedding_backward(lmha_newtensor(L), dy, indices, (size_t)count));
}

/* cross_entropy_backward(logits, targets [, dloss [, options]]) -> dlogits; dloss (1 by default) is
 * a number or a scalar tensor, or for reduction "none" a tensor of targets' shape. */
static int l_cross_entropy_backward(lua_State *L) {
    static const char *const fname = "cross_entropy_backward";
    mha_tensor *logits = lmha_checktensor(L, 1);
    float ignore;
    mha_ce_options opt = checkceoptions(L, 4, &ignore, fname);
    lua_settop(L, 4); /* the converted targets and dloss go above the arguments */
    mha_tensor *targets = checkindices(L, 2, classes_of(L, logits), &ignore, fname, "targets");
    if (lua_isnil(L, 3)) {
        lua_pushnumber(L, 1.0);
        lua_replace(L, 3);
    }
    mha_tensor *dloss = lmha_totensor(L, 3, fname);
    return lmha_result(L, mha_cross_entropy_backward(lmha_newtensor(L), dloss, logits, targets, &opt));
}

/* sdpa_backward(dout, q, k, v [, {attn_mask=, is_causal=, scale=, weights=, out=, enable_gqa=}])
 * -> dq, dk, dv [, dmask]; with enable_gqa, dk and dv (..., H_kv, S, E) sum over each group of
 * query heads. With weights (the forward's) the plain backward runs; else out
 * (the forward's output) is needed and the fused backward recomputes the weights tile by tile. A
 * float attn_mask gets its gradient too (dmask). */
static int l_sdpa_backward(lua_State *L) {
    static const char *const fname = "sdpa_backward";
    static const char *const options[] = {"attn_mask", "is_causal", "scale", "weights", "out", "enable_gqa", NULL};
    mha_tensor *dout = lmha_checktensor(L, 1), *q = lmha_checktensor(L, 2), *k = lmha_checktensor(L, 3),
               *v = lmha_checktensor(L, 4);
    lmha_checkoptions(L, 5, fname, options);
    mha_sdpa_options opt = {0};
    opt.attn_mask = lmha_opttensor(L, 5, "attn_mask", fname);
    opt.is_causal = lmha_optboolean(L, 5, "is_causal", 0, fname);
    opt.enable_gqa = lmha_optboolean(L, 5, "enable_gqa", 0, fname);
    const mha_tensor *weights = lmha_opttensor(L, 5, "weights", fname), *out = lmha_opttensor(L, 5, "out", fname);
    opt.scale = (float)lmha_optpositive(L, 5, "scale", 0.0, fname);   /* 0: 1/sqrt(D) */
    if (!weights && !out)
        return luaL_error(L, "%s: give the forward's weights (plain backward) or its output out (fused backward) in the "
                             "options, e.g. {weights = w} or {out = o}", fname);
    lua_settop(L, 5);
    mha_tensor *dq = lmha_newtensor(L), *dk = lmha_newtensor(L), *dv = lmha_newtensor(L);
    const bool float_mask = opt.attn_mask && opt.attn_mask->dtype == MHA_FLOAT32;
    mha_tensor *dmask = float_mask ? lmha_newtensor(L) : NULL;
    mha_status st = mha_sdpa_backward(dq, dk, dv, dmask, dout, NULL, q, k, v, weights, out, &opt);
    if (st != MHA_OK) return lmha_fail(L, st, fname, NULL);
    return float_mask ? 4 : 3;
}

static const luaL_Reg methods[] = {
    {"requires_grad", t_requires_grad},
    {"grad", t_grad},
    {"zero_grad", t_zero_grad},
    {"set_grad", t_set_grad},
    {"backward", t_backward},
    {"detach", t_detach},
    {"is_leaf", t_is_leaf},
    {"grad_fn", t_grad_fn},
    {"log_softmax", l_log_softmax},
    {NULL, NULL}
};

static const luaL_Reg functions[] = {
    {"no_grad", l_no_grad},
    {"is_grad_enabled", l_is_grad_enabled},
    {"log_softmax", l_log_softmax},
    {"embedding", l_embedding},
    {"cross_entropy", l_cross_entropy},
    {"softmax_backward", l_softmax_backward},
    {"log_softmax_backward", l_log_softmax_backward},
    {"linear_backward", l_linear_backward},
    {"layer_norm_backward", l_layer_norm_backward},
    {"embedding_backward", l_embedding_backward},
    {"cross_entropy_backward", l_cross_entropy_backward},
    {"sdpa_backward", l_sdpa_backward},
    {NULL, NULL}
};

void lmha_open_autograd(lua_State *L) {
    luaL_setfuncs(L, functions, 0);
    luaL_getmetatable(L, MHA_TENSOR_T);
    lua_getfield(L, -1, "__methods");
    luaL_setfuncs(L, methods, 0);
    lua_pop(L, 2);
}
