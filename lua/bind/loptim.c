/* lua/bind/loptim.c - module "mha.optim_kernels": one optimizer step on one parameter, over
 * core/optim/optim.c, for the optimizer classes of lua/nn/optim.lua (mha.optim.SGD, Adam, AdamW)
 * and mha.clip_grad_norm.
 *
 *   K.sgd_step(p, state, group, name)  -> true, or false when p has no gradient (skipped)
 *   K.adam_step(p, state, group, name, decoupled)
 *                                      -> the same; decoupled true is AdamW
 *   K.grad_norm(p)                     -> the 2-norm of p's gradient as a float32, or nil
 *   K.scale_grad(p, coef)              -> p's gradient times coef, in place
 *   K.clip_coef(total_norm, max_norm)  -> min(1, max_norm / (total_norm + 1e-6)) in float32
 * group holds the hyperparameters (lr, momentum, betas = {b1, b2}, ...), already checked by the
 * class; state is the parameter's own table (torch's optimizer.state[p]): step, momentum_buffer,
 * exp_avg, ... */
#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "lauxmha.h"
#include "lmha.h"
#include "optim/optim.h"

/* The parameter at 1: a float32 tensor whose data the step may write in place. */
static mha_tensor *checkparam(lua_State *L, const char *name) {
    mha_tensor *p = lmha_checktensor(L, 1);
    if (p->dtype != MHA_FLOAT32) luaL_error(L, "optim: parameter %s is a bool tensor; only float32 tensors are trained", name);
    if (!mha_is_contiguous(p))
        luaL_error(L, "optim: parameter %s is not contiguous (a view); optimize the tensor it views", name);
    return p;
}

/* p's gradient as a contiguous tensor in *g (empty when p has none). */
static void gradient_of(lua_State *L, mha_tensor *g, const mha_tensor *p, const char *name) {
    mha_tensor share = MHA_TENSOR_EMPTY;
    mha_status st = mha_grad(&share, p);
    if (st == MHA_OK && share.storage) st = mha_contiguous(g, &share);
    mha_release(&share);
    if (st != MHA_OK) luaL_error(L, "optim: the gradient of parameter %s: %s", name, mha_errmsg());
    if (g->storage && (g->dtype != MHA_FLOAT32 || !mha_same_shape(g, p))) {
        char gs[MHA_SHAPE_BUF], ps[MHA_SHAPE_BUF];
        lmha_shape(gs, g);
        lmha_shape(ps, p);
        mha_release(g);
        luaL_error(L, "optim: the gradient of parameter %s has shape %s, the parameter %s", name, gs, ps);
    }
}

