/* core/tensor/ops_elementwise.c - elementwise tensor operations over broadcast operands:
 * arithmetic, unary functions, comparisons and logic, where and masked_fill
 * (dtype rules: core/tensor/ops.c), and torch.equal. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tensor/ops_internal.h"

/* always_inline lets one generic loop body specialise per operation inside each switch case */
#if defined(__GNUC__)
#define OPS_INLINE static inline __attribute__((always_inline))
#else
#define OPS_INLINE static inline
#endif

static const char *const binop_names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
static const char *const cmpop_names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
static const char *const logicop_names[] = {"logical_and", "logical_or", "logical_xor"};
static const char *const unop_names[] = {"neg", "abs", "exp", "log", "sqrt", "tanh", "relu", "gelu", "sigmoid"};

/* ---- row functions: the arithmetic itself ---- */

OPS_INLINE float binop_apply(mha_binop op, float x, float y) {
    switch (op) {
    case MHA_ADD: return x + y;
    case MHA_SUB: return x - y;
    case MHA_MUL: return x * y;
    case MHA_DIV: return x / y;
    case MHA_POW: return powf(x, y);
    case MHA_MAXIMUM: return isnan(x) ? x : isnan(y) ? y : x > y ? x : y;
    case MHA_MINIMUM: return isnan(x) ? x : isnan(y) ? y : x < y ? x : y;
    }
    return NAN;
}

typedef float v4f __attribute__((vector_size(4 * sizeof(float))));   /* 4 floats: SSE2, NEON */

/* x op y on 4 lanes for the four operations whose lanes are each the correctly rounded scalar's */
OPS_INLINE v4f binop_v4(mha_binop op, v4f x, v4f y) {
    switch (op) {
    case MHA_ADD: return x + y;
    case MHA_SUB: return x - y;
    case MHA_MUL: return x * y;
    default: return x / y;
    }
}

OPS_INLINE void binary_loop(mha_binop op, float *restrict out, const float *a, ptrdiff_t sa,
                            const float *b, ptrdiff_t sb, ptrdiff_t n) {
    if (sa == 1 && sb == 1) {           /* same shape, contiguous */
        ptrdiff_t i = 0;
        if (op == MHA_ADD || op == MHA_SUB || op == MHA_MUL || op == MHA_DIV)
            for (; i + 4 <= n; i += 4) {   /* 4 at a time: the same bits as one at a time */
                v4f x, y;
                memcpy(&x, a + i, sizeof x);
                memcpy(&y, b + i, sizeof y);
                x = binop_v4(op, x, y);
                memcpy(out + i, &x, sizeof x);
            }
        for (; i < n; i++) out[i] = binop_apply(op, a[i], b[i]);
    } else if ((sa == 1 && sb == 0) || (sa == 0 && sb == 1)) {   /* tensor op number, or reverse */
        const float *t = sa ? a : b, value = sa ? b[0] : a[0];
        const v4f v = {value, value, value, value};
        ptrdiff_t i = 0;
        if (op == MHA_ADD || op == MHA_SUB || op == MHA_MUL || op == MHA_DIV)
            for (; i + 4 <= n; i += 4) {   /* 4 at a time, as above (q / √D: a division each) */
                v4f x;
                memcpy(&x, t + i, sizeof x);
                x = sa ? binop_v4(op, x, v) : binop_v4(op, v, x);
                memcpy(out + i, &x, sizeof x);
            }
        for (; i < n; i++) out[i] = sa ? binop_apply(op, t[i], value) : binop_apply(op, value, t[i]);
    } else {
        for (ptrdiff_t i = 0; i < n; i++) out[i] = binop_apply(op, a[i * sa], b[i * sb]);
    }
}

