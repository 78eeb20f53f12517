/* core/kernels/attention_fused.c - the fused attention kernel (FlashAttention's method on a
 * CPU): query tiles against key tiles on kernels.c's packing and register tiles. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_isa.h"
#include "kernels/kernels_testing.h"

/* ---------------------------------------------------------------------------------------------
 * Fused attention (the method of FlashAttention, on a CPU): for a tile of queries, walk the keys
 * tile by tile keeping per query the running max m, the running sum l and the accumulated
 * sum_j exp(s_j - m)·v_j; when a tile raises m, what came before is rescaled by exp(m_old - m_new).
 * At the end out = acc / l. The (L,S) scores never exist: only one panel of them, a key tile by NR
 * queries, which is scored, exponentiated and added into acc before the next panel is scored.
 *
 * The block is computed transposed, keys down and queries across (scoresᵀ = K·Qᵀ), so that:
 *   - the softmax along the keys of one query is a column: the max and sum are plain vector ops;
 *   - the register tile writes scoresᵀ straight into the panel order the second product reads as
 *     its B operand: accᵀ (Dv, queries) += Vᵀ · P, with P = exp(scoresᵀ - m) — no transposition.
 * ------------------------------------------------------------------------------------------- */

enum {
    QUERY_TILE = 512, /* queries per tile (a multiple of every NR); Q, acc and m,l are this wide
                       * (128 was 20% slower when each tile packed K and V itself) */
    KEY_TILE = 256    /* keys per tile; K, V and the score panel are this deep (panel: 32 KB at NR =
                         32) */
};

/* Adds the additive mask and hides the future (key > query) in one (nk keys, nr queries) panel. */
static void mask_panel(float *scores, size_t nr, const mha_attn_args *args, size_t q0, size_t nq, size_t k0, size_t nk) {
    if (args->mask) {
        for (size_t p = 0; p < nk; p++) {
            const float *mrow = args->mask + (ptrdiff_t)(k0 + p) * args->mask_cs + (ptrdiff_t)q0 * args->mask_rs;
            for (size_t j = 0; j < nq; j++) scores[p * nr + j] += mrow[(ptrdiff_t)j * args->mask_rs];
        }
    }
    if (args->causal && k0 + nk > q0 + 1) {
        for (size_t p = 0; p < nk; p++)
            for (size_t j = 0; j < nq && q0 + j < k0 + p; j++) scores[p * nr + j] = -INFINITY;
    }
}

/* Keys per tile: KEY_TILE where MR is a multiple of 4 (the last tile's panels are padded to whole
 * MR rows), else the multiple of MR below it (252 at MR = 6). Where the keys are cut sets the
 * online softmax's bits, so the 4-, 8- and 12-row tiles cut them alike. */
static size_t key_tile_cap(const kernel_isa *k) { return k->mr % 4 == 0 ? KEY_TILE : KEY_TILE / k->mr * k->mr; }

/* Queries per tile: QUERY_TILE, or all of them rounded up to whole panels when fewer. */
static size_t query_tile(const kernel_isa *k, size_t L) { return min_size(QUERY_TILE, round_up(L, k->nr)); }

static bool one_query_on = true;

void mha_kernels_set_one_query(bool on) { one_query_on = on; }

typedef struct fused_job {
    const mha_attn_args *args;
    /* K and V packed once for every query tile (fused_pack_tile on each key tile), or NULL: each
     * query tile packs its own. Key tile t's panels at kp + t·kp_stride and vt + t·vt_stride. */
    const float *kp, *vt;
    size_t kp_stride, vt_stride;
} fused_job;

/* The fused path's sizes for args on the set k: queries and keys per tile, and the rows of the
 * key and value panels, padded to whole MR rows. */
typedef struct fused_sizes {
    size_t bq, bk, bk_pad, dv_pad;
} fused_sizes;

static fused_sizes fused_sizes_for(const kernel_isa *k, const mha_attn_args *args) {
    fused_sizes z;
    z.bq = query_tile(k, args->L);
    z.bk = min_size(key_tile_cap(k), round_up(args->S, k->mr));
    z.bk_pad = round_up(z.bk, k->mr);
    z.dv_pad = round_up(args->Dv, k->mr);
    return z;
}

