/* lua/bind/lmha.c - the C core module "mha.core": constructors, the tensor functions
 * (also Tensor methods), attention, random numbers, .npy files and memory; and luaopen_mha, the
 * loader of the package "mha", which preloads the embedded Lua parts and runs lua/mha.lua
 * (the mha table, assembled over these).
 *
 * Lua conventions: dims and indices are 1-based, negative dims count from the end; values (arange's
 * start and stop, seeds, sizes) are plain numbers. Returned indices (max/min/argmax with a dim) are
 * 1-based, so t:get(i) reads the element an argmax names. Every core failure is raised as a Lua
 * error carrying the core's message, which names the function, the argument and the shapes. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "embedded.h"
#include "attention/attention.h"
#include "kernels/kernels.h"
#include "lauxmha.h"
#include "lmha.h"
#include "lsys.h"
#include "io/npz.h"
#include "lautograd.h"
#include "autograd/autograd_ops.h"
#include "nn/nn.h"

/* ---- constructors ---- */

/* mha.tensor{{1,2},{3,4}}, mha.tensor(3.5), mha.tensor{true,false}, mha.tensor(t) (a copy);
 * an optional dtype "float32" or "bool" converts. */
/* torch.tensor's values typed as arguments, mha.tensor(1, 2, 3): an error showing the one table
 * they go in, "tensor: takes one table of values, not 3 numbers: mha.tensor{1, 2, 3}". */
static int values_as_arguments(lua_State *L) {
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1) luaL_addstring(&b, ", ");
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    return luaL_error(L, "tensor: takes one table of values, not %d numbers: mha.tensor{%s}", n,
                      lua_tostring(L, -1));
}

static int l_tensor(lua_State *L) {
    static const char *const dtypes[] = {"float32", "bool", NULL};
    luaL_checkany(L, 1);
    if (lua_type(L, 1) == LUA_TNUMBER && lua_type(L, 2) == LUA_TNUMBER) return values_as_arguments(L);
    int dtype = lua_isnoneornil(L, 2) ? -1 : luaL_checkoption(L, 2, NULL, dtypes);
    lua_settop(L, 1);
    mha_tensor *t, *given = lmha_testtensor(L, 1);
    if (given) { /* a copy, as torch.tensor(t) */
        t = lmha_newtensor(L);
        lmha_result(L, mha_clone(t, given));
    } else {
        t = lmha_totensor(L, 1, "tensor");
    }
    if (dtype >= 0 && (int)t->dtype != dtype)
        return lmha_result(L, mha_to_dtype(lmha_newtensor(L), t, dtype == 0 ? MHA_FLOAT32 : MHA_BOOL));
    return 1;
}

static int l_zeros(lua_State *L) {
    size_t shape[MHA_MAX_DIMS];
    size_t ndim = lmha_checkshape(L, 1, lua_gettop(L), shape, "zeros");
    return lmha_result(L, mha_zeros(lmha_newtensor(L), MHA_FLOAT32, ndim, shape));
}

static int l_ones(lua_State *L) {
    size_t shape[MHA_MAX_DIMS];
    size_t ndim = lmha_checkshape(L, 1, lua_gettop(L), shape, "ones");
    return lmha_result(L, mha_full(lmha_newtensor(L), ndim, shape, 1.0f));
}

/* mha.full(2, 3, value) or mha.full({2, 3}, value): the value is always the last argument. */
static int l_full(lua_State *L) {
    size_t shape[MHA_MAX_DIMS];
    int last = lua_gettop(L);
    if (last < 1 || lua_type(L, last) != LUA_TNUMBER)
        return luaL_error(L, "full: the last argument is the value, a number (got %s); e.g. mha.full(2, 3, 0.5)",
                          last < 1 ? "nothing" : luaL_typename(L, last));
    float value = (float)lua_tonumber(L, last);
    size_t ndim = lmha_checkshape(L, 1, last - 1, shape, "full");
    return lmha_result(L, mha_full(lmha_newtensor(L), ndim, shape, value));
}

static size_t checksize(lua_State *L, int arg, const char *fname, const char *what) {
    lua_Integer n = luaL_checkinteger(L, arg);
    if (n < 0) luaL_error(L, "%s: %s must not be negative, got %I", fname, what, (LUAI_UACINT)n);
    return (size_t)n;
}

/* mha.eye(n [, m]): (n,m) with ones on the diagonal. */
static int l_eye(lua_State *L) {
    size_t n = checksize(L, 1, "eye", "n");
    size_t m = lua_isnoneornil(L, 2) ? n : checksize(L, 2, "eye", "m");
    return lmha_result(L, mha_eye(lmha_newtensor(L), n, m));
}

/* mha.arange([start,] stop [, step]): start, start+step, ... below stop
 * (values, as torch.arange). */
