/* core/ops.c - the tensor operations of mha-repl: elementwise arithmetic with NumPy broadcasting,
 * comparisons and logic, where/masked_fill, reductions, cat/stack and matmul, all over strided views. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "tensor.h"

/* ---------------------------------------------------------------------------------------------
 * dtype rules (the core has float32 and bool; PyTorch's behaviour is followed where it is clear)
 *
 * - Arithmetic (add sub mul div pow maximum minimum): a bool operand beside a float one reads as
 *   0/1 and the result is float, as PyTorch promotes bool + float32 -> float32. Subtracting a bool
 *   tensor is refused, as PyTorch refuses it ("to invert a mask use logical_not"). Two bool
 *   operands are refused too: PyTorch answers with a mix of logical results (add = or, mul = and),
 *   errors (sub, pow) and floats (div) that a student should not have to learn; the message points
 *   to logical_and/logical_or. A bool tensor with a number (mask * 2.5) reads as 0/1.
 * - Unary: neg, abs, relu and gelu refuse bool, as PyTorch does; exp, log, sqrt, tanh and sigmoid
 *   read it as 0/1 and give float, as PyTorch does.
 * - Comparisons give bool; a bool operand reads as 0/1. Logical ops need bool operands.
 * - where: cond must be bool; two bool branches give bool, otherwise float. masked_fill: the mask
 *   must be bool; a bool tensor stays bool (value != 0).
 * - Reductions read bool as 0/1 and give float (so mask.sum() counts; PyTorch would give int64,
 *   which the core does not have). cat and stack promote to float when any input is float.
 * - matmul needs float32 operands.
 *
 * NaN: maximum/minimum, max/min and argmax/argmin propagate NaN as PyTorch and NumPy do: a NaN
 * operand makes maximum NaN, a slice holding a NaN has max NaN, and argmax/argmin of such a slice
 * is the index of its first NaN. Comparisons with NaN are false (ne is true), as in IEEE 754.
 * ------------------------------------------------------------------------------------------- */

enum {
    BLOCK = 65536,     /* elements between two polls of mha_interrupted() */
    MAX_OPERANDS = 4   /* an output and up to three inputs (where) */
};

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
static const char *const reduce_names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};

/* ---- small helpers ---- */

static size_t dtype_size(mha_dtype dtype) { return dtype == MHA_BOOL ? sizeof(bool) : sizeof(float); }
static const char *dtype_name(mha_dtype dtype) { return dtype == MHA_BOOL ? "bool" : "float32"; }

static char *shape_of(char *buf, const mha_tensor *t) { return mha_shape_str(buf, MHA_SHAPE_BUF, t); }

