/* core/attention/sdpa.c - scaled dot-product attention over batches: mha_sdpa, then its backward
 * mha_sdpa_backward pass by pass, then its graph node. One head the plain way is in sdpa_head.c. */
#include "attention/sdpa.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "attention/masks.h"
#include "attention/sdpa_batch.h"
#include "attention/sdpa_testing.h"
#include "autograd/autograd.h"
#include "autograd/autograd_ops.h"
#include "nn/nn_internal.h"
#include "kernels/kernels.h"

/* ---------------------------------------------------------------------------------------------
 * The forward: scaled dot-product attention with broadcast leading dims
 * ------------------------------------------------------------------------------------------- */

/* q, k or v as the slices read them: shared when each row's elements are contiguous and rows do not
 * overlap (a head split's permuted view, say: its rows E apart), else a contiguous copy. */
static mha_status rows_readable(mha_tensor *out, const mha_tensor *t) {
    const size_t d = t->ndim;
    if (t->stride[d - 1] == 1 && t->stride[d - 2] >= (ptrdiff_t)t->shape[d - 1]) return mha_share(out, t);
    return mha_contiguous_named(out, t, "sdpa");
}

/* Kept weights go by blocks of a multiple of KEPT_BLOCK rows: a multiple of every register tile's
 * rows (4, 6, 8), so each block splits into the tiles a whole-slice product would use. */
enum { KEPT_BLOCK = 48 };

/* The batch loop of mha_sdpa: each (broadcast) batch index is one attention slice writing its own
 * part of the result (and weights), so with MHA_THREADS the slices are shared out over threads. */
typedef struct sdpa_job {
    const mha_tensor *q;                  /* for messages */
    const mha_tensor *eq, *ek, *ev, *mask; /* expanded to the batch (rows contiguous); mask NULL for
                                              none */
    const mha_tensor *result;             /* (batch..., L, Dv), laid out as q or contiguous */
    float *weights;                       /* (batches,L,S), or NULL for the fused path */
    float *lse;                           /* (batches,L), or NULL: not wanted */
    size_t nb, batches, group;            /* group: query heads per K/V head (enable_gqa), else 1 */
    bool causal;
    float scale;
    size_t L, S, D, Dv;
    size_t block_rows;   /* weights kept: queries per block of rows (kept_slice), 0: whole slices */
    size_t packed_k, packed_v;            /* floats of a slice's kᵀ and v packed, per part */
    atomic_bool failed;                   /* a part failed: the others stop at their next slice */
} sdpa_job;

/* The kept weights' slice a block of rows at a time: its kᵀ and v packed once (into packed), then
 * each block's scores, softmax and ·v while the block (block_rows x S) is in L2 - rather than the
 * (L,S) weights written, read by the softmax and read again to be packed for ·v from memory. The
 * same sums in the same order as one call over the slice (mha_sgemm_packed: the very bits of
 * mha_sgemm's packed path; blocks in whole register tiles). */
static mha_status kept_slice(const sdpa_job *job, const mha_head_args *slice, float *weights, float *packed) {
    const size_t L = job->L, S = job->S;
    mha_head_args head = *slice;
    head.k_packed = packed, head.v_packed = packed + job->packed_k;
    mha_sgemm_pack_b(packed, slice->k, 1, (ptrdiff_t)slice->ld_k, S, job->D);         /* kᵀ (D,S) */
    /* v (S,Dv) */
    mha_sgemm_pack_b(packed + job->packed_k, slice->v, (ptrdiff_t)slice->ld_v, 1, job->Dv, S);
    mha_status st = MHA_OK;
    for (size_t row0 = 0; row0 < L && st == MHA_OK; row0 += job->block_rows) {
        head.row0 = row0;
        head.L = L - row0 < job->block_rows ? L - row0 : job->block_rows;
        head.out = slice->out + row0 * slice->ld_out;
        head.q = slice->q + row0 * slice->ld_q;
        if (slice->attn.f) head.attn.f = slice->attn.f + (ptrdiff_t)row0 * slice->attn.rs;
        if (slice->attn.b) head.attn.b = slice->attn.b + (ptrdiff_t)row0 * slice->attn.rs;
        if (slice->lse) head.lse = slice->lse + row0;
        st = mha_attention_plain(&head, &mha_attn_fast, weights + row0 * S, NULL, NULL);
    }
    return st;
}

/* Slice n of every tensor as one head's arguments. */
static mha_head_args sdpa_slice(const sdpa_job *job, size_t n) {
    const size_t nb = job->nb;
    mha_head_args head = {
        .out = mha_f32(job->result) + mha_batch_offset(job->result, nb, n, 1),
        .ld_out = (size_t)job->result->stride[nb],
        .q = mha_f32(job->eq) + mha_batch_offset(job->eq, nb, n, 1), .ld_q = (size_t)job->eq->stride[nb],
        .k = mha_f32(job->ek) + mha_batch_offset(job->ek, nb, n, job->group), .ld_k = (size_t)job->ek->stride[nb],
        .v = mha_f32(job->ev) + mha_batch_offset(job->ev, nb, n, job->group), .ld_v = (size_t)job->ev->stride[nb],
        .attn = mha_mask_slice(job->mask, nb, n), .lse = job->lse ? job->lse + n * job->L : NULL,
        .mask_cols = job->S, .causal = job->causal, .scale = job->scale,
        .L = job->L, .S = job->S, .D = job->D, .Dv = job->Dv,
    };
    return head;
}

/* Slices whose operands take at most FETCH_MAX bytes have the next slice's fetched while they are
 * computed (mha_fetch); a larger one's would push this one's out of L2 (the backward at L=512: 0.3
 * ms slower). */
enum { FETCH_MAX = 128 << 10 };

/* The next slice's weights and output rows, fetched for writing before this slice is computed:
 * their lines are owned by this core when the stores come (nanoGPT's step: the forward 1.77 -> 1.68
 * ms, Zen 4). */