/* Key tile k0's K as A panels (keys, D) into kp and its Vᵀ as A panels (Dv, keys) into vt. */
static void fused_pack_tile(const kernel_isa *k, float *kp, float *vt, const mha_attn_args *args, size_t k0,
                            size_t nk) {
    mha_pack_a(k, kp, args->k + k0 * args->ld_k, (ptrdiff_t)args->ld_k, 1, nk, args->D, k->mr);
    mha_pack_a(k, vt, args->v + k0 * args->ld_v, 1, (ptrdiff_t)args->ld_v, args->Dv, nk, k->mr);
}

/* Query tiles part, part + nparts, part + 2·nparts, ... (every nparts-th, so that under a causal
 * mask, where later tiles see more keys, the parts get even work), with scratch of its own. */
static mha_status fused_part(void *ctx, size_t part, size_t nparts) {
    const fused_job *job = ctx;
    const mha_attn_args *args = job->args;
    const size_t L = args->L, S = args->S, D = args->D, Dv = args->Dv;
    const kernel_isa *k = mha_kernels_current();
    const size_t mr = k->mr, nr = k->nr;
    const fused_sizes z = fused_sizes_for(k, args);
    const size_t bq = z.bq, bk = z.bk, bk_pad = z.bk_pad, dv_pad = z.dv_pad;

    enum { QT, KP, VT, SC, ACC, M, LSUM, ALPHA, NBUF };
    float *bufs[NBUF];
    size_t sizes[NBUF] = {
        [QT] = D * bq,          /* scale·Qᵀ (D, queries), B panels */
        [KP] = job->kp ? 0 : bk_pad * D,   /* K (keys, D), A panels */
        [VT] = job->kp ? 0 : dv_pad * bk,  /* Vᵀ (Dv, keys), A panels */
        [SC] = bk_pad * nr,     /* scoresᵀ then P (keys, NR queries): one B panel, used up before
                                   the next */
        [ACC] = dv_pad * bq,    /* accᵀ (Dv, queries), row-major */
        [M] = bq, [LSUM] = bq, [ALPHA] = bq};
    mha_scratch s;
    if (!mha_scratch_alloc(&s, bufs, sizes, NBUF))
        return mha_fail(MHA_E_NOMEM, "attention: q (%zu,%zu), k (%zu,%zu): out of memory for tiles", L, D, S, D);
    float *qt = bufs[QT], *panel = bufs[SC], *acc = bufs[ACC];
    float *m = bufs[M], *l = bufs[LSUM], *alpha = bufs[ALPHA];
    mha_status status = MHA_OK;

    for (size_t q0 = part * bq; q0 < L; q0 += nparts * bq) {
        const size_t nq = min_size(bq, L - q0), nq_pad = round_up(nq, nr);
        mha_pack_b(k, qt, args->q + q0 * args->ld_q, 1, (ptrdiff_t)args->ld_q, D, nq, args->scale);
        for (size_t j = 0; j < nq_pad; j++) { m[j] = -INFINITY; l[j] = 0.0f; }
        memset(acc, 0, dv_pad * bq * sizeof(float));
        /* with causal, the last query of the tile sees keys up to q0 + nq - 1 */
        const size_t key_end = args->causal ? min_size(S, q0 + nq) : S;

        for (size_t k0 = 0; k0 < key_end; k0 += bk) {
            if (mha_interrupted()) {
                status = mha_fail(MHA_E_INTERRUPTED, "attention: q (%zu,%zu), k (%zu,%zu): interrupted", L, D, S, D);
                goto done;
            }
            const size_t nk = min_size(bk, key_end - k0), nk_pad = round_up(nk, mr);
            const float *kp = bufs[KP], *vt = bufs[VT];
            if (job->kp) { /* packed once, whole key tiles: this one's panels */
                kp = job->kp + k0 / bk * job->kp_stride;
                vt = job->vt + k0 / bk * job->vt_stride;
            } else {
                fused_pack_tile(k, bufs[KP], bufs[VT], args, k0, nk);
            }

            for (size_t j0 = 0; j0 < nq_pad; j0 += nr) {
                /* pass 1: scoresᵀ = K·(scale·Qᵀ) */
                for (size_t i0 = 0; i0 < nk_pad; i0 += mr)
                    mha_tile_rows(k, nk - i0, D, kp + i0 * D, qt + j0 * D, panel + i0 * nr, nr, false, NULL, NULL);
                /* pass 2: mask; pass 3: online softmax, P = exp(scoresᵀ - m) */
                if (args->mask || args->causal)
                    mask_panel(panel, nr, args, q0 + j0, j0 < nq ? min_size(nr, nq - j0) : 0, k0, nk);
                k->softmax_step(panel, nk, m + j0, l + j0, alpha + j0);
                /* pass 4: accᵀ = accᵀ·diag(alpha) + Vᵀ·P, the rescaling done by the tile as it
                 * adds */
                for (size_t i0 = 0; i0 < dv_pad; i0 += mr)
                    mha_tile_rows(k, Dv - i0, nk, vt + i0 * nk, panel, acc + i0 * bq + j0, bq, true, alpha + j0, NULL);
            }
        }
        /* out = acc / l; a query that saw no key (l = 0) is NaN, like softmax of all -inf */
        for (size_t i = 0; i < nq; i++) {
            float *row = args->out + (q0 + i) * args->ld_out;
            float inv = l[i] > 0.0f ? 1.0f / l[i] : NAN;
            for (size_t d = 0; d < Dv; d++) row[d] = acc[d * bq + i] * inv;
        }
        /* the row's log-sum-exp: Σ_j exp(s_j) = exp(m)·l */
        for (size_t i = 0; args->lse && i < nq; i++)
            args->lse[q0 + i] = l[i] > 0.0f ? (float)((double)m[i] + log((double)l[i])) : -INFINITY;
    }
done:
    mha_scratch_free(&s);
    return status;
}