static size_t shape_numel(size_t ndim, const size_t *shape) {
    size_t n = 1;
    for (size_t d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* The output must be empty on entry (so it cannot alias an input); an input must be live. */
static mha_status check_out(const char *fname, const mha_tensor *out) {
    if (!out) return mha_fail(MHA_E_ARG, "%s: the output tensor is NULL", fname);
    if (out->storage)
        return mha_fail(MHA_E_ARG, "%s: the output tensor must be empty on entry (it holds a storage)", fname);
    return MHA_OK;
}

static mha_status check_in(const char *fname, const char *arg, const mha_tensor *t) {
    if (!t || !t->storage) return mha_fail(MHA_E_ARG, "%s: argument %s is an empty (released) tensor", fname, arg);
    return MHA_OK;
}

/* Re-raise the last failure (from mha_empty, mha_to_dtype...) under fname, so every message names
 * the operation the caller asked for: "empty: shape ... overflows" becomes "add: shape ... overflows". */
static mha_status refail(const char *fname, mha_status status) {
    char why[512];
    const char *msg = mha_errmsg(), *rest = msg;
    while ((*rest >= 'a' && *rest <= 'z') || *rest == '_') rest++;
    if (rest > msg && rest[0] == ':' && rest[1] == ' ') msg = rest + 2;
    snprintf(why, sizeof why, "%s", msg);
    return mha_fail(status, "%s: %s", fname, why);
}

static mha_status alloc_out(const char *fname, mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape) {
    return mha_empty_named(out, dtype, ndim, shape, fname);
}

/* *use = t, or a float copy of t held in tmp when t is bool. */
static mha_status as_float(const char *fname, mha_tensor *tmp, const mha_tensor **use) {
    if ((*use)->dtype != MHA_BOOL) return MHA_OK;
    mha_status st = mha_to_dtype(tmp, *use, MHA_FLOAT32);
    if (st != MHA_OK) return refail(fname, st);
    *use = tmp;
    return MHA_OK;
}

static mha_status interrupted(const char *fname) { return mha_fail(MHA_E_INTERRUPTED, "%s: interrupted", fname); }

/* ---------------------------------------------------------------------------------------------
 * Broadcasting
 * ------------------------------------------------------------------------------------------- */

/* Merge shape b into (ndim, shape), both right-aligned as NumPy does: sizes must be equal or one of
 * them 1 (so 1 and 0 give 0). On a conflict return false with the two sizes and the result dim
 * counted from the end (1 = the last), which reads the same to 0-based C and 1-based Lua users. */
static bool broadcast_merge(size_t *ndim, size_t *shape, size_t b_ndim, const size_t *b_shape,
                            size_t *bad_dim, size_t *size_a, size_t *size_b) {
    size_t nd = *ndim > b_ndim ? *ndim : b_ndim;
    size_t merged[MHA_MAX_DIMS];
    for (size_t i = 0; i < nd; i++) {
        size_t x = i + *ndim >= nd ? shape[i + *ndim - nd] : 1;
        size_t y = i + b_ndim >= nd ? b_shape[i + b_ndim - nd] : 1;
        if (x == y || y == 1) {
            merged[i] = x;
        } else if (x == 1) {
            merged[i] = y;
        } else {
            *bad_dim = nd - i, *size_a = x, *size_b = y;
            return false;
        }
    }
    memcpy(shape, merged, nd * sizeof *shape);
    *ndim = nd;
    return true;
}

mha_status mha_broadcast_shape(size_t *ndim, size_t *shape, const mha_tensor *a, const mha_tensor *b, const char *fname) {
    size_t bad_dim, size_a, size_b, nd = a->ndim, merged[MHA_MAX_DIMS];
    memcpy(merged, a->shape, a->ndim * sizeof *merged);
    if (broadcast_merge(&nd, merged, b->ndim, b->shape, &bad_dim, &size_a, &size_b)) {
        *ndim = nd;
        memcpy(shape, merged, nd * sizeof *shape);
        return MHA_OK;
    }
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    return mha_fail(MHA_E_SHAPE, "%s: shapes %s and %s cannot broadcast: dim -%zu has %zu and %zu",
                    fname ? fname : "broadcast", shape_of(sa, a), shape_of(sb, b), bad_dim, size_a, size_b);
}

/* ---------------------------------------------------------------------------------------------
 * The elementwise loop: walks one output shape over up to MAX_OPERANDS strided operands (operand
 * 0 is the output). Dims of size 1 are dropped and neighbouring dims merged where every operand
 * steps through them evenly, so contiguous same-shape operands become one long row with unit
 * strides: the fast path. A row function does the work on a row of at most BLOCK elements.
 * ------------------------------------------------------------------------------------------- */

typedef struct operand {
    char *data;               /* first element */
    size_t elsize;            /* bytes per element */
    size_t ndim;              /* right-aligned against the loop's shape; 0 for a single value */
    const size_t *shape;
    const ptrdiff_t *stride;  /* in elements */
} operand;

static operand tensor_operand(const mha_tensor *t) {
    size_t elsize = dtype_size(t->dtype);
    return (operand){(char *)t->storage->data + t->offset * elsize, elsize, t->ndim, t->shape, t->stride};
}

/* One value repeated everywhere (stride 0): the scalar of add(x, 2), masked_fill's value. */
static operand value_operand(void *value, size_t elsize) { return (operand){value, elsize, 0, NULL, NULL}; }

/* p[k] points at operand k's first element of the row, s[k] is its stride (in elements). */
typedef void row_fn(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n);

static mha_status run_loop(const char *fname, size_t ndim, const size_t *shape, const operand *ops,
                           size_t nops, row_fn *row, const void *ctx) {
    size_t dims = 0;                                /* dims left after dropping and merging */
    size_t size[MHA_MAX_DIMS];
    ptrdiff_t stride[MAX_OPERANDS][MHA_MAX_DIMS];
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) return MHA_OK;           /* no elements: nothing to do */
        if (shape[i] == 1) continue;
        ptrdiff_t s[MAX_OPERANDS];
        for (size_t k = 0; k < nops; k++) {
            size_t lead = ndim - ops[k].ndim;       /* missing leading dims broadcast */
            s[k] = i < lead || ops[k].shape[i - lead] == 1 ? 0 : ops[k].stride[i - lead];
        }
        bool merge = dims > 0;
        for (size_t k = 0; k < nops && merge; k++) merge = stride[k][dims - 1] == s[k] * (ptrdiff_t)shape[i];
        if (merge) {
            size[dims - 1] *= shape[i];
            for (size_t k = 0; k < nops; k++) stride[k][dims - 1] = s[k];
        } else {
            size[dims] = shape[i];
            for (size_t k = 0; k < nops; k++) stride[k][dims] = s[k];
            dims++;
        }
    }

    size_t inner = dims ? size[dims - 1] : 1, outer = 1;
    ptrdiff_t s_inner[MAX_OPERANDS];
    for (size_t k = 0; k < nops; k++) s_inner[k] = dims ? stride[k][dims - 1] : 0;
    for (size_t d = 0; d + 1 < dims; d++) outer *= size[d];

    size_t index[MHA_MAX_DIMS] = {0};
    ptrdiff_t off[MAX_OPERANDS] = {0};              /* element offsets of the current row */
    size_t since_poll = 0;
    for (size_t o = 0; o < outer; o++) {
        for (size_t start = 0; start < inner; start += BLOCK) {
            size_t n = inner - start < BLOCK ? inner - start : BLOCK;
            char *p[MAX_OPERANDS];
            for (size_t k = 0; k < nops; k++)
                p[k] = ops[k].data + (off[k] + (ptrdiff_t)start * s_inner[k]) * (ptrdiff_t)ops[k].elsize;
            row(ctx, p, s_inner, (ptrdiff_t)n);
            since_poll += n;
            if (since_poll >= BLOCK) {
                since_poll = 0;
                if (mha_interrupted()) return interrupted(fname);
            }
        }
        for (size_t d = dims > 1 ? dims - 1 : 0; d-- > 0;) {   /* odometer over the outer dims */
            index[d]++;
            for (size_t k = 0; k < nops; k++) off[k] += stride[k][d];
            if (index[d] < size[d]) break;
            for (size_t k = 0; k < nops; k++) off[k] -= stride[k][d] * (ptrdiff_t)size[d];
            index[d] = 0;
        }
    }
    return MHA_OK;
}

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