static void next_outputs_fetch(const sdpa_job *job, size_t n) {
    const size_t L = job->L, S = job->S;
    if (n >= job->batches || L * (S + job->Dv) > FETCH_MAX / sizeof(float)) return;
    mha_head_args next = sdpa_slice(job, n);
    mha_fetch f = {0};
    mha_fetch_add_out(&f, job->weights + n * L * S, L, (ptrdiff_t)S, S);
    mha_fetch_add_out(&f, next.out, L, (ptrdiff_t)next.ld_out, job->Dv);
    mha_fetch_rows(&f, f.total);
}

/* Batches part, part + nparts, ...; each polls the interrupt flag first. */
static mha_status sdpa_part(void *ctx, size_t part, size_t nparts) {
    sdpa_job *job = ctx;
    const size_t L = job->L, S = job->S;
    const size_t packed_bytes = job->block_rows ? (job->packed_k + job->packed_v) * sizeof(float) : 0;
    float *packed = packed_bytes ? mha_alloc(packed_bytes) : NULL;
    if (packed_bytes && !packed) {
        atomic_store(&job->failed, true);
        return mha_fail(MHA_E_NOMEM, "sdpa: out of memory for %zu bytes of packed keys and values", packed_bytes);
    }
    mha_status st = MHA_OK;
    for (size_t n = part; n < job->batches && st == MHA_OK; n += nparts) {
        if (atomic_load(&job->failed)) break; /* the part that failed reports it */
        if (mha_interrupted()) {
            char sq[MHA_SHAPE_BUF];
            st = mha_fail(MHA_E_INTERRUPTED, "sdpa: q %s: interrupted at batch %zu of %zu", SHAPE(sq, job->q), n,
                          job->batches);
            break;
        }
        mha_head_args head = sdpa_slice(job, n);
        if (job->weights == NULL) {
            mha_attn_args args = {
                .out = head.out, .ld_out = head.ld_out, .q = head.q, .ld_q = head.ld_q, .k = head.k, .ld_k = head.ld_k,
                .v = head.v, .ld_v = head.ld_v,
                .mask = head.attn.f, .mask_rs = head.attn.rs, .mask_cs = head.attn.cs,
                .causal = job->causal, .scale = job->scale, .lse = head.lse, .L = L, .S = S, .D = job->D,
                .Dv = job->Dv,
            };
            st = mha_attention_fused(&args);
        } else if (packed) {
            st = kept_slice(job, &head, job->weights + n * L * S, packed);
        } else {
            next_outputs_fetch(job, n + nparts);
            st = mha_attention_plain(&head, &mha_attn_fast, job->weights + n * L * S, NULL, NULL);
        }
    }
    mha_free(packed, packed_bytes);
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

/* Weights kept: by blocks of rows (kept_slice) when a slice has more rows than one block - unless
 * its q·kᵀ is one a whole-slice mha_sgemm computes as dot products of rows
 * (a short q at depth D >= 128, kernels.h), whose bits the packed path would not give. A block's
 * scores fill about half of L2 (256 KiB). */
static void plan_blocks(sdpa_job *job, bool kept) {
    const size_t L = job->L, S = job->S, D = job->D;
    const size_t block_bytes = S * sizeof(float) * KEPT_BLOCK, half_l2 = (size_t)256 << 10;
    const size_t block_rows = KEPT_BLOCK * (block_bytes && block_bytes < half_l2 ? half_l2 / block_bytes : 1);
    const bool dot_rows = D >= 128 && (double)L * (double)D * sizeof(float) <= 256.0 * 1024;
    if (kept && L > block_rows && S > 0 && !dot_rows) {
        job->block_rows = block_rows;
        job->packed_k = mha_sgemm_packed_b_size(S, D), job->packed_v = mha_sgemm_packed_b_size(job->Dv, S);
    }
}

mha_status mha_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                    const mha_tensor *v, const mha_sdpa_options *opt) {
    return mha_sdpa_lse(out, weights, NULL, q, k, v, opt);
}