static double group_number(lua_State *L, int group, const char *key) {
    lua_getfield(L, group, key);
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

static bool group_flag(lua_State *L, int group, const char *key) {
    lua_getfield(L, group, key);
    bool v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* state[key]: a float tensor of p's shape, made zero the first time; the state table keeps it
 * alive. */
static mha_tensor *state_buffer(lua_State *L, int state, const char *key, const mha_tensor *p, bool *made) {
    if (lua_getfield(L, state, key) == LUA_TNIL) {
        lua_pop(L, 1);
        mha_tensor *t = lmha_newtensor(L);
        if (mha_zeros(t, MHA_FLOAT32, p->ndim, p->shape) != MHA_OK) lmha_fail(L, MHA_E_NOMEM, NULL, NULL);
        lua_setfield(L, state, key);
        if (made) *made = true;
        lua_getfield(L, state, key);
    }
    mha_tensor *t = lmha_checktensor(L, -1);
    lua_pop(L, 1); /* the state table keeps the tensor alive */
    return t;
}

/* The step count after this step, kept in state.step as torch keeps it. */
static size_t next_step(lua_State *L, int state) {
    lua_getfield(L, state, "step");
    lua_Integer step = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    lua_pushinteger(L, step + 1);
    lua_setfield(L, state, "step");
    return (size_t)(step + 1);
}

static int k_sgd_step(lua_State *L) {
    const char *name = luaL_checkstring(L, 4);
    mha_tensor *p = checkparam(L, name);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    mha_tensor g = MHA_TENSOR_EMPTY;
    gradient_of(L, &g, p, name);
    if (!g.storage) { lua_pushboolean(L, 0); return 1; }
    mha_sgd_options opt = {group_number(L, 3, "lr"), group_number(L, 3, "momentum"), group_number(L, 3, "dampening"),
                           group_number(L, 3, "weight_decay"), group_flag(L, 3, "nesterov"), group_flag(L, 3, "maximize")};
    bool first = false;
    mha_tensor *buf = opt.momentum != 0 ? state_buffer(L, 2, "momentum_buffer", p, &first) : NULL;
    next_step(L, 2);
    mha_status st = mha_sgd_step_tensor(p, buf, &g, &opt, first); /* counts its writes, as torch's
                                                                     under no_grad */
    mha_release(&g);
    if (st != MHA_OK) return luaL_error(L, "optim: parameter %s: %s", name, mha_errmsg());
    lua_pushboolean(L, 1);
    return 1;
}

static int k_adam_step(lua_State *L) {
    const char *name = luaL_checkstring(L, 4);
    mha_tensor *p = checkparam(L, name);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    bool decoupled = lua_toboolean(L, 5);
    mha_tensor g = MHA_TENSOR_EMPTY;
    gradient_of(L, &g, p, name);
    if (!g.storage) { lua_pushboolean(L, 0); return 1; }
    mha_adam_options opt = {.lr = group_number(L, 3, "lr"), .eps = group_number(L, 3, "eps"),
                            .weight_decay = group_number(L, 3, "weight_decay"), .amsgrad = group_flag(L, 3, "amsgrad"),
                            .maximize = group_flag(L, 3, "maximize"), .decoupled = decoupled};
    lua_getfield(L, 3, "betas");
    lua_geti(L, -1, 1);
    lua_geti(L, -2, 2);
    opt.beta1 = lua_tonumber(L, -2);
    opt.beta2 = lua_tonumber(L, -1);
    lua_pop(L, 3);
    mha_tensor *exp_avg = state_buffer(L, 2, "exp_avg", p, NULL);
    mha_tensor *exp_avg_sq = state_buffer(L, 2, "exp_avg_sq", p, NULL);
    mha_tensor *max_exp_avg_sq = opt.amsgrad ? state_buffer(L, 2, "max_exp_avg_sq", p, NULL) : NULL;
    size_t step = next_step(L, 2);
    mha_status st = mha_adam_step_tensor(p, exp_avg, exp_avg_sq, max_exp_avg_sq, &g, &opt, step);
    mha_release(&g);
    if (st != MHA_OK) return luaL_error(L, "optim: parameter %s: %s", name, mha_errmsg());
    lua_pushboolean(L, 1);
    return 1;
}

static int k_grad_norm(lua_State *L) {
    mha_tensor *p = lmha_checktensor(L, 1);
    mha_tensor g = MHA_TENSOR_EMPTY;
    gradient_of(L, &g, p, "given");
    if (!g.storage) { lua_pushnil(L); return 1; }
    float norm = (float)sqrt(mha_sum_squares(mha_f32(&g), mha_numel(&g)));
    mha_release(&g);
    lua_pushnumber(L, norm);
    return 1;
}

/* The gradient is scaled where it lives (mha_grad shares it), as torch's g.detach().mul_(coef). */
static int k_scale_grad(lua_State *L) {
    mha_tensor *p = lmha_checktensor(L, 1);
    float coef = (float)luaL_checknumber(L, 2);
    mha_tensor g = MHA_TENSOR_EMPTY;
    if (mha_grad(&g, p) != MHA_OK || !g.storage) return 0;
    mha_scale_tensor(&g, coef); /* a strided gradient whose copy cannot be made stays as it was */
    mha_release(&g);
    return 0;
}

static int k_clip_coef(lua_State *L) {
    lua_pushnumber(L, mha_clip_coef((float)luaL_checknumber(L, 1), luaL_checknumber(L, 2)));
    return 1;
}

static const luaL_Reg kernels[] = {
    {"sgd_step", k_sgd_step},
    {"adam_step", k_adam_step},
    {"grad_norm", k_grad_norm},
    {"scale_grad", k_scale_grad},
    {"clip_coef", k_clip_coef},
    {NULL, NULL}
};

int luaopen_mha_optim_kernels(lua_State *L) {
    luaL_newlib(L, kernels);
    return 1;
}