OPS_INLINE void binary_loop(mha_binop op, float *restrict out, const float *a, ptrdiff_t sa,
                            const float *b, ptrdiff_t sb, ptrdiff_t n) {
    if (sa == 1 && sb == 1) {           /* same shape, contiguous */
        for (ptrdiff_t i = 0; i < n; i++) out[i] = binop_apply(op, a[i], b[i]);
    } else if (sa == 1 && sb == 0) {    /* tensor op scalar */
        float y = b[0];
        for (ptrdiff_t i = 0; i < n; i++) out[i] = binop_apply(op, a[i], y);
    } else if (sa == 0 && sb == 1) {    /* scalar op tensor */
        float x = a[0];
        for (ptrdiff_t i = 0; i < n; i++) out[i] = binop_apply(op, x, b[i]);
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
    /* gelu(x) = x·Phi(x) = 0.5·x·(1 + erf(x/sqrt 2)) = 0.5·x·erfc(-x/sqrt 2); erfc keeps the
     * small tail for negative x accurate, where 1 + erf(...) would cancel. */
    case MHA_GELU: return (float)(0.5 * (double)x * erfc(-(double)x * 0.70710678118654752440));
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
    case MHA_GELU: unary_loop(MHA_GELU, out, x, s[1], n); break;
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

/* A strided copy into a strided output (cat and stack write into slices of their output). */
typedef enum { COPY_FLOAT, COPY_BOOL, COPY_BOOL_TO_FLOAT } copy_kind;

static void copy_row(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n) {
    switch (*(const copy_kind *)ctx) {
    case COPY_FLOAT: {
        float *out = (float *)p[0];
        const float *x = (const float *)p[1];
        for (ptrdiff_t i = 0; i < n; i++) out[i * s[0]] = x[i * s[1]];
        break;
    }
    case COPY_BOOL: {
        bool *out = (bool *)p[0];
        const bool *x = (const bool *)p[1];
        for (ptrdiff_t i = 0; i < n; i++) out[i * s[0]] = x[i * s[1]];
        break;
    }
    case COPY_BOOL_TO_FLOAT: {
        float *out = (float *)p[0];
        const bool *x = (const bool *)p[1];
        for (ptrdiff_t i = 0; i < n; i++) out[i * s[0]] = x[i * s[1]] ? 1.0f : 0.0f;
        break;
    }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise operations
 * ------------------------------------------------------------------------------------------- */

/* The dtype rules for arithmetic (see the top of the file); b is NULL for a number operand. */
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
    st = run_loop(fname, ndim, shape, ops, 3, row, ctx);
    if (st != MHA_OK) mha_release(out);
done:
    mha_release(&a_float);
    mha_release(&b_float);
    return st;
}

/* The same with a number in place of one tensor: operands (t, value), or (value, t) when value_first. */
static mha_status elementwise_value(const char *fname, mha_tensor *out, mha_dtype out_dtype, const mha_tensor *t,
                                    float value, bool value_first, row_fn *row, const void *ctx) {
    mha_tensor t_float = MHA_TENSOR_EMPTY;
    mha_status st = as_float(fname, &t_float, &t);
    if (st != MHA_OK) return st;
    if ((st = alloc_out(fname, out, out_dtype, t->ndim, t->shape)) == MHA_OK) {
        operand ops[3] = {tensor_operand(out), tensor_operand(t), value_operand(&value, sizeof value)};
        if (value_first) ops[1] = ops[2], ops[2] = tensor_operand(t);
        st = run_loop(fname, t->ndim, t->shape, ops, 3, row, ctx);
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
    st = run_loop(fname, a->ndim, a->shape, ops, 2, not_row, NULL);
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
        st = run_loop(fname, t->ndim, t->shape, ops, 2, unary_row, &op);
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
    if (!broadcast_merge(&ndim, shape, a->ndim, a->shape, &bad_dim, &size_x, &size_y) ||
        !broadcast_merge(&ndim, shape, b->ndim, b->shape, &bad_dim, &size_x, &size_y))
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
    st = run_loop(fname, ndim, shape, ops, 4, where_row, &elsize);
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
    bool fits = broadcast_merge(&ndim, shape, mask->ndim, mask->shape, &bad_dim, &size_t_dim, &size_mask_dim);
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
    st = run_loop(fname, t->ndim, t->shape, ops, 4, where_row, &elsize);
    if (st != MHA_OK) mha_release(out);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Reductions. The input is seen as (outer, reduced, inner) dims: for one dim d, outer = dims before
 * d, reduced = d, inner = dims after d; for MHA_ALL_DIMS every dim is reduced. For each outer
 * position the loop runs over the reduced positions and, inside, over the inner positions, keeping
 * one accumulator per inner position: contiguous inputs are read in memory order whatever d is.
 * Sums and means accumulate in double. var is two passes: the mean, then sum (x - mean)^2.
 * ------------------------------------------------------------------------------------------- */

typedef struct dims {
    size_t ndim;
    size_t shape[MHA_MAX_DIMS];
    ptrdiff_t stride[MHA_MAX_DIMS];
    size_t count;   /* product of the shape */
} dims;

/* t's dims [first, last), size-1 dims dropped and evenly stepped neighbours merged (C order kept,
 * so a position's counter along the merged dims is still its flat C-order index). */
static void dims_of(dims *d, const mha_tensor *t, size_t first, size_t last) {
    d->ndim = 0;
    d->count = 1;
    for (size_t i = first; i < last; i++) {
        d->count *= t->shape[i];
        if (t->shape[i] == 1) continue;
        if (d->ndim > 0 && d->stride[d->ndim - 1] == t->stride[i] * (ptrdiff_t)t->shape[i]) {
            d->shape[d->ndim - 1] *= t->shape[i];
            d->stride[d->ndim - 1] = t->stride[i];
        } else {
            d->shape[d->ndim] = t->shape[i];
            d->stride[d->ndim] = t->stride[i];
            d->ndim++;
        }
    }
}

/* Advance an odometer over d's dims [0, upto); returns the change of the element offset. */
static ptrdiff_t dims_step(const dims *d, size_t *index, size_t upto) {
    ptrdiff_t delta = 0;
    for (size_t k = upto; k-- > 0;) {
        index[k]++;
        delta += d->stride[k];
        if (index[k] < d->shape[k]) break;
        delta -= d->stride[k] * (ptrdiff_t)d->shape[k];
        index[k] = 0;
    }
    return delta;
}

typedef enum { PASS_FIRST, PASS_SUM, PASS_SQDEV, PASS_MAX, PASS_MIN, PASS_ARGMAX, PASS_ARGMIN } pass_kind;

/* Update the accumulators of n consecutive inner positions with the reduced position r:
 * x[i·sx] is the element for inner position i. */
static void accumulate(pass_kind kind, double *acc, size_t *arg, const double *mean, size_t r,
                       const float *x, ptrdiff_t sx, size_t n) {
    switch (kind) {
    case PASS_FIRST:    /* max/min/argmax/argmin start from the first element */
        for (size_t i = 0; i < n; i++) acc[i] = x[(ptrdiff_t)i * sx];
        if (arg) memset(arg, 0, n * sizeof *arg);
        break;
    case PASS_SUM:
        for (size_t i = 0; i < n; i++) acc[i] += x[(ptrdiff_t)i * sx];
        break;
    case PASS_SQDEV:
        for (size_t i = 0; i < n; i++) {
            double dev = x[(ptrdiff_t)i * sx] - mean[i];
            acc[i] += dev * dev;
        }
        break;
    case PASS_MAX:      /* once NaN, stays NaN: x > NaN is false */
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (isnan(v) || v > acc[i]) acc[i] = v;
        }
        break;
    case PASS_MIN:
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (isnan(v) || v < acc[i]) acc[i] = v;
        }
        break;
    case PASS_ARGMAX:   /* the first NaN wins and is kept; ties keep the first */
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (!isnan(acc[i]) && (isnan(v) || v > acc[i])) acc[i] = v, arg[i] = r;
        }
        break;
    case PASS_ARGMIN:
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (!isnan(acc[i]) && (isnan(v) || v < acc[i])) acc[i] = v, arg[i] = r;
        }
        break;
    }
}

typedef struct reduction {
    const char *fname;
    const float *x;             /* first element of the input */
    dims outer, red, inner;
    double *acc, *mean;         /* inner.count each */
    size_t *arg;                /* inner.count, for argmax/argmin */
    size_t since_poll;
} reduction;

/* Fold the n reduced positions r0, r0+1, ... (elements x[i·sx]) into the single accumulator *acc
 * (and *arg): the path when no inner dims are left, as in a sum over the last dim. */
static void fold_run(pass_kind kind, double *acc, size_t *arg, const double *mean, size_t r0,
                     const float *x, ptrdiff_t sx, size_t n) {
    size_t i = 0;
    if (r0 == 0 && kind != PASS_SUM && kind != PASS_SQDEV) {   /* start from the first element */
        *acc = x[0];
        if (arg) *arg = 0;
        i = 1;
    }
    switch (kind) {
    case PASS_FIRST:
        break;
    case PASS_SUM: {    /* four partial sums, so the CPU can overlap the additions */
        double part[4] = {0.0, 0.0, 0.0, 0.0};
        for (; i + 4 <= n; i += 4)
            for (size_t k = 0; k < 4; k++) part[k] += x[(ptrdiff_t)(i + k) * sx];
        for (; i < n; i++) part[0] += x[(ptrdiff_t)i * sx];
        *acc += (part[0] + part[1]) + (part[2] + part[3]);
        break;
    }
    case PASS_SQDEV: {
        double part[4] = {0.0, 0.0, 0.0, 0.0}, m = *mean;
        for (; i + 4 <= n; i += 4) {
            for (size_t k = 0; k < 4; k++) {
                double dev = x[(ptrdiff_t)(i + k) * sx] - m;
                part[k] += dev * dev;
            }
        }
        for (; i < n; i++) {
            double dev = x[(ptrdiff_t)i * sx] - m;
            part[0] += dev * dev;
        }
        *acc += (part[0] + part[1]) + (part[2] + part[3]);
        break;
    }
    case PASS_MAX:
    case PASS_MIN: {    /* a NaN seen anywhere makes the result NaN; an earlier NaN in *acc stays */
        float best = (float)*acc;
        bool seen_nan = false;
        if (kind == PASS_MAX) {
            for (; i < n; i++) {
                float v = x[(ptrdiff_t)i * sx];
                seen_nan |= isnan(v);
                best = v > best ? v : best;
            }
        } else {
            for (; i < n; i++) {
                float v = x[(ptrdiff_t)i * sx];
                seen_nan |= isnan(v);
                best = v < best ? v : best;
            }
        }
        *acc = seen_nan ? NAN : best;
        break;
    }
    case PASS_ARGMAX:
    case PASS_ARGMIN:   /* the first NaN wins and is kept; ties keep the first */
        for (; i < n && !isnan(*acc); i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (isnan(v) || (kind == PASS_ARGMAX ? v > *acc : v < *acc)) *acc = v, *arg = r0 + i;
        }
        break;
    }
}

/* One pass when no inner dims are left: runs along the innermost reduced dim, in C order. */
static mha_status reduce_runs(reduction *rd, pass_kind kind, ptrdiff_t base) {
    const dims *red = &rd->red;
    size_t run = red->ndim ? red->shape[red->ndim - 1] : 1;
    ptrdiff_t run_stride = red->ndim ? red->stride[red->ndim - 1] : 0;
    size_t runs = run ? red->count / run : 0, r = 0;
    size_t index[MHA_MAX_DIMS] = {0};
    ptrdiff_t off = 0;
    if (kind == PASS_SUM || kind == PASS_SQDEV) rd->acc[0] = 0.0;
    for (size_t j = 0; j < runs; j++) {
        for (size_t start = 0; start < run; start += BLOCK) {
            size_t n = run - start < BLOCK ? run - start : BLOCK;
            fold_run(kind, rd->acc, rd->arg, rd->mean, r, rd->x + base + off + (ptrdiff_t)start * run_stride,
                     run_stride, n);
            r += n;
            rd->since_poll += n;
            if (rd->since_poll >= BLOCK) {
                rd->since_poll = 0;
                if (mha_interrupted()) return interrupted(rd->fname);
            }
        }
        if (red->ndim > 1) off += dims_step(red, index, red->ndim - 1);
    }
    return MHA_OK;
}

/* One pass over the reduced and inner positions under one outer position (element offset base). */
static mha_status reduce_pass(reduction *rd, pass_kind kind, ptrdiff_t base) {
    if (rd->inner.count == 1) return reduce_runs(rd, kind, base);
    const dims *in = &rd->inner;
    size_t row = in->ndim ? in->shape[in->ndim - 1] : 1;    /* inner positions in one inner row */
    ptrdiff_t row_stride = in->ndim ? in->stride[in->ndim - 1] : 0;
    size_t rows = row ? in->count / row : 0;
    size_t red_index[MHA_MAX_DIMS] = {0};
    ptrdiff_t red_off = 0;
    if (kind == PASS_SUM || kind == PASS_SQDEV)
        for (size_t i = 0; i < in->count; i++) rd->acc[i] = 0.0;
    for (size_t r = 0; r < rd->red.count; r++) {
        pass_kind k = r == 0 && kind != PASS_SUM && kind != PASS_SQDEV ? PASS_FIRST : kind;
        size_t in_index[MHA_MAX_DIMS] = {0};
        ptrdiff_t in_off = 0;
        for (size_t j = 0; j < rows; j++) {
            for (size_t start = 0; start < row; start += BLOCK) {
                size_t n = row - start < BLOCK ? row - start : BLOCK;
                size_t i0 = j * row + start;
                accumulate(k, rd->acc + i0, rd->arg ? rd->arg + i0 : NULL, rd->mean ? rd->mean + i0 : NULL, r,
                           rd->x + base + red_off + in_off + (ptrdiff_t)start * row_stride, row_stride, n);
                rd->since_poll += n;
                if (rd->since_poll >= BLOCK) {
                    rd->since_poll = 0;
                    if (mha_interrupted()) return interrupted(rd->fname);
                }
            }
            if (in->ndim > 1) in_off += dims_step(in, in_index, in->ndim - 1);
        }
        red_off += dims_step(&rd->red, red_index, rd->red.ndim);
    }
    return MHA_OK;
}

/* Shape of a reduction's result: dim removed, or kept as 1 (all dims when dim is MHA_ALL_DIMS). */
static size_t reduced_shape(size_t *shape, const mha_tensor *t, size_t dim, bool keepdim) {
    size_t ndim = 0;
    for (size_t i = 0; i < t->ndim; i++) {
        bool reduced = dim == MHA_ALL_DIMS || i == dim;
        if (!reduced) shape[ndim++] = t->shape[i];
        else if (keepdim) shape[ndim++] = 1;
    }
    return ndim;
}

/* op is an mha_reduceop, or -1 for var (with correction). */
static mha_status reduce(mha_tensor *out, int op, const mha_tensor *t, size_t dim, bool keepdim, size_t correction) {
    const char *fname = op < 0 ? "var" : reduce_names[op];
    char sh[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "x", t)) != MHA_OK) return st;
    if (dim != MHA_ALL_DIMS && dim >= t->ndim && !(t->ndim == 0 && dim == 0))
        return mha_fail(MHA_E_ARG, "%s: dim %zu is out of range for the %zu-dim tensor %s", fname, dim, t->ndim,
                        shape_of(sh, t));
    if (t->ndim == 0) dim = MHA_ALL_DIMS;          /* a scalar's only "dim" is all of it */

    size_t n = dim == MHA_ALL_DIMS ? shape_numel(t->ndim, t->shape) : t->shape[dim];
    bool extreme = op == MHA_MAX || op == MHA_MIN || op == MHA_ARGMAX || op == MHA_ARGMIN;
    if (extreme && n == 0) {
        if (dim == MHA_ALL_DIMS)
            return mha_fail(MHA_E_SHAPE, "%s: the tensor %s is empty; %s of no elements is undefined", fname,
                            shape_of(sh, t), fname);
        return mha_fail(MHA_E_SHAPE, "%s: dim -%zu of the tensor %s has size 0; %s of no elements is undefined",
                        fname, t->ndim - dim, shape_of(sh, t), fname);
    }

    reduction rd = {.fname = fname};
    mha_tensor t_float = MHA_TENSOR_EMPTY;
    if ((st = as_float(fname, &t_float, &t)) != MHA_OK) return st;
    rd.x = (const float *)t->storage->data + t->offset;
    if (dim == MHA_ALL_DIMS) {
        dims_of(&rd.outer, t, 0, 0);
        dims_of(&rd.red, t, 0, t->ndim);
        dims_of(&rd.inner, t, 0, 0);
    } else {
        dims_of(&rd.outer, t, 0, dim);
        dims_of(&rd.red, t, dim, dim + 1);
        dims_of(&rd.inner, t, dim + 1, t->ndim);
    }

    size_t shape[MHA_MAX_DIMS], ndim = reduced_shape(shape, t, dim, keepdim);
    size_t inner = rd.inner.count;
    bool has_arg = op == MHA_ARGMAX || op == MHA_ARGMIN;
    size_t acc_bytes = inner * sizeof(double), arg_bytes = has_arg ? inner * sizeof(size_t) : 0;
    size_t mean_bytes = op < 0 ? acc_bytes : 0;
    if ((st = alloc_out(fname, out, MHA_FLOAT32, ndim, shape)) != MHA_OK) goto done;
    if (mha_numel(out) == 0) goto done;
    if (n == 0) {   /* nothing to reduce: sum 0, mean and var 0/0 = NaN, without walking the outer positions */
        float *result = mha_f32(out);
        for (size_t i = 0, m = mha_numel(out); i < m; i++) result[i] = op == MHA_SUM ? 0.0f : NAN;
        goto done;
    }
    rd.acc = mha_alloc(acc_bytes);
    rd.mean = mean_bytes ? mha_alloc(mean_bytes) : NULL;
    rd.arg = arg_bytes ? mha_alloc(arg_bytes) : NULL;
    if (!rd.acc || (mean_bytes && !rd.mean) || (arg_bytes && !rd.arg)) {
        st = mha_fail(MHA_E_NOMEM, "%s: out of memory for %zu accumulators", fname, inner);
        mha_release(out);
        goto done;
    }

    float *result = mha_f32(out);
    size_t outer_index[MHA_MAX_DIMS] = {0};
    ptrdiff_t base = 0;
    for (size_t o = 0; o < rd.outer.count; o++) {
        float *dst = result + o * inner;
        switch (op) {
        case MHA_SUM:
        case MHA_MEAN:
            st = reduce_pass(&rd, PASS_SUM, base);
            for (size_t i = 0; i < inner && st == MHA_OK; i++)
                dst[i] = (float)(op == MHA_SUM ? rd.acc[i] : n ? rd.acc[i] / (double)n : NAN);
            break;
        case MHA_MAX:
        case MHA_MIN:
            st = reduce_pass(&rd, op == MHA_MAX ? PASS_MAX : PASS_MIN, base);
            for (size_t i = 0; i < inner && st == MHA_OK; i++) dst[i] = (float)rd.acc[i];
            break;
        case MHA_ARGMAX:
        case MHA_ARGMIN:
            st = reduce_pass(&rd, op == MHA_ARGMAX ? PASS_ARGMAX : PASS_ARGMIN, base);
            for (size_t i = 0; i < inner && st == MHA_OK; i++) dst[i] = (float)rd.arg[i];
            break;
        default: {  /* var = sum (x - mean)^2 / (n - correction); NumPy's 0/0 = NaN, x/0 = inf when n <= correction */
            st = reduce_pass(&rd, PASS_SUM, base);
            for (size_t i = 0; i < inner && st == MHA_OK; i++) rd.mean[i] = n ? rd.acc[i] / (double)n : NAN;
            if (st == MHA_OK) st = reduce_pass(&rd, PASS_SQDEV, base);
            double divisor = n > correction ? (double)(n - correction) : 0.0;
            for (size_t i = 0; i < inner && st == MHA_OK; i++)
                dst[i] = divisor > 0.0 ? (float)(rd.acc[i] / divisor)
                         : rd.acc[i] > 0.0 ? INFINITY : NAN;
            break;
        }
        }
        if (st != MHA_OK) {
            mha_release(out);
            break;
        }
        base += dims_step(&rd.outer, outer_index, rd.outer.ndim);
    }
