/* lua/bind/ltensor.c - the mha.Tensor userdata: a Lua value that IS an mha_tensor, with its methods
 * (shape, element access, the view family) and metamethods (+ - * / ^, unary minus, ==, #, t[i],
 * tostring, gc).
 *
 * Dimensions and indices are 1-based or negative here, checked and converted by lua/bind/lauxmha.c.
 * The op methods (t:softmax(dim), t:sum(dim), t:matmul(u) ...) live in lua/bind/lmha.c, which adds
 * them to this method table as well as to the library. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lauxmha.h"
#include "lmha.h"
#include "autograd/autograd_ops.h"
#include "nn/nn.h"
#include "attention/attention.h"

/* ---- reading tensors back into Lua ---- */

static void push_element(lua_State *L, const mha_tensor *t, ptrdiff_t offset) {
    if (t->dtype == MHA_BOOL) lua_pushboolean(L, mha_bool(t)[offset]);
    else lua_pushnumber(L, (lua_Number)mha_f32(t)[offset]);
}

/* Pushes t's elements from dimension d on as nested tables, starting at element offset. */
static void push_nested(lua_State *L, const mha_tensor *t, size_t d, ptrdiff_t offset) {
    if (d == t->ndim) { push_element(L, t, offset); return; }
    luaL_checkstack(L, 2, "totable");
    lua_createtable(L, t->shape[d] < 1u << 20 ? (int)t->shape[d] : 0, 0);
    for (size_t i = 0; i < t->shape[d]; i++) {
        push_nested(L, t, d + 1, offset + (ptrdiff_t)i * t->stride[d]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* ---- methods: what a tensor is ---- */

/* The metatable of the lists t:shape(), t:size() and t:strides() return, in the registry: its
 * __tostring writes {3, 4} as the REPL shows the table, so print(x:shape()) and
 * string.format("%s", x:shape()) read the same. It has no __name: a list passed where a number
 * belongs is still "got table". __sizes tells lua/repl/printer.lua to show it as a plain table. */
#define SIZES_MT "mha.sizes"

/* __tostring of a sizes list: "{3, 4}", "{}" for a 0-d tensor's shape. */
static int sizes_tostring(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addchar(&b, '{');
    for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1) luaL_addstring(&b, ", ");
        lua_rawgeti(L, 1, i);
        luaL_tolstring(L, -1, NULL);
        lua_replace(L, -2);   /* the text in place of the value: luaL_addvalue takes the top */
        luaL_addvalue(&b);
    }
    luaL_addchar(&b, '}');
    luaL_pushresult(&b);
    return 1;
}

/* Pushes a new list of t's ndim sizes (shape) or strides, with the sizes metatable. */
static int push_sizes(lua_State *L, const mha_tensor *t, int strides) {
    lua_createtable(L, (int)t->ndim, 0);
    for (size_t d = 0; d < t->ndim; d++) {
        lua_pushinteger(L, strides ? (lua_Integer)t->stride[d] : (lua_Integer)t->shape[d]);
        lua_rawseti(L, -2, (lua_Integer)d + 1);
    }
    luaL_setmetatable(L, SIZES_MT);
    return 1;
}

static int t_shape(lua_State *L) { return push_sizes(L, lmha_checktensor(L, 1), 0); }

/* t:size() is the shape table, t:size(dim) one size. */
static int t_size(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (lua_isnoneornil(L, 2)) return t_shape(L);
    lua_pushinteger(L, (lua_Integer)t->shape[lmha_checktdim(L, 2, t, t->ndim, "size")]);
    return 1;
}

static int t_strides(lua_State *L) { return push_sizes(L, lmha_checktensor(L, 1), 1); }

/* The element offset into the storage: a count of elements, so 0 means
 * "starts at the first one". */
static int t_offset(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)lmha_checktensor(L, 1)->offset);
    return 1;
}

static int t_dim(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)lmha_checktensor(L, 1)->ndim);
    return 1;
}

static int t_numel(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)mha_numel(lmha_checktensor(L, 1)));
    return 1;
}

static int t_dtype(lua_State *L) {
    lua_pushstring(L, lmha_checktensor(L, 1)->dtype == MHA_BOOL ? "bool" : "float32");
    return 1;
}