static int l_arange(lua_State *L) {
    double start = 0, stop, step = 1;
    if (lua_isnoneornil(L, 2)) stop = luaL_checknumber(L, 1);
    else {
        start = luaL_checknumber(L, 1);
        stop = luaL_checknumber(L, 2);
        step = luaL_optnumber(L, 3, 1);
    }
    return lmha_result(L, mha_arange(lmha_newtensor(L), start, stop, step));
}

static int l_rand(lua_State *L) {
    size_t shape[MHA_MAX_DIMS];
    size_t ndim = lmha_checkshape(L, 1, lua_gettop(L), shape, "rand");
    return lmha_result(L, mha_rand(lmha_newtensor(L), ndim, shape));
}

static int l_randn(lua_State *L) {
    size_t shape[MHA_MAX_DIMS];
    size_t ndim = lmha_checkshape(L, 1, lua_gettop(L), shape, "randn");
    return lmha_result(L, mha_randn(lmha_newtensor(L), ndim, shape));
}

static int l_is_tensor(lua_State *L) {
    lua_pushboolean(L, luaL_testudata(L, 1, MHA_TENSOR_T) != NULL);
    return 1;
}

/* ---- random numbers ---- */

/* mha.seed(n), mha.manual_seed(n): the generator restarted from n; fname names the one called in
 * errors. */
static int seed_as(lua_State *L, const char *fname) {
    lua_Integer seed = luaL_checkinteger(L, 1);
    if (seed < 0) return luaL_error(L, "%s: the seed must not be negative, got %I", fname, (LUAI_UACINT)seed);
    mha_seed((uint64_t)seed);
    return 0;
}

static int l_seed(lua_State *L) {
    return seed_as(L, "seed");
}

/* mha.manual_seed(n): torch's name for mha.seed(n). */
static int l_manual_seed(lua_State *L) {
    return seed_as(L, "manual_seed");
}

static int l_get_seed(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)mha_get_seed());
    return 1;
}

/* In-place fills return the tensor, so they chain: mha.zeros(4, 4):uniform_(-1, 1). */
static int l_uniform_(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    lmha_checkwritable(L, t, "uniform_");
    float lo = (float)luaL_optnumber(L, 2, 0.0), hi = (float)luaL_optnumber(L, 3, 1.0);
    lmha_result(L, mha_uniform_(t, lo, hi));
    lua_settop(L, 1);
    return 1;
}

static int l_normal_(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    lmha_checkwritable(L, t, "normal_");
    float mean = (float)luaL_optnumber(L, 2, 0.0), std = (float)luaL_optnumber(L, 3, 1.0);
    lmha_result(L, mha_normal_(t, mean, std));
    lua_settop(L, 1);
    return 1;
}

static int l_xavier_uniform_(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    lmha_checkwritable(L, t, "xavier_uniform_");
    lmha_result(L, mha_xavier_uniform_(t, (float)luaL_optnumber(L, 2, 1.0)));
    lua_settop(L, 1);
    return 1;
}

static int l_xavier_normal_(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    lmha_checkwritable(L, t, "xavier_normal_");
    lmha_result(L, mha_xavier_normal_(t, (float)luaL_optnumber(L, 2, 1.0)));
    lua_settop(L, 1);
    return 1;
}

/* ---- files and memory ---- */

/* mha.load(path): a .npy file as a tensor, or (by its zip magic) a .npz archive as name ->
 * tensor. */
static int l_load(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    if (mha_npz_sniff(path)) return lmha_npz_load(L, path);
    return lmha_result(L, mha_npy_load(lmha_newtensor(L), path));
}

/* mha.save(path, t): t as a NumPy .npy file (a nested table or number is converted first);
 * mha.save("m.npz", {name = t, ...} [, {compressed = true}]): a .npz archive, as np.savez
 * writes. */
static int l_save(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    if (lmha_npz_path(path)) return lmha_npz_save(L, path, 2, 3);
    if (lmha_npz_named_table(L, 2))
        return luaL_error(L, "save: '%s': a table of named tensors is saved as a .npz archive: give a path ending "
                          "in .npz, e.g. mha.save(\"m.npz\", t)", path);
    mha_tensor *t = lmha_totensor(L, 2, "save");
    if (mha_npy_save(path, t) != MHA_OK) return luaL_error(L, "%s", mha_errmsg());
    return 0;
}

/* mha.memory(): bytes the core holds now, and the most it has held since the last reset_peak(). */
static int l_memory(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)mha_live_bytes());
    lua_pushinteger(L, (lua_Integer)mha_peak_bytes());
    return 2;
}

static int l_reset_peak(lua_State *L) {
    mha_reset_peak();
    return 0;
}

/* mha.threads([n]) -> the thread count before the call: with n (1..64) the kernels use n threads
 * from now on. Results are the same bits whatever n is (core/kernels/kernels.h). */