done:
    mha_free(rd.acc, acc_bytes);
    mha_free(rd.mean, mean_bytes);
    mha_free(rd.arg, arg_bytes);
    mha_release(&t_float);
    return st;
}

mha_status mha_reduce(mha_tensor *out, mha_reduceop op, const mha_tensor *t, size_t dim, bool keepdim) {
    if ((unsigned)op > MHA_ARGMIN) return mha_fail(MHA_E_ARG, "reduce: unknown operation %d", (int)op);
    return reduce(out, (int)op, t, dim, keepdim, 0);
}

mha_status mha_var(mha_tensor *out, const mha_tensor *t, size_t dim, bool keepdim, size_t correction) {
    return reduce(out, -1, t, dim, keepdim, correction);
}

/* ---------------------------------------------------------------------------------------------
 * Joining: each input is copied into its slice of the output by the elementwise loop.
 * ------------------------------------------------------------------------------------------- */

/* Checks common to cat and stack; sets the output dtype (float when any input is float). */
/* "1st", "2nd", "3rd", "11th", "22nd": a position in a list of tensors, read alike by C (0-based) and
 * Lua (1-based) users, where "tensor 1" would mean different tensors to each. */
static const char *ordinal(char *buf, size_t n) {
    const char *suffix = "th";
    if (n % 100 < 11 || n % 100 > 13) suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
    snprintf(buf, 32, "%zu%s", n, suffix);
    return buf;
}

