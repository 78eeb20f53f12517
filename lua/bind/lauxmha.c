/* lua/bind/lauxmha.c - every check, push and option helper the mha bindings share, written once (as
 * lauxlib.c is to Lua's own libraries): tensor userdata, errors from core statuses, dims, shapes,
 * options.
 *
 * Lua conventions hold at this border: dimensions and indices are 1-based, negative ones count from
 * the end (-1 is the last). They are converted to the core's 0-based size_t here, and checked here,
 * so an error names the function, the Lua dimension and the shape. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lauxmha.h"
#include "base/alloc.h"
#include "autograd/autograd_ops.h"
#include "nn/nn.h"
#include "attention/attention.h"

/* ---- creating, checking and filling tensor userdata ---- */

mha_tensor *lmha_newtensor(lua_State *L) {
    mha_tensor *t = (mha_tensor *)lua_newuserdatauv(L, sizeof(mha_tensor), 0);
    *t = MHA_TENSOR_EMPTY;
    luaL_setmetatable(L, MHA_TENSOR_T);
    return t;
}

/* Lua's collector sees a tensor as a small userdata and cannot know the storage behind it, so a
 * loop of large temporaries (`for i = 1, 50 do local x = mha.randn(3000, 3000) end`) would hold
 * gigabytes. After each new tensor, when the bytes tensors hold have more than doubled
 * (and grown by 16 MiB) since the last full collection, collect in full: that costs in proportion
 * to the Lua heap, not to the tensors, so it stays cheap however large they are
 * (0.02-0.15 ms in the REPL). The storages it frees go back to the caching allocator
 * (core/base/alloc.h), whose blocks the next results reuse: the garbage between two collections is
 * what a loop maps anew once, so 16 MiB rather than 64 keeps that first round of page faults small
 * (a 512x512 matmul loop: 16 fresh results instead of 64). */
static size_t live_after_gc = 0;

static void tensor_memory_pressure(lua_State *L) {
    size_t live = mha_live_bytes();
    if (live < live_after_gc) live_after_gc = live;   /* tensors were freed since: lower the
                                                         baseline */
    if (live > 2 * live_after_gc + ((size_t)16 << 20)) {
        lua_gc(L, LUA_GCCOLLECT);
        live_after_gc = mha_live_bytes();
    }
}

int lmha_result(lua_State *L, mha_status status) {
    if (status == MHA_OK) {
        tensor_memory_pressure(L);
        return 1;
    }
    return lmha_fail(L, status, NULL, NULL);
}

static int starts_with_name(const char *msg, const char *fname) {
    size_t n = strlen(fname);
    return strncmp(msg, fname, n) == 0 && msg[n] == ':';
}

/* The name the calling Lua code called the running C function by; NULL for a call from C. */
static const char *name_in_code(lua_State *L) {
    lua_Debug ar;
    if (!lua_getstack(L, 0, &ar)) return NULL;
    return lua_getinfo(L, "n", &ar) ? ar.name : NULL;
}

/* The name the running C function was called by (as luaL_argerror finds it): from the calling code,
 * or for a call from C (pcall(mha.zeros, ...)) its key in the mha table; NULL when neither
 * knows. */
static const char *called_name(lua_State *L) {
    lua_Debug ar;
    const char *name = name_in_code(L);
    if (name || !lua_getstack(L, 0, &ar)) return name;
    lua_getinfo(L, "f", &ar); /* pushes the function */
    if (lua_getfield(L, LUA_REGISTRYINDEX, LMHA_LIB_KEY) == LUA_TTABLE) {
        lua_pushnil(L);
        while (!name && lua_next(L, -2)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, -4)) name = lua_tostring(L, -2); /* kept alive by the table */
            lua_pop(L, 1);
        }
        if (name) lua_pop(L, 1); /* the key lua_next left */
    }
    lua_pop(L, 2);
    return name;
}

const char *lmha_called_name(lua_State *L, const char *dflt) {
    const char *name = name_in_code(L);   /* on every call: never the walk of the mha table */
    return name ? name : dflt;
}