static int l_threads(lua_State *L) {
    size_t before = mha_kernels_threads();
    if (!lua_isnoneornil(L, 1)) {
        int whole = 0;
        lua_Integer n = lua_type(L, 1) == LUA_TNUMBER ? lua_tointegerx(L, 1, &whole) : 0;
        if (!whole || n < 1 || n > 64)
            return luaL_error(L, "threads: n must be a whole number from 1 to 64, got %s",
                              lua_type(L, 1) == LUA_TNUMBER ? luaL_tolstring(L, 1, NULL) : luaL_typename(L, 1));
        mha_kernels_set_threads((size_t)n);
    }
    lua_pushinteger(L, (lua_Integer)before);
    return 1;
}

/* mha.isa([name]) -> the kernel variant in use before the call ("avx512", "avx2" or "portable") and
 * the list of those this CPU runs, fastest first; with a name the kernels use that variant from now
 * on. The variants differ only in rounding: a result printed at 4 decimals is the same on each. */
static int l_isa(lua_State *L) {
    const char *names[8];
    size_t n = mha_kernels_isa_list(names, sizeof names / sizeof *names);
    const char *before = mha_kernels_isa();
    if (!lua_isnoneornil(L, 1)) {
        const char *name = luaL_checkstring(L, 1);
        if (!mha_kernels_use_isa(name)) {
            luaL_Buffer runs;
            luaL_buffinit(L, &runs);
            for (size_t i = 0; i < n; i++) {
                if (i > 0) luaL_addstring(&runs, ", ");
                luaL_addstring(&runs, names[i]);
            }
            luaL_pushresult(&runs);
            return luaL_error(L, "isa: '%s' is not a kernel variant this CPU runs (it runs %s)", name,
                              lua_tostring(L, -1));
        }
    }
    lua_pushstring(L, before);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 2;
}

/* mha.clock() -> wall-clock seconds (monotonic), to time a loop: os.clock() counts the CPU time of
 * every thread, which grows faster than the wall clock when the kernels run on several cores. */
static int l_clock(lua_State *L) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* ---- elementwise ---- */

static int unary(lua_State *L, mha_unop op, const char *fname) {
    mha_tensor *t = lmha_totensor(L, 1, fname);
    return lmha_result(L, mha_ag_unary(lmha_newtensor(L), op, t));
}

static int l_neg(lua_State *L) { return unary(L, MHA_NEG, "neg"); }
static int l_abs(lua_State *L) { return unary(L, MHA_ABS, "abs"); }
static int l_exp(lua_State *L) { return unary(L, MHA_EXP, "exp"); }
static int l_log(lua_State *L) { return unary(L, MHA_LOG, "log"); }
static int l_sqrt(lua_State *L) { return unary(L, MHA_SQRT, "sqrt"); }
static int l_tanh(lua_State *L) { return unary(L, MHA_TANH, "tanh"); }
static int l_relu(lua_State *L) { return unary(L, MHA_RELU, "relu"); }
static int l_gelu(lua_State *L) { return unary(L, MHA_GELU, "gelu"); }
static int l_sigmoid(lua_State *L) { return unary(L, MHA_SIGMOID, "sigmoid"); }

static int l_add(lua_State *L) { return lmha_arith(L, MHA_ADD, "add"); }
static int l_sub(lua_State *L) { return lmha_arith(L, MHA_SUB, "sub"); }
static int l_mul(lua_State *L) { return lmha_arith(L, MHA_MUL, "mul"); }
static int l_div(lua_State *L) { return lmha_arith(L, MHA_DIV, "div"); }
static int l_pow(lua_State *L) { return lmha_arith(L, MHA_POW, "pow"); }
static int l_maximum(lua_State *L) { return lmha_arith(L, MHA_MAXIMUM, "maximum"); }
static int l_minimum(lua_State *L) { return lmha_arith(L, MHA_MINIMUM, "minimum"); }

/* a:lt(b) etc.: bool tensors. b may be a number; a number first compares the other way round. */
static int compare(lua_State *L, mha_cmpop op, const char *fname) {
    static const mha_cmpop swapped[] = {[MHA_EQ] = MHA_EQ, [MHA_NE] = MHA_NE, [MHA_LT] = MHA_GT,
                                        [MHA_LE] = MHA_GE, [MHA_GT] = MHA_LT, [MHA_GE] = MHA_LE};
    luaL_checkany(L, 2);
    if (lua_type(L, 1) == LUA_TNUMBER && lua_type(L, 2) != LUA_TNUMBER) { /* 2 < t is t > 2 */
        lua_rotate(L, 1, 1);
        op = swapped[op];
    }
    mha_tensor *a = lmha_totensor(L, 1, fname);
    if (lua_type(L, 2) == LUA_TNUMBER)
        return lmha_result(L, mha_compare_scalar(lmha_newtensor(L), op, a, (float)lua_tonumber(L, 2)));
    mha_tensor *b = lmha_totensor(L, 2, fname);
    return lmha_result(L, mha_compare(lmha_newtensor(L), op, a, b));
}

