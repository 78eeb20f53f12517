/* core/nn/functional.c - the functional pieces of attention (torch.nn.functional's): softmax, linear,
 * layer norm, the sinusoidal positional encoding and the causal mask, each on whole tensors. */
#include "nn/functional.h"

#include <math.h>
#include <string.h>

#include "attention/attention_internal.h"
#include "kernels/kernels.h"

/* y = softmax(x) of n entries read and written with stride: y_j = exp(x_j - max x) / sum_k exp(x_k - max x).
 * In place is allowed. A row of -inf gives -inf - -inf = NaN everywhere: the documented policy, no special case. */
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

/* ---------------------------------------------------------------------------------------------
 * softmax, linear, layer_norm, positional_encoding, causal_mask
 * ------------------------------------------------------------------------------------------- */

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
        if (inner == 1) {   /* the usual case, softmax along the last dim: the vectorised rows kernel */
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

mha_status mha_linear(mha_tensor *out, const mha_tensor *x, const mha_tensor *W, const mha_tensor *b) {
    char sx[MHA_SHAPE_BUF], sw[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(x, "linear", "x")) != MHA_OK || (st = check_float(W, "linear", "W")) != MHA_OK) return st;
    if (b != NULL && (st = check_float(b, "linear", "b")) != MHA_OK) return st;
    if (W->ndim != 2)
        return mha_fail(MHA_E_SHAPE, "linear: W %s must be 2-D (out, in)", SHAPE(sw, W));
    if (x->ndim == 0)
        return mha_fail(MHA_E_SHAPE, "linear: x () is a scalar; expected (..., %zu)", W->shape[1]);
    size_t in = W->shape[1], n_out = W->shape[0];
    if (x->shape[x->ndim - 1] != in)
        return mha_fail(MHA_E_SHAPE, "linear: x %s and W %s: x's last size %zu is not W's in size %zu",
                        SHAPE(sx, x), SHAPE(sw, W), x->shape[x->ndim - 1], in);
    if (b != NULL && (b->ndim != 1 || b->shape[0] != n_out))
        return mha_fail(MHA_E_SHAPE, "linear: b %s does not match W %s: expected (%zu)", SHAPE(sb, b), SHAPE(sw, W),
                        n_out);

    mha_tensor cx = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous_named(&cx, x, "linear")) != MHA_OK) return st;
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, x->shape, x->ndim * sizeof *shape);
    shape[x->ndim - 1] = n_out;
    if ((st = mha_empty_named(out, MHA_FLOAT32, x->ndim, shape, "linear")) != MHA_OK) {
        mha_release(&cx);
        return st;
    }
    size_t rows = prod(x->shape, 0, x->ndim - 1);
    float *y = mha_f32(out);
    if (b != NULL) { /* y starts as b in every row, then accumulates x·Wᵀ: torch's addmm(b, x, Wᵀ) */
        const float *bias = mha_f32(b);
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < n_out; j++) y[r * n_out + j] = bias[(ptrdiff_t)j * b->stride[0]];
    }
    /* Wᵀ (in, out) is W read with its strides swapped: element (p, j) = W[j, p] */
    st = mha_sgemm(y, n_out, mha_f32(&cx), (ptrdiff_t)in, 1, mha_f32(W), W->stride[1], W->stride[0], rows, n_out, in,
                   b != NULL);
    st = nomem_under(st, "linear");
    mha_release(&cx);
    if (st != MHA_OK) mha_release(out);
    return st;
}