/* The output of these rows is always a fresh contiguous tensor, so its row stride is 1. */
static void binary_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    float *out = (float *)p[0];
    const float *a = (const float *)p[1], *b = (const float *)p[2];
    switch (*(const mha_binop *)ctx) {
    case MHA_ADD: binary_loop(MHA_ADD, out, a, s[1], b, s[2], n); break;
    case MHA_SUB: binary_loop(MHA_SUB, out, a, s[1], b, s[2], n); break;
    case MHA_MUL: binary_loop(MHA_MUL, out, a, s[1], b, s[2], n); break;
    case MHA_DIV: binary_loop(MHA_DIV, out, a, s[1], b, s[2], n); break;
    case MHA_POW: binary_loop(MHA_POW, out, a, s[1], b, s[2], n); break;
    case MHA_MAXIMUM: binary_loop(MHA_MAXIMUM, out, a, s[1], b, s[2], n); break;
    case MHA_MINIMUM: binary_loop(MHA_MINIMUM, out, a, s[1], b, s[2], n); break;
    }
}

OPS_INLINE bool cmpop_apply(mha_cmpop op, float x, float y) {
    switch (op) {
    case MHA_EQ: return x == y;
    case MHA_NE: return x != y;
    case MHA_LT: return x < y;
    case MHA_LE: return x <= y;
    case MHA_GT: return x > y;
    case MHA_GE: return x >= y;
    }
    return false;
}

OPS_INLINE void compare_loop(mha_cmpop op, bool *restrict out, const float *a, ptrdiff_t sa,
                             const float *b, ptrdiff_t sb, ptrdiff_t n) {
    if (sa == 1 && sb == 1) {
        for (ptrdiff_t i = 0; i < n; i++) out[i] = cmpop_apply(op, a[i], b[i]);
    } else if (sa == 1 && sb == 0) {
        float y = b[0];
        for (ptrdiff_t i = 0; i < n; i++) out[i] = cmpop_apply(op, a[i], y);
    } else {
        for (ptrdiff_t i = 0; i < n; i++) out[i] = cmpop_apply(op, a[i * sa], b[i * sb]);
    }
}

static void compare_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    bool *out = (bool *)p[0];
    const float *a = (const float *)p[1], *b = (const float *)p[2];
    switch (*(const mha_cmpop *)ctx) {
    case MHA_EQ: compare_loop(MHA_EQ, out, a, s[1], b, s[2], n); break;
    case MHA_NE: compare_loop(MHA_NE, out, a, s[1], b, s[2], n); break;
    case MHA_LT: compare_loop(MHA_LT, out, a, s[1], b, s[2], n); break;
    case MHA_LE: compare_loop(MHA_LE, out, a, s[1], b, s[2], n); break;
    case MHA_GT: compare_loop(MHA_GT, out, a, s[1], b, s[2], n); break;
    case MHA_GE: compare_loop(MHA_GE, out, a, s[1], b, s[2], n); break;
    }
}

static void logical_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    bool *out = (bool *)p[0];
    const bool *a = (const bool *)p[1], *b = (const bool *)p[2];
    ptrdiff_t sa = s[1], sb = s[2];
    switch (*(const mha_logicop *)ctx) {
    case MHA_AND: for (ptrdiff_t i = 0; i < n; i++) out[i] = a[i * sa] && b[i * sb]; break;
    case MHA_OR:  for (ptrdiff_t i = 0; i < n; i++) out[i] = a[i * sa] || b[i * sb]; break;
    case MHA_XOR: for (ptrdiff_t i = 0; i < n; i++) out[i] = a[i * sa] != b[i * sb]; break;
    }
}

static void not_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    bool *out = (bool *)p[0];
    const bool *a = (const bool *)p[1];
    for (ptrdiff_t i = 0; i < n; i++) out[i] = !a[i * s[1]];
}

OPS_INLINE float unop_apply(mha_unop op, float x) {
    switch (op) {
    case MHA_NEG: return -x;
    case MHA_ABS: return fabsf(x);
    case MHA_EXP: return expf(x);
    case MHA_LOG: return logf(x);
    case MHA_SQRT: return sqrtf(x);
    case MHA_TANH: return tanhf(x);
    case MHA_RELU: return x < 0.0f ? 0.0f : x;            /* NaN stays NaN, as in PyTorch */
    /* gelu(x) = x·Phi(x) = 0.5·x·erfc(-x/sqrt 2) (core/kernels/kernels.h) */
    case MHA_GELU: return mha_gelu_ref(x);
    /* sigma(x) = 1 / (1 + e^-x); for x < 0 the same as e^x / (1 + e^x), which keeps the tiny values
     * of a very negative x instead of rounding 1 / (1 + huge) to 0 */
    case MHA_SIGMOID: return x < 0.0f ? expf(x) / (1.0f + expf(x)) : 1.0f / (1.0f + expf(-x));
    }
    return NAN;
}

