/* core/nn/layer_norm.c - layer normalisation over the last dims: the forward, its backward
 * (formulas in nn.h) and its graph node, as llm.c keeps layernorm_forward beside
 * layernorm_backward. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "kernels/kernels.h"
#include "nn/nn_internal.h"

/* Rows split over threads (kernels.h): each row's sums are its own, in one order (kernels.h's
 * mha_layer_norm_rows), so any split gives the same bits. An element costs about what
 * LN_*_FLOPS of a product do (1, 1.9 and 0.5 ns on the AVX-512 Xeon), which mha_kernels_parts
 * weighs against handing a part over; a few parts a thread, claimed by whichever thread is free. */
enum { LN_FORWARD_FLOPS = 100, LN_BACKWARD_FLOPS = 190, LN_COLUMN_FLOPS = 50, LN_PARTS_PER_THREAD = 4 };

typedef struct ln_job {
    size_t n, rows;               /* rows (groups) of n elements */
    const float *x, *w, *b, *dy;  /* x, dy (rows, n); w, b (n) or NULL */
    float *out;                   /* y or dx (rows, n) */
    double *mean, *rstd;          /* each row's (rows): the forward's kept for the graph (or NULL);
                                     the backward's for the column sums */
    bool given;                   /* backward: mean and rstd hold the forward's */
    double *acc_w, *acc_b;        /* backward: Σ_rows dy∘x̂, Σ_rows dy (n) */
    float eps;
} ln_job;

/* fn over the rows in parts, or over the columns for the column pass (then part splits n). */
static void ln_run(mha_part_fn fn, ln_job *job, size_t units, double flops) {
    size_t threads = mha_kernels_parts(units, flops);
    size_t parts = threads * LN_PARTS_PER_THREAD < units ? threads * LN_PARTS_PER_THREAD : units;
    mha_run_parts(fn, job, threads <= 1 ? 1 : parts);   /* no part fails */
}

static void ln_split(mha_part_fn fn, ln_job *job, double flops_per_element) {
    ln_run(fn, job, job->rows, (double)job->rows * (double)job->n * flops_per_element);
}

/* The part's share [*from, *to) of `count` in nparts even runs. */
static void part_range(size_t *from, size_t *to, size_t count, size_t part, size_t nparts) {
    *from = count * part / nparts;
    *to = count * (part + 1) / nparts;
}

/* ---- forward ---- */

static mha_status forward_part(void *ctx, size_t part, size_t nparts) {
    const ln_job *job = ctx;
    size_t from, to;
    part_range(&from, &to, job->rows, part, nparts);
    mha_layer_norm_rows(job->out + from * job->n, job->mean ? job->mean + from : NULL,
                        job->rstd ? job->rstd + from : NULL, job->x + from * job->n, job->w, job->b, to - from, job->n,
                        job->eps);
    return MHA_OK;
}

/* mha_layer_norm, and each row's mean and rstd into stats (mean[rows] then rstd[rows]) unless
 * NULL: what the graph node keeps for the backward. */
static mha_status layer_norm_forward(mha_tensor *out, double *stats, const mha_tensor *x, size_t norm_ndim,
                                     const mha_tensor *weight, const mha_tensor *bias, float eps) {
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

    const size_t rows = prod(x->shape, 0, first);
    ln_job job = {.n = prod(x->shape, first, x->ndim), .rows = rows, .x = mha_f32(&cx),
                  .w = weight ? mha_f32(&cw) : NULL, .b = bias ? mha_f32(&cb) : NULL, .out = mha_f32(out),
                  .mean = stats, .rstd = stats ? stats + rows : NULL, .eps = eps};
    ln_split(forward_part, &job, LN_FORWARD_FLOPS);
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

mha_status mha_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim, const mha_tensor *weight,
                          const mha_tensor *bias, float eps) {
    return layer_norm_forward(out, NULL, x, norm_ndim, weight, bias, eps);
}

/* ---- backward ---- */

/* Pass 1, by rows: dx, and each row's mean and rstd kept for pass 2 (formulas in kernels.h). */
static mha_status backward_part(void *ctx, size_t part, size_t nparts) {
    const ln_job *job = ctx;
    size_t from, to;
    part_range(&from, &to, job->rows, part, nparts);
    const size_t at = from * job->n;
    mha_layer_norm_rows_backward(job->out + at, job->mean + from, job->rstd + from, job->given, job->dy + at,
                                 job->x + at, job->w, to - from, job->n, job->eps);
    return MHA_OK;
}

/* Pass 2, by columns: dw = Σ_rows dy∘x̂ and db = Σ_rows dy, each column a plain loop over the rows
 * in order (so any split of the columns gives the same bits), in runs of COLUMN_RUN columns. */
enum { COLUMN_RUN = 16 };

static mha_status column_part(void *ctx, size_t part, size_t nparts) {
    const ln_job *job = ctx;
    const size_t n = job->n, runs = (n + COLUMN_RUN - 1) / COLUMN_RUN;
    size_t from, to;
    part_range(&from, &to, runs, part, nparts);
    from *= COLUMN_RUN, to = to * COLUMN_RUN < n ? to * COLUMN_RUN : n;
    mha_layer_norm_columns(job->acc_w + from, job->acc_b + from, job->dy + from, job->x + from, n, job->mean,
                           job->rstd, job->rows, to - from);
    return MHA_OK;
}

/* mha_layer_norm_backward with the forward's mean and rstd (stats, as layer_norm_forward wrote
 * them), or NULL: computed again. */
