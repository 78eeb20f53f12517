/* core/attention/sdpa_backward.c - scaled dot-product attention's backward: plain (from the kept weights) and fused
 * (weights recomputed tile by tile from each row's log-sum-exp, the flash-attention method). Formulas in the header. */
#include "attention/sdpa_backward.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "autograd/autograd.h"
#include "kernels/kernels.h"

#define SHAPE(buf, t) mha_shape_str((buf), sizeof(buf), (t))
#define TILE_Q 64   /* queries per tile (fused path) */

/* A strided (rows, cols) matrix: element (i, j) at p[i*rs + j*cs]. */
typedef struct mat {
    const float *p;
    ptrdiff_t rs, cs;
} mat;

/* The mask of one slice (core/attention/sdpa.h's mha_mask_src): a float mask's value, a bool mask's -inf or 0. */
static float mask_value(const mha_mask_src *m, size_t i, size_t j) {
    ptrdiff_t at = (ptrdiff_t)i * m->rs + (ptrdiff_t)j * m->cs;
    if (m->f) return m->f[at];
    if (m->b) return m->b[at] ? -INFINITY : 0.0f;
    return 0.0f;
}

/* A position a bool mask or the causal rule masks: it passes no gradient (masked_fill's backward), so a fully
 * masked row gives dQ 0 there, not NaN, as torch 1.13 with masked_fill. A float mask's -inf is an addition,
 * whose backward passes the row's NaN on. */
static bool hard_masked(const mha_mask_src *m, bool causal, size_t i, size_t j) {
    if (causal && j > i) return true;
    return m->b && m->b[(ptrdiff_t)i * m->rs + (ptrdiff_t)j * m->cs];
}

typedef struct bwd_job {
    /* inputs, each expanded to the batch shape (views) */
    const mha_tensor *q, *k, *v, *dout, *dweights, *weights, *out, *mask;
    float *gq, *gk, *gv;          /* (batches, L, D), (batches, S, D), (batches, S, Dv), zeroed; NULL: not wanted */
    float *gm;                    /* (batches, L, S): the float mask's gradient dS/scale, every element written; or NULL */
    size_t nb, batches;
    bool causal;
    float scale;
    size_t L, S, D, Dv;
    atomic_bool failed;
} bwd_job;

/* Element offset of batch n (flat, C order over the nb leading dims) in t. */
static ptrdiff_t batch_offset(const mha_tensor *t, size_t nb, size_t n) {
    ptrdiff_t off = 0;
    for (size_t d = nb; d-- > 0;) {
        off += (ptrdiff_t)(n % t->shape[d]) * t->stride[d];
        n /= t->shape[d];
    }
    return off;
}

static mat slice(const mha_tensor *t, size_t nb, size_t n) {
    mat m = {mha_f32(t) + batch_offset(t, nb, n), t->stride[nb], t->stride[nb + 1]};
    return m;
}

static mha_mask_src mask_slice(const mha_tensor *mask, size_t nb, size_t n) {
    mha_mask_src m = {0};
    if (!mask) return m;
    ptrdiff_t off = batch_offset(mask, nb, n);
    if (mask->dtype == MHA_FLOAT32) m.f = mha_f32(mask) + off;
    else m.b = mha_bool(mask) + off;
    m.rs = mask->stride[nb];
    m.cs = mask->stride[nb + 1];
    return m;
}

