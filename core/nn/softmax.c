/* core/nn/softmax.c - softmax and log_softmax along a dim: the forwards, their backwards
 * (formulas in nn.h) and their graph node, as llm.c keeps an op's forward beside its backward. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "kernels/kernels.h"
#include "nn/nn_internal.h"

/* ---- forward ---- */

/* y = softmax(x) of n entries read and written with stride: y_j = exp(x_j - max x) / sum_k
 * exp(x_k - max x). In place is allowed. A row of -inf gives -inf - -inf = NaN everywhere: the
 * documented policy, no special case. */
static void softmax_strided(float *y, const float *x, size_t n, size_t stride) {
    float max = n ? x[0] : 0.0f;
    for (size_t j = 1; j < n; j++)
        if (x[j * stride] > max || isnan(x[j * stride])) max = x[j * stride];
    double sum = 0.0;
    for (size_t j = 0; j < n; j++) {
        float e = expf(x[j * stride] - max);
        y[j * stride] = e;
        sum += e;
    }
    float total = (float)sum;
    for (size_t j = 0; j < n; j++) y[j * stride] /= total;
}

mha_status mha_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    char s[MHA_SHAPE_BUF];
    mha_status st = check_float(x, "softmax", "x");
    if (st != MHA_OK) return st;
    if (dim >= (x->ndim ? x->ndim : 1))
        return mha_fail(MHA_E_ARG, "softmax: dim %zu out of range for x %s", dim, SHAPE(s, x));
    mha_tensor cx = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous_named(&cx, x, "softmax")) != MHA_OK) return st;
    if ((st = mha_empty_named(out, MHA_FLOAT32, x->ndim, x->shape, "softmax")) != MHA_OK || mha_numel(out) == 0) {
        mha_release(&cx);   /* no element: done at once, however many empty rows */
        return st;
    }
    /* x viewed as (outer, n, inner): each softmax runs over n entries inner apart */
    size_t outer = prod(x->shape, 0, dim), n = x->ndim ? x->shape[dim] : 1;
    size_t inner = x->ndim ? prod(x->shape, dim + 1, x->ndim) : 1;
    const float *src = mha_f32(&cx);
    float *dst = mha_f32(out);
    for (size_t o = 0; o < outer; o++) {
        if (mha_interrupted()) {
            mha_release(&cx);
            mha_release(out);
            return mha_fail(MHA_E_INTERRUPTED, "softmax: x %s: interrupted", SHAPE(s, x));
        }
        if (inner == 1) {   /* the usual case, softmax along the last dim: the vectorised rows
                               kernel */
            memcpy(dst + o * n, src + o * n, n * sizeof *dst);
            mha_softmax_rows(dst + o * n, n, 1, n);
            continue;
        }
        for (size_t i = 0; i < inner; i++)
            softmax_strided(dst + o * n * inner + i, src + o * n * inner + i, n, inner);
    }
    mha_release(&cx);
    return MHA_OK;
}

mha_status mha_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    char s[MHA_SHAPE_BUF];
    mha_status st = check_float(x, "log_softmax", "x");
    if (st != MHA_OK) return st;
    if (dim >= (x->ndim ? x->ndim : 1)) return mha_fail(MHA_E_ARG, "log_softmax: dim %zu out of range for x %s", dim, SHAPE(s, x));
    mha_tensor cx = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous(&cx, x)) != MHA_OK) return st;
    if ((st = mha_empty(out, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK || mha_numel(out) == 0) {
        mha_release(&cx);   /* no element: done at once, however many empty rows ((2^62,0) along dim
                               2) */
        return st;
    }
    /* x as (outer, n, inner): each row of n entries inner apart */
    size_t outer = x->ndim ? prod(x->shape, 0, dim) : 1, n = x->ndim ? x->shape[dim] : 1;
    size_t inner = x->ndim ? prod(x->shape, dim + 1, x->ndim) : 1;
    const float *src = mha_f32(&cx);
    float *dst = mha_f32(out);
    /* a row whose entries lie inner apart is gathered first: each row summed the same way */
    float *gathered = inner > 1 ? mha_alloc(n * sizeof *gathered) : NULL;
    if (inner > 1 && !gathered) {
        mha_release(&cx), mha_release(out);
        return mha_fail(MHA_E_NOMEM, "log_softmax: x %s: out of memory for a row of %zu", SHAPE(s, x), n);
    }
    for (size_t o = 0; o < outer; o++) {
        if (mha_interrupted()) {
            mha_free(gathered, n * sizeof *gathered);
            mha_release(&cx), mha_release(out);
            return mha_fail(MHA_E_INTERRUPTED, "log_softmax: x %s: interrupted", SHAPE(s, x));
        }
        for (size_t i = 0; i < inner; i++) {
            const float *row = src + o * n * inner + i;
            for (size_t j = 0; gathered && j < n; j++) gathered[j] = row[j * inner];
            float max;
            const double sum = logits_exp_sum(&max, gathered ? gathered : row, n);
            double lse = (double)max + log(sum); /* all -inf: -inf + log 0 ... the row is NaN, as
                                                    softmax's */
            for (size_t j = 0; j < n; j++) dst[o * n * inner + i + j * inner] = (float)((double)row[j * inner] - lse);
        }
    }
    mha_free(gathered, n * sizeof *gathered);
    mha_release(&cx);
    return MHA_OK;
}

/* ---- backward ---- */

/* dy and y of softmax's and log_softmax's backward: float tensors of one shape, dim one of their
 * dims. */
static mha_status check_row_backward(const char *fname, const mha_tensor *dy, const mha_tensor *y, size_t dim) {
    char a[MHA_SHAPE_BUF], b[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, fname, "dy")) != MHA_OK || (st = check_float(y, fname, "y")) != MHA_OK) return st;
    if (!mha_same_shape(dy, y))
        return mha_fail(MHA_E_SHAPE, "%s: dy %s and y %s differ in shape", fname, SHAPE(a, dy), SHAPE(b, y));
    if (dim >= (y->ndim ? y->ndim : 1))
        return mha_fail(MHA_E_ARG, "%s: dim %zu out of range for y %s", fname, dim, SHAPE(a, y));
    return MHA_OK;
}

