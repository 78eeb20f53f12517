/* lua/bind/lmultihead.c - the mha.MultiheadAttention userdata: PyTorch 1.13's nn.MultiheadAttention
 * (batch_first=True) with its options as fields, its parameters by state_dict name, forward and
 * trace.
 *
 *   m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
 *   out, weights = m:forward(q, k, v, {attn_mask = mask})   -- or m(q, k, v, ...)
 *   m.in_proj_weight           -- (3E,E), a tensor sharing the module's storage
 *   m.out_proj_bias = t        -- copies t after checking its shape
 * The userdata IS the mha_multihead: created zeroed, then initialised by the core, so __gc can
 * always release it. Parameter names are PyTorch's state_dict names with '.' written '_'. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention/attention.h"
#include "lauxmha.h"
#include "lmha.h"
#include "attention/multihead_grad.h"

#define MHA_TRACE_SCRATCH_T "mha.MultiheadAttention.trace" /* a trace being handed to Lua */

#define tomultihead(L) ((mha_multihead *)lmha_checkudata(L, 1, MHA_MULTIHEAD_T))

/* A module whose parameters __close released reads as closed: out_proj_weight always exists
 * otherwise. */
static mha_multihead *checkmultihead(lua_State *L) {
    mha_multihead *m = tomultihead(L);
    if (!m->out_proj_weight.storage) luaL_argerror(L, 1, "the MultiheadAttention was closed");
    return m;
}

/* ---- construction ---- */

/* mha.MultiheadAttention{embed_dim=, num_heads=, bias=true, kdim=, vdim=, add_bias_kv=false,
 * add_zero_attn=false, batch_first=true}: parameters initialised as PyTorch does, from mha.seed's
 * generator. */
int lmha_multihead_new(lua_State *L) {
    static const char *const fname = "MultiheadAttention";
    static const char *const options[] = {"embed_dim", "num_heads", "bias", "kdim", "vdim", "add_bias_kv",
                                          "add_zero_attn", "batch_first", NULL};
    if (!lua_istable(L, 1)) /* mha.MultiheadAttention(8, 2), positional as in PyTorch: show the
                               named form */
        return luaL_error(L, "%s takes a table: mha.MultiheadAttention{embed_dim = %s, num_heads = %s} (got %s)", fname,
                          lua_type(L, 1) == LUA_TNUMBER ? luaL_tolstring(L, 1, NULL) : "E",
                          lua_type(L, 2) == LUA_TNUMBER ? luaL_tolstring(L, 2, NULL) : "H", luaL_typename(L, 1));
    lmha_checkoptions(L, 1, fname, options);
    mha_multihead_options opt = {0};
    static const char *const example = "mha.MultiheadAttention{embed_dim = 4, num_heads = 2}";
    opt.embed_dim = lmha_optsize(L, 1, "embed_dim", 0, fname, example);
    opt.num_heads = lmha_optsize(L, 1, "num_heads", 0, fname, example);
    opt.kdim = lmha_optsize(L, 1, "kdim", opt.embed_dim, fname, example);
    opt.vdim = lmha_optsize(L, 1, "vdim", opt.embed_dim, fname, example);
    opt.bias = lmha_optboolean(L, 1, "bias", 1, fname);
    opt.add_bias_kv = lmha_optboolean(L, 1, "add_bias_kv", 0, fname);
    opt.add_zero_attn = lmha_optboolean(L, 1, "add_zero_attn", 0, fname);
    if (!lmha_optboolean(L, 1, "batch_first", 1, fname))
        return luaL_error(L, "%s", "MultiheadAttention: batch_first=false is not supported: batched inputs are (N,L,E), "
                                   "batch first (transpose (L,N,E) inputs with x:transpose(1, 2))");
    mha_multihead *m = (mha_multihead *)lua_newuserdatauv(L, sizeof *m, 1);
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, MHA_MULTIHEAD_T);
    lua_newtable(L); /* user value 1: parameter name -> its tensor userdata (push_param) */
    lua_setiuservalue(L, -2, 1);
    mha_status st = mha_multihead_init(m, &opt);
    if (st == MHA_OK) st = mha_multihead_requires_grad(m, true); /* parameters are leaves, as
                                                                    nn.Parameter */
    if (st != MHA_OK) return lmha_fail(L, st, fname, NULL);
    return 1;
}