/* The gradients of one slice from its scaled dS (row stride ld, bq x bk at query i0, key j0) and P (row stride ldP). */
static mha_status add_tile_grads(const bwd_job *job, size_t n, const float *dS, const float *P, size_t ld, size_t ldP,
                                 size_t i0, size_t bq, size_t j0, size_t bk, mat q, mat k, mat dO) {
    const size_t D = job->D, Dv = job->Dv, L = job->L, S = job->S;
    mha_status st = MHA_OK;
    if (job->gq) /* dQ[i0:] += dS·k[j0:] */
        st = mha_sgemm(job->gq + (n * L + i0) * D, D, dS, (ptrdiff_t)ld, 1, k.p + (ptrdiff_t)j0 * k.rs, k.rs, k.cs, bq, D, bk, true);
    if (st == MHA_OK && job->gk) /* dK[j0:] += dSᵀ·q[i0:] */
        st = mha_sgemm(job->gk + (n * S + j0) * D, D, dS, 1, (ptrdiff_t)ld, q.p + (ptrdiff_t)i0 * q.rs, q.rs, q.cs, bk, D, bq, true);
    if (st == MHA_OK && job->gv && dO.p) /* dV[j0:] += Pᵀ·dO[i0:] */
        st = mha_sgemm(job->gv + (n * S + j0) * Dv, Dv, P, 1, (ptrdiff_t)ldP, dO.p + (ptrdiff_t)i0 * dO.rs, dO.rs, dO.cs, bk, Dv, bq, true);
    return st;
}

/* One row i of dS over keys j0..j0+bk: dS = P∘(dP - delta)·scale in place of dP (the mask's gradient, unscaled,
 * into job->gm when wanted); positions a bool mask or the causal rule masks get 0. */
static void softmax_grad_row(const bwd_job *job, const mha_mask_src *m, float *ds, const float *p, float delta, size_t n,
                             size_t i, size_t j0, size_t bk) {
    const float scale = job->scale;
    if (job->gm) {
        float *gm = job->gm + (n * job->L + i) * job->S + j0;
        for (size_t j = 0; j < bk; j++) {
            gm[j] = p[j] * (ds[j] - delta);
            ds[j] = gm[j] * scale;
        }
        if (job->causal) /* a float mask: only the causal rule masks hard */
            for (size_t j = i + 1 > j0 ? i + 1 - j0 : 0; j < bk; j++) gm[j] = ds[j] = 0.0f;
        return;
    }
    for (size_t j = 0; j < bk; j++) ds[j] = p[j] * (ds[j] - delta) * scale;
    if (job->causal || m->b)
        for (size_t j = 0; j < bk; j++)
            if (hard_masked(m, job->causal, i, j0 + j)) ds[j] = 0.0f;
}

/* Whether the plain path must copy each slice's weights into scratch (their columns are not contiguous). */
static bool weights_copied(const bwd_job *job) {
    return job->weights->stride[job->nb + 1] != 1;
}

/* Plain: one slice, with P from the weights (read in place, or copied to P when strided); dS in an (L,S) buffer. */
static mha_status slice_plain(const bwd_job *job, size_t n, float *dP, float *P_copy) {
    const size_t L = job->L, S = job->S, Dv = job->Dv;
    mat q = slice(job->q, job->nb, n), k = slice(job->k, job->nb, n), v = slice(job->v, job->nb, n);
    mat w = slice(job->weights, job->nb, n);
    mat dO = job->dout ? slice(job->dout, job->nb, n) : (mat){0};
    const float *P = w.p;
    size_t ldP = (size_t)w.rs;
    if (P_copy) {
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) P_copy[i * S + j] = w.p[(ptrdiff_t)i * w.rs + (ptrdiff_t)j * w.cs];
        P = P_copy, ldP = S;
    }
    mha_status st = MHA_OK;
    if (dO.p) /* dP = dO·vᵀ */
        st = mha_sgemm(dP, S, dO.p, dO.rs, dO.cs, v.p, v.cs, v.rs, L, S, Dv, false);
    else
        memset(dP, 0, L * S * sizeof *dP);
    if (st != MHA_OK) return st;
    if (job->dweights) {
        mat dw = slice(job->dweights, job->nb, n);
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) dP[i * S + j] += dw.p[(ptrdiff_t)i * dw.rs + (ptrdiff_t)j * dw.cs];
    }
    mha_mask_src m = mask_slice(job->mask, job->nb, n);
    for (size_t i = 0; i < L; i++) { /* dS = P∘(dP - rowsum(P∘dP)), times scale */
        const float *p = P + i * ldP;
        float *ds = dP + i * S;
        double dot = 0.0;
        for (size_t j = 0; j < S; j++) dot += (double)p[j] * ds[j];
        softmax_grad_row(job, &m, ds, p, (float)dot, n, i, 0, S);
    }
    return add_tile_grads(job, n, dP, P, S, ldP, 0, L, 0, S, q, k, dO);
}