static mha_status check_join(const char *fname, mha_tensor *out, const mha_tensor *const *ts, size_t n, mha_dtype *dtype) {
    mha_status st = check_out(fname, out);
    if (st != MHA_OK) return st;
    if (n == 0 || !ts) return mha_fail(MHA_E_ARG, "%s: expected at least one tensor, got none", fname);
    *dtype = MHA_BOOL;
    for (size_t i = 0; i < n; i++) {
        if (!ts[i] || !ts[i]->storage) {
            char nth[32];
            return mha_fail(MHA_E_ARG, "%s: the %s tensor is empty (released)", fname, ordinal(nth, i + 1));
        }
        if (ts[i]->dtype == MHA_FLOAT32) *dtype = MHA_FLOAT32;
    }
    return MHA_OK;
}

/* Copy piece into out's slice starting at element offset `at`, stepping by out's strides `stride`. */
static mha_status copy_piece(const char *fname, mha_tensor *out, size_t at, const ptrdiff_t *stride, const mha_tensor *piece) {
    copy_kind kind = out->dtype == MHA_BOOL ? COPY_BOOL : piece->dtype == MHA_BOOL ? COPY_BOOL_TO_FLOAT : COPY_FLOAT;
    size_t elsize = dtype_size(out->dtype);
    operand ops[2] = {{(char *)out->storage->data + at * elsize, elsize, piece->ndim, piece->shape, stride},
                      tensor_operand(piece)};
    return run_loop(fname, piece->ndim, piece->shape, ops, 2, copy_row, &kind);
}