static int l_eq(lua_State *L) { return compare(L, MHA_EQ, "eq"); }
static int l_ne(lua_State *L) { return compare(L, MHA_NE, "ne"); }
static int l_lt(lua_State *L) { return compare(L, MHA_LT, "lt"); }
static int l_le(lua_State *L) { return compare(L, MHA_LE, "le"); }
static int l_gt(lua_State *L) { return compare(L, MHA_GT, "gt"); }
static int l_ge(lua_State *L) { return compare(L, MHA_GE, "ge"); }

/* torch.equal: same shape, dtype and values; the function form of a == b. */
static int l_equal(lua_State *L) {
    lmha_checktensor(L, 1), lmha_checktensor(L, 2);
    lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPEQ));
    return 1;
}

static int logical(lua_State *L, mha_logicop op, const char *fname) {
    mha_tensor *a = lmha_totensor(L, 1, fname), *b = lmha_totensor(L, 2, fname);
    return lmha_result(L, mha_logical(lmha_newtensor(L), op, a, b));
}

static int l_logical_and(lua_State *L) { return logical(L, MHA_AND, "logical_and"); }
static int l_logical_or(lua_State *L) { return logical(L, MHA_OR, "logical_or"); }
static int l_logical_xor(lua_State *L) { return logical(L, MHA_XOR, "logical_xor"); }

static int l_logical_not(lua_State *L) {
    mha_tensor *t = lmha_totensor(L, 1, "logical_not");
    return lmha_result(L, mha_logical_not(lmha_newtensor(L), t));
}

/* mha.where(cond, a, b): a where cond is true, else b; a and b may be numbers. */
static int l_where(lua_State *L) {
    mha_tensor *cond = lmha_totensor(L, 1, "where");
    mha_tensor *a = lmha_totensor(L, 2, "where"), *b = lmha_totensor(L, 3, "where");
    return lmha_result(L, mha_ag_where(lmha_newtensor(L), cond, a, b));
}

/* t:masked_fill(mask, value): value wherever the bool mask is true; value may be -math.huge. */
static int l_masked_fill(lua_State *L) {
    mha_tensor *t = lmha_checktensor(L, 1);
    mha_tensor *mask = lmha_totensor(L, 2, "masked_fill");
    float value;
    if (lua_isboolean(L, 3)) value = lua_toboolean(L, 3) ? 1.0f : 0.0f;
    else value = (float)luaL_checknumber(L, 3);
    return lmha_result(L, mha_ag_masked_fill(lmha_newtensor(L), t, mask, value));
}

/* ---- reductions: f(t) over everything, f(t, dim [, keepdim]) along one dim ---- */

/* A reduction's dim at arg: none for all of t, else 1..n or -n..-1. A 0-d tensor takes 1 or -1
 * (torch's 0 or -1) and is reduced whole, as torch wraps a scalar's dim as if it had one:
 * sum(tensor(3.5), 1) is 3.5. */
static size_t reduce_dim(lua_State *L, int arg, const mha_tensor *t, const char *fname) {
    if (lua_isnoneornil(L, arg)) return MHA_ALL_DIMS;
    size_t dim = lmha_checktdim(L, arg, t, t->ndim ? t->ndim : 1, fname);
    return t->ndim == 0 ? MHA_ALL_DIMS : dim;
}

/* The tensor a reduction reads, argument 1: a tensor or a table of numbers, never a number alone,
 * which torch.sum(2) refuses too. Python's x.sum(2), with a dot, passes the 2 alone: summed as a
 * tensor it answered 2, where this says to call it with a colon. */
static mha_tensor *reduced(lua_State *L, const char *fname) {
    if (lua_type(L, 1) == LUA_TNUMBER) lmha_checkudata(L, 1, MHA_TENSOR_T);   /* raises */
    return lmha_totensor(L, 1, fname);
}

static int reduce(lua_State *L, mha_reduceop op, const char *fname) {
    mha_tensor *t = reduced(L, fname);
    size_t dim = reduce_dim(L, 2, t, fname);
    int keepdim = lua_toboolean(L, 3);
    return lmha_result(L, mha_ag_reduce(lmha_newtensor(L), op, t, dim, keepdim));
}

static int l_sum(lua_State *L) { return reduce(L, MHA_SUM, "sum"); }
static int l_mean(lua_State *L) { return reduce(L, MHA_MEAN, "mean"); }

