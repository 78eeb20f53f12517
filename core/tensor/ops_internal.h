/* core/tensor/ops_internal.h - what the tensor operations (core/ops*.c) share and nobody else
 * needs: argument checks, broadcasting of two shapes, and the strided elementwise loop of
 * core/tensor/ops.c. */
#ifndef MHA_OPS_INTERNAL_H
#define MHA_OPS_INTERNAL_H

#include <stdio.h>

#include "tensor/tensor.h"
#include "tensor/tensor_internal.h"

enum {
    BLOCK = 65536,     /* elements between two polls of mha_interrupted() */
    MAX_OPERANDS = 4   /* an output and up to three inputs (where) */
};

static inline char *shape_of(char *buf, const mha_tensor *t) { return mha_shape_str(buf, MHA_SHAPE_BUF, t); }

/* The output must be empty on entry (so it cannot alias an input); an input must be live. */
static inline mha_status check_out(const char *fname, const mha_tensor *out) {
    if (!out) return mha_fail(MHA_E_ARG, "%s: the output tensor is NULL", fname);
    if (out->storage)
        return mha_fail(MHA_E_ARG, "%s: the output tensor must be empty on entry (it holds a storage)", fname);
    return MHA_OK;
}

static inline mha_status check_in(const char *fname, const char *arg, const mha_tensor *t) {
    if (!t || !t->storage) return mha_fail(MHA_E_ARG, "%s: argument %s is an empty (released) tensor", fname, arg);
    return MHA_OK;
}

/* Re-raise the last failure (from mha_empty, mha_to_dtype...) under fname, so every message names
 * the operation the caller asked for: "empty: shape ... overflows" becomes
 * "add: shape ... overflows". */
static inline mha_status refail(const char *fname, mha_status status) {
    char why[512];
    const char *msg = mha_errmsg(), *rest = msg;
    while ((*rest >= 'a' && *rest <= 'z') || *rest == '_') rest++;
    if (rest > msg && rest[0] == ':' && rest[1] == ' ') msg = rest + 2;
    snprintf(why, sizeof why, "%s", msg);
    return mha_fail(status, "%s: %s", fname, why);
}

static inline mha_status alloc_out(const char *fname, mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape) {
    return mha_empty_named(out, dtype, ndim, shape, fname);
}

/* *use = t, or a float copy of t held in tmp when t is bool. */
static inline mha_status as_float(const char *fname, mha_tensor *tmp, const mha_tensor **use) {
    if ((*use)->dtype != MHA_BOOL) return MHA_OK;
    mha_status st = mha_to_dtype(tmp, *use, MHA_FLOAT32);
    if (st != MHA_OK) return refail(fname, st);
    *use = tmp;
    return MHA_OK;
}

/* Merge shape b into (ndim, shape), both right-aligned as NumPy does: sizes must be equal or one of
 * them 1 (so 1 and 0 give 0). On a conflict return false with the two sizes and the result dim
 * counted from the end (1 = the last), which reads the same to 0-based C and 1-based Lua users. */
bool ops_broadcast_merge(size_t *ndim, size_t *shape, size_t b_ndim, const size_t *b_shape,
                         size_t *bad_dim, size_t *size_a, size_t *size_b);

/* ---- the elementwise loop (core/tensor/ops.c): one output shape over up to MAX_OPERANDS strided
 * operands ---- */

typedef struct operand {
    char *data;               /* first element */
    size_t elsize;            /* bytes per element */
    size_t ndim;              /* right-aligned against the loop's shape; 0 for a single value */
    const size_t *shape;
    const ptrdiff_t *stride;  /* in elements */
} operand;

static inline operand tensor_operand(const mha_tensor *t) {
    size_t elsize = dtype_size(t->dtype);
    return (operand){(char *)t->storage->data + t->offset * elsize, elsize, t->ndim, t->shape, t->stride};
}

/* One value repeated everywhere (stride 0): the scalar of add(x, 2), masked_fill's value. */
static inline operand value_operand(void *value, size_t elsize) { return (operand){value, elsize, 0, NULL, NULL}; }

/* p[k] points at operand k's first element of the row, s[k] is its stride (in elements). */
typedef void row_fn(const void *ctx, char *const *p, const ptrdiff_t *s, ptrdiff_t n);

/* Run row over every element of shape: operand 0 is the output; MHA_E_INTERRUPTED on Ctrl-C. */
mha_status ops_run_loop(const char *fname, size_t ndim, const size_t *shape, const operand *ops,
                        size_t nops, row_fn *row, const void *ctx);

#endif