mha_status mha_sdpa_lse(mha_tensor *out, mha_tensor *weights, mha_tensor *lse, const mha_tensor *q,
                        const mha_tensor *k, const mha_tensor *v, const mha_sdpa_options *opt) {
    const mha_sdpa_options defaults = {0};
    if (opt == NULL) opt = &defaults;
    const mha_tensor *mask = opt->attn_mask;
    mha_sdpa_sizes z;
    mha_status st = mha_sdpa_check(&z, q, k, v, mask, opt->enable_gqa);
    if (st != MHA_OK) return st;
    if (!isfinite(opt->scale))
        return mha_fail(MHA_E_ARG, "sdpa: scale %g is not a finite number", (double)opt->scale);
    const size_t L = z.L, S = z.S, D = z.D, Dv = z.Dv, nb = z.nb;
    const float scale = opt->scale != 0.0f ? opt->scale : (float)(1.0 / sqrt((double)D));
    /* weights not wanted: the fused kernel - unless lse is and Dv = 0, which the fused kernel
     * skips */
    const bool fused = weights == NULL && !(lse && Dv == 0);

    mha_tensor cq = MHA_TENSOR_EMPTY, ck = MHA_TENSOR_EMPTY, cv = MHA_TENSOR_EMPTY, fmask = MHA_TENSOR_EMPTY;
    mha_tensor eq = MHA_TENSOR_EMPTY, ek = MHA_TENSOR_EMPTY, ev = MHA_TENSOR_EMPTY, em = MHA_TENSOR_EMPTY;
    mha_tensor result = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, lse_rows = MHA_TENSOR_EMPTY;
    if ((st = rows_readable(&cq, q)) != MHA_OK || (st = rows_readable(&ck, k)) != MHA_OK ||
        (st = rows_readable(&cv, v)) != MHA_OK)
        goto done;
    /* the fused kernel reads float masks only: a bool mask becomes one of its own size, never (L,S)
     * from a row */
    if (mask != NULL && fused && mask->dtype == MHA_BOOL) st = mha_mask_additive(&fmask, mask, "sdpa");
    else if (mask != NULL) st = mha_share(&fmask, mask);
    if (st != MHA_OK) goto done;
    if ((st = mha_batch_expand(&eq, &cq, nb, z.bshape, 1, L, D, "sdpa", "q")) != MHA_OK ||
        (st = mha_batch_expand(&ek, &ck, nb, z.bshape, z.group, S, D, "sdpa", "k")) != MHA_OK ||
        (st = mha_batch_expand(&ev, &cv, nb, z.bshape, z.group, S, Dv, "sdpa", "v")) != MHA_OK ||
        (mask != NULL && (st = mha_batch_expand(&em, &fmask, nb, z.bshape, 1, L, S, "sdpa", "attn_mask")) != MHA_OK))
        goto done;

    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, z.bshape, nb * sizeof *shape);
    shape[nb] = L;
    shape[nb + 1] = Dv;
    /* the result laid out as q when it has q's shape (no broadcast batch dim, Dv = D) */
    bool like_q = Dv == D && cq.ndim == nb + 2;
    for (size_t d = 0; like_q && d < nb; d++) like_q = cq.shape[d] == z.bshape[d];
    st = like_q ? mha_empty_like_named(&result, &cq, "sdpa") : mha_empty_named(&result, MHA_FLOAT32, nb + 2, shape, "sdpa");
    if (st != MHA_OK) goto done;
    shape[nb + 1] = S;
    if (!fused && (st = mha_empty_named(&w, MHA_FLOAT32, nb + 2, shape, "sdpa")) != MHA_OK) goto done;
    if (lse && (st = mha_empty_named(&lse_rows, MHA_FLOAT32, nb + 1, shape, "sdpa")) != MHA_OK) goto done; /* (...,L) */

    const size_t batches = prod(z.bshape, 0, nb);
    sdpa_job job = {
        .q = q, .eq = &eq, .ek = &ek, .ev = &ev, .mask = mask != NULL ? &em : NULL, .result = &result,
        .weights = fused ? NULL : mha_f32(&w), .lse = lse ? mha_f32(&lse_rows) : NULL, .nb = nb, .batches = batches,
        .group = z.group,
        .causal = opt->is_causal, .scale = scale, .L = L, .S = S, .D = D, .Dv = Dv,
    };
    plan_blocks(&job, !fused);
    atomic_init(&job.failed, false);
    /* q·kᵀ and ·v */
    const double flops = 2.0 * (double)batches * (double)L * (double)S * (double)(D + Dv);
    if (L > 0)   /* no query: no (L,·) slice to fill, however many batches */
        st = nomem_under(mha_run_parts(sdpa_part, &job, mha_kernels_parts(batches, flops)), "sdpa");
    if (st != MHA_OK) goto done;
    *out = result;
    result = MHA_TENSOR_EMPTY;
    if (weights != NULL) {
        *weights = w;
        w = MHA_TENSOR_EMPTY;
    }
    if (lse != NULL) {
        *lse = lse_rows;
        lse_rows = MHA_TENSOR_EMPTY;
    }
done:
    mha_release(&cq), mha_release(&ck), mha_release(&cv), mha_release(&fmask);
    mha_release(&eq), mha_release(&ek), mha_release(&ev), mha_release(&em);
    mha_release(&result), mha_release(&w), mha_release(&lse_rows);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * The backward, pass 4 first: each step is the backward of the forward pass it names (formulas in
 * sdpa.h). Plain: P from the weights the forward kept. Fused: P recomputed tile by tile from q and
 * k, beyond FULL_ROWS keys from each row's log-sum-exp (the flash-attention method).
 * ------------------------------------------------------------------------------------------- */

#define TILE_Q 64   /* queries per tile (fused path) */

/* A strided (rows, cols) matrix: element (i, j) at p[i*rs + j*cs]. */
typedef struct mat {
    const float *p;
    ptrdiff_t rs, cs;
} mat;

/* A position a bool mask or the causal rule masks: it passes no gradient (masked_fill's backward),
 * so a fully masked row gives dQ 0 there, not NaN, as torch 1.13 with masked_fill. A float mask's
 * -inf is an addition, whose backward passes the row's NaN on. */
static bool hard_masked(const mha_mask_src *m, bool causal, size_t i, size_t j) {
    if (causal && j > i) return true;
    return m->b && m->b[(ptrdiff_t)i * m->rs + (ptrdiff_t)j * m->cs];
}

typedef struct bwd_job {
    /* inputs, each expanded to the batch shape (views) */
    const mha_tensor *q, *k, *v, *dout, *dweights, *weights, *out, *mask;
    const mha_tensor *gq, *gk, *gv; /* (batch..., L, D), (..., S, D), (..., S, Dv), rows contiguous
                                       (grad_rows), zeroed unless first_write; NULL: not wanted */
    bool first_write;             /* the plain path (weights kept) writes each slice's dQ, dK, dV in
                                     one product each, over the gradients unset */
    float *gm;                    /* (batches, L, S): the float mask's gradient (dS unscaled), every
                                     element written; or NULL */
    size_t nb, batches, group;    /* group: query heads per K/V head (k and v read at head h /
                                     group) */
    bool causal;
    float scale;
    size_t L, S, D, Dv;
    atomic_bool failed;
} bwd_job;

/* Row `row` of batch slice n of a gradient (its rows g->stride[nb] apart). */
static float *grad_rows(const mha_tensor *g, size_t nb, size_t n, size_t row) {
    return mha_f32(g) + mha_batch_offset(g, nb, n, 1) + (ptrdiff_t)row * g->stride[nb];
}

static mat mat_slice(const mha_tensor *t, size_t nb, size_t n, size_t group) {
    mat m = {mha_f32(t) + mha_batch_offset(t, nb, n, group), t->stride[nb], t->stride[nb + 1]};
    return m;
}

/* Backward of pass 4 (out = P·v), its dV half over a tile (bq queries at i0, bk keys at j0):
 * dV[j0:] += Pᵀ·dO[i0:], P of row stride ldP; tri: a whole causal slice's (mha_sgemm_tri). */
static mha_status value_grad(const bwd_job *job, size_t n, const float *P, size_t ldP, size_t i0, size_t bq,
                             size_t j0, size_t bk, mat dO, bool tri) {
    const size_t Dv = job->Dv;
    if (!job->gv || !dO.p) return MHA_OK;
    return mha_sgemm_tri(grad_rows(job->gv, job->nb, n, j0), (size_t)job->gv->stride[job->nb], P, 1, (ptrdiff_t)ldP,
                         dO.p + (ptrdiff_t)i0 * dO.rs, dO.rs, dO.cs, bk, Dv, bq, !job->first_write,
                         tri ? MHA_TRI_A_UPPER : MHA_TRI_NONE, 0);
}