/* s = q[i0:i0+bq]·k[j0:j0+bk]ᵀ·scale + mask, causal -inf where j > i; into tile (row stride ld). */
static mha_status score_tile(const bwd_job *job, float *tile, size_t ld, mat q, mat k, const mha_mask_src *m, size_t i0,
                             size_t bq, size_t j0, size_t bk) {
    mha_status st = mha_sgemm(tile, ld, q.p + (ptrdiff_t)i0 * q.rs, q.rs, q.cs, k.p + (ptrdiff_t)j0 * k.rs, k.cs, k.rs,
                              bq, bk, job->D, false);
    if (st != MHA_OK) return st;
    bool masked = m->f || m->b;
    for (size_t i = 0; i < bq; i++) {
        float *row = tile + i * ld;
        for (size_t j = 0; j < bk; j++) row[j] *= job->scale;
        if (masked)
            for (size_t j = 0; j < bk; j++) row[j] += mask_value(m, i0 + i, j0 + j);
        if (job->causal)
            for (size_t j = i0 + i + 1 > j0 ? i0 + i + 1 - j0 : 0; j < bk; j++) row[j] = -INFINITY;
    }
    return MHA_OK;
}

/* The key tile width of the fused backward for S keys: whole rows up to FULL_ROWS keys (one pass: the rows'
 * softmax is exact, as the forward's), else KEY_TILE keys with each row's log-sum-exp found in a first pass. */
#define FULL_ROWS 4096
#define KEY_TILE 512
static size_t key_tile(size_t S) { return S <= FULL_ROWS ? (S ? S : 1) : KEY_TILE; }

/* Rows that do not fit one tile take two passes. Pass 1: each row's log-sum-exp over all S keys,
 * lse = max + log Σ exp(s - max), online over the key tiles: with the running (max, sum) and a tile's (tmax, tsum),
 *   max' = max(max, tmax);   sum' = sum·exp(max - max') + tsum·exp(tmax - max').
 * Pass 2: P = exp(s - lse) = softmax_tile(s) · tsum·exp(tmax - lse).
 * The exps come from the forward's vectorised softmax kernel: after p = softmax(s) over the tile row, p at the
 * row's max is exp(0)/tsum, so tsum = 1/p[argmax] (to a float's rounding, as the forward's own sum). The plain
 * reference beside it (scalar exps, pass 1 summing in double) is what tests hold it equal to
 * (mha_sdpa_backward_plain_lse). */
static bool plain_lse = false;

void mha_sdpa_backward_plain_lse(bool on) { plain_lse = on; }

/* One tile row's max (the first NaN, if any: it makes the row NaN). Unless it is -inf (every key masked: the row
 * is left as it is), the row becomes its softmax and *tsum = Σ exp(s - tmax). */
static double tile_row_softmax(float *row, size_t bk, double *tsum) {
    size_t at = 0;
    for (size_t j = 1; j < bk && !isnan(row[at]); j++)
        if (row[j] > row[at] || isnan(row[j])) at = j;
    double tmax = row[at];
    if (tmax == -INFINITY) return tmax;
    mha_softmax_rows(row, bk, 1, bk);
    *tsum = 1.0 / (double)row[at];
    return tmax;
}

