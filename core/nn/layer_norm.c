/* core/nn/layer_norm.c - layer normalisation over the last dims: the forward, its backward
 * (formulas in nn.h) and its graph node, as llm.c keeps layernorm_forward beside
 * layernorm_backward. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "kernels/kernels.h"
#include "nn/nn_internal.h"

/* Rows split over threads (kernels.h): each row's sums are its own, in one order, so any split
 * gives the same bits. An element costs about what LN_*_FLOPS of a product do (2, 3.5 and 0.8 ns
 * on the AVX-512 Xeon), which mha_kernels_parts weighs against handing a part over; a few parts a
 * thread, claimed by whichever thread is free. */
enum { LN_FORWARD_FLOPS = 200, LN_BACKWARD_FLOPS = 350, LN_COLUMN_FLOPS = 80, LN_PARTS_PER_THREAD = 4 };

typedef struct ln_job {
    size_t n, rows;               /* rows (groups) of n elements */
    const float *x, *w, *b, *dy;  /* x, dy (rows, n); w, b (n) or NULL */
    float *out;                   /* y or dx (rows, n) */
    double *mean, *rstd;          /* backward: each row's, for the column sums (rows) */
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

/* The rows r0 .. r0+LN_ROWS-1 of x (rows, n), those past `to` replaced by row to-1 (computed, never
 * stored). LN_ROWS rows go through their sums together: each row's sum is a chain of n dependent
 * additions in double, in the order of a plain loop (so are its bits), and four chains keep the
 * adder busy where one waits on its own latency. */
enum { LN_ROWS = 4 };

/* Four doubles (two SSE2 or NEON registers, the baseline every build has) and four floats (one):
 * the per-element passes run four elements a vector, each the same operations in the same order
 * as one at a time, so the same bits; four floats convert to doubles and back two at a time
 * (cvtps2pd, cvtpd2ps), where a pair of floats converts one element at a time. */
enum { LANES = 4 };
/* the helpers below are always inlined, so their vector returns never cross a call (GCC's note on
 * the ABI of such returns does not apply) */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double ln_vd __attribute__((vector_size(LANES * sizeof(double))));
typedef float ln_vf __attribute__((vector_size(LANES * sizeof(float))));

static inline __attribute__((always_inline)) ln_vd load_vd(const float *p) {
    ln_vf v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, ln_vd);
}

static inline __attribute__((always_inline)) void store_vf(float *p, ln_vd v) {
    ln_vf f = __builtin_convertvector(v, ln_vf);
    memcpy(p, &f, sizeof f);
}

static void rows_at(const float *rows[LN_ROWS], const float *base, size_t n, size_t r0, size_t to) {
    for (size_t k = 0; k < LN_ROWS; k++) rows[k] = base + (r0 + k < to ? r0 + k : to - 1) * n;
}

/* mean and rstd = 1/sqrt(biased variance + eps) of LN_ROWS rows of n, in double. */
static void rows_stats(double mean_out[LN_ROWS], double rstd[LN_ROWS], const float *row[LN_ROWS], size_t n,
                       float eps) {
    double mean[LN_ROWS], var[LN_ROWS];   /* locals, unrolled: the sums stay in registers */
#pragma GCC unroll 4
    for (size_t k = 0; k < LN_ROWS; k++) mean[k] = 0.0, var[k] = 0.0;
    for (size_t i = 0; i < n; i++)   /* pass 1: mean */
#pragma GCC unroll 4
        for (size_t k = 0; k < LN_ROWS; k++) mean[k] += row[k][i];
#pragma GCC unroll 4
    for (size_t k = 0; k < LN_ROWS; k++) mean[k] /= (double)(n ? n : 1);
    for (size_t i = 0; i < n; i++)   /* pass 2: biased variance */
#pragma GCC unroll 4
        for (size_t k = 0; k < LN_ROWS; k++) var[k] += ((double)row[k][i] - mean[k]) * ((double)row[k][i] - mean[k]);
#pragma GCC unroll 4
    for (size_t k = 0; k < LN_ROWS; k++) {
        var[k] /= (double)(n ? n : 1);
        rstd[k] = 1.0 / sqrt(var[k] + (double)eps);
        mean_out[k] = mean[k];
    }
}

