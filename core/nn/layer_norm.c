/* core/nn/layer_norm.c - layer normalisation over the last dims: the forward, its backward
 * (formulas in nn.h) and its graph node, as llm.c keeps layernorm_forward beside
 * layernorm_backward. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "nn/nn_internal.h"

/* ---- forward ---- */

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

/* ---- backward ---- */

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

/* ---- the graph node: mha_ag_layer_norm records the forward; its backward runs the one above
 * ---- */

typedef struct layer_norm_node {
    mha_node base;
    size_t norm_ndim;
    float eps;
} layer_norm_node;

static mha_status layer_norm_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const layer_norm_node *node = (const layer_norm_node *)n;
    const mha_tensor *w = n->n_saved > 1 && n->saved[1].storage ? &n->saved[1] : NULL;
    return mha_layer_norm_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                                   n->inputs[2] ? &grads[2] : NULL, g, &n->saved[0], node->norm_ndim, w, node->eps);
}

mha_status mha_ag_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim, const mha_tensor *weight,
                             const mha_tensor *bias, float eps) {
    const mha_tensor *in[3] = {x, weight, bias};
    mha_status st = mha_layer_norm(out, x, norm_ndim, weight, bias, eps);
    if (st != MHA_OK || !mha_ag_wants(in, 3)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(layer_norm_node), out, "layer_norm", layer_norm_node_backward, in, 3)) != MHA_OK)
        return st;
    ((layer_norm_node *)n)->norm_ndim = norm_ndim;
    ((layer_norm_node *)n)->eps = eps;
    mha_ag_save(n, x);
    if (weight) mha_ag_save(n, weight);
    return MHA_OK;
}