/* Pass 2's P = exp(s - lse) over one tile row, in place. */
static void tile_row_probs(float *p, size_t bk, float lse) {
    double tsum = 0.0, tmax;
    if (plain_lse || !isfinite(lse)) { /* a fully masked row's lse is -inf: P is NaN (the forward's policy) */
        for (size_t j = 0; j < bk; j++) p[j] = expf(p[j] - lse);
    } else if ((tmax = tile_row_softmax(p, bk, &tsum)) == -INFINITY) {
        memset(p, 0, bk * sizeof *p);
    } else {
        const float factor = (float)(tsum * exp(tmax - (double)lse));
        for (size_t j = 0; j < bk; j++) p[j] *= factor;
    }
}

/* The running (max, sum) of one row merged with a tile's (tmax, tsum). */
static void lse_merge(double *run_max, double *run_sum, double tmax, double tsum) {
    double new_max = tmax > *run_max || isnan(tmax) ? tmax : *run_max;
    if (new_max == -INFINITY) return; /* all masked so far */
    double sum = *run_sum == 0.0 ? 0.0 : *run_sum * exp(*run_max - new_max);
    *run_sum = sum + tsum * exp(tmax - new_max);
    *run_max = new_max;
}

static mha_status row_lse(const bwd_job *job, float *lse, float *tile, size_t tk, mat q, mat k, const mha_mask_src *m,
                          size_t i0, size_t bq) {
    double run_max[TILE_Q], run_sum[TILE_Q];
    for (size_t i = 0; i < bq; i++) run_max[i] = -INFINITY, run_sum[i] = 0.0;
    for (size_t j0 = 0; j0 < job->S; j0 += tk) {
        size_t bk = job->S - j0 < tk ? job->S - j0 : tk;
        mha_status st = score_tile(job, tile, tk, q, k, m, i0, bq, j0, bk);
        if (st != MHA_OK) return st;
        for (size_t i = 0; i < bq; i++) {
            float *row = tile + i * tk;
            double tmax, tsum = 0.0;
            if (plain_lse) {
                tmax = -INFINITY;
                for (size_t j = 0; j < bk; j++)
                    if (row[j] > tmax || isnan(row[j])) tmax = row[j];
                if (tmax != -INFINITY)
                    for (size_t j = 0; j < bk; j++) tsum += exp((double)row[j] - tmax);
            } else {
                tmax = tile_row_softmax(row, bk, &tsum);
            }
            if (tmax != -INFINITY) lse_merge(&run_max[i], &run_sum[i], tmax, tsum); /* an all-masked tile adds 0 */
        }
    }
    for (size_t i = 0; i < bq; i++) lse[i] = (float)(run_max[i] + log(run_sum[i])); /* fully masked: -inf */
    return MHA_OK;
}