/* Whether msg begins "NAME:" where NAME is another key of the mha table for the running function
 * (the core says "sdpa:" for what was called as scaled_dot_product_attention); *len: NAME's. */
static bool names_an_alias(lua_State *L, const char *msg, size_t *len) {
    lua_Debug ar;
    size_t n = strcspn(msg, ": ");
    if (msg[n] != ':' || n == 0 || !lua_getstack(L, 0, &ar)) return false;
    bool same = false;
    lua_getinfo(L, "f", &ar); /* pushes the running function */
    if (lua_getfield(L, LUA_REGISTRYINDEX, LMHA_LIB_KEY) == LUA_TTABLE) {
        lua_pushlstring(L, msg, n);
        same = lua_rawget(L, -2) != LUA_TNIL && lua_rawequal(L, -1, -3);
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    *len = n;
    return same;
}

int lmha_fail(lua_State *L, mha_status status, const char *fname, const char *hint) {
    if (status == MHA_E_INTERRUPTED) {
        mha_interrupt_clear(); /* reported once; the next call starts afresh */
        return luaL_error(L, "%s", "interrupted");
    }
    const char *msg = mha_errmsg();
    if (!hint) hint = "";
    const char *typed = fname ? NULL : name_in_code(L);   /* not a call from C: pcall(mha.sdpa) */
    size_t alias_len = 0;
    if (typed && !starts_with_name(msg, typed) && names_an_alias(L, msg, &alias_len)) {
        lua_pushfstring(L, "%s%s", typed, msg + alias_len);
        msg = lua_tostring(L, -1);
    }
    if (status != MHA_E_NOMEM) return luaL_error(L, "%s%s", msg, hint);
    /* refused by MHA_MAX_MEMORY, not by the machine: say which limit, so the student knows why */
    if (mha_alloc_capped() && !strstr(msg, "(MHA_MAX_MEMORY)")) {
        lua_pushfstring(L, "%s: tensor memory limit of %d MB reached (MHA_MAX_MEMORY)", msg,
                        (int)(mha_alloc_max_bytes() >> 20));
        msg = lua_tostring(L, -1);
    }
    if (!fname) fname = called_name(L);
    if (fname && !starts_with_name(msg, fname)) return luaL_error(L, "%s: %s%s", fname, msg, hint);
    return luaL_error(L, "%s%s", msg, hint);
}

/* PyTorch's rule for in-place writes: a tensor in which two elements share one memory location (a
 * stride 0 along a dim of size > 1, as expand() makes) cannot be written elementwise, since the
 * elements would overwrite each other. (The autograd's rule is the core writers' own: tensor.h.) */
void lmha_checkwritable(lua_State *L, const mha_tensor *t, const char *fname) {
    char shape[MHA_SHAPE_BUF];
    for (size_t d = 0; d < t->ndim; d++) {
        if (t->stride[d] != 0 || t->shape[d] <= 1) continue;
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (size_t e = 0; e < t->ndim; e++) {
            lua_pushfstring(L, e ? ",%I" : "(%I", (LUAI_UACINT)t->stride[e]);
            luaL_addvalue(&b);
        }
        luaL_addchar(&b, ')');
        luaL_pushresult(&b);
        luaL_error(L, "%s: unsupported operation: more than one element of the written-to tensor (shape %s, strides "
                      "%s) refers to a single memory location, as in a view made by expand(); clone() the tensor "
                      "before writing into it (t = t:clone())",
                   fname, lmha_shape(shape, t), lua_tostring(L, -1));
    }
}

/* The name of the running function when it was reached as a field (x.item) and is one of tname's
 * methods, else NULL; *also_mha is set when mha holds the same function under that name
 * (x.matmul is mha.matmul). */
static const char *method_called_with_dot(lua_State *L, const char *tname, int *also_mha) {
    lua_Debug ar;
    *also_mha = 0;
    /* the library's own Lua code (lua/nn/layers.lua calling mha.linear) is not the user's habit */
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && strncmp(ar.source, "@lua/", 5) == 0) return NULL;
    /* pushes the function */
    if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "nf", &ar)) return NULL;
    int is_method = 0;
    if (ar.name && (strcmp(ar.namewhat, "field") == 0 || strcmp(ar.namewhat, "method") == 0)) {
        luaL_getmetatable(L, tname);
        if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
            lua_getfield(L, -1, ar.name);
            is_method = lua_rawequal(L, -1, -4);
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
        if (lua_getfield(L, LUA_REGISTRYINDEX, LMHA_LIB_KEY) == LUA_TTABLE) {
            lua_getfield(L, -1, ar.name);
            *also_mha = lua_rawequal(L, -1, -3);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return is_method ? ar.name : NULL; /* ar.name points into the method's key, a string the table
                                          keeps */
}

/* Raises the hint when argument 1 is not a tname and the running function is a method reached with
 * a dot. */
static void check_dot_call(lua_State *L, int arg, const char *tname) {
    int also_mha;
    const char *name = arg == 1 ? method_called_with_dot(L, tname, &also_mha) : NULL;
    if (!name) return;
    const char *self = strcmp(tname, MHA_TENSOR_T) == 0 ? "x" : "m";
    const char *args = lua_gettop(L) == 0 ? "" : "...";
    if (also_mha) { /* mha.matmul() reads the same: keep Lua's message, add the hint where a dot
                       call is likely - argument 1 a number or none (x.sum(2), x.softmax()), no
                       tensor among the others (mha.matmul(1, x), mha.softmax("x", 1): no hint) */
        int likely = lua_type(L, 1) == LUA_TNONE || lua_type(L, 1) == LUA_TNUMBER;
        for (int i = 2; likely && i <= lua_gettop(L); i++) likely = !luaL_testudata(L, i, MHA_TENSOR_T);
        if (!likely) return;
        const char *got = luaL_getmetafield(L, 1, "__name") == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, 1);
        luaL_error(L, "bad argument #1 to '%s' (%s expected, got %s); as a method, call it with a colon: %s:%s(%s)",
                   name, tname, got, self, name, args);
    }
    luaL_error(L, "%s is a method: call it with a colon: %s:%s(%s)", name, self, name, args);
}

