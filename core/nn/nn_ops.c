/* core/nn/nn_ops.c - log_softmax, embedding and cross_entropy, and the plain backward functions of softmax,
 * log_softmax, linear, layer_norm, embedding and cross_entropy (formulas in core/nn/nn_ops.h). */
#include "nn/nn_ops.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

#define SHAPE(buf, t) mha_shape_str((buf), sizeof(buf), (t))

static size_t prod(const size_t *shape, size_t from, size_t to) {
    size_t n = 1;
    for (size_t d = from; d < to; d++) n *= shape[d];
    return n;
}

static mha_status check_float(const mha_tensor *t, const char *fname, const char *arg) {
    char s[MHA_SHAPE_BUF];
    if (t == NULL || t->storage == NULL)
        return mha_fail(MHA_E_ARG, "%s: %s is missing (an empty or released tensor)", fname, arg);
    if (t->dtype != MHA_FLOAT32) return mha_fail(MHA_E_DTYPE, "%s: %s %s is bool, expected float32", fname, arg, SHAPE(s, t));
    return MHA_OK;
}

/* ---- log_softmax ---- */

mha_status mha_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    char s[MHA_SHAPE_BUF];
    mha_status st = check_float(x, "log_softmax", "x");
    if (st != MHA_OK) return st;
    if (dim >= (x->ndim ? x->ndim : 1)) return mha_fail(MHA_E_ARG, "log_softmax: dim %zu out of range for x %s", dim, SHAPE(s, x));
    mha_tensor cx = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous(&cx, x)) != MHA_OK) return st;
    if ((st = mha_empty(out, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK || mha_numel(out) == 0) {
        mha_release(&cx);   /* no element: done at once, however many empty rows ((2^62,0) along dim 2) */
        return st;
    }
    /* x as (outer, n, inner): each row of n entries inner apart */
    size_t outer = x->ndim ? prod(x->shape, 0, dim) : 1, n = x->ndim ? x->shape[dim] : 1;
    size_t inner = x->ndim ? prod(x->shape, dim + 1, x->ndim) : 1;
    const float *src = mha_f32(&cx);
    float *dst = mha_f32(out);
    for (size_t o = 0; o < outer; o++) {
        if (mha_interrupted()) {
            mha_release(&cx);
            mha_release(out);
            return mha_fail(MHA_E_INTERRUPTED, "log_softmax: x %s: interrupted", SHAPE(s, x));
        }
        for (size_t i = 0; i < inner; i++) {
            const float *row = src + o * n * inner + i;
            float max = n ? row[0] : 0.0f;
            for (size_t j = 1; j < n; j++)
                if (row[j * inner] > max || isnan(row[j * inner])) max = row[j * inner];
            double sum = 0.0;
            for (size_t j = 0; j < n; j++) sum += exp((double)row[j * inner] - max);
            double lse = (double)max + log(sum); /* all -inf: -inf + log 0 ... the row is NaN, as softmax's */
            for (size_t j = 0; j < n; j++) dst[o * n * inner + i + j * inner] = (float)((double)row[j * inner] - lse);
        }
    }
    mha_release(&cx);
    return MHA_OK;
}

/* dy and y of softmax's and log_softmax's backward: float tensors of one shape, dim one of their dims. */
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

/* ---- linear ---- */

mha_status mha_linear_backward(mha_tensor *dx, mha_tensor *dW, mha_tensor *db, const mha_tensor *dy,
                               const mha_tensor *x, const mha_tensor *W) {
    char sy[MHA_SHAPE_BUF], sx[MHA_SHAPE_BUF], sw[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, "linear_backward", "dy")) != MHA_OK || (st = check_float(x, "linear_backward", "x")) != MHA_OK ||
        (st = check_float(W, "linear_backward", "W")) != MHA_OK)
        return st;
    bool fits = W->ndim == 2 && x->ndim >= 1 && dy->ndim == x->ndim && x->shape[x->ndim - 1] == W->shape[1] &&
                dy->shape[dy->ndim - 1] == W->shape[0];
    for (size_t d = 0; fits && d + 1 < x->ndim; d++) fits = x->shape[d] == dy->shape[d];
    if (!fits)
        return mha_fail(MHA_E_SHAPE, "linear_backward: dy %s, x %s, W %s: expected dy (..., out), x (..., in), W (out, in)",
                        SHAPE(sy, dy), SHAPE(sx, x), SHAPE(sw, W));
    const size_t n_out = W->shape[0], in = W->shape[1], rows = prod(x->shape, 0, x->ndim - 1);
    mha_tensor cy = MHA_TENSOR_EMPTY, cx = MHA_TENSOR_EMPTY, gx = MHA_TENSOR_EMPTY, gW = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous(&cy, dy)) != MHA_OK) goto done;
    const float *g = mha_f32(&cy);
    if (dx) { /* dx (rows,in) = dy (rows,out) · W (out,in) */
        if ((st = mha_empty(&gx, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK) goto done;
        st = mha_sgemm(mha_f32(&gx), in, g, (ptrdiff_t)n_out, 1, mha_f32(W), W->stride[0], W->stride[1], rows, in, n_out, false);
        if (st != MHA_OK) goto done;
    }
    if (dW) { /* dW (out,in) = dyᵀ (out,rows) · x (rows,in) */
        if ((st = mha_contiguous(&cx, x)) != MHA_OK) goto done;
        if ((st = mha_empty(&gW, MHA_FLOAT32, 2, W->shape)) != MHA_OK) goto done;
        if (rows == 0) memset(mha_f32(&gW), 0, n_out * in * sizeof(float));
        else st = mha_sgemm(mha_f32(&gW), in, g, 1, (ptrdiff_t)n_out, mha_f32(&cx), (ptrdiff_t)in, 1, n_out, in, rows, false);
        if (st != MHA_OK) goto done;
    }
    if (db) { /* db (out) = Σ_rows dy, summed in double in row order; dy read row by row, as it lies */
        if ((st = mha_empty(&gb, MHA_FLOAT32, 1, &W->shape[0])) != MHA_OK) goto done;
        double *sums = mha_alloc((n_out ? n_out : 1) * sizeof *sums);
        if (!sums) {
            st = mha_fail(MHA_E_NOMEM, "linear_backward: out of memory for the bias gradient's %zu sums", n_out);
            goto done;
        }
        for (size_t j = 0; j < n_out; j++) sums[j] = 0.0;
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < n_out; j++) sums[j] += g[r * n_out + j];
        float *p = mha_f32(&gb);
        for (size_t j = 0; j < n_out; j++) p[j] = (float)sums[j];
        mha_free(sums, (n_out ? n_out : 1) * sizeof *sums);
    }
    if (dx) *dx = gx, gx = MHA_TENSOR_EMPTY;
    if (dW) *dW = gW, gW = MHA_TENSOR_EMPTY;
    if (db) *db = gb, gb = MHA_TENSOR_EMPTY;
done:
    mha_release(&cy), mha_release(&cx), mha_release(&gx), mha_release(&gW), mha_release(&gb);
    return st;
}