/* ---- fields and parameters ---- */

static const char *const field_names[] = {"embed_dim", "num_heads", "head_dim", "kdim", "vdim", "bias",
                                          "add_bias_kv", "add_zero_attn", "batch_first", "same_embed_dim", "training", NULL};

static int is_param_name(const char *name) {
    for (size_t i = 0; mha_multihead_param_names[i]; i++)
        if (strcmp(name, mha_multihead_param_names[i]) == 0) return 1;
    return 0;
}

/* Pushes field `name`; 0 when there is no such field. */
static int push_field(lua_State *L, const mha_multihead *m, const char *name) {
    if (strcmp(name, "embed_dim") == 0) lua_pushinteger(L, (lua_Integer)m->embed_dim);
    else if (strcmp(name, "num_heads") == 0) lua_pushinteger(L, (lua_Integer)m->num_heads);
    else if (strcmp(name, "head_dim") == 0) lua_pushinteger(L, (lua_Integer)m->head_dim);
    else if (strcmp(name, "kdim") == 0) lua_pushinteger(L, (lua_Integer)m->kdim);
    else if (strcmp(name, "vdim") == 0) lua_pushinteger(L, (lua_Integer)m->vdim);
    else if (strcmp(name, "bias") == 0) lua_pushboolean(L, m->bias);
    else if (strcmp(name, "add_bias_kv") == 0) lua_pushboolean(L, m->add_bias_kv);
    else if (strcmp(name, "add_zero_attn") == 0) lua_pushboolean(L, m->add_zero_attn);
    else if (strcmp(name, "batch_first") == 0) lua_pushboolean(L, 1);
    else if (strcmp(name, "same_embed_dim") == 0) lua_pushboolean(L, m->same_embed_dim);
    else return 0;
    return 1;
}

/* Raises "MultiheadAttention: no field 'x' (fields: ...; parameters: ...)". */
static int unknown_name(lua_State *L, const char *name, const char *what) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 0; field_names[i]; i++) {
        luaL_addstring(&b, i ? ", " : "");
        luaL_addstring(&b, field_names[i]);
    }
    luaL_addstring(&b, "; parameters: ");
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        luaL_addstring(&b, i ? ", " : "");
        luaL_addstring(&b, mha_multihead_param_names[i]);
    }
    luaL_pushresult(&b);
    return luaL_error(L, "MultiheadAttention: %s '%s' (fields: %s)", what, name, lua_tostring(L, -1));
}

/* Pushes parameter `name` of the module at index 1 as a tensor sharing the module's storage, or nil
 * when this module has none by that name (in_proj_weight when kdim/vdim differ from embed_dim,
 * biases when bias=false). The same userdata every time (kept in the module's user value until the
 * parameter is assigned anew), so m.in_proj_weight == m.in_proj_weight, and a module used twice
 * lists its parameters once, as in torch. */
static void push_param(lua_State *L, const mha_multihead *m, const char *name) {
    mha_tensor *slot;
    if (mha_multihead_param(&slot, m, name) != MHA_OK || !slot->storage) { lua_pushnil(L); return; }
    lua_getiuservalue(L, 1, 1);
    int cache = lua_gettop(L);
    if (lua_getfield(L, cache, name) != LUA_TNIL) {
        const mha_tensor *t = lmha_testtensor(L, -1);
        if (t && t->storage == slot->storage && t->ag == slot->ag && t->offset == slot->offset) {
            lua_remove(L, cache);
            return;
        }
    }
    lua_pop(L, 1); /* missing, or no longer the parameter (closed): made anew */
    lmha_result(L, mha_ag_alias(lmha_newtensor(L), slot)); /* the parameter itself: its grad is the
                                                              module's */
    lua_pushvalue(L, -1);
    lua_setfield(L, cache, name);
    lua_remove(L, cache);
}

/* m.training: torch's training flag (true until m:eval()), kept in the user value beside the
 * parameters (m:train and m:eval, lua/nn/module.lua, set it). The module has no dropout: the flag
 * changes nothing. */