static int t_is_contiguous(lua_State *L) {
    lua_pushboolean(L, mha_is_contiguous(lmha_checktensor(L, 1)));
    return 1;
}

/* Two tensors share memory when they view the same storage (a view and its base, two views...). */
static int t_shares_storage(lua_State *L) {
    mha_tensor *a = lmha_checktensor(L, 1), *b = lmha_checktensor(L, 2);
    lua_pushboolean(L, a->storage == b->storage);
    return 1;
}

/* Reads the `given` indices at first.. (one for every dim of t), converted to 0-based. */
static void read_index(lua_State *L, int first, int given, const mha_tensor *t, size_t *index, const char *fname) {
    char shape[MHA_SHAPE_BUF];
    if (given != (int)t->ndim)
        luaL_error(L, "%s: %d indices given for a tensor of shape %s, expected %d", fname, given < 0 ? 0 : given,
                   lmha_shape(shape, t), (int)t->ndim);
    for (size_t d = 0; d < t->ndim; d++) index[d] = lmha_checkindex(L, first + (int)d, t, d, fname);
}

/* t:get(i, j, ...): one element (1-based indices, negative from the end). */
static int t_get(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t index[MHA_MAX_DIMS];
    read_index(L, 2, lua_gettop(L) - 1, t, index, "get");
    double value;
    if (mha_get(&value, t, index) != MHA_OK) return luaL_error(L, "%s", mha_errmsg());
    if (t->dtype == MHA_BOOL) lua_pushboolean(L, value != 0.0);
    else lua_pushnumber(L, value);
    return 1;
}

/* t:set(i, j, ..., value): writes one element, through any view into the shared storage. */
static int t_set(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t index[MHA_MAX_DIMS];
    int v = lua_gettop(L); /* the value is the last argument */
    read_index(L, 2, v - 2, t, index, "set");
    double value;
    if (lua_isboolean(L, v)) value = lua_toboolean(L, v);
    else if (lua_type(L, v) == LUA_TNUMBER) value = lua_tonumber(L, v);
    else return luaL_error(L, "set: the value (last argument) is %s, expected a number or a boolean", lmha_typename(L, v));
    if (mha_set(t, index, value) != MHA_OK) return luaL_error(L, "%s", mha_errmsg());
    lua_settop(L, 1);
    return 1;
}

/* The most empty tables totable makes for a tensor with no element: (2^40, 0) would be 2^40
 * tables. */
#define TOTABLE_EMPTY_MAX ((size_t)1 << 20)

/* t:totable(): nested tables (a number or boolean for a scalar). */
static int t_totable(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = lmha_checktensor(L, 1);
    /* a tensor holding nothing still gives a table per row up to its first size 0 */
    size_t tables = 1;
    for (size_t d = 0; d < t->ndim && t->shape[d] != 0 && mha_numel(t) == 0; d++) {
        if (tables > TOTABLE_EMPTY_MAX / t->shape[d])
            return luaL_error(L, "totable: a tensor of shape %s has no element but would take more than %I "
                              "empty tables", lmha_shape(shape, t), (LUAI_UACINT)TOTABLE_EMPTY_MAX);
        tables *= t->shape[d];
    }
    push_nested(L, t, 0, 0);
    return 1;
}

/* t:item(): the only element of a one-element tensor. */
static int t_item(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t n = mha_numel(t);
    if (n != 1)
        return luaL_error(L, "item: a tensor of shape %s has %I elements, expected exactly 1", lmha_shape(shape, t),
                          (LUAI_UACINT)n);
    ptrdiff_t offset = 0; /* every index is 0: the first element */
    push_element(L, t, offset);
    return 1;
}

/* ---- methods: copies and conversions ---- */

static int t_clone(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    return lmha_result(L, mha_ag_clone(lmha_newtensor(L), t));
}

static int t_contiguous(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    return lmha_result(L, mha_ag_contiguous(lmha_newtensor(L), t));
}

static int t_float(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (t->dtype == MHA_FLOAT32) { lua_settop(L, 1); return 1; } /* like torch: already float, same
                                                                    tensor */
    return lmha_result(L, mha_to_dtype(lmha_newtensor(L), t, MHA_FLOAT32));
}