/* ---- layer_norm ---- */

mha_status mha_layer_norm_backward(mha_tensor *dx, mha_tensor *dw, mha_tensor *db, const mha_tensor *dy,
                                   const mha_tensor *x, size_t norm_ndim, const mha_tensor *w, float eps) {
    char sy[MHA_SHAPE_BUF], sx[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, "layer_norm_backward", "dy")) != MHA_OK || (st = check_float(x, "layer_norm_backward", "x")) != MHA_OK)
        return st;
    if (!mha_same_shape(dy, x) || norm_ndim == 0 || norm_ndim > x->ndim)
        return mha_fail(MHA_E_SHAPE, "layer_norm_backward: dy %s and x %s must have one shape, normalised over its last %zu dims",
                        SHAPE(sy, dy), SHAPE(sx, x), norm_ndim);
    const size_t first = x->ndim - norm_ndim, n = prod(x->shape, first, x->ndim), groups = prod(x->shape, 0, first);
    if (w && mha_numel(w) != n)
        return mha_fail(MHA_E_SHAPE, "layer_norm_backward: weight %s does not match x %s's last %zu dims", SHAPE(sy, w),
                        SHAPE(sx, x), norm_ndim);
    mha_tensor cy = MHA_TENSOR_EMPTY, cx = MHA_TENSOR_EMPTY, cw = MHA_TENSOR_EMPTY;
    mha_tensor gx = MHA_TENSOR_EMPTY, gw = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY;
    double *acc_w = NULL, *acc_b = NULL;
    if ((st = mha_contiguous(&cy, dy)) != MHA_OK || (st = mha_contiguous(&cx, x)) != MHA_OK) goto done;
    if (w && (st = mha_contiguous(&cw, w)) != MHA_OK) goto done;
    if ((st = mha_empty(&gx, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK) goto done;
    acc_w = mha_alloc(2 * (n ? n : 1) * sizeof *acc_w);
    if (!acc_w) {
        st = mha_fail(MHA_E_NOMEM, "layer_norm_backward: out of memory");
        goto done;
    }
    acc_b = acc_w + n;
    memset(acc_w, 0, 2 * n * sizeof *acc_w);
    const float *g = mha_f32(&cy), *xs = mha_f32(&cx), *ws = w ? mha_f32(&cw) : NULL;
    float *out = mha_f32(&gx);
    for (size_t r = 0; r < groups; r++) {
        const float *row = xs + r * n, *grow = g + r * n;
        double mean = 0.0, var = 0.0;
        for (size_t i = 0; i < n; i++) mean += row[i];
        mean /= (double)(n ? n : 1);
        for (size_t i = 0; i < n; i++) var += ((double)row[i] - mean) * ((double)row[i] - mean);
        var /= (double)(n ? n : 1);
        double rstd = 1.0 / sqrt(var + (double)eps);
        double mean_g = 0.0, mean_gx = 0.0; /* mean(ĝ), mean(ĝ∘x̂) */
        for (size_t i = 0; i < n; i++) {
            double xhat = ((double)row[i] - mean) * rstd, gh = (double)grow[i] * (ws ? ws[i] : 1.0);
            mean_g += gh;
            mean_gx += gh * xhat;
            acc_w[i] += (double)grow[i] * xhat;
            acc_b[i] += grow[i];
        }
        mean_g /= (double)n;
        mean_gx /= (double)n;
        for (size_t i = 0; i < n; i++) {
            double xhat = ((double)row[i] - mean) * rstd, gh = (double)grow[i] * (ws ? ws[i] : 1.0);
            out[r * n + i] = (float)((gh - mean_g - xhat * mean_gx) * rstd);
        }
    }
    size_t nshape[MHA_MAX_DIMS];
    memcpy(nshape, x->shape + first, norm_ndim * sizeof *nshape);
    if (dw) {
        if ((st = mha_empty(&gw, MHA_FLOAT32, norm_ndim, nshape)) != MHA_OK) goto done;
        for (size_t i = 0; i < n; i++) mha_f32(&gw)[i] = (float)acc_w[i];
    }
    if (db) {
        if ((st = mha_empty(&gb, MHA_FLOAT32, norm_ndim, nshape)) != MHA_OK) goto done;
        for (size_t i = 0; i < n; i++) mha_f32(&gb)[i] = (float)acc_b[i];
    }
    if (dx) *dx = gx, gx = MHA_TENSOR_EMPTY;
    if (dw) *dw = gw, gw = MHA_TENSOR_EMPTY;
    if (db) *db = gb, gb = MHA_TENSOR_EMPTY;
done:
    if (acc_w) mha_free(acc_w, 2 * (n ? n : 1) * sizeof *acc_w);
    mha_release(&cy), mha_release(&cx), mha_release(&cw), mha_release(&gx), mha_release(&gw), mha_release(&gb);
    return st;
}

/* ---- embedding ---- */

/* Checks that every entry of indices is a whole number in [0, count); names fname and arg. */
static mha_status check_indices(const mha_tensor *cidx, size_t count, const char *fname, const char *arg) {
    char s[MHA_SHAPE_BUF];
    const float *p = mha_f32(cidx);
    for (size_t i = 0, n = mha_numel(cidx); i < n; i++)
        if (!(p[i] >= 0.0f && p[i] < (float)count && p[i] == floorf(p[i])))
            return mha_fail(MHA_E_ARG, "%s: %s %s: entry %zu is %g, expected a whole number in [0, %zu)", fname, arg,
                            SHAPE(s, cidx), i, (double)p[i], count);
    return MHA_OK;
}

mha_status mha_embedding(mha_tensor *out, const mha_tensor *indices, const mha_tensor *weight) {
    char sw[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(indices, "embedding", "indices")) != MHA_OK || (st = check_float(weight, "embedding", "weight")) != MHA_OK)
        return st;
    if (weight->ndim != 2) return mha_fail(MHA_E_SHAPE, "embedding: weight %s must be 2-D (num_embeddings, embedding_dim)", SHAPE(sw, weight));
    if (indices->ndim + 1 > MHA_MAX_DIMS)
        return mha_fail(MHA_E_SHAPE, "embedding: indices have %zu dims, at most %d supported", indices->ndim, MHA_MAX_DIMS - 1);
    mha_tensor cidx = MHA_TENSOR_EMPTY, cw = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous(&cidx, indices)) != MHA_OK) return st;
    if ((st = check_indices(&cidx, weight->shape[0], "embedding", "indices")) != MHA_OK ||
        (st = mha_contiguous(&cw, weight)) != MHA_OK) {
        mha_release(&cidx);
        return st;
    }
    size_t shape[MHA_MAX_DIMS], E = weight->shape[1];
    memcpy(shape, indices->shape, indices->ndim * sizeof *shape);
    shape[indices->ndim] = E;
    st = mha_empty(out, MHA_FLOAT32, indices->ndim + 1, shape);
    if (st == MHA_OK) {
        const float *idx = mha_f32(&cidx), *wp = mha_f32(&cw);
        float *dst = mha_f32(out);
        for (size_t p = 0, n = mha_numel(&cidx); p < n; p++) memcpy(dst + p * E, wp + (size_t)idx[p] * E, E * sizeof *dst);
    }
    mha_release(&cidx), mha_release(&cw);
    return st;
}