void *lmha_checkudata(lua_State *L, int arg, const char *tname) {
    void *p = luaL_testudata(L, arg, tname);
    if (!p) check_dot_call(L, arg, tname);
    return p ? p : luaL_checkudata(L, arg, tname);
}

mha_tensor *lmha_testtensor(lua_State *L, int arg) {
    mha_tensor *t = (mha_tensor *)luaL_testudata(L, arg, MHA_TENSOR_T);
    return t && t->storage ? t : NULL;
}

mha_tensor *lmha_checktensor(lua_State *L, int arg) {
    mha_tensor *t = totensor(L, arg);
    if (!t->storage) luaL_argerror(L, arg, "the tensor was closed");
    return t;
}

/* "(2,3)" for a tensor's shape; buf holds MHA_SHAPE_BUF bytes. */
const char *lmha_shape(char *buf, const mha_tensor *t) {
    return mha_shape_str(buf, MHA_SHAPE_BUF, t);
}

/* "a number", "a table", "nil": a value's type as a message says it
 * ("t[2] is nil, but t[1] is a number"). */
static const char *a_type(int t) {
    static const char *const with_article[] = {"nil", "a boolean", "a light userdata", "a number", "a string",
                                               "a table", "a function", "a userdata", "a thread"};
    return t >= 0 && t < (int)(sizeof with_article / sizeof *with_article) ? with_article[t] : "no value";
}

const char *lmha_typename(lua_State *L, int idx) { return a_type(lua_type(L, idx)); }

/* ---- dimensions and indices: Lua's 1-based or negative -> the core's 0-based ---- */

/* d in 1..n or -n..-1 -> 0..n-1; SIZE_MAX when out of range. */
size_t lmha_luaindex(lua_Integer d, size_t n) {
    if (d >= 1 && (lua_Unsigned)d <= n) return (size_t)d - 1;
    if (d < 0 && (lua_Unsigned)(-(d + 1)) < n) return n - (size_t)(-(d + 1)) - 1;
    return SIZE_MAX;
}