/* Fused: one slice, TILE_Q queries at a time; scratch holds two (TILE_Q, key_tile(S)) tiles and 2·TILE_Q floats. */
static mha_status slice_fused(const bwd_job *job, size_t n, float *scratch) {
    const size_t L = job->L, S = job->S, Dv = job->Dv, tk = key_tile(S);
    const bool one_pass = tk >= S;
    float *sP = scratch, *sdP = scratch + TILE_Q * tk, *lse = sdP + TILE_Q * tk, *delta = lse + TILE_Q;
    mat q = slice(job->q, job->nb, n), k = slice(job->k, job->nb, n), v = slice(job->v, job->nb, n);
    mat dO = slice(job->dout, job->nb, n), o = slice(job->out, job->nb, n);
    mha_mask_src m = mask_slice(job->mask, job->nb, n);
    mha_status st = MHA_OK;
    for (size_t i0 = 0; i0 < L && st == MHA_OK; i0 += TILE_Q) {
        size_t bq = L - i0 < TILE_Q ? L - i0 : TILE_Q;
        if (mha_interrupted()) return mha_fail(MHA_E_INTERRUPTED, "sdpa_backward: interrupted at query %zu of %zu", i0, L);
        /* delta_i = dO_i·out_i, which equals rowsum(P∘dP) since out_i = Σ_j P_ij v_j */
        for (size_t i = 0; i < bq; i++) {
            double d = 0.0;
            for (size_t c = 0; c < Dv; c++)
                d += (double)dO.p[(ptrdiff_t)(i0 + i) * dO.rs + (ptrdiff_t)c * dO.cs] * o.p[(ptrdiff_t)(i0 + i) * o.rs + (ptrdiff_t)c * o.cs];
            delta[i] = (float)d;
        }
        if (!one_pass && (st = row_lse(job, lse, sP, tk, q, k, &m, i0, bq)) != MHA_OK) break;
        /* pass 2: P (exact row softmax in one pass, else exp(s - lse)), dP = dO·vᵀ, dS = P∘(dP - delta)·scale */
        for (size_t j0 = 0; j0 < S && st == MHA_OK; j0 += tk) {
            size_t bk = S - j0 < tk ? S - j0 : tk;
            st = score_tile(job, sP, tk, q, k, &m, i0, bq, j0, bk);
            if (st == MHA_OK)
                st = mha_sgemm(sdP, tk, dO.p + (ptrdiff_t)i0 * dO.rs, dO.rs, dO.cs, v.p + (ptrdiff_t)j0 * v.rs, v.cs, v.rs,
                               bq, bk, Dv, false);
            if (st != MHA_OK) break;
            if (one_pass) mha_softmax_rows(sP, tk, bq, bk); /* the forward's kernel: a fully masked row is NaN */
            for (size_t i = 0; i < bq; i++) {
                float *p = sP + i * tk, *ds = sdP + i * tk;
                if (!one_pass) tile_row_probs(p, bk, lse[i]);
                softmax_grad_row(job, &m, ds, p, delta[i], n, i0 + i, j0, bk);
            }
            st = add_tile_grads(job, n, sdP, sP, tk, tk, i0, bq, j0, bk, q, k, dO);
        }
    }
    return st;
}

static mha_status bwd_part(void *ctx, size_t part, size_t nparts) {
    bwd_job *job = ctx;
    const size_t L = job->L, S = job->S;
    const bool copied = job->weights && weights_copied(job);
    size_t floats = job->weights ? (copied ? 2 : 1) * L * S : 2 * TILE_Q * key_tile(S) + 2 * TILE_Q;
    float *scratch = mha_alloc((floats ? floats : 1) * sizeof *scratch);
    if (!scratch) {
        atomic_store(&job->failed, true);
        return mha_fail(MHA_E_NOMEM, "sdpa_backward: out of memory for %zu floats of scratch", floats);
    }
    mha_status st = MHA_OK;
    for (size_t n = part; n < job->batches && st == MHA_OK; n += nparts) {
        if (atomic_load(&job->failed)) break;
        st = job->weights ? slice_plain(job, n, scratch, copied ? scratch + L * S : NULL) : slice_fused(job, n, scratch);
    }
    mha_free(scratch, (floats ? floats : 1) * sizeof *scratch);
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

/* t expanded to (bshape..., rows, cols), or an error naming arg. */
static mha_status expand_to(mha_tensor *out, const mha_tensor *t, size_t nb, const size_t *bshape, size_t rows, size_t cols,
                            const char *arg) {
    char s[MHA_SHAPE_BUF], w[MHA_SHAPE_BUF];
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, bshape, nb * sizeof *shape);
    shape[nb] = rows, shape[nb + 1] = cols;
    mha_status st = mha_expand(out, t, nb + 2, shape);
    if (st != MHA_OK) {
        mha_tensor want = {.ndim = nb + 2};
        memcpy(want.shape, shape, sizeof shape);
        return mha_fail(MHA_E_SHAPE, "sdpa_backward: %s %s does not broadcast to %s", arg, SHAPE(s, t), SHAPE(w, &want));
    }
    return MHA_OK;
}