static void push_training(lua_State *L) {
    lua_getiuservalue(L, 1, 1);
    if (lua_getfield(L, -1, "training") == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_remove(L, -2);
}

/* m.name: a method, a field, or a parameter. */
static int m_index(lua_State *L) {
    mha_multihead *m = tomultihead(L);
    const char *name = luaL_checkstring(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1; /* a method */
    lua_pop(L, 1);
    if (strcmp(name, "training") == 0) {
        push_training(L);
        return 1;
    }
    if (push_field(L, m, name)) return 1;
    if (is_param_name(name)) {
        checkmultihead(L);
        push_param(L, m, name);
        return 1;
    }
    return unknown_name(L, name, "no field");
}

/* m.name = t: replaces a parameter by a copy of t (a tensor or nested table) of the same shape.
 * Every refusal names the parameter, the shape it has and what was given. */
static int m_newindex(lua_State *L) {
    char want[MHA_SHAPE_BUF], got[MHA_SHAPE_BUF];
    mha_multihead *m = tomultihead(L);
    const char *name = luaL_checkstring(L, 2);
    if (strcmp(name, "training") == 0) {
        if (!lua_isboolean(L, 3))
            return luaL_error(L, "MultiheadAttention: training must be true or false, got %s", luaL_typename(L, 3));
        lua_getiuservalue(L, 1, 1);
        lua_pushvalue(L, 3);
        lua_setfield(L, -2, "training");
        return 0;
    }
    if (is_param_name(name)) {
        if (!m->out_proj_weight.storage)
            return luaL_error(L, "MultiheadAttention: cannot assign %s: the MultiheadAttention was closed", name);
        mha_tensor *slot;
        if (mha_multihead_param(&slot, m, name) != MHA_OK) return luaL_error(L, "%s", mha_errmsg());
        lmha_shape(want, slot);
        mha_tensor *value = NULL;
        if (lua_istable(L, 3)) {
            lua_pushfstring(L, "MultiheadAttention.%s", name); /* ragged tables are named so */
            value = lmha_totensor(L, 3, lua_tostring(L, -1));
        } else if (luaL_testudata(L, 3, MHA_TENSOR_T)) {
            value = lmha_testtensor(L, 3);
            if (!value) return luaL_error(L, "MultiheadAttention: %s must be assigned a tensor of shape %s, got a closed tensor",
                                          name, want);
        } else {
            return luaL_error(L, "MultiheadAttention: %s must be assigned a tensor of shape %s, got %s", name, want,
                              luaL_typename(L, 3));
        }
        if (value->dtype != MHA_FLOAT32 || !mha_same_shape(value, slot))
            return luaL_error(L, "MultiheadAttention: %s must be assigned a tensor of shape %s, got a %s tensor of shape %s",
                              name, want, value->dtype == MHA_BOOL ? "bool" : "float32", lmha_shape(got, value));
        /* a replacement, not a write into the old storage: a graph that saved the old value keeps
         * it, handles taken before keep the old leaf, and the new value is a leaf with the old
         * requires_grad flag */
        bool requires = mha_ag_requires(slot);
        mha_status st = mha_multihead_set_param(m, name, value);
        if (st == MHA_OK) st = mha_requires_grad(slot, requires);
        if (st != MHA_OK) return lmha_fail(L, st, "MultiheadAttention", NULL);
        lua_getiuservalue(L, 1, 1); /* the next m.name is the new leaf: a new userdata */
        lua_pushnil(L);
        lua_setfield(L, -2, name);
        return 0;
    }
    lua_pushvalue(L, 2);
    if (push_field(L, m, name) || lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
        return luaL_error(L, "MultiheadAttention: %s is read-only (make a new module with the options you want)", name);
    return unknown_name(L, name, "cannot assign to unknown field");
}

/* m:parameters(): PyTorch's dotted name ("out_proj.weight") -> the parameter itself, for every
 * parameter this module has (what an optimizer takes). */
static int m_parameters(lua_State *L) {
    mha_multihead *m = checkmultihead(L);
    lua_newtable(L);
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        const char *name = mha_multihead_param_names[i];
        if (strncmp(name, "out_proj_", 9) == 0) lua_pushfstring(L, "out_proj.%s", name + 9);
        else lua_pushstring(L, name);
        push_param(L, m, name);
        lua_settable(L, -3);
    }
    return 1;
}

/* m:zero_grad(): forgets every parameter's gradient (t:grad() is nil again). */
static int m_zero_grad(lua_State *L) {
    mha_multihead_zero_grad(checkmultihead(L));
    lua_settop(L, 1);
    return 1;
}

/* m:requires_grad(false|true): freezes (or unfreezes) every parameter; returns m. */
static int m_requires_grad(lua_State *L) {
    mha_multihead *m = checkmultihead(L);
    luaL_checktype(L, 2, LUA_TBOOLEAN);
    mha_status st = mha_multihead_requires_grad(m, lua_toboolean(L, 2));
    if (st != MHA_OK) return lmha_fail(L, st, "MultiheadAttention.requires_grad", NULL);
    lua_settop(L, 1);
    return 1;
}

/* m:parameter_names(): the names of the parameters this module has, in PyTorch's state_dict
 * order. */
static int m_parameter_names(lua_State *L) {
    mha_multihead *m = checkmultihead(L);
    lua_newtable(L);
    lua_Integer n = 0;
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        mha_tensor *slot;
        if (mha_multihead_param(&slot, m, mha_multihead_param_names[i]) == MHA_OK && slot->storage) {
            lua_pushstring(L, mha_multihead_param_names[i]);
            lua_rawseti(L, -2, ++n);
        }
    }
    return 1;
}

/* ---- forward and trace ---- */

/* Reads q, k, v at 2, 3, 4 (k and v default to q: self-attention) and the options at 5. */
static void forward_args(lua_State *L, const mha_tensor **qkv, mha_forward_options *opt, const char *fname) {
    static const char *const options[] = {"key_padding_mask", "attn_mask", "need_weights", "average_attn_weights",
                                          "is_causal", NULL};
    qkv[0] = lmha_checktensor(L, 2);
    qkv[1] = lua_isnoneornil(L, 3) ? qkv[0] : lmha_checktensor(L, 3);
    qkv[2] = lua_isnoneornil(L, 4) ? qkv[1] : lmha_checktensor(L, 4);
    lmha_checkoptions(L, 5, fname, options);
    opt->key_padding_mask = lmha_opttensor(L, 5, "key_padding_mask", fname);
    opt->attn_mask = lmha_opttensor(L, 5, "attn_mask", fname);
    opt->need_weights = lmha_optboolean(L, 5, "need_weights", 1, fname);
    opt->average_attn_weights = lmha_optboolean(L, 5, "average_attn_weights", 1, fname);
    opt->is_causal = lmha_optboolean(L, 5, "is_causal", 0, fname);
}

/* m:forward(query, key, value [, opts]) -> out, weights (weights nil when need_weights=false).
 * opts: key_padding_mask, attn_mask, need_weights=true, average_attn_weights=true,
 * is_causal=false. */
static int m_forward(lua_State *L) {
    mha_multihead *m = checkmultihead(L);
    const mha_tensor *qkv[3];
    mha_forward_options opt;
    forward_args(L, qkv, &opt, "MultiheadAttention.forward");
    lua_settop(L, 5);
    mha_tensor *out = lmha_newtensor(L);
    mha_tensor *weights = opt.need_weights ? lmha_newtensor(L) : NULL;
    mha_status st = mha_ag_multihead_forward(out, weights, m, qkv[0], qkv[1], qkv[2], &opt);
    if (st != MHA_OK) return lmha_fail(L, st, "MultiheadAttention.forward", NULL);
    lmha_result(L, st);
    if (!weights) lua_pushnil(L);
    return 2;
}

/* A trace on its way into Lua: a userdata whose __gc releases what was not handed over yet. */
typedef struct trace_scratch {
    mha_trace trace;
    mha_tensor out;
} trace_scratch;

static int trace_scratch_gc(lua_State *L) {
    trace_scratch *s = (trace_scratch *)luaL_checkudata(L, 1, MHA_TRACE_SCRATCH_T);
    mha_trace_release(&s->trace);
    mha_release(&s->out);
    return 0;
}

/* m:trace(query, key, value [, opts]) -> a table name -> tensor of every intermediate of one
 * forward pass, whose array part lists the names in order: for i, name in ipairs(tr) do
 * print(name, tr[name]) end */
static int m_trace(lua_State *L) {
    mha_multihead *m = checkmultihead(L);
    const mha_tensor *qkv[3];
    mha_forward_options opt;
    forward_args(L, qkv, &opt, "MultiheadAttention.trace");
    opt.need_weights = false; /* the trace holds the per-head weights */
    lua_settop(L, 5);
    trace_scratch *s = (trace_scratch *)lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    luaL_setmetatable(L, MHA_TRACE_SCRATCH_T);
    mha_status st = mha_multihead_forward(&s->out, NULL, m, qkv[0], qkv[1], qkv[2], &opt, &s->trace);
    /* the scratch's __gc frees what was made */
    if (st != MHA_OK) return lmha_fail(L, st, "MultiheadAttention.trace", NULL);
    lua_createtable(L, (int)s->trace.count, (int)s->trace.count);
    for (size_t i = 0; i < s->trace.count; i++) {
        mha_tensor *t = lmha_newtensor(L);
        *t = s->trace.tensors[i]; /* handed over: the scratch no longer owns it */
        s->trace.tensors[i] = MHA_TENSOR_EMPTY;
        lua_setfield(L, -2, s->trace.names[i]);
        lua_pushstring(L, s->trace.names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    mha_release(&s->out); /* the trace holds the output too */
    return 1;
}

/* ---- life cycle and printing ---- */

static int m_gc(lua_State *L) {
    mha_multihead_release(tomultihead(L));
    return 0;
}

/* Like PyTorch's repr, with the options shown on a line of their own, as PyTorch prints a module's
 * extra_repr beside its children (PyTorch's MultiheadAttention shows only the out_proj line). */
static int m_tostring(lua_State *L) {
    mha_multihead *m = tomultihead(L);
    if (!m->out_proj_weight.storage) { lua_pushliteral(L, "MultiheadAttention(closed)"); return 1; }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "MultiheadAttention(\n  embed_dim=%I, num_heads=%I, head_dim=%I", (LUAI_UACINT)m->embed_dim,
                    (LUAI_UACINT)m->num_heads, (LUAI_UACINT)m->head_dim);
    luaL_addvalue(&b);
    if (!m->same_embed_dim) {
        lua_pushfstring(L, ", kdim=%I, vdim=%I", (LUAI_UACINT)m->kdim, (LUAI_UACINT)m->vdim);
        luaL_addvalue(&b);
    }
    if (!m->bias) luaL_addstring(&b, ", bias=false");
    if (m->add_bias_kv) luaL_addstring(&b, ", add_bias_kv=true");
    if (m->add_zero_attn) luaL_addstring(&b, ", add_zero_attn=true");
    lua_pushfstring(L, "\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=%I, out_features=%I, bias=%s)\n)",
                    (LUAI_UACINT)m->embed_dim, (LUAI_UACINT)m->embed_dim, m->bias ? "True" : "False");
    luaL_addvalue(&b);
    luaL_pushresult(&b);
    return 1;
}

static const luaL_Reg meth[] = {
    {"forward", m_forward},
    {"trace", m_trace},
    {"parameters", m_parameters},
    {"parameter_names", m_parameter_names},
    {"zero_grad", m_zero_grad},
    {"requires_grad", m_requires_grad},
    {"close", m_gc},
    {NULL, NULL}
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder: a closure over the method table */
    {"__newindex", NULL},
    {"__call", m_forward}, /* m(q, k, v, opts), as a PyTorch module is called */
    {"__tostring", m_tostring},
    {"__gc", m_gc},
    {"__close", m_gc},
    {NULL, NULL}
};

int lmha_open_multihead(lua_State *L) {
    luaL_newmetatable(L, MHA_MULTIHEAD_T);
    luaL_setfuncs(L, metameth, 0);
    luaL_newlibtable(L, meth);
    luaL_setfuncs(L, meth, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__methods");
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, m_index, 1);
    lua_setfield(L, -3, "__index");
    lua_pushcclosure(L, m_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    /* __fields: every readable field and parameter name, for the REPL's completion
     * (a module without a parameter, such as in_proj_bias when bias=false, reads it as nil) */
    lua_newtable(L);
    lua_Integer n = 0;
    for (size_t i = 0; field_names[i]; i++) {
        lua_pushstring(L, field_names[i]);
        lua_rawseti(L, -2, ++n);
    }
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        lua_pushstring(L, mha_multihead_param_names[i]);
        lua_rawseti(L, -2, ++n);
    }
    lua_setfield(L, -2, "__fields");
    lua_pop(L, 1);
    luaL_newmetatable(L, MHA_TRACE_SCRATCH_T);
    lua_pushcfunction(L, trace_scratch_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    return 0;
}