/* The general form: `positions` valid places (ndim for most functions, ndim+1 for
 * unsqueeze/stack). */
size_t lmha_checktdim(lua_State *L, int arg, const mha_tensor *t, size_t positions, const char *fname) {
    char shape[MHA_SHAPE_BUF];
    lua_Integer d = luaL_checkinteger(L, arg);
    size_t dim = lmha_luaindex(d, positions);
    if (dim == SIZE_MAX) {
        if (positions == 0)
            luaL_error(L, "%s: dim %I out of range: a tensor of shape () is a scalar, it has no dims", fname,
                       (LUAI_UACINT)d);
        luaL_error(L, "%s: dim %I out of range for a tensor of shape %s (expected 1..%I or -%I..-1)", fname,
                   (LUAI_UACINT)d, lmha_shape(shape, t), (LUAI_UACINT)positions, (LUAI_UACINT)positions);
    }
    return dim;
}

size_t lmha_opttdim(lua_State *L, int arg, const mha_tensor *t, size_t def, const char *fname) {
    if (lua_isnoneornil(L, arg)) return def;
    return lmha_checktdim(L, arg, t, t->ndim, fname);
}

/* An element index along dim (1-based or negative) -> 0-based, checked against the size. */
size_t lmha_checkindex(lua_State *L, int arg, const mha_tensor *t, size_t dim, const char *fname) {
    char shape[MHA_SHAPE_BUF];
    lua_Integer i = luaL_checkinteger(L, arg);
    size_t index = lmha_luaindex(i, t->shape[dim]);
    if (index == SIZE_MAX)
        luaL_error(L, "%s: index %I out of range for dim %I of size %I in a tensor of shape %s (expected 1..%I or -%I..-1)",
                   fname, (LUAI_UACINT)i, (LUAI_UACINT)dim + 1, (LUAI_UACINT)t->shape[dim], lmha_shape(shape, t),
                   (LUAI_UACINT)t->shape[dim], (LUAI_UACINT)t->shape[dim]);
    return index;
}

/* ---- shapes given as arguments: f(2,3) or f{2,3} ---- */

/* Reads the sizes at first..last (or one table at first) into shape; -1 allowed when
 * allow_infer. */
size_t lmha_checksizes(lua_State *L, int first, int last, ptrdiff_t *shape, int allow_infer, const char *fname) {
    size_t n = 0;
    int from_table = lua_istable(L, first);
    lua_Integer count = from_table ? luaL_len(L, first) : last - first + 1;
    if (count < 0) count = 0;
    if (count > MHA_MAX_DIMS)
        luaL_error(L, "%s: %I sizes given, a tensor has at most %d dims", fname, (LUAI_UACINT)count, MHA_MAX_DIMS);
    for (int k = 1; k <= (int)count; k++) {
        int isint;
        lua_Integer size;
        if (from_table) {
            lua_geti(L, first, k);
            size = lua_tointegerx(L, -1, &isint);
            lua_pop(L, 1);
        } else {
            size = lua_tointegerx(L, first + k - 1, &isint);
        }
        if (!isint)
            luaL_error(L, "%s: size %d of the shape is not an integer (%s)", fname, k,
                       from_table ? "in the table" : luaL_typename(L, first + k - 1));
        if (size < 0 && !(allow_infer && size == -1))
            luaL_error(L, "%s: size %I at position %d of the shape is negative%s", fname, (LUAI_UACINT)size, k,
                       allow_infer ? " (only -1, \"infer this size\", is allowed)" : "");
        shape[n++] = (ptrdiff_t)size;
    }
    return n;
}

size_t lmha_checkshape(lua_State *L, int first, int last, size_t *shape, const char *fname) {
    ptrdiff_t sizes[MHA_MAX_DIMS];
    size_t n = lmha_checksizes(L, first, last, sizes, 0, fname);
    for (size_t d = 0; d < n; d++) shape[d] = (size_t)sizes[d];
    return n;
}

