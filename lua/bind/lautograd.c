/* lua/bind/lautograd.c - the Lua face of core/autograd: t:requires_grad, t:grad, t:backward, t:detach,
 * t:zero_grad, mha.no_grad, and the plain backward functions a lesson can call by hand. */
#include "lautograd.h"

#include <lauxlib.h>

#include "autograd.h"
#include "lmha.h"

void lmha_checkgradwrite(lua_State *L, const mha_tensor *t, const char *fname) {
    if (mha_ag_check_write(t, fname) != MHA_OK) luaL_error(L, "%s", mha_errmsg());
}

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

/* t:zero_grad(): forget the gradient (t:grad() is nil again), as torch's zero_grad(set_to_none=True). */
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

/* loss:backward() for a one-element loss; y:backward(grad) with grad of y's shape otherwise. */
static int t_backward(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    mha_tensor *g = lua_isnoneornil(L, 2) ? NULL : lmha_totensor(L, 2, "backward");
    mha_status st = mha_backward(t, g);
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

static const luaL_Reg methods[] = {
    {"requires_grad", t_requires_grad},
    {"grad", t_grad},
    {"zero_grad", t_zero_grad},
    {"set_grad", t_set_grad},
    {"backward", t_backward},
    {"detach", t_detach},
    {"is_leaf", t_is_leaf},
    {"grad_fn", t_grad_fn},
    {NULL, NULL}
};

static const luaL_Reg functions[] = {
    {"no_grad", l_no_grad},
    {"is_grad_enabled", l_is_grad_enabled},
    {NULL, NULL}
};

void lmha_open_autograd(lua_State *L) {
    luaL_setfuncs(L, functions, 0);
    luaL_getmetatable(L, MHA_TENSOR_T);
    lua_getfield(L, -1, "__methods");
    luaL_setfuncs(L, methods, 0);
    lua_pop(L, 2);
}