mha_status mha_embedding_backward(mha_tensor *dW, const mha_tensor *dy, const mha_tensor *indices, size_t num_embeddings) {
    char sy[MHA_SHAPE_BUF], si[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, "embedding_backward", "dy")) != MHA_OK || (st = check_float(indices, "embedding_backward", "indices")) != MHA_OK)
        return st;
    bool fits = dy->ndim == indices->ndim + 1;
    for (size_t d = 0; fits && d < indices->ndim; d++) fits = dy->shape[d] == indices->shape[d];
    if (!fits)
        return mha_fail(MHA_E_SHAPE, "embedding_backward: dy %s must be indices' shape %s plus the embedding dim",
                        SHAPE(sy, dy), SHAPE(si, indices));
    size_t E = dy->shape[dy->ndim - 1], shape[2] = {num_embeddings, E};
    mha_tensor cy = MHA_TENSOR_EMPTY, cidx = MHA_TENSOR_EMPTY, gw = MHA_TENSOR_EMPTY;
    double *acc = NULL;
    size_t acc_count = num_embeddings * E, acc_bytes = (acc_count ? acc_count : 1) * sizeof *acc;
    if ((st = mha_contiguous(&cy, dy)) != MHA_OK || (st = mha_contiguous(&cidx, indices)) != MHA_OK) goto done;
    if ((st = check_indices(&cidx, num_embeddings, "embedding_backward", "indices")) != MHA_OK) goto done;
    if ((st = mha_empty(&gw, MHA_FLOAT32, 2, shape)) != MHA_OK) goto done;
    if (!(acc = mha_alloc(acc_bytes))) {
        st = mha_fail(MHA_E_NOMEM, "embedding_backward: out of memory");
        goto done;
    }
    memset(acc, 0, acc_bytes);
    const float *g = mha_f32(&cy), *idx = mha_f32(&cidx);
    for (size_t p = 0, n = mha_numel(&cidx); p < n; p++) /* positions in order: deterministic sums */
        for (size_t e = 0; e < E; e++) acc[(size_t)idx[p] * E + e] += g[p * E + e];
    for (size_t i = 0; i < num_embeddings * E; i++) mha_f32(&gw)[i] = (float)acc[i];
    *dW = gw, gw = MHA_TENSOR_EMPTY;