/* Backward of pass 3 (softmax) and pass 2 (masks), one row i over keys j0..j0+bk: dS =
 * P∘(dP - delta)·scale in place of dP, delta = rowsum(P∘dP) (the mask's gradient, unscaled, into
 * job->gm when wanted); positions a bool mask or the causal rule masks get 0. */
typedef float grad_vec __attribute__((vector_size(16))); /* 4 floats, a GCC vector */

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
    const grad_vec dv = {delta, delta, delta, delta}, sv = {scale, scale, scale, scale};
    /* the causal rule alone: the keys past the diagonal are 0, the others computed */
    const size_t end = !job->causal || m->b ? bk : i + 1 <= j0 ? 0 : i + 1 - j0 < bk ? i + 1 - j0 : bk;
    size_t j = 0;
    for (; j + 4 <= end; j += 4) { /* four lanes, each the scalar line below */
        grad_vec pv, d;
        memcpy(&pv, p + j, sizeof pv);
        memcpy(&d, ds + j, sizeof d);
        d = pv * (d - dv) * sv;
        memcpy(ds + j, &d, sizeof d);
    }
    for (; j < end; j++) ds[j] = p[j] * (ds[j] - delta) * scale;
    memset(ds + end, 0, (bk - end) * sizeof *ds);
    if (m->b)
        for (size_t c = 0; c < bk; c++)
            if (hard_masked(m, job->causal, i, j0 + c)) ds[c] = 0.0f;
}

/* Backward of pass 1 (s = q·kᵀ·scale) over a tile, from its scaled dS (row stride ld):
 * dQ[i0:] += dS·k[j0:], dK[j0:] += dSᵀ·q[i0:]; tri: a whole causal slice's (mha_sgemm_tri). */
static mha_status score_grads(const bwd_job *job, size_t n, const float *dS, size_t ld, size_t i0, size_t bq,
                              size_t j0, size_t bk, mat q, mat k, bool tri) {
    const size_t D = job->D, nb = job->nb;
    mha_status st = MHA_OK;
    if (job->gq)
        st = mha_sgemm_tri(grad_rows(job->gq, nb, n, i0), (size_t)job->gq->stride[nb], dS, (ptrdiff_t)ld, 1,
                           k.p + (ptrdiff_t)j0 * k.rs, k.rs, k.cs, bq, D, bk, !job->first_write,
                           tri ? MHA_TRI_A_LOWER : MHA_TRI_NONE, 0);
    if (st == MHA_OK && job->gk)
        st = mha_sgemm_tri(grad_rows(job->gk, nb, n, j0), (size_t)job->gk->stride[nb], dS, 1, (ptrdiff_t)ld,
                           q.p + (ptrdiff_t)i0 * q.rs, q.rs, q.cs, bk, D, bq, !job->first_write,
                           tri ? MHA_TRI_A_UPPER : MHA_TRI_NONE, 0);
    return st;
}

/* Whether the plain path must copy each slice's weights into scratch
 * (their columns are not contiguous). */
static bool weights_copied(const bwd_job *job) {
    return job->weights->stride[job->nb + 1] != 1;
}

/* Rows of dS a step: their deltas (mha_row_dots) are computed together. */
enum { DELTA_ROWS = 8 };

/* delta_i = dO_i·out_i for the rows i0..i0+rows-1: rowsum(P∘dP) without P, since out_i = Σ_j P_ij
 * v_j and dP_ij = dO_i·v_j - Dv terms a row instead of S. Summed in double in order
 * (mha_row_dots, or its reference's loop where a row's elements are apart). */
static void out_deltas(float *delta, mat dO, mat o, size_t i0, size_t rows, size_t Dv) {
    if (dO.cs == 1 && o.cs == 1 && dO.rs > 0 && o.rs > 0) {
        mha_row_dots(delta, dO.p + (ptrdiff_t)i0 * dO.rs, (size_t)dO.rs, o.p + (ptrdiff_t)i0 * o.rs, (size_t)o.rs, rows,
                     Dv);
        return;
    }
    for (size_t i = 0; i < rows; i++) {
        double d = 0.0;
        for (size_t c = 0; c < Dv; c++)
            d += (double)dO.p[(ptrdiff_t)(i0 + i) * dO.rs + (ptrdiff_t)c * dO.cs] *
                 o.p[(ptrdiff_t)(i0 + i) * o.rs + (ptrdiff_t)c * o.cs];
        delta[i] = (float)d;
    }
}

/* The next slice's operands, in the order slice_plain reads them, to be fetched while this one is
 * computed: a layer's q, k, v, dO, out and weights (2.4 MiB in nanoGPT's step) outgrow L2, so each
 * slice's reads missed it (the backward in nanoGPT's step: 3.0 -> 2.4 ms on Zen 4, fetched a tenth
 * at a time; at once, 2.7). Only small slices (FETCH_MAX bytes). Rows with contiguous elements
 * only. */
static void next_slice_fetch(mha_fetch *f, const bwd_job *job, size_t n) {
    *f = (mha_fetch){0};
    /* weights, dO and out, v, k, q */
    const size_t floats = job->L * (job->S + 2 * job->Dv + job->D) + job->S * (job->Dv + job->D);
    if (n >= job->batches || floats > FETCH_MAX / sizeof(float)) return;
    const size_t nb = job->nb, group = job->group;
    const mat m[6] = {
        mat_slice(job->weights, nb, n, 1), job->dout ? mat_slice(job->dout, nb, n, 1) : (mat){0},
        mat_slice(job->v, nb, n, group), job->out ? mat_slice(job->out, nb, n, 1) : (mat){0},
        mat_slice(job->k, nb, n, group), mat_slice(job->q, nb, n, 1),
    };
    const size_t rows[6] = {job->L, job->L, job->S, job->L, job->S, job->L};
    const size_t cols[6] = {job->S, job->Dv, job->Dv, job->Dv, job->D, job->D};
    for (int i = 0; i < 6; i++)
        if (m[i].cs == 1 && m[i].rs >= 0) mha_fetch_add(f, m[i].p, rows[i], m[i].rs, cols[i]);
}