OPS_INLINE void unary_loop(mha_unop op, float *restrict out, const float *x, ptrdiff_t sx, ptrdiff_t n) {
    if (sx == 1) {
        for (ptrdiff_t i = 0; i < n; i++) out[i] = unop_apply(op, x[i]);
    } else {
        for (ptrdiff_t i = 0; i < n; i++) out[i] = unop_apply(op, x[i * sx]);
    }
}

static void unary_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    float *out = (float *)p[0];
    const float *x = (const float *)p[1];
    switch (*(const mha_unop *)ctx) {
    case MHA_NEG: unary_loop(MHA_NEG, out, x, s[1], n); break;
    case MHA_ABS: unary_loop(MHA_ABS, out, x, s[1], n); break;
    case MHA_EXP: unary_loop(MHA_EXP, out, x, s[1], n); break;
    case MHA_LOG: unary_loop(MHA_LOG, out, x, s[1], n); break;
    case MHA_SQRT: unary_loop(MHA_SQRT, out, x, s[1], n); break;
    case MHA_TANH: unary_loop(MHA_TANH, out, x, s[1], n); break;
    case MHA_RELU: unary_loop(MHA_RELU, out, x, s[1], n); break;
    case MHA_GELU: /* contiguous rows vectorised, the same bits */
        if (s[1] == 1) mha_gelu(out, x, (size_t)n);
        else unary_loop(MHA_GELU, out, x, s[1], n);
        break;
    case MHA_SIGMOID: unary_loop(MHA_SIGMOID, out, x, s[1], n); break;
    }
}

/* out = cond ? a : b; ctx is the element size of out, a and b (float or bool). */
static void where_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    const bool *cond = (const bool *)p[1];
    if (*(const size_t *)ctx == sizeof(float)) {
        float *out = (float *)p[0];
        const float *a = (const float *)p[2], *b = (const float *)p[3];
        for (ptrdiff_t i = 0; i < n; i++) out[i] = cond[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
    } else {
        bool *out = (bool *)p[0];
        const bool *a = (const bool *)p[2], *b = (const bool *)p[3];
        for (ptrdiff_t i = 0; i < n; i++) out[i] = cond[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
    }
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise operations
 * ------------------------------------------------------------------------------------------- */

/* The dtype rules for arithmetic (core/tensor/ops.c); b is NULL for a number operand. */
static mha_status check_arith_dtypes(const char *fname, mha_binop op, const mha_tensor *a, const mha_tensor *b) {
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    bool a_bool = a->dtype == MHA_BOOL, b_bool = b && b->dtype == MHA_BOOL;
    if (op == MHA_SUB && (a_bool || b_bool))
        return mha_fail(MHA_E_DTYPE, "sub: argument %s is a bool tensor %s: subtracting bools is not supported "
                        "(to invert a mask use logical_not; to count, convert to float first)",
                        a_bool ? "a" : "b", a_bool ? shape_of(sa, a) : shape_of(sa, b));
    if (a_bool && b_bool)
        return mha_fail(MHA_E_DTYPE, "%s: both arguments are bool tensors, %s and %s: use logical_and/"
                        "logical_or on masks, or convert one to float first", fname, shape_of(sa, a), shape_of(sb, b));
    return MHA_OK;
}

/* The common tail of a two-input operation: promote bool inputs where asked, allocate, loop. */
static mha_status elementwise2(const char *fname, mha_tensor *out, mha_dtype out_dtype, bool promote,
                               const mha_tensor *a, const mha_tensor *b, row_fn *row, const void *ctx) {
    size_t ndim, shape[MHA_MAX_DIMS];
    mha_status st = mha_broadcast_shape(&ndim, shape, a, b, fname);
    if (st != MHA_OK) return st;
    mha_tensor a_float = MHA_TENSOR_EMPTY, b_float = MHA_TENSOR_EMPTY;
    if (promote && ((st = as_float(fname, &a_float, &a)) != MHA_OK || (st = as_float(fname, &b_float, &b)) != MHA_OK))
        goto done;
    if ((st = alloc_out(fname, out, out_dtype, ndim, shape)) != MHA_OK) goto done;
    operand ops[3] = {tensor_operand(out), tensor_operand(a), tensor_operand(b)};
    st = ops_run_loop(fname, ndim, shape, ops, 3, row, ctx);
    if (st != MHA_OK) mha_release(out);
done:
    mha_release(&a_float);
    mha_release(&b_float);
    return st;
}

/* The same with a number in place of one tensor: operands (t, value), or (value, t) when
 * value_first. */
static mha_status elementwise_value(const char *fname, mha_tensor *out, mha_dtype out_dtype, const mha_tensor *t,
                                    float value, bool value_first, row_fn *row, const void *ctx) {
    mha_tensor t_float = MHA_TENSOR_EMPTY;
    mha_status st = as_float(fname, &t_float, &t);
    if (st != MHA_OK) return st;
    if ((st = alloc_out(fname, out, out_dtype, t->ndim, t->shape)) == MHA_OK) {
        operand ops[3] = {tensor_operand(out), tensor_operand(t), value_operand(&value, sizeof value)};
        if (value_first) ops[1] = ops[2], ops[2] = tensor_operand(t);
        st = ops_run_loop(fname, t->ndim, t->shape, ops, 3, row, ctx);
        if (st != MHA_OK) mha_release(out);
    }
    mha_release(&t_float);
    return st;
}

mha_status mha_binary(mha_tensor *out, mha_binop op, const mha_tensor *a, const mha_tensor *b) {
    if ((unsigned)op > MHA_MINIMUM) return mha_fail(MHA_E_ARG, "binary: unknown operation %d", (int)op);
    const char *fname = binop_names[op];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_in(fname, "b", b)) != MHA_OK || (st = check_arith_dtypes(fname, op, a, b)) != MHA_OK)
        return st;
    return elementwise2(fname, out, MHA_FLOAT32, true, a, b, binary_row, &op);
}