/* The core's 0-based argmax/argmin, made 1-based (indices are Lua's here). */
static mha_status one_based_arg(mha_tensor *index, mha_reduceop op, const mha_tensor *t, size_t dim, bool keepdim) {
    mha_tensor zero_based = MHA_TENSOR_EMPTY;
    mha_status st = mha_reduce(&zero_based, op, t, dim, keepdim);
    if (st == MHA_OK) st = mha_binary_scalar(index, MHA_ADD, &zero_based, 1.0f, false);
    mha_release(&zero_based);
    return st;
}

static int arg_reduce(lua_State *L, mha_reduceop op, const char *fname) {
    mha_tensor *t = reduced(L, fname);
    size_t dim = reduce_dim(L, 2, t, fname);
    int keepdim = lua_toboolean(L, 3);
    return lmha_result(L, one_based_arg(lmha_newtensor(L), op, t, dim, keepdim));
}

static int l_argmax(lua_State *L) { return arg_reduce(L, MHA_ARGMAX, "argmax"); }
static int l_argmin(lua_State *L) { return arg_reduce(L, MHA_ARGMIN, "argmin"); }

/* max(t): the largest element; max(t, dim [, keepdim]): values and 1-based indices, like torch.max;
 * max(a, b) with b a tensor: the elementwise maximum. min likewise. */
static int max_or_min(lua_State *L, int is_max) {
    const char *fname = is_max ? "max" : "min";
    if (lmha_testtensor(L, 2)) return lmha_arith(L, is_max ? MHA_MAXIMUM : MHA_MINIMUM, fname);
    if (lua_isnoneornil(L, 2)) return reduce(L, is_max ? MHA_MAX : MHA_MIN, fname);
    mha_tensor *t = reduced(L, fname);
    size_t dim = reduce_dim(L, 2, t, fname);
    int keepdim = lua_toboolean(L, 3);
    mha_tensor *values = lmha_newtensor(L), *indices = lmha_newtensor(L);
    mha_status st = mha_ag_reduce(values, is_max ? MHA_MAX : MHA_MIN, t, dim, keepdim);
    if (st == MHA_OK) st = one_based_arg(indices, is_max ? MHA_ARGMAX : MHA_ARGMIN, t, dim, keepdim);
    lmha_result(L, st);
    return 2;
}

static int l_max(lua_State *L) { return max_or_min(L, 1); }
static int l_min(lua_State *L) { return max_or_min(L, 0); }

/* var(t [, dim [, keepdim [, correction]]]): correction 1 (PyTorch's default) divides by n-1. */
static int l_var(lua_State *L) {
    mha_tensor *t = reduced(L, "var");
    size_t dim = reduce_dim(L, 2, t, "var");
    int keepdim = lua_toboolean(L, 3);
    lua_Integer correction = luaL_optinteger(L, 4, 1);
    if (correction < 0) return luaL_error(L, "var: correction must not be negative, got %I", (LUAI_UACINT)correction);
    return lmha_result(L, mha_ag_var(lmha_newtensor(L), t, dim, keepdim, (size_t)correction));
}

/* ---- joining ---- */

/* The tensors of the list at arg, each left on the stack (converted ones too) so they stay
 * alive. */
static const mha_tensor **check_list(lua_State *L, int arg, size_t *n, const char *fname) {
    if (!lua_istable(L, arg))
        luaL_error(L, "%s: expects a list of tensors, got %s (e.g. %s({a, b}, 1))", fname, luaL_typename(L, arg), fname);
    lua_Integer len = luaL_len(L, arg);
    if (len < 1) luaL_error(L, "%s: expects a non-empty list of tensors", fname);
    if (len > 100000) luaL_error(L, "%s: %I tensors are too many to join", fname, (LUAI_UACINT)len);
    const mha_tensor **ts = (const mha_tensor **)lua_newuserdatauv(L, (size_t)len * sizeof *ts, 0);
    luaL_checkstack(L, (int)len, fname);
    for (lua_Integer i = 1; i <= len; i++) {
        int type = lua_geti(L, arg, i);
        if (!lmha_testtensor(L, -1) && type != LUA_TTABLE && type != LUA_TNUMBER)
            luaL_error(L, "%s: element %I of the list is a %s, expected a tensor", fname, (LUAI_UACINT)i,
                       luaL_typename(L, -1));
        ts[i - 1] = lmha_totensor(L, -1, fname);
    }
    *n = (size_t)len;
    return ts;
}

/* mha.cat({a, b, ...} [, dim]): joined along an existing dim (default 1). */
static int l_cat(lua_State *L) {
    size_t n;
    lua_settop(L, 2); /* the list's tensors go above the arguments */
    const mha_tensor **ts = check_list(L, 1, &n, "cat");
    size_t dim = lmha_opttdim(L, 2, ts[0], 0, "cat");
    return lmha_result(L, mha_ag_cat(lmha_newtensor(L), ts, n, dim));
}