done:
    if (acc) mha_free(acc, acc_bytes);
    mha_release(&cy), mha_release(&cidx), mha_release(&gw);
    return st;
}

/* ---- cross_entropy ---- */

static const mha_ce_options ce_defaults = {MHA_REDUCTION_MEAN, false, 0.0f, 0.0f};

static bool ce_ignored(const mha_ce_options *opt, float target) {
    return opt->has_ignore && target == opt->ignore_index;
}

/* logits with the class dim moved last, contiguous: (positions, C); checks targets' shape and values (an
 * ignored target may be any number) and the options. */
static mha_status ce_rows(mha_tensor *rows, mha_tensor *ctargets, const mha_tensor *logits, const mha_tensor *targets,
                          const mha_ce_options *opt, const char *fname) {
    char sl[MHA_SHAPE_BUF], st_[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(logits, fname, "logits")) != MHA_OK || (st = check_float(targets, fname, "targets")) != MHA_OK)
        return st;
    if (!(opt->label_smoothing >= 0.0f && opt->label_smoothing <= 1.0f))
        return mha_fail(MHA_E_ARG, "%s: label_smoothing %g must be from 0 to 1", fname, (double)opt->label_smoothing);
    if (opt->reduction != MHA_REDUCTION_MEAN && opt->reduction != MHA_REDUCTION_SUM && opt->reduction != MHA_REDUCTION_NONE)
        return mha_fail(MHA_E_ARG, "%s: reduction %d is not mean, sum or none", fname, (int)opt->reduction);
    if (logits->ndim == 0) return mha_fail(MHA_E_SHAPE, "%s: logits () is a scalar; expected (C), (N,C) or (N,C,d1,...)", fname);
    size_t cdim = logits->ndim == 1 ? 0 : 1, C = logits->shape[cdim];
    bool fits = targets->ndim + 1 == logits->ndim;
    for (size_t d = 0, e = 0; fits && d < logits->ndim; d++)
        if (d != cdim) fits = targets->shape[e++] == logits->shape[d];
    if (!fits)
        return mha_fail(MHA_E_SHAPE, "%s: targets %s must have logits %s's shape without the class dim %zu (of %zu classes)",
                        fname, SHAPE(st_, targets), SHAPE(sl, logits), cdim + 1, C);
    size_t perm[MHA_MAX_DIMS], k = 0;
    for (size_t d = 0; d < logits->ndim; d++)
        if (d != cdim) perm[k++] = d;
    perm[k] = cdim;
    mha_tensor moved = MHA_TENSOR_EMPTY;
    if ((st = mha_permute(&moved, logits, perm)) != MHA_OK) return st;
    st = mha_contiguous(rows, &moved);
    mha_release(&moved);
    if (st == MHA_OK) st = mha_contiguous(ctargets, targets);
    const float *t = st == MHA_OK ? mha_f32(ctargets) : NULL;
    for (size_t i = 0, n = t ? mha_numel(ctargets) : 0; i < n && st == MHA_OK; i++)
        if (!ce_ignored(opt, t[i]) && !(t[i] >= 0.0f && t[i] < (float)C && t[i] == floorf(t[i])))
            st = mha_fail(MHA_E_ARG, "%s: targets %s: entry %zu is %g, expected a whole number in [0, %zu)", fname,
                          SHAPE(st_, ctargets), i, (double)t[i], C);
    if (st != MHA_OK) mha_release(rows), mha_release(ctargets);
    return st;
}