static int t_bool(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (t->dtype == MHA_BOOL) { lua_settop(L, 1); return 1; }
    return lmha_result(L, mha_to_dtype(lmha_newtensor(L), t, MHA_BOOL));
}

/* Writes the value at arg (a tensor, number or table, broadcast) into t, or into t's slice *row
 * along its first dim when row is not NULL (t[i] = v). The core's writer follows the write rule
 * (tensor.h). */
static void write_value(lua_State *L, mha_tensor *t, const size_t *row, int arg, const char *fname) {
    mha_tensor *src = lmha_totensor(L, arg, fname);
    mha_tensor converted = MHA_TENSOR_EMPTY;
    if (src->dtype != t->dtype) { /* a number into a bool tensor, a bool mask into a float one */
        if (mha_to_dtype(&converted, src, t->dtype) != MHA_OK) luaL_error(L, "%s", mha_errmsg());
        src = &converted;
    }
    mha_status st = row ? mha_copy_into_slice(t, 0, *row, src, fname) : mha_copy_into_named(t, src, fname);
    mha_release(&converted);
    if (st != MHA_OK) luaL_error(L, "%s", mha_errmsg());
}

/* Writes the value at 2 (a tensor, number or table, broadcast to the shape of the tensor at 1) into
 * it. Writing one value everywhere (fill_) is harmless where elements share memory, so PyTorch
 * allows it there and only a real copy is checked for that. */
static int write_into(lua_State *L, const char *fname, int check_overlap) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (check_overlap) lmha_checkwritable(L, t, fname);
    write_value(L, t, NULL, 2, fname);
    lua_settop(L, 1);
    return 1;
}

/* t:copy_(src): writes src (a tensor, number or table, broadcast to t's shape) into t, in place. */
static int t_copy_(lua_State *L) {
    return write_into(L, "copy_", 1);
}

/* t:fill_(value): every element := value, in place (through views, into the shared storage). */
static int t_fill_(lua_State *L) {
    luaL_checkany(L, 2);
    if (!lua_isboolean(L, 2)) luaL_checknumber(L, 2);
    return write_into(L, "fill_", 0);
}

/* t:zero_(): every element := 0, in place (x:grad():zero_() clears the gradient itself, as
 * torch's). */
static int t_zero_(lua_State *L) {
    lua_settop(L, 1);
    lua_pushinteger(L, 0);
    return write_into(L, "zero_", 0);
}

/* ---- methods: the view family (share storage, never copy) ---- */

/* t:view(2, 3) or t:view{2, 3}; one size may be -1. */
static int t_view(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    ptrdiff_t shape[MHA_MAX_DIMS];
    size_t ndim = lmha_checksizes(L, 2, lua_gettop(L), shape, 1, "view");
    return lmha_result(L, mha_ag_view(lmha_newtensor(L), t, ndim, shape));
}

static int t_reshape(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    ptrdiff_t shape[MHA_MAX_DIMS];
    size_t ndim = lmha_checksizes(L, 2, lua_gettop(L), shape, 1, "reshape");
    return lmha_result(L, mha_ag_reshape(lmha_newtensor(L), t, ndim, shape));
}

static int t_transpose(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t d0 = lmha_checktdim(L, 2, t, t->ndim, "transpose");
    size_t d1 = lmha_checktdim(L, 3, t, t->ndim, "transpose");
    return lmha_result(L, mha_ag_transpose(lmha_newtensor(L), t, d0, d1));
}

/* t:T(): the transpose of a 2-D tensor (a view). */
static int t_T(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = lmha_checktensor(L, 1);
    if (t->ndim != 2)
        return luaL_error(L, "T: expects a 2-D tensor, got shape %s (use transpose(d0, d1) or permute)",
                          lmha_shape(shape, t));
    return lmha_result(L, mha_ag_transpose(lmha_newtensor(L), t, 0, 1));
}