mha_status mha_binary_scalar(mha_tensor *out, mha_binop op, const mha_tensor *a, float s, bool scalar_first) {
    if ((unsigned)op > MHA_MINIMUM) return mha_fail(MHA_E_ARG, "binary: unknown operation %d", (int)op);
    const char *fname = binop_names[op];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_arith_dtypes(fname, op, a, NULL)) != MHA_OK)
        return st;
    return elementwise_value(fname, out, MHA_FLOAT32, a, s, scalar_first, binary_row, &op);
}

mha_status mha_compare(mha_tensor *out, mha_cmpop op, const mha_tensor *a, const mha_tensor *b) {
    if ((unsigned)op > MHA_GE) return mha_fail(MHA_E_ARG, "compare: unknown operation %d", (int)op);
    const char *fname = cmpop_names[op];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_in(fname, "b", b)) != MHA_OK)
        return st;
    return elementwise2(fname, out, MHA_BOOL, true, a, b, compare_row, &op);
}

mha_status mha_compare_scalar(mha_tensor *out, mha_cmpop op, const mha_tensor *a, float s) {
    if ((unsigned)op > MHA_GE) return mha_fail(MHA_E_ARG, "compare: unknown operation %d", (int)op);
    const char *fname = cmpop_names[op];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK) return st;
    return elementwise_value(fname, out, MHA_BOOL, a, s, false, compare_row, &op);
}

static mha_status check_bool(const char *fname, const char *arg, const mha_tensor *t, const char *why) {
    char st[MHA_SHAPE_BUF];
    if (t->dtype == MHA_BOOL) return MHA_OK;
    return mha_fail(MHA_E_DTYPE, "%s: argument %s is a %s tensor %s; %s", fname, arg, dtype_name(t->dtype),
                    shape_of(st, t), why);
}

static const char NEEDS_BOOL[] = "logical ops need bool tensors (make one with a comparison: gt, lt, eq, ...)";