/* Σ_c exp(x_c - max) of one row of C logits and its max (so exp never overflows): lse = log(sum) + max. */
static double ce_expsum(float *max_out, const float *row, size_t C) {
    float max = row[0];
    for (size_t c = 1; c < C; c++)
        if (row[c] > max || isnan(row[c])) max = row[c];
    double sum = 0.0;
    for (size_t c = 0; c < C; c++) sum += exp((double)row[c] - max);
    *max_out = max;
    return sum;
}

mha_status mha_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets,
                             const mha_ce_options *opt) {
    if (!opt) opt = &ce_defaults;
    mha_tensor rows = MHA_TENSOR_EMPTY, ct = MHA_TENSOR_EMPTY, losses = MHA_TENSOR_EMPTY;
    mha_status st = ce_rows(&rows, &ct, logits, targets, opt, "cross_entropy");
    if (st != MHA_OK) return st;
    size_t C = rows.shape[rows.ndim - 1], P = mha_numel(&ct), counted = 0;
    const float *x = mha_f32(&rows), *t = mha_f32(&ct);
    const double eps = opt->label_smoothing;
    const bool none = opt->reduction == MHA_REDUCTION_NONE;
    if (none && (st = mha_empty(&losses, MHA_FLOAT32, targets->ndim, targets->shape)) != MHA_OK) goto done;
    double total = 0.0;
    for (size_t p = 0; p < P; p++) { /* loss_p = lse - (1-ε)·x_t - ε·mean_c x_c */
        double loss = 0.0;
        if (!ce_ignored(opt, t[p])) {
            const float *row = x + p * C;
            float max;
            double lse = log(ce_expsum(&max, row, C)) + max;
            if (eps == 0.0) {
                loss = lse - row[(size_t)t[p]];
            } else {
                double sum_x = 0.0;
                for (size_t c = 0; c < C; c++) sum_x += row[c];
                loss = (1.0 - eps) * (lse - row[(size_t)t[p]]) + eps * (lse - sum_x / (double)C);
            }
            counted++;
        }
        if (none) mha_f32(&losses)[p] = (float)loss;
        total += loss;
    }
    if (none) *out = losses, losses = MHA_TENSOR_EMPTY;
    else if (opt->reduction == MHA_REDUCTION_SUM) st = mha_full(out, 0, NULL, (float)total);
    else st = mha_full(out, 0, NULL, (float)(total / (double)counted)); /* none counted: 0/0 = NaN, as torch */
done:
    mha_release(&rows), mha_release(&ct), mha_release(&losses);
    return st;
}