mha_status mha_softmax_backward(mha_tensor *dx, const mha_tensor *dy, const mha_tensor *y, size_t dim) {
    mha_status st = check_row_backward("softmax_backward", dy, y, dim);
    if (st != MHA_OK) return st;
    mha_tensor prod_ = MHA_TENSOR_EMPTY, sum = MHA_TENSOR_EMPTY, diff = MHA_TENSOR_EMPTY;
    st = mha_binary(&prod_, MHA_MUL, dy, y);
    if (st == MHA_OK) st = mha_reduce(&sum, MHA_SUM, &prod_, dim, true);
    if (st == MHA_OK) st = mha_binary(&diff, MHA_SUB, dy, &sum);
    if (st == MHA_OK) st = mha_binary(dx, MHA_MUL, y, &diff);
    mha_release(&prod_), mha_release(&sum), mha_release(&diff);
    return st;
}

mha_status mha_log_softmax_backward(mha_tensor *dx, const mha_tensor *dy, const mha_tensor *y, size_t dim) {
    mha_status st = check_row_backward("log_softmax_backward", dy, y, dim);
    if (st != MHA_OK) return st;
    mha_tensor p = MHA_TENSOR_EMPTY, sum = MHA_TENSOR_EMPTY, t = MHA_TENSOR_EMPTY;
    st = mha_unary(&p, MHA_EXP, y);
    if (st == MHA_OK) st = mha_reduce(&sum, MHA_SUM, dy, dim, true);
    if (st == MHA_OK) st = mha_binary(&t, MHA_MUL, &p, &sum);
    if (st == MHA_OK) st = mha_binary(dx, MHA_SUB, dy, &t);
    mha_release(&p), mha_release(&sum), mha_release(&t);
    return st;
}

/* ---- the graph node: mha_ag_softmax and mha_ag_log_softmax; its backward runs the ones above
 * ---- */

typedef struct softmax_node {
    mha_node base;
    size_t dim;
    bool is_log;               /* log_softmax */
} softmax_node;

static mha_status softmax_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const softmax_node *node = (const softmax_node *)n;
    return node->is_log ? mha_log_softmax_backward(&grads[0], g, &n->saved[0], node->dim)
                        : mha_softmax_backward(&grads[0], g, &n->saved[0], node->dim);
}

static mha_status record_softmax(mha_tensor *out, const mha_tensor *x, size_t dim, bool is_log) {
    const mha_tensor *in[1] = {x};
    if (!mha_ag_wants(in, 1)) return MHA_OK;
    mha_node *n;
    mha_status st = mha_ag_record(&n, sizeof(softmax_node), out, is_log ? "log_softmax" : "softmax",
                                  softmax_node_backward, in, 1);
    if (st != MHA_OK) return st;
    ((softmax_node *)n)->dim = dim;
    ((softmax_node *)n)->is_log = is_log;
    mha_ag_save(n, out);
    return MHA_OK;
}

mha_status mha_ag_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    mha_status st = mha_softmax(out, x, dim);
    return st == MHA_OK ? record_softmax(out, x, dim, false) : st;
}

mha_status mha_ag_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    mha_status st = mha_log_softmax(out, x, dim);
    return st == MHA_OK ? record_softmax(out, x, dim, true) : st;
}