mha_status mha_logical(mha_tensor *out, mha_logicop op, const mha_tensor *a, const mha_tensor *b) {
    if ((unsigned)op > MHA_XOR) return mha_fail(MHA_E_ARG, "logical: unknown operation %d", (int)op);
    const char *fname = logicop_names[op];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_in(fname, "b", b)) != MHA_OK || (st = check_bool(fname, "a", a, NEEDS_BOOL)) != MHA_OK ||
        (st = check_bool(fname, "b", b, NEEDS_BOOL)) != MHA_OK)
        return st;
    return elementwise2(fname, out, MHA_BOOL, false, a, b, logical_row, &op);
}

mha_status mha_logical_not(mha_tensor *out, const mha_tensor *a) {
    const char *fname = "logical_not";
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_bool(fname, "a", a, NEEDS_BOOL)) != MHA_OK)
        return st;
    if ((st = alloc_out(fname, out, MHA_BOOL, a->ndim, a->shape)) != MHA_OK) return st;
    operand ops[2] = {tensor_operand(out), tensor_operand(a)};
    st = ops_run_loop(fname, a->ndim, a->shape, ops, 2, not_row, NULL);
    if (st != MHA_OK) mha_release(out);
    return st;
}

mha_status mha_unary(mha_tensor *out, mha_unop op, const mha_tensor *t) {
    if ((unsigned)op > MHA_SIGMOID) return mha_fail(MHA_E_ARG, "unary: unknown operation %d", (int)op);
    const char *fname = unop_names[op];
    char sh[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "x", t)) != MHA_OK) return st;
    if (t->dtype == MHA_BOOL && op == MHA_NEG)
        return mha_fail(MHA_E_DTYPE, "neg: the tensor %s is bool: negating a bool tensor is not supported "
                        "(to invert a mask use logical_not)", shape_of(sh, t));
    if (t->dtype == MHA_BOOL && (op == MHA_ABS || op == MHA_RELU || op == MHA_GELU))
        return mha_fail(MHA_E_DTYPE, "%s: the tensor %s is bool; %s needs float32 (convert it first)",
                        fname, shape_of(sh, t), fname);
    mha_tensor t_float = MHA_TENSOR_EMPTY;
    if ((st = as_float(fname, &t_float, &t)) != MHA_OK) return st;
    if ((st = alloc_out(fname, out, MHA_FLOAT32, t->ndim, t->shape)) == MHA_OK) {
        operand ops[2] = {tensor_operand(out), tensor_operand(t)};
        st = ops_run_loop(fname, t->ndim, t->shape, ops, 2, unary_row, &op);
        if (st != MHA_OK) mha_release(out);
    }
    mha_release(&t_float);
    return st;
}

mha_status mha_where(mha_tensor *out, const mha_tensor *cond, const mha_tensor *a, const mha_tensor *b) {
    const char *fname = "where";
    char sc[MHA_SHAPE_BUF], sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "cond", cond)) != MHA_OK ||
        (st = check_in(fname, "a", a)) != MHA_OK || (st = check_in(fname, "b", b)) != MHA_OK)
        return st;
    if (cond->dtype != MHA_BOOL)
        return mha_fail(MHA_E_DTYPE, "where: cond %s is float32; it must be a bool tensor (the result of a comparison: gt, lt, eq, ...)",
                        shape_of(sc, cond));
    size_t ndim = cond->ndim, shape[MHA_MAX_DIMS], bad_dim, size_x, size_y;
    memcpy(shape, cond->shape, ndim * sizeof *shape);
    if (!ops_broadcast_merge(&ndim, shape, a->ndim, a->shape, &bad_dim, &size_x, &size_y) ||
        !ops_broadcast_merge(&ndim, shape, b->ndim, b->shape, &bad_dim, &size_x, &size_y))
        return mha_fail(MHA_E_SHAPE, "where: shapes cond %s, a %s and b %s cannot broadcast: dim -%zu has %zu and %zu",
                        shape_of(sc, cond), shape_of(sa, a), shape_of(sb, b), bad_dim, size_x, size_y);

    bool both_bool = a->dtype == MHA_BOOL && b->dtype == MHA_BOOL;
    mha_dtype dtype = both_bool ? MHA_BOOL : MHA_FLOAT32;
    mha_tensor a_float = MHA_TENSOR_EMPTY, b_float = MHA_TENSOR_EMPTY;
    if (!both_bool && ((st = as_float(fname, &a_float, &a)) != MHA_OK || (st = as_float(fname, &b_float, &b)) != MHA_OK))
        goto done;
    if ((st = alloc_out(fname, out, dtype, ndim, shape)) != MHA_OK) goto done;
    size_t elsize = dtype_size(dtype);
    operand ops[4] = {tensor_operand(out), tensor_operand(cond), tensor_operand(a), tensor_operand(b)};
    st = ops_run_loop(fname, ndim, shape, ops, 4, where_row, &elsize);
    if (st != MHA_OK) mha_release(out);