mha_status mha_cross_entropy_backward(mha_tensor *dlogits, const mha_tensor *dloss, const mha_tensor *logits,
                                      const mha_tensor *targets, const mha_ce_options *opt) {
    if (!opt) opt = &ce_defaults;
    char sd[MHA_SHAPE_BUF], st_[MHA_SHAPE_BUF];
    mha_tensor rows = MHA_TENSOR_EMPTY, ct = MHA_TENSOR_EMPTY, moved = MHA_TENSOR_EMPTY, cg = MHA_TENSOR_EMPTY;
    mha_status st = ce_rows(&rows, &ct, logits, targets, opt, "cross_entropy_backward");
    if (st != MHA_OK) return st;
    const bool none = opt->reduction == MHA_REDUCTION_NONE;
    mha_tensor grad = MHA_TENSOR_EMPTY;
    if ((st = check_float(dloss, "cross_entropy_backward", "dloss")) != MHA_OK) goto done;
    if (none ? !mha_same_shape(dloss, targets) : dloss->ndim != 0) {
        st = mha_fail(MHA_E_SHAPE, "cross_entropy_backward: dloss %s must be %s (the loss's shape with reduction %s)",
                      SHAPE(sd, dloss), none ? SHAPE(st_, targets) : "()", none ? "'none'" : "'mean' or 'sum'");
        goto done;
    }
    if ((st = mha_contiguous(&cg, dloss)) != MHA_OK) goto done;
    size_t C = rows.shape[rows.ndim - 1], P = mha_numel(&ct), counted = 0;
    const float *x = mha_f32(&rows), *t = mha_f32(&ct), *g = mha_f32(&cg);
    for (size_t p = 0; p < P; p++) counted += !ce_ignored(opt, t[p]);
    /* 'mean' divides by the positions counted (none counted: every position is ignored, each gradient 0) */
    const double scale = opt->reduction == MHA_REDUCTION_MEAN ? (double)counted : 1.0;
    const double eps = opt->label_smoothing, uniform = eps / (double)C;
    if ((st = mha_empty(&grad, MHA_FLOAT32, rows.ndim, rows.shape)) != MHA_OK) goto done;
    float *gp = mha_f32(&grad);
    for (size_t p = 0; p < P; p++) {
        if (ce_ignored(opt, t[p])) {
            for (size_t c = 0; c < C; c++) gp[p * C + c] = 0.0f;
            continue;
        }
        const float *row = x + p * C;
        float max;
        double sum = ce_expsum(&max, row, C), w = g[none ? p : 0];
        for (size_t c = 0; c < C; c++) {
            double soft = exp((double)row[c] - max) / sum;
            double target = (c == (size_t)t[p] ? 1.0 - eps : 0.0) + uniform;
            gp[p * C + c] = (float)(w * (soft - target) / scale);
        }
    }
    /* back from (positions..., C) to the logits' layout */
    size_t cdim = logits->ndim == 1 ? 0 : 1, inverse[MHA_MAX_DIMS];
    for (size_t d = 0, k = 0; d < logits->ndim; d++)
        if (d != cdim) inverse[d] = k++;
    inverse[cdim] = logits->ndim - 1;
    if ((st = mha_permute(&moved, &grad, inverse)) == MHA_OK) st = mha_contiguous(dlogits, &moved);
done:
    mha_release(&rows), mha_release(&ct), mha_release(&moved), mha_release(&grad), mha_release(&cg);
    return st;
}