mha_status mha_attention_fused(const mha_attn_args *args) {
    const size_t L = args->L, S = args->S, Dv = args->Dv;
    if (L == 0 || Dv == 0) return MHA_OK;
    if (S == 0) { /* no keys: an empty weighted sum, as the reference path gives; log 0 = -inf */
        for (size_t i = 0; i < L; i++) memset(args->out + i * args->ld_out, 0, Dv * sizeof(float));
        for (size_t i = 0; args->lse && i < L; i++) args->lse[i] = -INFINITY;
        return MHA_OK;
    }
    const kernel_isa *k = mha_kernels_current();
    const bool fits = args->D <= MHA_ONE_QUERY_DIM && Dv <= MHA_ONE_QUERY_DIM;
    if (L == 1 && one_query_on && k->attend_one && fits) {
        k->attend_one(args, key_tile_cap(k)); /* a decoding step: K and V read in place */
        return MHA_OK;
    }
    const fused_sizes z = fused_sizes_for(k, args);
    const size_t tiles = (L + z.bq - 1) / z.bq;
    const size_t nparts = mha_kernels_parts(tiles, 2.0 * (double)L * (double)S * (double)(args->D + Dv));
    fused_job job = {args, NULL, NULL, 0, 0};
    /* Several query tiles: K and V packed once for all of them, not once per tile (L = 2048 in
     * tiles of 512 packed them four times: 2% of the time) */
    mha_scratch s = {NULL, 0};
    if (tiles > 1) {
        const size_t key_tiles = (S + z.bk - 1) / z.bk;
        job.kp_stride = z.bk_pad * args->D, job.vt_stride = z.dv_pad * z.bk;
        float *bufs[2];
        const size_t sizes[2] = {key_tiles * job.kp_stride, key_tiles * job.vt_stride};
        if (!mha_scratch_alloc(&s, bufs, sizes, 2))
            return mha_fail(MHA_E_NOMEM, "attention: q (%zu,%zu), k (%zu,%zu): out of memory for packing K and V", L,
                            args->D, S, args->D);
        for (size_t t = 0; t < key_tiles; t++)
            fused_pack_tile(k, bufs[0] + t * job.kp_stride, bufs[1] + t * job.vt_stride, args, t * z.bk,
                            min_size(z.bk, S - t * z.bk));
        job.kp = bufs[0], job.vt = bufs[1];
    }
    mha_status st = mha_run_parts(fused_part, &job, nparts);
    if (job.kp) mha_scratch_free(&s);
    return st;
}