static mha_status forward_part(void *ctx, size_t part, size_t nparts) {
    const ln_job *job = ctx;
    const size_t n = job->n;
    const float *w = job->w, *b = job->b;
    size_t from, to;
    part_range(&from, &to, job->rows, part, nparts);
    for (size_t r0 = from; r0 < to; r0 += LN_ROWS) {
        const float *row[LN_ROWS];
        double mean[LN_ROWS], rstd[LN_ROWS];
        rows_at(row, job->x, n, r0, to);
        rows_stats(mean, rstd, row, n, job->eps);
        for (size_t k = 0; k < LN_ROWS && r0 + k < to; k++) {
            float *dst = job->out + (r0 + k) * n;
            size_t i = 0;
            for (; i + LANES <= n; i += LANES) { /* pass 3: normalize, scale, shift */
                ln_vd y = (load_vd(row[k] + i) - mean[k]) * rstd[k];
                if (w) y *= load_vd(w + i);
                if (b) y += load_vd(b + i);
                store_vf(dst + i, y);
            }
            for (; i < n; i++) {
                double y = ((double)row[k][i] - mean[k]) * rstd[k];
                if (w) y *= w[i];
                if (b) y += b[i];
                dst[i] = (float)y;
            }
        }
    }
    return MHA_OK;
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

    ln_job job = {.n = prod(x->shape, first, x->ndim), .rows = prod(x->shape, 0, first), .x = mha_f32(&cx),
                  .w = weight ? mha_f32(&cw) : NULL, .b = bias ? mha_f32(&cb) : NULL, .out = mha_f32(out),
                  .eps = eps};
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

/* ---- backward ---- */

/* Pass 1, by rows: x̂ = (x - mean)·rstd, ĝ = dy∘w, dx = (ĝ - mean(ĝ) - x̂·mean(ĝ∘x̂))·rstd; each
 * row's mean and rstd kept for pass 2. */
static mha_status backward_part(void *ctx, size_t part, size_t nparts) {
    const ln_job *job = ctx;
    const size_t n = job->n;
    const float *ws = job->w;
    size_t from, to;
    part_range(&from, &to, job->rows, part, nparts);
    for (size_t r0 = from; r0 < to; r0 += LN_ROWS) {
        const float *row[LN_ROWS], *grow[LN_ROWS];
        double mean[LN_ROWS], rstd[LN_ROWS];
        double mean_g[LN_ROWS], mean_gx[LN_ROWS]; /* mean(ĝ), mean(ĝ∘x̂) */
        rows_at(row, job->x, n, r0, to);
        rows_at(grow, job->dy, n, r0, to);
        rows_stats(mean, rstd, row, n, job->eps);
#pragma GCC unroll 4
        for (size_t k = 0; k < LN_ROWS; k++) mean_g[k] = 0.0, mean_gx[k] = 0.0;
        for (size_t i = 0; i < n; i++)
#pragma GCC unroll 4
            for (size_t k = 0; k < LN_ROWS; k++) {
                double xhat = ((double)row[k][i] - mean[k]) * rstd[k], gh = (double)grow[k][i] * (ws ? ws[i] : 1.0);
                mean_g[k] += gh;
                mean_gx[k] += gh * xhat;
            }
        for (size_t k = 0; k < LN_ROWS && r0 + k < to; k++) {
            const size_t r = r0 + k;
            job->mean[r] = mean[k], job->rstd[r] = rstd[k];
            mean_g[k] /= (double)n;
            mean_gx[k] /= (double)n;
            size_t i = 0;
            for (; i + LANES <= n; i += LANES) {
                ln_vd xhat = (load_vd(row[k] + i) - mean[k]) * rstd[k], gh = load_vd(grow[k] + i);
                if (ws) gh *= load_vd(ws + i);
                store_vf(job->out + r * n + i, (gh - mean_g[k] - xhat * mean_gx[k]) * rstd[k]);
            }
            for (; i < n; i++) {
                double xhat = ((double)row[k][i] - mean[k]) * rstd[k], gh = (double)grow[k][i] * (ws ? ws[i] : 1.0);
                job->out[r * n + i] = (float)((gh - mean_g[k] - xhat * mean_gx[k]) * rstd[k]);
            }
        }
    }
    return MHA_OK;
}

/* Pass 2, by columns: dw += dy∘x̂ and db += dy over the rows in row order, in double, LANES
 * columns a vector; a column's additions are those of a plain loop over the rows, so are its
 * bits. */
enum { COLUMN_RUN = 16 };

static mha_status column_part(void *ctx, size_t part, size_t nparts) {
    const ln_job *job = ctx;
    const size_t n = job->n, runs = (n + COLUMN_RUN - 1) / COLUMN_RUN;
    size_t from, to;
    part_range(&from, &to, runs, part, nparts);
    from *= COLUMN_RUN, to = to * COLUMN_RUN < n ? to * COLUMN_RUN : n;
    for (size_t r = 0; r < job->rows; r++) {
        const float *row = job->x + r * n, *grow = job->dy + r * n;
        const double mean = job->mean[r], rstd = job->rstd[r];
        size_t i = from;
        for (; i + LANES <= to; i += LANES) {
            ln_vd aw, ab, g = load_vd(grow + i);
            memcpy(&aw, job->acc_w + i, sizeof aw);
            memcpy(&ab, job->acc_b + i, sizeof ab);
            aw += g * ((load_vd(row + i) - mean) * rstd);
            ab += g;
            memcpy(job->acc_w + i, &aw, sizeof aw);
            memcpy(job->acc_b + i, &ab, sizeof ab);
        }
        for (; i < to; i++) {
            double xhat = ((double)row[i] - mean) * rstd;
            job->acc_w[i] += (double)grow[i] * xhat;
            job->acc_b[i] += grow[i];
        }
    }
    return MHA_OK;
}

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
    acc_w = mha_alloc((2 * (n ? n : 1) + 2 * groups) * sizeof *acc_w);
    if (!acc_w) {
        st = mha_fail(MHA_E_NOMEM, "layer_norm_backward: out of memory");
        goto done;
    }
    acc_b = acc_w + n;
    memset(acc_w, 0, 2 * n * sizeof *acc_w);
    ln_job job = {.n = n, .rows = groups, .x = mha_f32(&cx), .w = w ? mha_f32(&cw) : NULL, .dy = mha_f32(&cy),
                  .out = mha_f32(&gx), .mean = acc_b + n, .rstd = acc_b + n + groups, .acc_w = acc_w,
                  .acc_b = acc_b, .eps = eps};
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