/* t:permute(3, 1, 2) or t:permute{3, 1, 2}: dim k of the result is dim perm[k] of t. */
static int t_permute(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t perm[MHA_MAX_DIMS];
    if (lua_istable(L, 2)) { /* unpack the table onto the stack, then read as arguments */
        int n = (int)luaL_len(L, 2);
        luaL_checkstack(L, n, "permute");
        lua_settop(L, 2);
        for (int k = 1; k <= n; k++) lua_geti(L, 2, k);
        lua_remove(L, 2);
    }
    int given = lua_gettop(L) - 1;
    if (given != (int)t->ndim)
        return luaL_error(L, "permute: %d dims given for a tensor of shape %s, expected %d (one for each dim)", given,
                          lmha_shape(shape, t), (int)t->ndim);
    for (size_t d = 0; d < t->ndim; d++) perm[d] = lmha_checktdim(L, 2 + (int)d, t, t->ndim, "permute");
    for (size_t d = 0; d < t->ndim; d++)
        for (size_t e = 0; e < d; e++)
            if (perm[e] == perm[d])
                return luaL_error(L, "permute: dim %d appears twice in the permutation", (int)perm[d] + 1);
    return lmha_result(L, mha_ag_permute(lmha_newtensor(L), t, perm));
}

/* t:narrow(dim, start, length): elements start .. start+length-1 along dim (start 1-based). */
static int t_narrow(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t dim = lmha_checktdim(L, 2, t, t->ndim, "narrow");
    lua_Integer given = luaL_checkinteger(L, 3), length = luaL_checkinteger(L, 4);
    size_t size = t->shape[dim], start = lmha_luaindex(given, size);
    if (start == SIZE_MAX)
        return luaL_error(L, "narrow: start %I out of range for dim %I of size %I in a tensor of shape %s (expected "
                             "1..%I, or -%I..-1 counting from the end)",
                          (LUAI_UACINT)given, (LUAI_UACINT)dim + 1, (LUAI_UACINT)size, lmha_shape(shape, t),
                          (LUAI_UACINT)size, (LUAI_UACINT)size);
    if (length < 0)
        return luaL_error(L, "narrow: length %I is negative; from start %I in dim %I of size %I (tensor of shape %s) "
                             "it can be 0..%I",
                          (LUAI_UACINT)length, (LUAI_UACINT)given, (LUAI_UACINT)dim + 1, (LUAI_UACINT)size,
                          lmha_shape(shape, t), (LUAI_UACINT)(size - start));
    if ((lua_Unsigned)length > size - start)
        return luaL_error(L, "narrow: start %I with length %I runs past size %I of dim %I (tensor of shape %s; at most "
                             "length %I from there)",
                          (LUAI_UACINT)given, (LUAI_UACINT)length, (LUAI_UACINT)size, (LUAI_UACINT)dim + 1,
                          lmha_shape(shape, t), (LUAI_UACINT)(size - start));
    return lmha_result(L, mha_ag_narrow(lmha_newtensor(L), t, dim, start, (size_t)length));
}

/* t:select(dim, i): the slice at index i along dim, which is dropped. */
static int t_select(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t dim = lmha_checktdim(L, 2, t, t->ndim, "select");
    size_t index = lmha_checkindex(L, 3, t, dim, "select");
    return lmha_result(L, mha_ag_select(lmha_newtensor(L), t, dim, index));
}

/* t:unsqueeze(dim): a new size-1 dim at position dim of the result (1..ndim+1, -1 appends). */
static int t_unsqueeze(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t dim = lmha_checktdim(L, 2, t, t->ndim + 1, "unsqueeze");
    return lmha_result(L, mha_ag_unsqueeze(lmha_newtensor(L), t, dim));
}

/* t:squeeze([dim]): drops dim if its size is 1, or every size-1 dim. */
static int t_squeeze(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    size_t dim = lmha_opttdim(L, 2, t, MHA_ALL_DIMS, "squeeze");
    return lmha_result(L, mha_ag_squeeze(lmha_newtensor(L), t, dim));
}