/* ---- nested tables of numbers or booleans -> tensors ---- */

/* The Lua path of an element being converted, for messages: "t[2][1]". */
static const char *table_path(char *buf, size_t n, const size_t *index, size_t depth) {
    size_t used = (size_t)snprintf(buf, n, "t");
    for (size_t d = 0; d < depth && used < n; d++) used += (size_t)snprintf(buf + used, n - used, "[%zu]", index[d] + 1);
    return buf;
}

typedef struct table_walk {
    size_t ndim;
    size_t shape[MHA_MAX_DIMS];
    int leaf_type;              /* LUA_TNUMBER or LUA_TBOOLEAN */
    size_t index[MHA_MAX_DIMS]; /* where the walk is, for messages */
    size_t next;                /* elements written so far */
    mha_tensor *out;
    const char *fname;
} table_walk;

/* Pass 1: the shape, read down the first elements: {{1,2,3},{4,5,6}} -> (2,3). */
static void table_shape(lua_State *L, int idx, table_walk *w) {
    char path[128];
    lua_pushvalue(L, idx);
    w->ndim = 0;
    w->leaf_type = LUA_TNUMBER; /* an empty table makes a float tensor */
    for (;;) {
        int type = lua_type(L, -1);
        if (type == LUA_TNUMBER || type == LUA_TBOOLEAN) { w->leaf_type = type; break; }
        if (type != LUA_TTABLE)
            luaL_error(L, "%s: %s is %s, expected a number, a boolean or a table of them", w->fname,
                       table_path(path, sizeof path, w->index, w->ndim), lmha_typename(L, -1));
        if (w->ndim == MHA_MAX_DIMS)
            luaL_error(L, "%s: the table is nested deeper than %d levels, the most dims a tensor has", w->fname,
                       MHA_MAX_DIMS);
        size_t len = (size_t)lua_rawlen(L, -1);
        w->index[w->ndim] = 0;
        w->shape[w->ndim++] = len;
        if (len == 0) break;
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
    }
    lua_pop(L, 1);
}

/* Pass 2: check every element against the shape and type, and write it into w->out in C order. */
static void table_fill(lua_State *L, table_walk *w, size_t depth) {
    char path[128], first[128];
    size_t zero[MHA_MAX_DIMS] = {0};
    int type = lua_type(L, -1);
    if (depth == w->ndim) {
        if (type != w->leaf_type) {
            if (type == LUA_TTABLE)
                luaL_error(L, "%s: ragged table: %s is a table, but %s is %s", w->fname,
                           table_path(path, sizeof path, w->index, depth), table_path(first, sizeof first, zero, depth),
                           a_type(w->leaf_type));
            luaL_error(L, "%s: %s is %s, but %s is %s (a tensor holds numbers or booleans, not both)", w->fname,
                       table_path(path, sizeof path, w->index, depth), lmha_typename(L, -1),
                       table_path(first, sizeof first, zero, depth), a_type(w->leaf_type));
        }
        if (type == LUA_TBOOLEAN) mha_bool(w->out)[w->next++] = lua_toboolean(L, -1);
        else mha_f32(w->out)[w->next++] = (float)lua_tonumber(L, -1);
        return;
    }
    if (type != LUA_TTABLE) {
        if (type == LUA_TNUMBER || type == LUA_TBOOLEAN)
            luaL_error(L, "%s: ragged table: %s is %s, but %s is a table of %I", w->fname,
                       table_path(path, sizeof path, w->index, depth), lmha_typename(L, -1),
                       table_path(first, sizeof first, zero, depth), (LUAI_UACINT)w->shape[depth]);
        luaL_error(L, "%s: %s is %s, expected a number, a boolean or a table of them", w->fname,
                   table_path(path, sizeof path, w->index, depth), lmha_typename(L, -1));
    }
    size_t len = (size_t)lua_rawlen(L, -1);
    if (len != w->shape[depth])
        luaL_error(L, "%s: ragged table: %s has %I element%s, but %s has %I", w->fname,
                   table_path(path, sizeof path, w->index, depth), (LUAI_UACINT)len, len == 1 ? "" : "s",
                   table_path(first, sizeof first, zero, depth), (LUAI_UACINT)w->shape[depth]);
    luaL_checkstack(L, 2, "nested table");
    for (size_t i = 0; i < len; i++) {
        w->index[depth] = i;
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        table_fill(L, w, depth + 1);
        lua_pop(L, 1);
    }
    w->index[depth] = 0;
}