done:
    mha_release(&a_float);
    mha_release(&b_float);
    return st;
}

mha_status mha_masked_fill(mha_tensor *out, const mha_tensor *t, const mha_tensor *mask, float value) {
    const char *fname = "masked_fill";
    char s_t[MHA_SHAPE_BUF], s_mask[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "t", t)) != MHA_OK ||
        (st = check_in(fname, "mask", mask)) != MHA_OK)
        return st;
    if (mask->dtype != MHA_BOOL)
        return mha_fail(MHA_E_DTYPE, "masked_fill: mask %s is float32; it must be a bool tensor (true = fill)",
                        shape_of(s_mask, mask));
    /* the mask broadcasts to t's shape; t itself is never expanded */
    size_t ndim = t->ndim, shape[MHA_MAX_DIMS], bad_dim, size_t_dim, size_mask_dim;
    memcpy(shape, t->shape, ndim * sizeof *shape);
    bool fits = ops_broadcast_merge(&ndim, shape, mask->ndim, mask->shape, &bad_dim, &size_t_dim, &size_mask_dim);
    if (!fits || ndim != t->ndim || memcmp(shape, t->shape, ndim * sizeof *shape) != 0)
        return mha_fail(MHA_E_SHAPE, "masked_fill: mask %s cannot broadcast to the tensor's shape %s",
                        shape_of(s_mask, mask), shape_of(s_t, t));

    /* out = where(mask, value, t) */
    float value_float = value;
    bool value_bool = value != 0.0f;
    size_t elsize = dtype_size(t->dtype);
    if ((st = alloc_out(fname, out, t->dtype, t->ndim, t->shape)) != MHA_OK) return st;
    operand ops[4] = {tensor_operand(out), tensor_operand(mask),
                      t->dtype == MHA_BOOL ? value_operand(&value_bool, sizeof value_bool)
                                           : value_operand(&value_float, sizeof value_float),
                      tensor_operand(t)};
    st = ops_run_loop(fname, t->ndim, t->shape, ops, 4, where_row, &elsize);
    if (st != MHA_OK) mha_release(out);
    return st;
}

/* ---- whole-tensor equality ---- */

mha_status mha_equal(bool *equal, const mha_tensor *a, const mha_tensor *b) {
    if (a == NULL || a->storage == NULL || b == NULL || b->storage == NULL)
        return mha_fail(MHA_E_ARG, "equal: %s is empty (released or never filled)",
                        a == NULL || a->storage == NULL ? "a" : "b");
    *equal = false;
    if (a->dtype != b->dtype || !mha_same_shape(a, b)) return MHA_OK; /* no broadcasting, as
                                                                         torch.equal */
    mha_tensor ca = MHA_TENSOR_EMPTY, cb = MHA_TENSOR_EMPTY;  /* C-order copies (shares when already
                                                                 so) */
    mha_status st = mha_contiguous_named(&ca, a, "equal");
    if (st == MHA_OK) st = mha_contiguous_named(&cb, b, "equal");
    bool same = st == MHA_OK;
    for (size_t i = 0, n = mha_numel(a); same && i < n; i++) /* float ==: NaN differs from itself,
                                                                -0 == 0 */
        same = a->dtype == MHA_BOOL ? mha_bool(&ca)[i] == mha_bool(&cb)[i] : mha_f32(&ca)[i] == mha_f32(&cb)[i];
    mha_release(&ca);
    mha_release(&cb);
    if (st == MHA_OK) *equal = same;
    return st;
}