/* t:expand(4, -1, 3) or t:expand{...}: a broadcast view; -1 keeps a size. */
static int t_expand(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = lmha_checktensor(L, 1);
    ptrdiff_t sizes[MHA_MAX_DIMS];
    size_t want[MHA_MAX_DIMS];
    size_t ndim = lmha_checksizes(L, 2, lua_gettop(L), sizes, 1, "expand");
    if (ndim < t->ndim)
        return luaL_error(L, "expand: %d sizes given for a tensor of shape %s, expected at least %d", (int)ndim,
                          lmha_shape(shape, t), (int)t->ndim);
    size_t lead = ndim - t->ndim;
    for (size_t d = 0; d < ndim; d++) {
        if (sizes[d] == -1 && d < lead)
            return luaL_error(L, "expand: size -1 at position %d is a new leading dim, which has no size to keep",
                              (int)d + 1);
        want[d] = sizes[d] == -1 ? t->shape[d - lead] : (size_t)sizes[d];
    }
    return lmha_result(L, mha_ag_expand(lmha_newtensor(L), t, ndim, want));
}

/* t:split(size [, dim]) and t:chunk(n [, dim]): several views, returned as several values. */
static int split_or_chunk(lua_State *L, int chunk) {
    const char *fname = chunk ? "chunk" : "split";
    mha_tensor *t = lmha_checktensor(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    if (t->ndim == 0) return luaL_error(L, "%s: a scalar tensor (shape ()) has no dim to split", fname);
    size_t dim = lmha_opttdim(L, 3, t, 0, fname);
    if (n <= 0) return luaL_error(L, "%s: %s must be a positive integer, got %I", fname, chunk ? "chunks" : "split_size", (LUAI_UACINT)n);
    size_t size = t->shape[dim], piece = (size_t)n;
    if (chunk) piece = size == 0 ? 1 : (size + (size_t)n - 1) / (size_t)n;
    size_t count = size == 0 ? 1 : (size + piece - 1) / piece;
    if (count > LUAI_MAXSTACK / 2)
        return luaL_error(L, "%s: %I pieces are too many to return as separate values", fname, (LUAI_UACINT)count);
    luaL_checkstack(L, (int)count + 2, fname);
    /* the pieces are made in a scratch array first (a userdata, so an error cannot leak it) */
    mha_tensor *pieces = (mha_tensor *)lua_newuserdatauv(L, count * sizeof(mha_tensor), 0);
    int scratch = lua_gettop(L);
    for (size_t i = 0; i < count; i++) {
        pieces[i] = MHA_TENSOR_EMPTY;
        lmha_newtensor(L); /* the empty results, made before any storage is shared */
    }
    size_t made = 0;
    mha_status st = chunk ? mha_ag_chunk(pieces, count, &made, t, (size_t)n, dim)
                          : mha_ag_split(pieces, count, &made, t, piece, dim);
    if (st != MHA_OK) return lmha_result(L, st);
    for (size_t i = 0; i < made; i++) *(mha_tensor *)lua_touserdata(L, scratch + 1 + (int)i) = pieces[i];
    lua_settop(L, scratch + (int)made);
    return (int)made;
}

static int t_split(lua_State *L) { return split_or_chunk(L, 0); }
static int t_chunk(lua_State *L) { return split_or_chunk(L, 1); }

/* ---- metamethods ---- */

/* t:close() / __gc / __close: drop the reference now; the tensor reads as closed afterwards. */
static int t_gc(lua_State *L) {
    mha_release(totensor(L, 1));
    return 0;
}


static int t_add(lua_State *L) { return lmha_arith(L, MHA_ADD, "add"); }
static int t_sub(lua_State *L) { return lmha_arith(L, MHA_SUB, "sub"); }
static int t_mul(lua_State *L) { return lmha_arith(L, MHA_MUL, "mul"); }
static int t_div(lua_State *L) { return lmha_arith(L, MHA_DIV, "div"); }
static int t_pow(lua_State *L) { return lmha_arith(L, MHA_POW, "pow"); }

static int t_unm(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    return lmha_result(L, mha_ag_unary(lmha_newtensor(L), MHA_NEG, t));
}

/* a == b: true when same shape, dtype and values (torch.equal; NaN is unequal to itself). Lua's ==
 * must give a boolean: the elementwise comparison is a:eq(b), giving a bool tensor. */
static int t_eq(lua_State *L) {
    mha_tensor *a = lmha_testtensor(L, 1), *b = lmha_testtensor(L, 2);
    bool equal = false;
    if (a && b) {
        mha_status st = mha_equal(&equal, a, b);
        if (st != MHA_OK) return lmha_fail(L, st, NULL, NULL);
    }
    lua_pushboolean(L, equal);
    return 1;
}

/* a < b and a <= b: Lua turns the answer of __lt/__le into a boolean, so they cannot give the bool
 * tensor an elementwise comparison is; they say which methods do. (a > b is b < a to Lua.) */
static int t_lt(lua_State *L) {
    return luaL_error(L, "%s", "compare tensors elementwise with a:lt(b), a:le(b), a:gt(b), a:ge(b); < and > "
                               "cannot return a tensor in Lua");
}

static int t_le(lua_State *L) {
    return luaL_error(L, "%s", "compare tensors elementwise with a:lt(b), a:le(b), a:gt(b), a:ge(b); <= and >= "
                               "cannot return a tensor in Lua");
}

/* #t: the size of dim 1, like len() of a torch tensor. */
static int t_len(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    if (t->ndim == 0) return luaL_error(L, "%s", "#: a scalar tensor (shape ()) has no length");
    lua_pushinteger(L, (lua_Integer)t->shape[0]);
    return 1;
}

/* t[i]: the slice i along dim 1, a view (a number or boolean when t is 1-D); t.name: a method. */
static int t_index(lua_State *L) {
    if (lua_type(L, 2) == LUA_TNUMBER) {
        mha_tensor *t = lmha_checktensor(L, 1);
        if (t->ndim == 0) return luaL_error(L, "%s", "index: a scalar tensor (shape ()) cannot be indexed; use t:item()");
        int isint;
        lua_tointegerx(L, 2, &isint); /* t[2.0] is t[2] */
        if (!isint) return luaL_error(L, "index: t[%f]: an index must be an integer", lua_tonumber(L, 2));
        size_t index = lmha_checkindex(L, 2, t, 0, "index");
        if (t->ndim == 1) { push_element(L, t, (ptrdiff_t)index * t->stride[0]); return 1; }
        return lmha_result(L, mha_ag_select(lmha_newtensor(L), t, 0, index));
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1)); /* the method table */
    return 1;
}