mha_status mha_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim, const mha_tensor *weight,
                          const mha_tensor *bias, float eps) {
    char sx[MHA_SHAPE_BUF], sp[MHA_SHAPE_BUF];
    mha_status st = check_float(x, "layer_norm", "x");
    if (st != MHA_OK) return st;
    if (norm_ndim == 0 || norm_ndim > x->ndim)
        return mha_fail(MHA_E_ARG, "layer_norm: norm_ndim %zu out of range for x %s (1 to %zu)", norm_ndim,
                        SHAPE(sx, x), x->ndim);
    if (!(eps >= 0.0f) || isinf(eps))
        return mha_fail(MHA_E_ARG, "layer_norm: eps %g must be a finite number >= 0", (double)eps);
    const size_t first = x->ndim - norm_ndim;
    const mha_tensor *params[2] = {weight, bias};
    const char *names[2] = {"weight", "bias"};
    mha_tensor normalized = {.ndim = norm_ndim};
    memcpy(normalized.shape, x->shape + first, norm_ndim * sizeof(size_t));
    for (int p = 0; p < 2; p++) {
        if (params[p] == NULL) continue;
        if ((st = check_float(params[p], "layer_norm", names[p])) != MHA_OK) return st;
        if (!mha_same_shape(params[p], &normalized)) {
            char sn[MHA_SHAPE_BUF];
            return mha_fail(MHA_E_SHAPE, "layer_norm: %s %s does not match the normalized shape %s of x %s",
                            names[p], SHAPE(sp, params[p]), SHAPE(sn, &normalized), SHAPE(sx, x));
        }
    }
    mha_tensor cx = MHA_TENSOR_EMPTY, cw = MHA_TENSOR_EMPTY, cb = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous_named(&cx, x, "layer_norm")) != MHA_OK) goto fail;
    if (weight && (st = mha_contiguous_named(&cw, weight, "layer_norm")) != MHA_OK) goto fail;
    if (bias && (st = mha_contiguous_named(&cb, bias, "layer_norm")) != MHA_OK) goto fail;
    if ((st = mha_empty_named(out, MHA_FLOAT32, x->ndim, x->shape, "layer_norm")) != MHA_OK) goto fail;
    if (mha_numel(out) == 0) goto fail;   /* st is MHA_OK: no element, done at once */

    size_t n = prod(x->shape, first, x->ndim), groups = prod(x->shape, 0, first);
    const float *src = mha_f32(&cx), *w = weight ? mha_f32(&cw) : NULL, *b = bias ? mha_f32(&cb) : NULL;
    float *dst = mha_f32(out);
    for (size_t g = 0; g < groups; g++) {
        const float *row = src + g * n;
        double mean = 0.0, var = 0.0;   /* pass 1: mean; pass 2: biased variance, both in double */
        for (size_t i = 0; i < n; i++) mean += row[i];
        mean /= (double)(n ? n : 1);
        for (size_t i = 0; i < n; i++) var += ((double)row[i] - mean) * ((double)row[i] - mean);
        var /= (double)(n ? n : 1);
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (size_t i = 0; i < n; i++) { /* pass 3: normalize, scale, shift */
            double y = ((double)row[i] - mean) * rstd;
            if (w) y *= w[i];
            if (b) y += b[i];
            dst[g * n + i] = (float)y;
        }
    }
    mha_release(&cx);
    mha_release(&cw);
    mha_release(&cb);
    return MHA_OK;
fail:
    mha_release(&cx);
    mha_release(&cw);
    mha_release(&cb);
    return st;
}

mha_status mha_positional_encoding(mha_tensor *out, size_t L, size_t E) {
    size_t shape[2] = {L, E};
    mha_status st = mha_empty_named(out, MHA_FLOAT32, 2, shape, "positional_encoding");
    if (st != MHA_OK || L == 0 || E == 0) return st;   /* no element: no row to walk */
    float *pe = mha_f32(out);
    for (size_t p = 0; p < L; p++) {
        for (size_t j = 0; j < E; j++) {
            size_t two_i = j - j % 2;   /* columns 2i and 2i+1 share one frequency */
            double angle = (double)p / pow(10000.0, (double)two_i / (double)E);
            pe[p * E + j] = (float)(j % 2 == 0 ? sin(angle) : cos(angle));
        }
    }
    return MHA_OK;
}

mha_status mha_causal_mask(mha_tensor *out, size_t L, size_t S) {
    size_t shape[2] = {L, S};
    mha_status st = mha_empty_named(out, MHA_BOOL, 2, shape, "causal_mask");
    if (st != MHA_OK || L == 0 || S == 0) return st;   /* no element: no row to walk */
    bool *m = mha_bool(out);
    for (size_t i = 0; i < L; i++)
        for (size_t j = 0; j < S; j++) m[i * S + j] = j > i;
    return MHA_OK;
}