/* Pushes a new tensor made from the nested table at idx. */
static mha_tensor *tensor_from_table(lua_State *L, int idx, const char *fname) {
    table_walk w = {.fname = fname};
    idx = lua_absindex(L, idx);
    table_shape(L, idx, &w);
    w.out = lmha_newtensor(L);
    lmha_result(L, mha_empty_named(w.out, w.leaf_type == LUA_TBOOLEAN ? MHA_BOOL : MHA_FLOAT32, w.ndim, w.shape, w.fname));
    lua_pushvalue(L, idx);
    table_fill(L, &w, 0);
    lua_pop(L, 1);
    return w.out;
}

/* Pushes a new scalar tensor holding a number or a boolean. */
static mha_tensor *tensor_from_scalar(lua_State *L, int idx) {
    mha_tensor *t = lmha_newtensor(L);
    if (lua_isboolean(L, idx)) {
        lmha_result(L, mha_empty(t, MHA_BOOL, 0, NULL));
        mha_bool(t)[0] = lua_toboolean(L, idx);
    } else {
        lmha_result(L, mha_full(t, 0, NULL, (float)lua_tonumber(L, idx)));
    }
    return t;
}

mha_tensor *lmha_totensor(lua_State *L, int arg, const char *fname) {
    mha_tensor *t = lmha_testtensor(L, arg);
    if (t) return t;
    arg = lua_absindex(L, arg);
    switch (lua_type(L, arg)) {
    case LUA_TNUMBER: case LUA_TBOOLEAN: t = tensor_from_scalar(L, arg); break;
    case LUA_TTABLE: t = tensor_from_table(L, arg, fname); break;
    default:
        if (luaL_testudata(L, arg, MHA_TENSOR_T)) luaL_argerror(L, arg, "the tensor was closed");
        check_dot_call(L, arg, MHA_TENSOR_T);
        luaL_typeerror(L, arg, "mha.Tensor, number or table");
    }
    lua_replace(L, arg); /* the new tensor takes the argument's place, which keeps it alive */
    return t;
}

/* ---- options tables: {attn_mask = m, is_causal = true} ---- */

void lmha_checkoptions(lua_State *L, int idx, const char *fname, const char *const names[]) {
    if (lua_isnoneornil(L, idx)) return;
    if (!lua_istable(L, idx))
        luaL_error(L, "%s: options must be a table, got %s", fname, luaL_typename(L, idx));
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        int known = 0;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (size_t i = 0; names[i] && !known; i++) known = strcmp(lua_tostring(L, -1), names[i]) == 0;
        if (!known) {   /* the library's one options check (lua/bind/options.lua) names it, with a
                           did-you-mean */
            lua_pop(L, 1);
            /* loaded with mha.display, at start */
            luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
            if (lua_getfield(L, -1, "mha.options") != LUA_TTABLE) {
                lua_getglobal(L, "require");
                lua_pushliteral(L, "mha.options");
                lua_call(L, 1, 1);
            }
            lua_getfield(L, -1, "check");
            lua_pushstring(L, fname);
            lua_pushvalue(L, idx);
            lua_newtable(L);
            for (size_t i = 0; names[i]; i++) {
                lua_pushstring(L, names[i]);
                lua_rawseti(L, -2, (lua_Integer)i + 1);
            }
            lua_call(L, 3, 0);
            luaL_error(L, "%s: unknown option", fname); /* not reached: check raised */
        }
    }
}