/* t[i] = v: writes v (number, boolean, table or tensor, broadcast) into the slice i along dim 1. */
static int t_newindex(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    int isint;
    lua_tointegerx(L, 2, &isint);
    if (lua_type(L, 2) != LUA_TNUMBER || !isint) {
        /* the index named by its type (or a name, or a number), never printed whole: a tensor as
         * index would be formatted into the message */
        const char *shown = luaL_getmetafield(L, 2, "__name") == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, 2);
        if (lua_type(L, 2) == LUA_TNUMBER || (lua_type(L, 2) == LUA_TSTRING && lua_rawlen(L, 2) <= 40))
            shown = luaL_tolstring(L, 2, NULL);
        return luaL_error(L, "newindex: t[%s] = ...: only integer indices can be assigned (tensors have no fields)",
                          shown);
    }
    if (t->ndim == 0) return luaL_error(L, "%s", "newindex: a scalar tensor (shape ()) cannot be indexed; use t:fill_(v)");
    size_t index = lmha_checkindex(L, 2, t, 0, "newindex");
    if (lua_type(L, 3) != LUA_TNUMBER && !lua_isboolean(L, 3)) { /* a copy, not a fill: the row must
                                                                    not overlap */
        mha_tensor *row = lmha_newtensor(L);
        lmha_result(L, mha_select(row, t, 0, index));
        lmha_checkwritable(L, row, "newindex");
        lua_pop(L, 1);
    }
    write_value(L, t, &index, 3, "newindex");
    return 0;
}

/* A plain printout used when the "format" function of lua/show/display.lua is not there. */
static void format_plain(luaL_Buffer *b, const mha_tensor *t, size_t d, ptrdiff_t offset) {
    char num[64];
    if (d == t->ndim) {
        if (t->dtype == MHA_BOOL) luaL_addstring(b, mha_bool(t)[offset] ? "true" : "false");
        else {
            snprintf(num, sizeof num, "%.6g", (double)mha_f32(t)[offset]);
            luaL_addstring(b, num);
        }
        return;
    }
    luaL_addchar(b, '[');
    for (size_t i = 0; i < t->shape[d]; i++) {
        if (i > 0) {
            luaL_addchar(b, ',');
            if (d + 1 < t->ndim) {
                luaL_addchar(b, '\n');
                for (size_t k = 0; k <= d; k++) luaL_addchar(b, ' ');
            } else {
                luaL_addchar(b, ' ');
            }
        }
        format_plain(b, t, d + 1, offset + (ptrdiff_t)i * t->stride[d]);
    }
    luaL_addchar(b, ']');
}