/* Plain: one slice, with P from the weights (read in place, or copied to P_copy when strided); dS
 * in an (L,S) buffer dP; the next slice's operands fetched on the way (next). */
static mha_status slice_plain(const bwd_job *job, size_t n, float *dP, float *P_copy, mha_fetch *next) {
    const size_t L = job->L, S = job->S, Dv = job->Dv;
    const size_t nb = job->nb, group = job->group;
    mat q = mat_slice(job->q, nb, n, 1), k = mat_slice(job->k, nb, n, group), v = mat_slice(job->v, nb, n, group);
    mat w = mat_slice(job->weights, nb, n, 1);
    mat dO = job->dout ? mat_slice(job->dout, nb, n, 1) : (mat){0};
    const float *P = w.p;
    size_t ldP = (size_t)w.rs;
    if (P_copy) {
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) P_copy[i * S + j] = w.p[(ptrdiff_t)i * w.rs + (ptrdiff_t)j * w.cs];
        P = P_copy, ldP = S;
    }
    mha_mask_src m = mha_mask_slice(job->mask, nb, n);
    /* rowsum(P∘dP) from the forward's output when it is given and dP is dO·vᵀ alone */
    const bool from_out = job->out && dO.p && !job->dweights;
    /* backward of pass 4: dP = dO·vᵀ (+ the weights' own gradient), dV = Pᵀ·dO, causal without
     * P's zeros (mha_sgemm_tri). All of dP where rowsum(P∘dP) or the mask's gradient reads it (P∘dP
     * past the diagonal is 0 only where dP is finite); else its lower triangle, since dS past the
     * diagonal is set to 0 (softmax_grad_row). */
    const bool lower = job->causal && !m.b && from_out && !job->gm;
    mha_status st = dO.p ? mha_sgemm_tri(dP, S, dO.p, dO.rs, dO.cs, v.p, v.cs, v.rs, L, S, Dv, false,
                                         lower ? MHA_TRI_C_LOWER : MHA_TRI_NONE, 0)
                         : MHA_OK;
    if (!dO.p) memset(dP, 0, L * S * sizeof *dP);
    if (st != MHA_OK) return st;
    const size_t fetch_step = next->total / (L / DELTA_ROWS + 3) + 1;   /* rows at each point */
    mha_fetch_rows(next, fetch_step);
    if (job->dweights) {
        mat dw = mat_slice(job->dweights, nb, n, 1);
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) dP[i * S + j] += dw.p[(ptrdiff_t)i * dw.rs + (ptrdiff_t)j * dw.cs];
    }
    if ((st = value_grad(job, n, P, ldP, 0, L, 0, S, dO, job->causal)) != MHA_OK) return st;
    mha_fetch_rows(next, fetch_step);
    /* backward of passes 3 and 2: dS = P∘(dP - rowsum(P∘dP)), times scale, 0 where masked hard */
    mat o = from_out ? mat_slice(job->out, nb, n, 1) : (mat){0};
    for (size_t i0 = 0; i0 < L; i0 += DELTA_ROWS) {
        const size_t rows = L - i0 < DELTA_ROWS ? L - i0 : DELTA_ROWS;
        float delta[DELTA_ROWS];
        mha_fetch_rows(next, fetch_step);
        if (from_out) out_deltas(delta, dO, o, i0, rows, Dv);
        else mha_row_dots(delta, P + i0 * ldP, ldP, dP + i0 * S, S, rows, S);
        for (size_t r = 0; r < rows; r++)
            softmax_grad_row(job, &m, dP + (i0 + r) * S, P + (i0 + r) * ldP, delta[r], n, i0 + r, 0, S);
    }
    /* backward of pass 1 */
    mha_fetch_rows(next, next->total);
    return score_grads(job, n, dP, S, 0, L, 0, S, q, k, job->causal);
}

/* The forward's passes 1 and 2 over a tile: s = q[i0:i0+bq]·k[j0:j0+bk]ᵀ·scale + mask, causal -inf
 * where j > i; into tile (row stride ld). */
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
            for (size_t j = 0; j < bk; j++) row[j] += mha_mask_value(m, i0 + i, j0 + j);
        if (job->causal)
            for (size_t j = i0 + i + 1 > j0 ? i0 + i + 1 - j0 : 0; j < bk; j++) row[j] = -INFINITY;
    }
    return MHA_OK;
}

/* The key tile width of the fused backward for S keys: whole rows up to FULL_ROWS keys
 * (one sweep: the rows' softmax is exact, as the forward's), else KEY_TILE keys with each row's
 * log-sum-exp found in a first sweep. */
#define FULL_ROWS 4096
#define KEY_TILE 512
static size_t key_tile(size_t S) { return S <= FULL_ROWS ? (S ? S : 1) : KEY_TILE; }

/* The forward's pass 3 for rows that do not fit one tile, in two sweeps over the keys. Sweep 1:
 * each row's log-sum-exp over all S keys, lse = max + log Σ exp(s - max), online over the key
 * tiles: with the running (max, sum) and a tile's (tmax, tsum),
 *   max' = max(max, tmax);   sum' = sum·exp(max - max') + tsum·exp(tmax - max').
 * Sweep 2: P = exp(s - lse) = softmax_tile(s) · tsum·exp(tmax - lse).
 * The exps come from the forward's vectorised softmax kernel: after p = softmax(s) over the tile
 * row, p at the row's max is exp(0)/tsum, so tsum = 1/p[argmax]
 * (to a float's rounding, as the forward's own sum). The plain reference beside it
 * (scalar exps, sweep 1 summing in double) is what tests hold it equal to
 * (mha_sdpa_backward_plain_lse). */
static bool plain_lse = false;

void mha_sdpa_backward_plain_lse(bool on) { plain_lse = on; }

/* One tile row's max (the first NaN, if any: it makes the row NaN). Unless it is -inf
 * (every key masked: the row is left as it is), the row becomes its softmax and *tsum = Σ
 * exp(s - tmax). */
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