static mha_status layer_norm_backward(mha_tensor *dx, mha_tensor *dw, mha_tensor *db, const mha_tensor *dy,
                                      const mha_tensor *x, size_t norm_ndim, const mha_tensor *w, float eps,
                                      const double *stats) {
    char sy[MHA_SHAPE_BUF], sx[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, "layer_norm_backward", "dy")) != MHA_OK || (st = check_float(x, "layer_norm_backward", "x")) != MHA_OK)
        return st;
    if (!mha_same_shape(dy, x) || norm_ndim == 0 || norm_ndim > x->ndim)
        return mha_fail(MHA_E_SHAPE, "layer_norm_backward: dy %s and x %s must have one shape, normalised over its last %zu dims",
                        SHAPE(sy, dy), SHAPE(sx, x), norm_ndim);
    const size_t first = x->ndim - norm_ndim, n = prod(x->shape, first, x->ndim), groups = prod(x->shape, 0, first);
    if (w && (st = check_float(w, "layer_norm_backward", "weight")) != MHA_OK) return st;
    if (w && mha_numel(w) != n)
        return mha_fail(MHA_E_SHAPE, "layer_norm_backward: weight %s does not match x %s's last %zu dims", SHAPE(sy, w),
                        SHAPE(sx, x), norm_ndim);
    mha_tensor cy = MHA_TENSOR_EMPTY, cx = MHA_TENSOR_EMPTY, cw = MHA_TENSOR_EMPTY;
    mha_tensor gx = MHA_TENSOR_EMPTY, gw = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY;
    double *acc_w = NULL, *acc_b = NULL;
    if ((st = mha_contiguous(&cy, dy)) != MHA_OK || (st = mha_contiguous(&cx, x)) != MHA_OK) goto done;
    if (w && (st = mha_contiguous(&cw, w)) != MHA_OK) goto done;
    if ((st = mha_empty(&gx, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK) goto done;
    acc_w = mha_alloc((2 * (n ? n : 1) + 2 * groups) * sizeof *acc_w);
    if (!acc_w) {
        st = mha_fail(MHA_E_NOMEM, "layer_norm_backward: out of memory");
        goto done;
    }
    acc_b = acc_w + n;
    ln_job job = {.n = n, .rows = groups, .x = mha_f32(&cx), .w = w ? mha_f32(&cw) : NULL, .dy = mha_f32(&cy),
                  .out = mha_f32(&gx), .mean = acc_b + n, .rstd = acc_b + n + groups, .acc_w = acc_w,
                  .acc_b = acc_b, .given = stats != NULL, .eps = eps};
    if (stats) memcpy(job.mean, stats, 2 * groups * sizeof *stats);   /* mean, then rstd */
    ln_split(backward_part, &job, LN_BACKWARD_FLOPS);
    ln_run(column_part, &job, (n + COLUMN_RUN - 1) / COLUMN_RUN, (double)groups * (double)n * LN_COLUMN_FLOPS);
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
    if (acc_w) mha_free(acc_w, (2 * (n ? n : 1) + 2 * groups) * sizeof *acc_w);
    mha_release(&cy), mha_release(&cx), mha_release(&cw), mha_release(&gx), mha_release(&gw), mha_release(&gb);
    return st;
}

mha_status mha_layer_norm_backward(mha_tensor *dx, mha_tensor *dw, mha_tensor *db, const mha_tensor *dy,
                                   const mha_tensor *x, size_t norm_ndim, const mha_tensor *w, float eps) {
    return layer_norm_backward(dx, dw, db, dy, x, norm_ndim, w, eps, NULL);
}

/* ---- the graph node: mha_ag_layer_norm records the forward and each row's mean and rstd; its
 * backward runs the one above with them (two passes over x fewer) ---- */

typedef struct layer_norm_node {
    mha_node base;
    size_t norm_ndim;
    float eps;
    double stats[];   /* each row's mean, then each row's rstd */
} layer_norm_node;

static mha_status layer_norm_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const layer_norm_node *node = (const layer_norm_node *)n;
    const mha_tensor *w = n->n_saved > 1 && n->saved[1].storage ? &n->saved[1] : NULL;
    return layer_norm_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                               n->inputs[2] ? &grads[2] : NULL, g, &n->saved[0], node->norm_ndim, w, node->eps,
                               node->stats);
}

mha_status mha_ag_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim, const mha_tensor *weight,
                             const mha_tensor *bias, float eps) {
    const mha_tensor *in[3] = {x, weight, bias};
    if (!mha_ag_wants(in, 3)) return mha_layer_norm(out, x, norm_ndim, weight, bias, eps);
    const size_t rows = norm_ndim <= x->ndim ? prod(x->shape, 0, x->ndim - norm_ndim) : 0;
    const size_t stats_bytes = 2 * rows * sizeof(double);
    double *stats = mha_alloc(stats_bytes ? stats_bytes : 1);
    if (!stats) return mha_fail(MHA_E_NOMEM, "layer_norm: out of memory");
    memset(stats, 0, stats_bytes);   /* rows of no element keep 0s */
    mha_status st = layer_norm_forward(out, stats, x, norm_ndim, weight, bias, eps);
    mha_node *n;
    if (st == MHA_OK && (st = mha_ag_record(&n, sizeof(layer_norm_node) + stats_bytes, out, "layer_norm",
                                            layer_norm_node_backward, in, 3)) == MHA_OK) {
        layer_norm_node *node = (layer_norm_node *)n;
        node->norm_ndim = norm_ndim;
        node->eps = eps;
        memcpy(node->stats, stats, stats_bytes);
        mha_ag_save(n, x);
        if (weight) mha_ag_save(n, weight);
    }
    mha_free(stats, stats_bytes ? stats_bytes : 1);
    return st;
}