/* mha.stack({a, b, ...} [, dim]): joined along a new dim (default 1; up to ndim+1). */
static int l_stack(lua_State *L) {
    size_t n;
    lua_settop(L, 2); /* the list's tensors go above the arguments */
    const mha_tensor **ts = check_list(L, 1, &n, "stack");
    size_t dim = lua_isnoneornil(L, 2) ? 0 : lmha_checktdim(L, 2, ts[0], ts[0]->ndim + 1, "stack");
    return lmha_result(L, mha_ag_stack(lmha_newtensor(L), ts, n, dim));
}

/* ---- attention pieces ---- */

/* softmax(x, dim): the dim is required, as in PyTorch (rows of scores are dim -1). */
static int l_softmax(lua_State *L) {
    mha_tensor *x = lmha_totensor(L, 1, "softmax");
    /* a 0-d tensor is softmaxed as if of shape (1), as torch does: dim 1 or -1 (torch's 0 or -1),
     * giving 1 */
    size_t dim = lmha_checktdim(L, 2, x, x->ndim ? x->ndim : 1, "softmax");
    return lmha_result(L, mha_ag_softmax(lmha_newtensor(L), x, dim));
}

static int l_matmul(lua_State *L) {
    mha_tensor *a = lmha_checktensor(L, 1), *b = lmha_checktensor(L, 2);
    return lmha_result(L, mha_ag_matmul(lmha_newtensor(L), a, b));
}

/* linear(x, W [, b]) = x·Wᵀ + b, W (out, in) as in PyTorch. */
static int l_linear(lua_State *L) {
    mha_tensor *x = lmha_checktensor(L, 1), *W = lmha_checktensor(L, 2);
    mha_tensor *b = lua_isnoneornil(L, 3) ? NULL : lmha_checktensor(L, 3);
    return lmha_result(L, mha_ag_linear(lmha_newtensor(L), x, W, b));
}

/* layer_norm(x, normalized_shape [, weight [, bias [, eps]]]): normalized_shape as in PyTorch, the
 * shape of x's last dims: a number n for (n), a table {a, b} for (a,b). */
static int l_layer_norm(lua_State *L) {
    char shape[MHA_SHAPE_BUF], given[MHA_SHAPE_BUF];
    mha_tensor *x = lmha_checktensor(L, 1);
    mha_tensor want = {.ndim = 1}; /* only its shape is used, to print and compare */
    if (lua_istable(L, 2)) {
        want.ndim = lmha_checkshape(L, 2, 2, want.shape, "layer_norm");
        if (want.ndim == 0)
            return luaL_error(L, "%s", "layer_norm: normalized_shape {} is empty; give the sizes of the last dims to "
                                       "normalise over, e.g. {8} or 8 for the last dim of size 8");
    } else if (lua_type(L, 2) == LUA_TNUMBER) {
        lua_Integer n = luaL_checkinteger(L, 2);
        if (n < 0) return luaL_error(L, "layer_norm: normalized_shape %I is negative", (LUAI_UACINT)n);
        want.shape[0] = (size_t)n;
    } else {
        return luaL_error(L, "layer_norm: normalized_shape must be a number (the size of the last dim) or a table of "
                             "the last dims' sizes, got %s (for x of shape %s)",
                          luaL_typename(L, 2), lmha_shape(shape, x));
    }
    int fits = want.ndim <= x->ndim;
    for (size_t d = 0; fits && d < want.ndim; d++) fits = want.shape[d] == x->shape[x->ndim - want.ndim + d];
    if (!fits)
        return luaL_error(L, "layer_norm: normalized shape %s does not match the last dims of x %s", lmha_shape(given, &want),
                          lmha_shape(shape, x));
    mha_tensor *weight = lua_isnoneornil(L, 3) ? NULL : lmha_checktensor(L, 3);
    mha_tensor *bias = lua_isnoneornil(L, 4) ? NULL : lmha_checktensor(L, 4);
    float eps = (float)luaL_optnumber(L, 5, 1e-5);
    if (!(eps >= 0)) return luaL_error(L, "layer_norm: eps must be a non-negative number, got %f", (lua_Number)eps);
    return lmha_result(L, mha_ag_layer_norm(lmha_newtensor(L), x, want.ndim, weight, bias, eps));
}

static int l_positional_encoding(lua_State *L) {
    size_t len = checksize(L, 1, "positional_encoding", "L");
    size_t E = checksize(L, 2, "positional_encoding", "E");
    return lmha_result(L, mha_positional_encoding(lmha_newtensor(L), len, E));
}