#define PLAIN_MAX_ELEMENTS 1000 /* beyond this the fallback shows only the shape */

static int t_tostring(lua_State *L) {
    char shape[MHA_SHAPE_BUF];
    mha_tensor *t = totensor(L, 1);
    if (!t->storage) { lua_pushstring(L, "mha.Tensor (closed)"); return 1; }
    lua_getfield(L, LUA_REGISTRYINDEX, LMHA_LIB_KEY);
    if (lua_istable(L, -1) && lua_getfield(L, -1, "format") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        lua_call(L, 1, 1);
        if (lua_type(L, -1) == LUA_TSTRING) return 1;
        return luaL_error(L, "%s", "__tostring: mha.format did not return a string");
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "mha.Tensor %s %s", lmha_shape(shape, t), t->dtype == MHA_BOOL ? "bool" : "float32");
    luaL_addvalue(&b);
    if (mha_numel(t) > 0 && mha_numel(t) <= PLAIN_MAX_ELEMENTS) {   /* (2^40,0): 2^40 empty rows */
        luaL_addchar(&b, '\n');
        format_plain(&b, t, 0, 0);
    }
    luaL_pushresult(&b);
    return 1;
}

static const luaL_Reg meth[] = {
    {"shape", t_shape},
    {"size", t_size},
    {"strides", t_strides},
    {"offset", t_offset},
    {"dim", t_dim},
    {"numel", t_numel},
    {"dtype", t_dtype},
    {"is_contiguous", t_is_contiguous},
    {"shares_storage", t_shares_storage},
    {"get", t_get},
    {"set", t_set},
    {"totable", t_totable},
    {"item", t_item},
    {"clone", t_clone},
    {"contiguous", t_contiguous},
    {"float", t_float},
    {"bool", t_bool},
    {"copy_", t_copy_},
    {"fill_", t_fill_},
    {"zero_", t_zero_},
    {"view", t_view},
    {"reshape", t_reshape},
    {"transpose", t_transpose},
    {"T", t_T},
    {"permute", t_permute},
    {"narrow", t_narrow},
    {"select", t_select},
    {"unsqueeze", t_unsqueeze},
    {"squeeze", t_squeeze},
    {"expand", t_expand},
    {"split", t_split},
    {"chunk", t_chunk},
    {"close", t_gc},
    {NULL, NULL}
};

static const luaL_Reg metameth[] = {
    {"__index", NULL},      /* placeholder: a closure over the method table */
    {"__newindex", t_newindex},
    {"__add", t_add},
    {"__sub", t_sub},
    {"__mul", t_mul},
    {"__div", t_div},
    {"__pow", t_pow},
    {"__unm", t_unm},
    {"__eq", t_eq},
    {"__lt", t_lt},
    {"__le", t_le},
    {"__len", t_len},
    {"__tostring", t_tostring},
    {"__gc", t_gc},
    {"__close", t_gc},
    {NULL, NULL}
};

int lmha_open_tensor(lua_State *L) {
    luaL_newmetatable(L, MHA_TENSOR_T); /* sets __name */
    luaL_setfuncs(L, metameth, 0);
    luaL_newlibtable(L, meth);
    luaL_setfuncs(L, meth, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__methods"); /* the REPL's completion and help list these */
    lua_pushcclosure(L, t_index, 1);
    lua_setfield(L, -2, "__index");
    lua_newtable(L); /* the readable fields, for completion: a tensor has none, only methods */
    lua_setfield(L, -2, "__fields");
    lua_pop(L, 1);
    lua_createtable(L, 0, 2); /* the sizes lists' metatable, without the __name newmetatable sets */
    lua_pushcfunction(L, sizes_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "__sizes");
    lua_setfield(L, LUA_REGISTRYINDEX, SIZES_MT);
    return 0;
}