mha_status mha_sdpa_backward(mha_tensor *dq, mha_tensor *dk, mha_tensor *dv, mha_tensor *dmask, const mha_tensor *dout,
                             const mha_tensor *dweights, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                             const mha_tensor *weights, const mha_tensor *out, const mha_sdpa_options *opt) {
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF];
    const mha_sdpa_options defaults = {0};
    if (!opt) opt = &defaults;
    const mha_tensor *checks[] = {q, k, v};
    const char *names[] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        if (!checks[i] || !checks[i]->storage || checks[i]->dtype != MHA_FLOAT32 || checks[i]->ndim < 2)
            return mha_fail(MHA_E_ARG, "sdpa_backward: %s must be a float tensor of at least 2 dims (..., length, dim)", names[i]);
    }
    const size_t L = q->shape[q->ndim - 2], D = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2], Dv = v->shape[v->ndim - 1];
    if (k->shape[k->ndim - 1] != D || v->shape[v->ndim - 2] != S)
        return mha_fail(MHA_E_SHAPE, "sdpa_backward: q %s, k %s, v %s do not fit (..., L, D), (..., S, D), (..., S, Dv)",
                        SHAPE(sq, q), SHAPE(sk, k), SHAPE(sv, v));
    if (!weights && dweights)
        return mha_fail(MHA_E_ARG, "sdpa_backward: a gradient of the weights needs the weights (the plain path)");
    if (!weights && dout && !out)
        return mha_fail(MHA_E_ARG, "sdpa_backward: the fused path (no weights) needs the forward's output out");
    if (dmask && (!opt || !opt->attn_mask || opt->attn_mask->dtype != MHA_FLOAT32))
        return mha_fail(MHA_E_ARG, "sdpa_backward: a gradient of the mask needs a float (additive) attn_mask");
    /* the batch shape: every input's leading dims, broadcast */
    const mha_tensor *all[] = {q, k, v, opt->attn_mask, dout, dweights, weights, out};
    size_t nb = 0, bshape[MHA_MAX_DIMS];
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        const mha_tensor *t = all[i];
        if (!t) continue;
        size_t lead = t->ndim > 2 ? t->ndim - 2 : 0;
        if (lead > nb) {
            memmove(bshape + (lead - nb), bshape, nb * sizeof *bshape);
            for (size_t d = 0; d < lead - nb; d++) bshape[d] = 1;
            nb = lead;
        }
        for (size_t d = 0; d < lead; d++) {
            size_t bd = nb - lead + d;
            if (bshape[bd] == 1) bshape[bd] = t->shape[d];
            else if (t->shape[d] != 1 && t->shape[d] != bshape[bd])
                return mha_fail(MHA_E_SHAPE, "sdpa_backward: q %s, k %s, v %s: leading (batch) dims do not broadcast", SHAPE(sq, q),
                                SHAPE(sk, k), SHAPE(sv, v));
        }
    }
    const float scale = opt->scale != 0.0f ? opt->scale : (float)(1.0 / sqrt((double)D));
    mha_tensor eq = MHA_TENSOR_EMPTY, ek = MHA_TENSOR_EMPTY, ev = MHA_TENSOR_EMPTY, edo = MHA_TENSOR_EMPTY,
               edw = MHA_TENSOR_EMPTY, ew = MHA_TENSOR_EMPTY, eo = MHA_TENSOR_EMPTY, em = MHA_TENSOR_EMPTY;
    mha_tensor gq = MHA_TENSOR_EMPTY, gk = MHA_TENSOR_EMPTY, gv = MHA_TENSOR_EMPTY, gm = MHA_TENSOR_EMPTY;
    mha_status st;
    if ((st = expand_to(&eq, q, nb, bshape, L, D, "q")) != MHA_OK || (st = expand_to(&ek, k, nb, bshape, S, D, "k")) != MHA_OK ||
        (st = expand_to(&ev, v, nb, bshape, S, Dv, "v")) != MHA_OK)
        goto done;
    if (dout && (st = expand_to(&edo, dout, nb, bshape, L, Dv, "dout")) != MHA_OK) goto done;
    if (dweights && (st = expand_to(&edw, dweights, nb, bshape, L, S, "dweights")) != MHA_OK) goto done;
    if (weights && (st = expand_to(&ew, weights, nb, bshape, L, S, "weights")) != MHA_OK) goto done;
    if (out && !weights && (st = expand_to(&eo, out, nb, bshape, L, Dv, "out")) != MHA_OK) goto done;
    if (opt->attn_mask && (st = expand_to(&em, opt->attn_mask, nb, bshape, L, S, "attn_mask")) != MHA_OK) goto done;
    size_t batches = 1;
    for (size_t d = 0; d < nb; d++) batches *= bshape[d];
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, bshape, nb * sizeof *shape);
    shape[nb] = L, shape[nb + 1] = D;
    if (dq && (st = mha_zeros(&gq, MHA_FLOAT32, nb + 2, shape)) != MHA_OK) goto done;
    shape[nb] = S;
    if (dk && (st = mha_zeros(&gk, MHA_FLOAT32, nb + 2, shape)) != MHA_OK) goto done;
    shape[nb + 1] = Dv;
    if (dv && (st = mha_zeros(&gv, MHA_FLOAT32, nb + 2, shape)) != MHA_OK) goto done; /* stays 0 without dout */
    shape[nb + 1] = S, shape[nb] = L;
    if (dmask && (st = mha_zeros(&gm, MHA_FLOAT32, nb + 2, shape)) != MHA_OK) goto done;
    if (dout || dweights) {
        bwd_job job = {
            .q = &eq, .k = &ek, .v = &ev, .dout = dout ? &edo : NULL, .dweights = dweights ? &edw : NULL,
            .weights = weights ? &ew : NULL, .out = out && !weights ? &eo : NULL, .mask = opt->attn_mask ? &em : NULL,
            .gq = dq ? mha_f32(&gq) : NULL, .gk = dk ? mha_f32(&gk) : NULL, .gv = dv && dout ? mha_f32(&gv) : NULL,
            .gm = dmask ? mha_f32(&gm) : NULL,
            .nb = nb, .batches = batches, .causal = opt->is_causal, .scale = scale, .L = L, .S = S, .D = D, .Dv = Dv,
        };
        atomic_init(&job.failed, false);
        const double flops = 2.0 * (double)batches * (double)L * (double)S * (double)(3 * D + 2 * Dv);
        if (batches && L && S) st = mha_run_parts(bwd_part, &job, mha_kernels_parts(batches, flops));
        if (st != MHA_OK) goto done;
    }
    if (dq && (st = mha_sum_to(dq, &gq, q->ndim, q->shape)) != MHA_OK) goto done;
    if (dk && (st = mha_sum_to(dk, &gk, k->ndim, k->shape)) != MHA_OK) {
        if (dq) mha_release(dq);
        goto done;
    }
    if (dv && (st = mha_sum_to(dv, &gv, v->ndim, v->shape)) != MHA_OK) {
        if (dq) mha_release(dq);
        if (dk) mha_release(dk);
        goto done;
    }
    if (dmask && (st = mha_sum_to(dmask, &gm, opt->attn_mask->ndim, opt->attn_mask->shape)) != MHA_OK) {
        if (dq) mha_release(dq);
        if (dk) mha_release(dk);
        if (dv) mha_release(dv);
        goto done;
    }
done:
    mha_release(&eq), mha_release(&ek), mha_release(&ev), mha_release(&edo), mha_release(&edw), mha_release(&ew);
    mha_release(&eo), mha_release(&em), mha_release(&gq), mha_release(&gk), mha_release(&gv), mha_release(&gm);
    return st;
}
