/* core/tensor/ops_join.c - cat and stack: tensors joined along an existing dim or a new one, each
 * input copied into its slice of the output by the elementwise loop
 * (bool inputs promoted beside float). */
#include <string.h>

#include "tensor/ops_internal.h"

/* A strided copy into a strided output (cat and stack write into slices of their output): a row
 * function of the elementwise loop (core/tensor/ops.c). */
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

/* "1st", "2nd", "3rd", "11th", "22nd": a position in a list of tensors, read alike by C (0-based)
 * and Lua (1-based) users, where "tensor 1" would mean different tensors to each. */
static const char *ordinal(char *buf, size_t n) {
    const char *suffix = "th";
    if (n % 100 < 11 || n % 100 > 13) suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
    snprintf(buf, 32, "%zu%s", n, suffix);
    return buf;
}

/* Checks common to cat and stack; sets the output dtype (float when any input is float). */
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

/* Copy piece into out's slice starting at element offset `at`, stepping by out's strides
 * `stride`. */
static mha_status copy_piece(const char *fname, mha_tensor *out, size_t at, const ptrdiff_t *stride, const mha_tensor *piece) {
    copy_kind kind = out->dtype == MHA_BOOL ? COPY_BOOL : piece->dtype == MHA_BOOL ? COPY_BOOL_TO_FLOAT : COPY_FLOAT;
    size_t elsize = dtype_size(out->dtype);
    operand ops[2] = {{(char *)out->storage->data + at * elsize, elsize, piece->ndim, piece->shape, stride},
                      tensor_operand(piece)};
    return ops_run_loop(fname, piece->ndim, piece->shape, ops, 2, copy_row, &kind);
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
    for (size_t i = 0; i < n; i++) {   /* dims in messages count from the end, as in
                                          broadcasting's */
        const mha_tensor *t = ts[i];
        if (t->ndim != first->ndim)
            return mha_fail(MHA_E_SHAPE, "cat: the %s tensor %s has %zu dims but the 1st %s has %zu",
                            ordinal(nth, i + 1), shape_of(si, t), t->ndim, shape_of(s0, first), first->ndim);
        for (size_t d = 0; d < t->ndim; d++)
            if (d != dim && t->shape[d] != first->shape[d])
                return mha_fail(MHA_E_SHAPE, "cat: the %s tensor %s and the 1st %s differ in dim -%zu (%zu and %zu); "
                                "only the joined dim -%zu may differ", ordinal(nth, i + 1), shape_of(si, t),
                                shape_of(s0, first), t->ndim - d, t->shape[d], first->shape[d], t->ndim - dim);
        if (t->shape[dim] > MHA_MAX_SIZE - shape[dim])   /* (2^62, 0) twice: a dim no tensor may
                                                            have */
            return mha_fail(MHA_E_SHAPE, "cat: joining the %s tensor %s makes dim -%zu longer than 2^63-1 (%zu + %zu), "
                            "the largest size a dim may have", ordinal(nth, i + 1), shape_of(si, t), t->ndim - dim,
                            shape[dim], t->shape[dim]);
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