mha_status mha_cat(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim) {
    const char *fname = "cat";
    char s0[MHA_SHAPE_BUF], si[MHA_SHAPE_BUF];
    mha_dtype dtype;
    mha_status st = check_join(fname, out, ts, n, &dtype);
    if (st != MHA_OK) return st;
    const mha_tensor *first = ts[0];
    if (first->ndim == 0)
        return mha_fail(MHA_E_SHAPE, "cat: the 1st tensor is a scalar (); cat joins tensors of at least one dim "
                        "(stack makes a new dim)");
    if (dim >= first->ndim)
        return mha_fail(MHA_E_ARG, "cat: dim %zu is out of range for the %zu-dim tensors, e.g. tensor 0 %s", dim,
                        first->ndim, shape_of(s0, first));
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, first->shape, first->ndim * sizeof *shape);
    shape[dim] = 0;
    char nth[32];
    for (size_t i = 0; i < n; i++) {   /* dims in messages count from the end, as in broadcasting's */
        const mha_tensor *t = ts[i];
        if (t->ndim != first->ndim)
            return mha_fail(MHA_E_SHAPE, "cat: the %s tensor %s has %zu dims but the 1st %s has %zu",
                            ordinal(nth, i + 1), shape_of(si, t), t->ndim, shape_of(s0, first), first->ndim);
        for (size_t d = 0; d < t->ndim; d++)
            if (d != dim && t->shape[d] != first->shape[d])
                return mha_fail(MHA_E_SHAPE, "cat: the %s tensor %s and the 1st %s differ in dim -%zu (%zu and %zu); "
                                "only the joined dim -%zu may differ", ordinal(nth, i + 1), shape_of(si, t),
                                shape_of(s0, first), t->ndim - d, t->shape[d], first->shape[d], t->ndim - dim);
        if (shape[dim] + t->shape[dim] < shape[dim])
            return mha_fail(MHA_E_NOMEM, "cat: the joined dim -%zu overflows size_t", first->ndim - dim);
        shape[dim] += t->shape[dim];
    }
    if ((st = alloc_out(fname, out, dtype, first->ndim, shape)) != MHA_OK) return st;
    size_t at = 0;   /* element offset of the next piece in out */
    for (size_t i = 0; i < n && st == MHA_OK; i++) {
        st = copy_piece(fname, out, at, out->stride, ts[i]);
        at += ts[i]->shape[dim] * (size_t)out->stride[dim];
    }
    if (st != MHA_OK) mha_release(out);
    return st;
}