/* causal_mask(L [, S]): (L,S) bool, true where query i may not see key j (j > i). */
static int l_causal_mask(lua_State *L) {
    size_t len = checksize(L, 1, "causal_mask", "L");
    size_t S = lua_isnoneornil(L, 2) ? len : checksize(L, 2, "causal_mask", "S");
    return lmha_result(L, mha_causal_mask(lmha_newtensor(L), len, S));
}

/* scaled_dot_product_attention(q, k, v [, {attn_mask=, is_causal=, scale=, need_weights=,
 *                               enable_gqa=, return_lse=}]) -> out, weights [, lse];
 * with need_weights=false only out (and lse), through the fused kernel (no L×S matrix).
 * enable_gqa: k and v (..., H_kv, S, E) shared by groups of H/H_kv query heads. */
static int l_sdpa(lua_State *L) {
    const char *fname = lmha_called_name(L, "scaled_dot_product_attention");
    static const char *const options[] = {"attn_mask", "is_causal", "scale", "need_weights", "enable_gqa",
                                          "return_lse", NULL};
    mha_tensor *q = lmha_checktensor(L, 1), *k = lmha_checktensor(L, 2), *v = lmha_checktensor(L, 3);
    lmha_checkoptions(L, 4, fname, options);
    mha_sdpa_options opt = {0};
    opt.attn_mask = lmha_opttensor(L, 4, "attn_mask", fname);
    opt.is_causal = lmha_optboolean(L, 4, "is_causal", 0, fname);
    opt.enable_gqa = lmha_optboolean(L, 4, "enable_gqa", 0, fname);
    int need_weights = lmha_optboolean(L, 4, "need_weights", 1, fname);
    int return_lse = lmha_optboolean(L, 4, "return_lse", 0, fname);
    opt.scale = (float)lmha_optpositive(L, 4, "scale", 0.0, fname);   /* 0: 1/sqrt(D) */
    lua_settop(L, 4);
    mha_tensor *out = lmha_newtensor(L);
    mha_tensor *weights = need_weights ? lmha_newtensor(L) : NULL;
    mha_tensor *lse = return_lse ? lmha_newtensor(L) : NULL;
    mha_status st = mha_ag_sdpa_lse(out, weights, lse, q, k, v, &opt);
    if (st != MHA_OK)
        return lmha_fail(L, st, NULL, need_weights && st == MHA_E_NOMEM
                                           ? "; with need_weights=false the fused path never forms the (L,S) weights"
                                           : NULL);
    lmha_result(L, st);
    return 1 + need_weights + return_lse;
}

/* Functions whose first argument is a tensor: in the library (mha.exp(t)) and methods (t:exp()). */
static const luaL_Reg tensor_functions[] = {
    {"neg", l_neg}, {"abs", l_abs}, {"exp", l_exp}, {"log", l_log}, {"sqrt", l_sqrt},
    {"tanh", l_tanh}, {"relu", l_relu}, {"gelu", l_gelu}, {"sigmoid", l_sigmoid},
    {"add", l_add}, {"sub", l_sub}, {"mul", l_mul}, {"div", l_div}, {"pow", l_pow},
    {"maximum", l_maximum}, {"minimum", l_minimum},
    {"eq", l_eq}, {"ne", l_ne}, {"lt", l_lt}, {"le", l_le}, {"gt", l_gt}, {"ge", l_ge},
    {"equal", l_equal},
    {"logical_and", l_logical_and}, {"logical_or", l_logical_or}, {"logical_xor", l_logical_xor},
    {"logical_not", l_logical_not},
    {"masked_fill", l_masked_fill},
    {"sum", l_sum}, {"mean", l_mean}, {"max", l_max}, {"min", l_min},
    {"argmax", l_argmax}, {"argmin", l_argmin}, {"var", l_var},
    {"softmax", l_softmax}, {"matmul", l_matmul}, {"linear", l_linear}, {"layer_norm", l_layer_norm},
    {"uniform_", l_uniform_}, {"normal_", l_normal_},
    {"xavier_uniform_", l_xavier_uniform_}, {"xavier_normal_", l_xavier_normal_},
    {NULL, NULL}
};

/* Tensor methods that are library functions too, as in torch: mha.transpose(t, 1, 2). */
static const char *const method_functions[] = {
    "view", "reshape", "transpose", "permute", "narrow", "select", "unsqueeze", "squeeze", "expand",
    "split", "chunk", "clone", "contiguous", NULL
};