/* Sweep 2's P = exp(s - lse) over one tile row, in place. */
static void tile_row_probs(float *p, size_t bk, float lse) {
    double tsum = 0.0, tmax;
    if (plain_lse || !isfinite(lse)) { /* a fully masked row's lse is -inf: P is NaN (the forward's
                                          policy) */
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

/* Sweep 1: lse of the bq rows at i0, tile by tile through tile (TILE_Q x tk). */
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
            /* an all-masked tile adds 0 */
            if (tmax != -INFINITY) lse_merge(&run_max[i], &run_sum[i], tmax, tsum);
        }
    }
    /* fully masked: -inf */
    for (size_t i = 0; i < bq; i++) lse[i] = (float)(run_max[i] + log(run_sum[i]));
    return MHA_OK;
}

/* Fused: one slice, TILE_Q queries at a time; scratch holds two (TILE_Q, key_tile(S)) tiles and
 * 2·TILE_Q floats. */
static mha_status slice_fused(const bwd_job *job, size_t n, float *scratch) {
    const size_t L = job->L, S = job->S, Dv = job->Dv, tk = key_tile(S);
    const bool one_sweep = tk >= S;
    float *sP = scratch, *sdP = scratch + TILE_Q * tk, *lse = sdP + TILE_Q * tk, *delta = lse + TILE_Q;
    const size_t nb = job->nb, group = job->group;
    mat q = mat_slice(job->q, nb, n, 1), k = mat_slice(job->k, nb, n, group), v = mat_slice(job->v, nb, n, group);
    mat dO = mat_slice(job->dout, nb, n, 1), o = mat_slice(job->out, nb, n, 1);
    mha_mask_src m = mha_mask_slice(job->mask, nb, n);
    mha_status st = MHA_OK;
    for (size_t i0 = 0; i0 < L && st == MHA_OK; i0 += TILE_Q) {
        size_t bq = L - i0 < TILE_Q ? L - i0 : TILE_Q;
        if (mha_interrupted()) return mha_fail(MHA_E_INTERRUPTED, "sdpa_backward: interrupted at query %zu of %zu", i0, L);
        out_deltas(delta, dO, o, i0, bq, Dv);
        if (!one_sweep && (st = row_lse(job, lse, sP, tk, q, k, &m, i0, bq)) != MHA_OK) break;
        for (size_t j0 = 0; j0 < S && st == MHA_OK; j0 += tk) {
            size_t bk = S - j0 < tk ? S - j0 : tk;
            /* the forward's passes 1 and 2; backward of pass 4's dP = dO·vᵀ */
            st = score_tile(job, sP, tk, q, k, &m, i0, bq, j0, bk);
            if (st == MHA_OK)
                st = mha_sgemm(sdP, tk, dO.p + (ptrdiff_t)i0 * dO.rs, dO.rs, dO.cs, v.p + (ptrdiff_t)j0 * v.rs, v.cs, v.rs,
                               bq, bk, Dv, false);
            if (st != MHA_OK) break;
            /* the forward's pass 3: P (exact row softmax in one sweep, else exp(s - lse)); backward
             * of passes 3 and 2: dS = P∘(dP - delta)·scale */
            if (one_sweep) mha_softmax_rows(sP, tk, bq, bk); /* the forward's kernel: a fully masked
                                                                row is NaN */
            for (size_t i = 0; i < bq; i++) {
                float *p = sP + i * tk, *ds = sdP + i * tk;
                if (!one_sweep) tile_row_probs(p, bk, lse[i]);
                softmax_grad_row(job, &m, ds, p, delta[i], n, i0 + i, j0, bk);
            }
            /* backward of pass 1, and pass 4's dV = Pᵀ·dO */
            st = score_grads(job, n, sdP, tk, i0, bq, j0, bk, q, k, false);
            if (st == MHA_OK) st = value_grad(job, n, sP, tk, i0, bq, j0, bk, dO, false);
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
        mha_fetch next;
        if (job->weights) next_slice_fetch(&next, job, n + nparts);
        st = job->weights ? slice_plain(job, n, scratch, copied ? scratch + L * S : NULL, &next)
                          : slice_fused(job, n, scratch);
    }
    mha_free(scratch, (floats ? floats : 1) * sizeof *scratch);
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

/* Each gradient wanted (dst[i] not NULL) summed back to its input's shape; on a failure none is
 * handed back. */
/* A gradient's zeros (dv's stay 0 without dout): laid out as its input when that input has the
 * batch's very shape and its rows' elements contiguous (mha_empty_like), so the gradient of heads
 * split from (N,L,E) comes back with the heads side by side, and merging them is a view, not a
 * copy; else contiguous. like NULL: contiguous. */
static mha_status grad_zeros(mha_tensor *g, size_t ndim, const size_t *shape, const mha_tensor *like, bool zero) {
    bool as_like = like && like->ndim == ndim && like->stride[ndim - 1] == 1;
    for (size_t d = 0; as_like && d < ndim; d++) as_like = like->shape[d] == shape[d];
    const char *name = "sdpa_backward";
    mha_status st = as_like ? mha_empty_like_named(g, like, name) : mha_empty_named(g, MHA_FLOAT32, ndim, shape, name);
    if (st == MHA_OK && as_like && g->stride[ndim - 1] != 1) { /* a row's elements apart */
        mha_release(g);
        st = mha_empty_named(g, MHA_FLOAT32, ndim, shape, name);
    }
    if (st == MHA_OK && zero) memset(g->storage->data, 0, g->storage->nbytes);
    return st;
}

static mha_status sum_to_inputs(mha_tensor *const dst[4], const mha_tensor *const grads[4],
                                const mha_tensor *const like[4]) {
    for (size_t i = 0; i < 4; i++) {
        if (!dst[i]) continue;
        mha_status st = mha_sum_to(dst[i], grads[i], like[i]->ndim, like[i]->shape);
        if (st != MHA_OK) {
            for (size_t j = 0; j < i; j++)
                if (dst[j]) mha_release(dst[j]);
            return st;
        }
    }
    return MHA_OK;
}

mha_status mha_sdpa_backward(mha_tensor *dq, mha_tensor *dk, mha_tensor *dv, mha_tensor *dmask, const mha_tensor *dout,
                             const mha_tensor *dweights, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                             const mha_tensor *weights, const mha_tensor *out, const mha_sdpa_options *opt) {
    const mha_sdpa_options defaults = {0};
    if (!opt) opt = &defaults;
    const mha_tensor *const all[8] = {q, k, v, opt->attn_mask, dout, dweights, weights, out};
    mha_sdpa_sizes z;
    mha_status st = mha_sdpa_backward_check(&z, all, opt->enable_gqa, dmask != NULL);
    if (st != MHA_OK) return st;
    const size_t L = z.L, S = z.S, D = z.D, Dv = z.Dv, nb = z.nb;
    const float scale = opt->scale != 0.0f ? opt->scale : (float)(1.0 / sqrt((double)D));
    /* every input expanded to the batch: q, k, v, the mask, dout, dweights, weights, out */
    mha_tensor e[8], g[4]; /* g: the gradients of q, k, v, the mask, over the whole batch */
    for (int i = 0; i < 8; i++) e[i] = MHA_TENSOR_EMPTY;
    for (int i = 0; i < 4; i++) g[i] = MHA_TENSOR_EMPTY;
    const size_t rows[8] = {L, S, S, L, L, L, L, L}, cols[8] = {D, D, Dv, S, Dv, S, S, Dv};
    const char *names[8] = {"q", "k", "v", "attn_mask", "dout", "dweights", "weights", "out"};
    static const int order[8] = {0, 1, 2, 4, 5, 6, 7, 3}; /* the order the arguments are checked
                                                             in */
    for (int o = 0; o < 8 && st == MHA_OK; o++) {
        const int i = order[o];
        if (all[i])
            st = mha_batch_expand(&e[i], all[i], nb, z.bshape, i == 1 || i == 2 ? z.group : 1, rows[i], cols[i],
                                  "sdpa_backward", names[i]);
    }
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, z.bshape, nb * sizeof *shape);
    mha_tensor *const dst[4] = {dq, dk, dv, dmask};
    /* the plain path writes every element of dQ, dK, dV and the mask's gradient once: only what the
     * fused path accumulates, or nothing computes, starts from zeros (the same bits: a sum that
     * starts from +0 is never -0) */
    const bool first_write = weights && dout && L && S && prod(z.bshape, 0, nb);
    for (int i = 0; i < 4 && st == MHA_OK; i++) {
        shape[nb] = rows[i], shape[nb + 1] = cols[i];
        if (dst[i])
            st = grad_zeros(&g[i], nb + 2, shape, i < 3 && (i == 0 || z.group == 1) ? all[i] : NULL, !first_write);
    }
    if (st == MHA_OK && (dout || dweights)) {
        bwd_job job = {
            .q = &e[0], .k = &e[1], .v = &e[2], .dout = dout ? &e[4] : NULL, .dweights = dweights ? &e[5] : NULL,
            .weights = weights ? &e[6] : NULL, .out = out ? &e[7] : NULL, .mask = opt->attn_mask ? &e[3] : NULL,
            .gq = dq ? &g[0] : NULL, .gk = dk ? &g[1] : NULL, .gv = dv && dout ? &g[2] : NULL,
            .gm = dmask ? mha_f32(&g[3]) : NULL, .first_write = first_write,
            .nb = nb, .batches = prod(z.bshape, 0, nb), .group = z.group, .causal = opt->is_causal, .scale = scale,
            .L = L, .S = S, .D = D, .Dv = Dv,
        };
        atomic_init(&job.failed, false);
        const double flops = 2.0 * (double)job.batches * (double)L * (double)S * (double)(3 * D + 2 * Dv);
        if (job.batches && L && S) st = mha_run_parts(bwd_part, &job, mha_kernels_parts(job.batches, flops));
    }
    /* GQA: each K/V head's gradient is the sum over the query heads of its group */
    for (int i = 1; i <= 2 && st == MHA_OK && z.group > 1; i++) {
        mha_tensor summed = MHA_TENSOR_EMPTY;
        if (dst[i] && (st = mha_sdpa_group_sum(&summed, &g[i], nb, z.group)) == MHA_OK) {
            mha_release(&g[i]);
            g[i] = summed;
        }
    }
    const mha_tensor *const grads[4] = {&g[0], &g[1], &g[2], &g[3]}, *const like[4] = {q, k, v, opt->attn_mask};
    if (st == MHA_OK) st = sum_to_inputs(dst, grads, like);
    for (int i = 0; i < 8; i++) mha_release(&e[i]);
    for (int i = 0; i < 4; i++) mha_release(&g[i]);
    return st;
}

/* ---- the graph node: mha_ag_sdpa records the forward; its backward runs the backward above
 * ---- */
/* The output's node backpropagates through the saved weights (plain) or, when the forward ran
 * fused, by recomputing them tile by tile (mha_sdpa_backward). Weights returned to the user get a
 * node of their own: gradients through both are summed by the engine, as the math is linear in
 * them. */

/* Saved: q, k, v, then the weights (or, fused, the output), then the mask
 * (slot 4, empty when none); from the weights, the output in slot 5. */
typedef struct sdpa_node {
    mha_node base;
    bool is_causal, enable_gqa;
    float scale;
    bool from_weights;         /* the output's node: slot 3 holds the weights (backward from them),
                                  else the output */
} sdpa_node;

static mha_sdpa_options node_sdpa_options(const mha_node *n) {
    const sdpa_node *node = (const sdpa_node *)n;
    mha_sdpa_options opt = {.attn_mask = n->saved[4].storage ? &n->saved[4] : NULL, .is_causal = node->is_causal,
                            .scale = node->scale, .enable_gqa = node->enable_gqa};
    return opt;
}

static mha_status sdpa_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    mha_sdpa_options opt = node_sdpa_options(n);
    const bool from_weights = ((const sdpa_node *)n)->from_weights;
    const mha_tensor *weights = from_weights ? &n->saved[3] : NULL, *out = from_weights ? &n->saved[5] : &n->saved[3];
    return mha_sdpa_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                             n->inputs[2] ? &grads[2] : NULL, n->inputs[3] ? &grads[3] : NULL, g, NULL, &n->saved[0], &n->saved[1], &n->saved[2],
                             weights, out, &opt);
}