mha_status mha_stack(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim) {
    const char *fname = "stack";
    char s0[MHA_SHAPE_BUF], si[MHA_SHAPE_BUF];
    mha_dtype dtype;
    mha_status st = check_join(fname, out, ts, n, &dtype);
    if (st != MHA_OK) return st;
    const mha_tensor *first = ts[0];
    if (first->ndim >= MHA_MAX_DIMS)
        return mha_fail(MHA_E_SHAPE, "stack: tensors %s already have %d dims, the most a tensor may have",
                        shape_of(s0, first), MHA_MAX_DIMS);
    if (dim > first->ndim)
        return mha_fail(MHA_E_ARG, "stack: dim %zu is out of range for stacking %zu-dim tensors (0 to %zu)", dim,
                        first->ndim, first->ndim);
    char nth[32];
    for (size_t i = 1; i < n; i++)
        if (!mha_same_shape(ts[i], first))
            return mha_fail(MHA_E_SHAPE, "stack: the %s tensor %s and the 1st %s differ; stack needs equal shapes",
                            ordinal(nth, i + 1), shape_of(si, ts[i]), shape_of(s0, first));
    size_t shape[MHA_MAX_DIMS];
    for (size_t d = 0, k = 0; d <= first->ndim; d++) shape[d] = d == dim ? n : first->shape[k++];
    if ((st = alloc_out(fname, out, dtype, first->ndim + 1, shape)) != MHA_OK) return st;
    /* piece i is out's slice at index i along dim: out's strides without that dim */
    ptrdiff_t stride[MHA_MAX_DIMS];
    for (size_t d = 0, k = 0; d <= first->ndim; d++)
        if (d != dim) stride[k++] = out->stride[d];
    for (size_t i = 0; i < n && st == MHA_OK; i++)
        st = copy_piece(fname, out, i * (size_t)out->stride[dim], stride, ts[i]);
    if (st != MHA_OK) mha_release(out);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * matmul, torch.matmul semantics:
 *   (K)·(K) -> ()                    a dot product
 *   (M,K)·(K,N) -> (M,N)
 *   (K)·(..., K,N) -> (..., N)       a 1-D a becomes (1,K); the added dim is removed
 *   (..., M,K)·(K) -> (..., M)       a 1-D b becomes (K,1); the added dim is removed
 *   (..., M,K)·(..., K,N) -> (..., M,N)   batch dims broadcast
 * Every 2-D product is one mha_sgemm call on the operands' own strides, so a transposed view (Wᵀ,
 * Kᵀ) costs no copy; an operand is copied only when neither of its matrix dims has unit stride.
 * ------------------------------------------------------------------------------------------- */

/* One operand's matrices: batch dims (right-aligned against the output's batch dims), then rows
 * (size, stride) and cols (size, stride). */
typedef struct matrices {
    const float *data;
    size_t batch_ndim;
    const size_t *batch_shape;
    const ptrdiff_t *batch_stride;
    size_t rows, cols;
    ptrdiff_t rs, cs;
} matrices;

/* a 1-D vector is a single row (as_row) or a single column; a size-1 dim's stride is never used,
 * so it is set to 1, which lets a vector with any stride pass the unit-stride test. */
static matrices matrices_of(const mha_tensor *t, bool as_row) {
    matrices m = {.data = mha_f32(t), .batch_shape = t->shape, .batch_stride = t->stride};
    if (t->ndim == 1) {
        m.rows = as_row ? 1 : t->shape[0];
        m.cols = as_row ? t->shape[0] : 1;
        m.rs = as_row ? 1 : t->stride[0];
        m.cs = as_row ? t->stride[0] : 1;
    } else {
        m.batch_ndim = t->ndim - 2;
        m.rows = t->shape[t->ndim - 2];
        m.cols = t->shape[t->ndim - 1];
        m.rs = t->stride[t->ndim - 2];
        m.cs = t->stride[t->ndim - 1];
    }
    if (m.rows == 1) m.rs = 1;
    if (m.cols == 1) m.cs = 1;
    return m;
}

static bool has_unit_stride(const matrices *m) { return m->rs == 1 || m->cs == 1; }

/* Offset of batch position `index` (over the output's batch_ndim dims) in m, broadcasting. */
static ptrdiff_t batch_offset(const matrices *m, size_t batch_ndim, const size_t *index) {
    ptrdiff_t off = 0;
    size_t lead = batch_ndim - m->batch_ndim;
    for (size_t d = lead; d < batch_ndim; d++)
        if (m->batch_shape[d - lead] != 1) off += (ptrdiff_t)index[d] * m->batch_stride[d - lead];
    return off;
}

/* True when a's batch dims step evenly through its rows (each batch starts rows·rs after the last)
 * and b is one matrix for every batch: then the batches are one tall (batch·M, K) product. */
static bool batches_fold(const matrices *a, const matrices *b, size_t batch_ndim, const size_t *batch_shape) {
    if (a->batch_ndim != batch_ndim) return false;
    for (size_t d = 0; d < b->batch_ndim; d++)
        if (b->batch_shape[d] != 1) return false;
    ptrdiff_t expected = a->rs * (ptrdiff_t)a->rows;
    for (size_t d = batch_ndim; d-- > 0;) {
        if (batch_shape[d] != 1 && a->batch_stride[d] != expected) return false;
        expected *= (ptrdiff_t)batch_shape[d];
    }
    return true;
}

static mha_status matmul_fail_kernel(mha_status st, const mha_tensor *a, const mha_tensor *b) {
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    if (st == MHA_E_INTERRUPTED) return interrupted("matmul");
    if (st == MHA_E_NOMEM)
        return mha_fail(st, "matmul: %s @ %s: out of memory for the kernel's scratch", shape_of(sa, a), shape_of(sb, b));
    return refail("matmul", st);
}