/* Pushes option key of the table at idx; 0 (nothing pushed) when there are no options or the key
 * is absent. */
static int getoption(lua_State *L, int idx, const char *key) {
    if (lua_isnoneornil(L, idx)) return 0;
    if (lua_getfield(L, idx, key) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    return 0;
}

int lmha_optboolean(lua_State *L, int idx, const char *key, int def, const char *fname) {
    if (!getoption(L, idx, key)) return def;
    if (lua_type(L, -1) != LUA_TBOOLEAN)
        luaL_error(L, "%s: option %s must be a boolean, got %s", fname, key, luaL_typename(L, -1));
    int value = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return value;
}

/* The tensor stays alive while the options table holds it, which outlasts the call. */
const mha_tensor *lmha_opttensor(lua_State *L, int idx, const char *key, const char *fname) {
    if (!getoption(L, idx, key)) return NULL;
    const mha_tensor *t = lmha_testtensor(L, -1);
    if (!t) luaL_error(L, "%s: option %s must be a mha.Tensor, got %s", fname, key, luaL_typename(L, -1));
    lua_pop(L, 1);
    return t;
}

double lmha_optnumber(lua_State *L, int idx, const char *key, double def, const char *fname) {
    if (!getoption(L, idx, key)) return def;
    if (lua_type(L, -1) != LUA_TNUMBER)
        luaL_error(L, "%s: option %s must be a number, got %s", fname, key, luaL_typename(L, -1));
    double value = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return value;
}

double lmha_optpositive(lua_State *L, int idx, const char *key, double def, const char *fname) {
    if (!getoption(L, idx, key)) return def;
    double value = lua_tonumber(L, -1);
    if (lua_type(L, -1) != LUA_TNUMBER || !(value > 0) || isinf(value))
        luaL_error(L, "%s: option %s must be a positive number, got %s", fname, key,
                   luaL_tolstring(L, -1, NULL));
    lua_pop(L, 1);
    return value;
}

lua_Integer lmha_optcount(lua_State *L, int idx, const char *key, lua_Integer def,
                          lua_Integer least, const char *fname, const char *context) {
    if (!getoption(L, idx, key)) return def;
    int isint = 0;
    lua_Integer n = lua_tointegerx(L, -1, &isint);
    if (!isint || n < least)
        luaL_error(L, "%s: option %s must be a whole number >= %I, got %s%s", fname, key,
                   (LUAI_UACINT)least, luaL_tolstring(L, -1, NULL), context);
    lua_pop(L, 1);
    return n;
}

size_t lmha_optsize(lua_State *L, int idx, const char *key, size_t def, const char *fname,
                    const char *example) {
    if (!getoption(L, idx, key)) {
        if (def == 0) luaL_error(L, "%s: option %s is required, e.g. %s", fname, key, example);
        return def;
    }
    int isint = 0;
    lua_Integer n = lua_tointegerx(L, -1, &isint);
    if (!isint || n < 1)
        luaL_error(L, "%s: option %s must be a positive integer, got %s", fname, key,
                   luaL_tolstring(L, -1, NULL));
    lua_pop(L, 1);
    return (size_t)n;
}

/* ---- arithmetic on anything that converts to a tensor ---- */

/* a op b where either side may be a number (tensor-number in both orders) or a table. */
int lmha_arith(lua_State *L, mha_binop op, const char *fname) {
    int a_num = lua_type(L, 1) == LUA_TNUMBER, b_num = lua_type(L, 2) == LUA_TNUMBER;
    if (a_num || b_num) {
        mha_tensor *t = lmha_totensor(L, a_num ? 2 : 1, fname);
        float s = (float)lua_tonumber(L, a_num ? 1 : 2);
        return lmha_result(L, mha_ag_binary_scalar(lmha_newtensor(L), op, t, s, a_num));
    }
    mha_tensor *a = lmha_totensor(L, 1, fname), *b = lmha_totensor(L, 2, fname);
    return lmha_result(L, mha_ag_binary(lmha_newtensor(L), op, a, b));
}