/* the weights' own node: only q and k get a gradient through the softmax (v's is zeros) */
static mha_status sdpa_weights_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    mha_sdpa_options opt = node_sdpa_options(n);
    return mha_sdpa_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                             n->inputs[2] ? &grads[2] : NULL, n->inputs[3] ? &grads[3] : NULL, NULL, g,
                             &n->saved[0], &n->saved[1], &n->saved[2], &n->saved[3], NULL, &opt);
}

static void save_sdpa(mha_node *n, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v, const mha_tensor *kept,
                      const mha_sdpa_options *opt) {
    sdpa_node *node = (sdpa_node *)n;
    mha_ag_save(n, q);
    mha_ag_save(n, k);
    mha_ag_save(n, v);
    mha_ag_save(n, kept);
    mha_ag_save_if(n, opt ? opt->attn_mask : NULL, opt && opt->attn_mask);   /* slot 4 */
    node->is_causal = opt && opt->is_causal;
    node->enable_gqa = opt && opt->enable_gqa;
    node->scale = opt ? opt->scale : 0.0f;
}

/* Fused or not, a forward whose weights fit this budget keeps them for its backward, as torch's
 * math path does: the backward from kept weights does four (L,S)-sized products per slice
 * (dP, dV, dQ, dK), the fused one five (it recomputes the scores first). Above it the fused path
 * keeps memory O(L·D). The trade at MultiheadAttention E=512 H=8 L=2048 (128 MiB of weights), one
 * thread, min of 3, load ~2: keeping them makes forward + backward 1460 ms against 1814 fused, and
 * the recording forward alone 487 ms against 449 fused (no_grad 439) - 24% off the training step
 * for 8% on a forward nobody backpropagates through, so they are kept. */