static const luaL_Reg mhalib[] = {
    {"tensor", l_tensor},
    {"zeros", l_zeros},
    {"ones", l_ones},
    {"full", l_full},
    {"eye", l_eye},
    {"arange", l_arange},
    {"rand", l_rand},
    {"randn", l_randn},
    {"is_tensor", l_is_tensor},
    {"seed", l_seed},
    {"manual_seed", l_manual_seed},
    {"get_seed", l_get_seed},
    {"load", l_load},
    {"save", l_save},
    {"memory", l_memory},
    {"reset_peak", l_reset_peak},
    {"threads", l_threads},
    {"isa", l_isa},
    {"clock", l_clock},
    {"where", l_where},
    {"cat", l_cat},
    {"stack", l_stack},
    {"positional_encoding", l_positional_encoding},
    {"causal_mask", l_causal_mask},
    {"scaled_dot_product_attention", l_sdpa},
    {"sdpa", l_sdpa},
    {"MultiheadAttention", lmha_multihead_new},
    {NULL, NULL}
};

/* mha.core.add_multihead_methods(methods): each function of the table methods (name -> function)
 * that MultiheadAttention lacks becomes one of its methods; lua/mha.lua hands it the nn.Module
 * methods (state_dict, train, ...), so a MultiheadAttention is a child like any other and a model
 * of its own. */
static int l_add_multihead_methods(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    luaL_getmetatable(L, MHA_MULTIHEAD_T);
    lua_getfield(L, -1, "__methods");                     /* 1 methods, 2 metatable, 3 __methods */
    for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) { /* 4 key, 5 value */
        lua_pushvalue(L, 4);
        if (lua_rawget(L, 3) == LUA_TNIL) {
            lua_pushvalue(L, 4);
            lua_pushvalue(L, 5);
            lua_rawset(L, 3);
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* The core module "mha.core": the C functions, the Tensor and MultiheadAttention types; it requires
 * nothing. The mha table people use is lua/mha.lua's, assembled over this one. */
int luaopen_mha_core(lua_State *L) {
    luaL_checkversion(L);
    lmha_open_tensor(L);
    lmha_open_multihead(L);
    luaL_newlib(L, mhalib);
    luaL_setfuncs(L, tensor_functions, 0);
    lmha_open_positions(L);
    lmha_open_autograd(L);
    /* the tensor functions become methods; some methods become functions */
    luaL_getmetatable(L, MHA_TENSOR_T);
    lua_getfield(L, -1, "__methods");
    luaL_setfuncs(L, tensor_functions, 0);
    for (size_t i = 0; method_functions[i]; i++) {
        lua_getfield(L, -1, method_functions[i]);
        lua_setfield(L, -4, method_functions[i]);
    }
    lua_pop(L, 2);
    lua_pushcfunction(L, l_add_multihead_methods);
    lua_setfield(L, -2, "add_multihead_methods");
    /* the table a tensor's __tostring and an error's function name are looked up in, until
     * luaopen_mha puts the assembled mha there */
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, LMHA_LIB_KEY);
    return 1;
}

/* ---- the embedded Lua helpers ---- */

/* package.preload loader of one embedded file (upvalue: its mha_embedded entry). */
static int load_embedded(lua_State *L) {
    const mha_embedded_file *file = (const mha_embedded_file *)lua_touserdata(L, lua_upvalueindex(1));
    const char *chunkname = lua_pushfstring(L, "@%s", file->path);
    if (luaL_loadbufferx(L, file->source, file->size, chunkname, "t") != LUA_OK) return lua_error(L);
    lua_pushstring(L, file->module);
    lua_pushstring(L, file->path);
    lua_call(L, 2, 1);
    return 1;
}

/* The C libraries the Lua parts require, preloaded under their module names
 * (as linit.c lists its own). */
static const luaL_Reg c_libraries[] = {
    {"mha.core", luaopen_mha_core},
    {"mha.gnuplot", luaopen_mha_gnuplot},
    {"mha.term", luaopen_mha_term},
    {"mha.optim_kernels", luaopen_mha_optim_kernels},
    {"mha.dir", luaopen_mha_dir},
    {"mha.proc", luaopen_mha_proc},
    {NULL, NULL}
};

static void preload_helpers(lua_State *L) {
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    for (const mha_embedded_file *file = mha_embedded; file->module; file++) {
        lua_pushlightuserdata(L, (void *)file);
        lua_pushcclosure(L, load_embedded, 1);
        lua_setfield(L, -2, file->module);
    }
    luaL_setfuncs(L, c_libraries, 0);   /* preload[name] = luaopen_... for each */
    lua_pop(L, 1);
}

/* The loader of "mha" (mha-repl's and mha.so's): preloads the embedded Lua parts and the C
 * libraries, then runs the embedded lua/mha.lua, which assembles the package over "mha.core", and
 * returns its table. */
int luaopen_mha(lua_State *L) {
    luaL_checkversion(L);
    preload_helpers(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    if (lua_getfield(L, -1, "mha") != LUA_TFUNCTION) return luaL_error(L, "%s", "mha: lua/mha.lua is not embedded");
    lua_pushstring(L, "mha");
    lua_call(L, 1, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, LMHA_LIB_KEY);
    return 1;
}