mha_status mha_matmul(mha_tensor *out, const mha_tensor *a, const mha_tensor *b) {
    const char *fname = "matmul";
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_in(fname, "b", b)) != MHA_OK)
        return st;
    if (a->dtype != MHA_FLOAT32 || b->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "matmul: %s @ %s: argument %s is bool; matmul needs float32 tensors",
                        shape_of(sa, a), shape_of(sb, b), a->dtype != MHA_FLOAT32 ? "a" : "b");
    if (a->ndim == 0 || b->ndim == 0)
        return mha_fail(MHA_E_SHAPE, "matmul: %s @ %s: both arguments need at least one dim (use mul for a scalar)",
                        shape_of(sa, a), shape_of(sb, b));
    size_t k_a = a->shape[a->ndim - 1], k_b = b->shape[b->ndim == 1 ? 0 : b->ndim - 2];
    if (k_a != k_b)
        return mha_fail(MHA_E_SHAPE, "matmul: %s @ %s: inner sizes %zu and %zu differ", shape_of(sa, a),
                        shape_of(sb, b), k_a, k_b);

    /* the output's batch dims: a's and b's, broadcast */
    size_t batch_ndim = a->ndim > 2 ? a->ndim - 2 : 0, batch_shape[MHA_MAX_DIMS], bad_dim, size_x, size_y;
    memcpy(batch_shape, a->shape, batch_ndim * sizeof *batch_shape);
    if (!broadcast_merge(&batch_ndim, batch_shape, b->ndim > 2 ? b->ndim - 2 : 0, b->shape, &bad_dim, &size_x, &size_y))
        return mha_fail(MHA_E_SHAPE, "matmul: %s @ %s: batch dims cannot broadcast: dim -%zu has %zu and %zu",
                        shape_of(sa, a), shape_of(sb, b), bad_dim + 2, size_x, size_y);

    /* copy an operand only when neither matrix dim has unit stride */
    mha_tensor a_copy = MHA_TENSOR_EMPTY, b_copy = MHA_TENSOR_EMPTY;
    matrices ma = matrices_of(a, true), mb = matrices_of(b, false);
    if (!has_unit_stride(&ma)) {
        if ((st = mha_contiguous(&a_copy, a)) != MHA_OK) return refail(fname, st);
        ma = matrices_of(&a_copy, true);
    }
    if (!has_unit_stride(&mb)) {
        if ((st = mha_contiguous(&b_copy, b)) != MHA_OK) {
            mha_release(&a_copy);
            return refail(fname, st);
        }
        mb = matrices_of(&b_copy, false);
    }

    size_t M = ma.rows, N = mb.cols, K = ma.cols;
    /* batch dims + (M) + (N): at most MHA_MAX_DIMS, since the batch dims came with an M or an N */
    size_t shape[MHA_MAX_DIMS], ndim = batch_ndim;
    memcpy(shape, batch_shape, batch_ndim * sizeof *shape);
    if (a->ndim > 1) shape[ndim++] = M;
    if (b->ndim > 1) shape[ndim++] = N;
    /* K == 0: every product is an empty sum, 0 */
    st = K == 0 ? mha_zeros(out, MHA_FLOAT32, ndim, shape) : mha_empty(out, MHA_FLOAT32, ndim, shape);
    if (st != MHA_OK) {
        st = refail(fname, st);
        goto done;
    }
    size_t batches = shape_numel(batch_ndim, batch_shape);
    if (K == 0 || M == 0 || N == 0 || batches == 0) goto done;

    float *c = mha_f32(out);
    if (batches > 1 && batches_fold(&ma, &mb, batch_ndim, batch_shape)) {
        st = mha_sgemm(c, N, ma.data, ma.rs, ma.cs, mb.data, mb.rs, mb.cs, batches * M, N, K, false);
    } else {
        size_t index[MHA_MAX_DIMS] = {0};
        for (size_t i = 0; i < batches && st == MHA_OK; i++) {
            if (mha_interrupted()) {
                st = MHA_E_INTERRUPTED;
                break;
            }
            st = mha_sgemm(c + i * M * N, N, ma.data + batch_offset(&ma, batch_ndim, index), ma.rs, ma.cs,
                           mb.data + batch_offset(&mb, batch_ndim, index), mb.rs, mb.cs, M, N, K, false);
            for (size_t d = batch_ndim; d-- > 0;) {   /* odometer over the batch dims */
                if (++index[d] < batch_shape[d]) break;
                index[d] = 0;
            }
        }
    }
    if (st != MHA_OK) {
        st = matmul_fail_kernel(st, a, b);
        mha_release(out);
    }
done:
    mha_release(&a_copy);
    mha_release(&b_copy);
    return st;
}

/* ---- whole-tensor equality ---- */

mha_status mha_equal(bool *equal, const mha_tensor *a, const mha_tensor *b) {
    if (a == NULL || a->storage == NULL || b == NULL || b->storage == NULL)
        return mha_fail(MHA_E_ARG, "equal: %s is empty (released or never filled)",
                        a == NULL || a->storage == NULL ? "a" : "b");
    *equal = false;
    if (a->dtype != b->dtype || !mha_same_shape(a, b)) return MHA_OK; /* no broadcasting, as torch.equal */
    mha_tensor ca = MHA_TENSOR_EMPTY, cb = MHA_TENSOR_EMPTY;  /* C-order copies (shares when already so) */
    mha_status st = mha_contiguous_named(&ca, a, "equal");
    if (st == MHA_OK) st = mha_contiguous_named(&cb, b, "equal");
    bool same = st == MHA_OK;
    for (size_t i = 0, n = mha_numel(a); same && i < n; i++) /* float ==: NaN differs from itself, -0 == 0 */
        same = a->dtype == MHA_BOOL ? mha_bool(&ca)[i] == mha_bool(&cb)[i] : mha_f32(&ca)[i] == mha_f32(&cb)[i];
    mha_release(&ca);
    mha_release(&cb);
    if (st == MHA_OK) *equal = same;
    return st;
}