static size_t keep_budget = (size_t)256 << 20;

size_t mha_ag_sdpa_keep_budget(size_t bytes) {
    size_t was = keep_budget;
    keep_budget = bytes;
    return was;
}

/* The bytes of the (batch..., L, S) weights of q (..., L, D), k (..., S, D), v and the mask, batch
 * dims broadcast (with gqa, k's and v's heads dim left out: q's gives the heads); SIZE_MAX when the
 * shapes do not fit (mha_sdpa reports that). */
static size_t weights_bytes(const mha_tensor *q, const mha_tensor *k, const mha_tensor *v, const mha_tensor *mask,
                            bool gqa) {
    const mha_tensor *all[4] = {q, k, v, mask};
    size_t nb = 0, bshape[MHA_MAX_DIMS];
    for (int i = 0; i < 4; i++) {
        const mha_tensor *t = all[i];
        if (!t || t->ndim < 2) { if (i < 3) return SIZE_MAX; continue; }
        size_t lead = t->ndim - 2;
        while (nb < lead) bshape[MHA_MAX_DIMS - ++nb] = 1;
        for (size_t d = 0; d < lead; d++) { /* aligned on the right, as broadcasting */
            size_t at = MHA_MAX_DIMS - (lead - d);
            if ((i == 1 || i == 2) && gqa && d == lead - 1) continue;
            if (bshape[at] == 1) bshape[at] = t->shape[d];
            else if (t->shape[d] != 1 && t->shape[d] != bshape[at]) return SIZE_MAX;
        }
    }
    double bytes = (double)q->shape[q->ndim - 2] * (double)k->shape[k->ndim - 2] * sizeof(float);
    for (size_t d = MHA_MAX_DIMS - nb; d < MHA_MAX_DIMS; d++) bytes *= (double)bshape[d];
    return bytes < (double)SIZE_MAX ? (size_t)bytes : SIZE_MAX;
}

mha_status mha_ag_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                       const mha_tensor *v, const mha_sdpa_options *opt) {
    return mha_ag_sdpa_lse(out, weights, NULL, q, k, v, opt);
}

mha_status mha_ag_sdpa_lse(mha_tensor *out, mha_tensor *weights, mha_tensor *lse, const mha_tensor *q,
                           const mha_tensor *k, const mha_tensor *v, const mha_sdpa_options *opt) {
    /* a float mask that requires grad is the fourth input (torch differentiates an added mask
     * too) */
    const mha_tensor *mask = opt ? opt->attn_mask : NULL;
    const mha_tensor *in[4] = {q, k, v, mask && mask->dtype == MHA_FLOAT32 ? mask : NULL};
    if (!mha_ag_wants(in, 4)) return mha_sdpa_lse(out, weights, lse, q, k, v, opt);
    /* weights not asked for: kept for the backward all the same when they fit the budget */
    mha_tensor kept = MHA_TENSOR_EMPTY;
    const bool keep = !weights && weights_bytes(q, k, v, mask, opt && opt->enable_gqa) <= keep_budget;
    mha_status st = mha_sdpa_lse(out, weights ? weights : keep ? &kept : NULL, lse, q, k, v, opt);
    if (st != MHA_OK) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(sdpa_node), out, "scaled_dot_product_attention", sdpa_node_backward, in, 4)) !=
        MHA_OK) {
        if (weights) mha_release(weights);
        if (lse) mha_release(lse);
        mha_release(&kept);
        return st;
    }
    ((sdpa_node *)n)->from_weights = weights != NULL || keep; /* else fused, from the saved
                                                                 output */
    save_sdpa(n, q, k, v, weights ? weights : keep ? &kept : out, opt);
    if (weights || keep) mha_ag_save(n, out); /* slot 5: rowsum(P∘dP) as dO·out */
    mha_release(&kept);
    if (weights) {
        mha_node *wn;
        if ((st = mha_ag_record(&wn, sizeof(sdpa_node), weights, "scaled_dot_product_attention", sdpa_weights_node_backward,
                                in, 4)) != MHA_OK) {
            mha_release(out);
            if (lse) mha_release(lse);
            return st;
        }
        save_sdpa(wn, q, k, v, weights, opt);
    }
    return MHA_OK;
}
