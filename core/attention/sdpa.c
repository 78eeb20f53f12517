/* core/attention/sdpa.c - scaled dot-product attention: the plain per-head path (scores, mask, softmax, ·V, every
 * intermediate kept) that is the reference of the fused online-softmax kernel, and mha_sdpa over batches. */
#include "attention/sdpa.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "attention/attention_internal.h"
#include "kernels/kernels.h"

/* ---------------------------------------------------------------------------------------------
 * One (L,S) slice of attention, the plain way. Shared by mha_sdpa (when weights are wanted) and
 * MultiheadAttention, so what the trace records is what produced the output; on the reference
 * kernels it is the reference the fused kernel is tested against.
 * ------------------------------------------------------------------------------------------- */

static mha_status sgemm_ref(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                            ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate) {
    mha_sgemm_ref(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, accumulate);
    return MHA_OK;
}

const mha_attn_kernels mha_attn_fast = {mha_sgemm, mha_softmax_rows_sum};
const mha_attn_kernels mha_attn_ref = {sgemm_ref, mha_softmax_rows_sum_ref};

static float mask_at(const mha_mask_src *m, size_t i, size_t j) {
    ptrdiff_t at = (ptrdiff_t)i * m->rs + (ptrdiff_t)j * m->cs;
    if (m->f) return m->f[at];
    return m->b[at] ? -INFINITY : 0.0f;
}

mha_status mha_attention_plain(const mha_head_args *job, const mha_attn_kernels *kernels, float *weights,
                               float *scaled, float *masked) {
    const size_t L = job->L, S = job->S;
    bool has_attn = job->attn.f || job->attn.b, has_pad = job->pad.f || job->pad.b;

    /* pass 1: scaled = q·kᵀ·scale (kᵀ is k read with its strides swapped) */
    mha_status st = job->k_packed && kernels == &mha_attn_fast
                        ? mha_sgemm_packed(weights, S, job->q, (ptrdiff_t)job->ld_q, 1, job->k_packed, L, S, job->D, false)
                        : kernels->matmul(weights, S, job->q, (ptrdiff_t)job->ld_q, 1, job->k, 1, (ptrdiff_t)job->ld_k,
                                          L, S, job->D, false);
    if (st != MHA_OK) return st;
    if (job->scale != 1.0f)
        for (size_t n = 0; n < L * S; n++) weights[n] *= job->scale;
    if (scaled) memcpy(scaled, weights, L * S * sizeof *weights);

    /* pass 2: masked = scaled + (attn_mask + key padding), then -inf where j > i (causal) */
    if (has_attn || has_pad || job->causal) {
        for (size_t i = 0; i < L; i++) {
            float *row = weights + i * S;
            for (size_t j = 0; j < job->mask_cols; j++) {
                if (has_attn || has_pad) {
                    float m = has_attn ? mask_at(&job->attn, i, j) : 0.0f;
                    if (has_pad) m = has_attn ? m + mask_at(&job->pad, i, j) : mask_at(&job->pad, i, j);
                    row[j] += m;
                }
                if (job->causal && j > job->row0 + i) row[j] = -INFINITY;
            }
        }
    }
    if (masked) memcpy(masked, weights, L * S * sizeof *weights);

    /* pass 3: weights = softmax(masked) along each row (and weights_sum += weights, as they are written) */
    kernels->softmax_rows(weights, S, L, S, job->weights_sum, job->ld_sum);

    /* pass 4: out = weights·v */
    if (job->v_packed && kernels == &mha_attn_fast)
        return mha_sgemm_packed(job->out, job->ld_out, weights, (ptrdiff_t)S, 1, job->v_packed, L, job->Dv, S, false);
    return kernels->matmul(job->out, job->ld_out, weights, (ptrdiff_t)S, 1, job->v, (ptrdiff_t)job->ld_v, 1, L,
                           job->Dv, S, false);
}

/* ---------------------------------------------------------------------------------------------
 * scaled dot-product attention with broadcast leading dims
 * ------------------------------------------------------------------------------------------- */

/* Strides of t's leading dims (all but its last `core`) right-aligned to the batch shape (nb dims);
 * a dim of size 1 broadcasts (stride 0). False when a size is neither 1 nor the batch size. */
static bool batch_strides(ptrdiff_t *bstride, const mha_tensor *t, size_t core, size_t nb, const size_t *bshape) {
    size_t lead = t->ndim > core ? t->ndim - core : 0;
    for (size_t d = 0; d < nb; d++) {
        bstride[d] = 0;
        if (d + lead < nb) continue;
        size_t td = d + lead - nb;
        if (t->shape[td] == bshape[d]) bstride[d] = bshape[d] == 1 ? 0 : t->stride[td];
        else if (t->shape[td] != 1) return false;
    }
    return true;
}

/* Grows the batch shape (nb dims, right-aligned) to take in t's leading dims. */
static bool batch_grow(size_t *nb, size_t *bshape, const mha_tensor *t, size_t core) {
    size_t lead = t->ndim > core ? t->ndim - core : 0;
    if (lead > *nb) {
        memmove(bshape + (lead - *nb), bshape, *nb * sizeof *bshape);
        for (size_t d = 0; d < lead - *nb; d++) bshape[d] = 1;
        *nb = lead;
    }
    for (size_t d = 0; d < lead; d++) {
        size_t bd = *nb - lead + d, size = t->shape[d];
        if (bshape[bd] == 1) bshape[bd] = size;
        else if (size != 1 && size != bshape[bd]) return false;
    }
    return true;
}

static ptrdiff_t batch_offset(size_t flat, size_t nb, const size_t *bshape, const ptrdiff_t *bstride) {
    ptrdiff_t off = 0;
    for (size_t d = nb; d-- > 0;) {
        off += (ptrdiff_t)(flat % bshape[d]) * bstride[d];
        flat /= bshape[d];
    }
    return off;
}

/* A bool mask as the float mask it stands for (true -> -inf, false -> 0), of the mask's own size: a
 * broadcast (stride 0) dimension stays broadcast, so an expanded key padding row stays one row. */
static mha_status additive_mask(mha_tensor *out, const mha_tensor *mask) {
    mha_tensor compact = MHA_TENSOR_EMPTY;
    size_t shape[MHA_MAX_DIMS];
    for (size_t d = 0; d < mask->ndim; d++) shape[d] = mask->stride[d] == 0 ? 1 : mask->shape[d];
    mha_status st = mha_empty_named(&compact, MHA_FLOAT32, mask->ndim, shape, "sdpa");
    if (st != MHA_OK) return st;
    float *dst = mha_f32(&compact);
    const bool *src = mha_bool(mask);
    for (size_t n = 0, total = mha_numel(&compact); n < total; n++) {
        ptrdiff_t at = 0;
        for (size_t d = mask->ndim, rest = n; d-- > 0; rest /= shape[d]) at += (ptrdiff_t)(rest % shape[d]) * mask->stride[d];
        dst[n] = src[at] ? -INFINITY : 0.0f;
    }
    st = mha_expand(out, &compact, mask->ndim, mask->shape);
    mha_release(&compact);
    return st;
}

/* q, k or v as the slices read them: shared when each row's elements are contiguous and rows do not overlap (a
 * head split's permuted view, say: its rows E apart), else a contiguous copy. */
static mha_status rows_readable(mha_tensor *out, const mha_tensor *t) {
    const size_t d = t->ndim;
    if (t->stride[d - 1] == 1 && t->stride[d - 2] >= (ptrdiff_t)t->shape[d - 1]) return mha_share(out, t);
    return mha_contiguous_named(out, t, "sdpa");
}

/* Whether t is dense - a permutation of a contiguous tensor - with order its dims by falling stride. */
static bool dense_order(size_t *order, const mha_tensor *t) {
    for (size_t d = 0; d < t->ndim; d++) order[d] = d;
    for (size_t i = 1; i < t->ndim; i++)
        for (size_t j = i; j > 0 && t->stride[order[j]] > t->stride[order[j - 1]]; j--) {
            size_t was = order[j];
            order[j] = order[j - 1], order[j - 1] = was;
        }
    ptrdiff_t expected = 1;
    for (size_t p = t->ndim; p-- > 0;) {
        const size_t d = order[p];
        if (t->shape[d] != 1 && t->stride[d] != expected) return false;
        expected *= (ptrdiff_t)t->shape[d];
    }
    return true;
}

/* An empty float tensor of like's shape, laid out as like is when like is dense (as torch's empty_like keeps a
 * dense tensor's strides), else contiguous. The output of heads split by a permuted view (N,H,L,D) of (N,L,E) is
 * then written with the heads side by side, so merging them back, (N,L,H,D) -> (N,L,E), is a view. */
static mha_status empty_like(mha_tensor *out, const mha_tensor *like) {
    size_t order[MHA_MAX_DIMS], inverse[MHA_MAX_DIMS], block_shape[MHA_MAX_DIMS];
    if (!dense_order(order, like)) return mha_empty_named(out, MHA_FLOAT32, like->ndim, like->shape, "sdpa");
    for (size_t p = 0; p < like->ndim; p++) block_shape[p] = like->shape[order[p]], inverse[order[p]] = p;
    mha_tensor block = MHA_TENSOR_EMPTY;
    mha_status st = mha_empty_named(&block, MHA_FLOAT32, like->ndim, block_shape, "sdpa");
    if (st == MHA_OK) st = mha_permute(out, &block, inverse);
    mha_release(&block);
    return st;
}

/* Kept weights go by blocks of a multiple of KEPT_BLOCK rows: a multiple of every register tile's rows (4, 6, 8),
 * so each block splits into the tiles a whole-slice product would use. */
enum { KEPT_BLOCK = 48 };

/* The batch loop of mha_sdpa: each (broadcast) batch index is one attention slice writing its own
 * part of the result (and weights), so with MHA_THREADS the slices are shared out over threads. */
typedef struct sdpa_job {
    const mha_tensor *q;                  /* for messages */
    float *result, *weights;              /* (batches,L,Dv), (batches,L,S) or NULL for the fused path */
    const ptrdiff_t *rs;                  /* batch strides of the result (laid out as q, or contiguous) */
    size_t ld_out;                        /* its row stride */
    const float *q_data, *k_data, *v_data;
    const ptrdiff_t *qs, *ks, *vs, *ms;   /* batch strides of q, k, v, the mask */
    size_t nb, batches;
    const size_t *bshape;
    mha_mask_src mask;                        /* rs, cs, and its data at batch offset 0; none: f = b = NULL */
    bool causal;
    float scale;
    size_t L, S, D, Dv;
    size_t ld_q, ld_k, ld_v;              /* row strides of q, k, v (their rows are contiguous) */
    size_t block_rows;                    /* weights kept: queries per block of rows (kept_slice), 0: whole slices */
    size_t packed_k, packed_v;            /* floats of a slice's kᵀ and v packed, per part */
    atomic_bool failed;                   /* a part failed: the others stop at their next slice */
} sdpa_job;

/* The kept weights' slice a block of rows at a time: its kᵀ and v packed once (into packed), then each block's
 * scores, softmax and ·v while the block (block_rows x S) is in L2 - rather than the (L,S) weights written, read
 * by the softmax and read again to be packed for ·v from memory. The same sums in the same order as one call
 * over the slice (mha_sgemm_packed: the very bits of mha_sgemm's packed path; blocks in whole register tiles). */
static mha_status kept_slice(const sdpa_job *job, const mha_head_args *slice, float *weights, float *packed) {
    const size_t L = job->L, S = job->S;
    mha_head_args head = *slice;
    head.k_packed = packed, head.v_packed = packed + job->packed_k;
    mha_sgemm_pack_b(packed, slice->k, 1, (ptrdiff_t)slice->ld_k, S, job->D);                   /* kᵀ (D,S) */
    mha_sgemm_pack_b(packed + job->packed_k, slice->v, (ptrdiff_t)slice->ld_v, 1, job->Dv, S);  /* v (S,Dv) */
    mha_status st = MHA_OK;
    for (size_t row0 = 0; row0 < L && st == MHA_OK; row0 += job->block_rows) {
        head.row0 = row0;
        head.L = L - row0 < job->block_rows ? L - row0 : job->block_rows;
        head.out = slice->out + row0 * slice->ld_out;
        head.q = slice->q + row0 * slice->ld_q;
        if (slice->attn.f) head.attn.f = slice->attn.f + (ptrdiff_t)row0 * slice->attn.rs;
        if (slice->attn.b) head.attn.b = slice->attn.b + (ptrdiff_t)row0 * slice->attn.rs;
        st = mha_attention_plain(&head, &mha_attn_fast, weights + row0 * S, NULL, NULL);
    }
    return st;
}

/* Batches part, part + nparts, ...; each polls the interrupt flag first. */
static mha_status sdpa_part(void *ctx, size_t part, size_t nparts) {
    sdpa_job *job = ctx;
    const size_t L = job->L, S = job->S, D = job->D, Dv = job->Dv;
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
        mha_head_args head = {
            .out = job->result + batch_offset(n, job->nb, job->bshape, job->rs), .ld_out = job->ld_out,
            .q = job->q_data + batch_offset(n, job->nb, job->bshape, job->qs), .ld_q = job->ld_q,
            .k = job->k_data + batch_offset(n, job->nb, job->bshape, job->ks), .ld_k = job->ld_k,
            .v = job->v_data + batch_offset(n, job->nb, job->bshape, job->vs), .ld_v = job->ld_v,
            .mask_cols = S, .causal = job->causal, .scale = job->scale, .L = L, .S = S, .D = D, .Dv = Dv,
        };
        if (job->mask.f || job->mask.b) {
            head.attn = job->mask;
            ptrdiff_t off = batch_offset(n, job->nb, job->bshape, job->ms);
            if (job->mask.f) head.attn.f += off;
            else head.attn.b += off;
        }
        if (job->weights == NULL) {
            mha_attn_args args = {
                .out = head.out, .ld_out = head.ld_out, .q = head.q, .ld_q = head.ld_q, .k = head.k, .ld_k = head.ld_k,
                .v = head.v, .ld_v = head.ld_v,
                .mask = head.attn.f, .mask_rs = head.attn.rs, .mask_cs = head.attn.cs,
                .causal = job->causal, .scale = job->scale, .L = L, .S = S, .D = D, .Dv = Dv,
            };
            st = mha_attention_fused(&args);
        } else if (packed) {
            st = kept_slice(job, &head, job->weights + n * L * S, packed);
        } else {
            st = mha_attention_plain(&head, &mha_attn_fast, job->weights + n * L * S, NULL, NULL);
        }
    }
    mha_free(packed, packed_bytes);
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

mha_status mha_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                    const mha_tensor *v, const mha_sdpa_options *opt) {
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF], sm[MHA_SHAPE_BUF];
    const mha_sdpa_options defaults = {0};
    if (opt == NULL) opt = &defaults;
    const mha_tensor *mask = opt->attn_mask;
    mha_status st;
    if ((st = check_float(q, "sdpa", "q")) != MHA_OK || (st = check_float(k, "sdpa", "k")) != MHA_OK ||
        (st = check_float(v, "sdpa", "v")) != MHA_OK)
        return st;
    if (mask != NULL && mask->storage == NULL)
        return mha_fail(MHA_E_ARG, "sdpa: attn_mask is an empty (released) tensor");
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return mha_fail(MHA_E_SHAPE, "sdpa: q %s, k %s, v %s: each needs at least 2 dims (..., length, dim)",
                        SHAPE(sq, q), SHAPE(sk, k), SHAPE(sv, v));
    const size_t L = q->shape[q->ndim - 2], D = q->shape[q->ndim - 1];
    const size_t S = k->shape[k->ndim - 2], Dv = v->shape[v->ndim - 1];
    if (k->shape[k->ndim - 1] != D)
        return mha_fail(MHA_E_SHAPE, "sdpa: q %s and k %s: head dims %zu and %zu differ", SHAPE(sq, q), SHAPE(sk, k), D,
                        k->shape[k->ndim - 1]);
    if (v->shape[v->ndim - 2] != S)
        return mha_fail(MHA_E_SHAPE, "sdpa: k %s and v %s: key and value lengths %zu and %zu differ", SHAPE(sk, k),
                        SHAPE(sv, v), S, v->shape[v->ndim - 2]);
    if (!isfinite(opt->scale))
        return mha_fail(MHA_E_ARG, "sdpa: scale %g is not a finite number", (double)opt->scale);

    /* the batch shape: q's, k's, v's (and the mask's) leading dims broadcast together */
    size_t nb = 0, bshape[MHA_MAX_DIMS];
    if (!batch_grow(&nb, bshape, q, 2) || !batch_grow(&nb, bshape, k, 2) || !batch_grow(&nb, bshape, v, 2))
        return mha_fail(MHA_E_SHAPE, "sdpa: q %s, k %s, v %s: leading (batch) dims do not broadcast", SHAPE(sq, q),
                        SHAPE(sk, k), SHAPE(sv, v));
    size_t mask_rows = 1, mask_cols = 1;
    if (mask != NULL) {
        mask_cols = mask->ndim >= 1 ? mask->shape[mask->ndim - 1] : 1;
        mask_rows = mask->ndim >= 2 ? mask->shape[mask->ndim - 2] : 1;
        if ((mask_rows != 1 && mask_rows != L) || (mask_cols != 1 && mask_cols != S) || !batch_grow(&nb, bshape, mask, 2)) {
            mha_tensor want = {.ndim = nb + 2};
            memcpy(want.shape, bshape, nb * sizeof *bshape);
            want.shape[nb] = L;
            want.shape[nb + 1] = S;
            return mha_fail(MHA_E_SHAPE, "sdpa: attn_mask %s does not broadcast to the scores %s", SHAPE(sm, mask),
                            SHAPE(sk, &want));
        }
    }
    if (nb + 2 > MHA_MAX_DIMS)
        return mha_fail(MHA_E_SHAPE, "sdpa: %zu batch dims: at most %d supported", nb, MHA_MAX_DIMS - 2);
    const float scale = opt->scale != 0.0f ? opt->scale : (float)(1.0 / sqrt((double)D));
    const bool fused = weights == NULL;

    mha_tensor cq = MHA_TENSOR_EMPTY, ck = MHA_TENSOR_EMPTY, cv = MHA_TENSOR_EMPTY, fmask = MHA_TENSOR_EMPTY;
    mha_tensor result = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
    if ((st = rows_readable(&cq, q)) != MHA_OK || (st = rows_readable(&ck, k)) != MHA_OK ||
        (st = rows_readable(&cv, v)) != MHA_OK)
        goto done;
    /* the fused kernel reads float masks only: a bool mask becomes one of its own size, never (L,S) from a row */
    if (mask != NULL && fused && mask->dtype == MHA_BOOL) st = additive_mask(&fmask, mask);
    else if (mask != NULL) st = mha_share(&fmask, mask);
    if (st != MHA_OK) goto done;

    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, bshape, nb * sizeof *bshape);
    shape[nb] = L;
    shape[nb + 1] = Dv;
    /* the result laid out as q when it has q's shape (no broadcast batch dim, Dv = D) */
    bool like_q = Dv == D && cq.ndim == nb + 2;
    for (size_t d = 0; like_q && d < nb; d++) like_q = cq.shape[d] == bshape[d];
    st = like_q ? empty_like(&result, &cq) : mha_empty_named(&result, MHA_FLOAT32, nb + 2, shape, "sdpa");
    if (st != MHA_OK) goto done;
    shape[nb + 1] = S;
    if (!fused && (st = mha_empty_named(&w, MHA_FLOAT32, nb + 2, shape, "sdpa")) != MHA_OK) goto done;

    ptrdiff_t qs[MHA_MAX_DIMS], ks[MHA_MAX_DIMS], vs[MHA_MAX_DIMS], ms[MHA_MAX_DIMS], rs[MHA_MAX_DIMS];
    batch_strides(rs, &result, 2, nb, bshape);
    batch_strides(qs, &cq, 2, nb, bshape);
    batch_strides(ks, &ck, 2, nb, bshape);
    batch_strides(vs, &cv, 2, nb, bshape);
    mha_mask_src msrc = {0};
    if (mask != NULL) {
        batch_strides(ms, &fmask, 2, nb, bshape);
        msrc.rs = mask_rows == 1 || fmask.ndim < 2 ? 0 : fmask.stride[fmask.ndim - 2];
        msrc.cs = mask_cols == 1 || fmask.ndim < 1 ? 0 : fmask.stride[fmask.ndim - 1];
    }
    size_t batches = prod(bshape, 0, nb);
    sdpa_job job = {
        .q = q, .result = mha_f32(&result), .rs = rs, .ld_out = (size_t)result.stride[nb], .weights = fused ? NULL : mha_f32(&w),
        .q_data = mha_f32(&cq), .k_data = mha_f32(&ck), .v_data = mha_f32(&cv),
        .qs = qs, .ks = ks, .vs = vs, .ms = ms, .nb = nb, .batches = batches, .bshape = bshape,
        .mask = msrc, .causal = opt->is_causal, .scale = scale, .L = L, .S = S, .D = D, .Dv = Dv,
        .ld_q = (size_t)cq.stride[cq.ndim - 2], .ld_k = (size_t)ck.stride[ck.ndim - 2], .ld_v = (size_t)cv.stride[cv.ndim - 2],
    };
    /* Weights kept: by blocks of rows (kept_slice) when a slice has more rows than one block - unless its q·kᵀ is
     * one a whole-slice mha_sgemm computes as dot products of rows (a short q at depth D >= 128, kernels.h),
     * whose bits the packed path would not give. A block's scores fill about half of L2 (256 KiB). */
    const size_t block_bytes = S * sizeof(float) * KEPT_BLOCK, half_l2 = (size_t)256 << 10;
    const size_t block_rows = KEPT_BLOCK * (block_bytes && block_bytes < half_l2 ? half_l2 / block_bytes : 1);
    const bool dot_rows = D >= 128 && (double)L * (double)D * sizeof(float) <= 256.0 * 1024;
    if (!fused && L > block_rows && S > 0 && !dot_rows) {
        job.block_rows = block_rows;
        job.packed_k = mha_sgemm_packed_b_size(S, D), job.packed_v = mha_sgemm_packed_b_size(Dv, S);
    }
    if (mask != NULL) {
        if (fmask.dtype == MHA_FLOAT32) job.mask.f = mha_f32(&fmask);
        else job.mask.b = mha_bool(&fmask);
    }
    atomic_init(&job.failed, false);
    const double flops = 2.0 * (double)batches * (double)L * (double)S * (double)(D + Dv); /* q·kᵀ and ·v */
    if (L > 0)   /* no query: no (L,·) slice to fill, however many batches */
        st = nomem_under(mha_run_parts(sdpa_part, &job, mha_kernels_parts(batches, flops)), "sdpa");
    if (st != MHA_OK) goto done;
    *out = result;
    result = MHA_TENSOR_EMPTY;
    if (weights != NULL) {
        *weights = w;
        w = MHA_TENSOR_EMPTY;
    }
done:
    mha_release(&cq);
    mha_release(&ck);
    mha_release(&cv);
    mha_release(&fmask);
    mha_release(&result);
    mha_release(&w);
    return st;
}

/* ---- the graph node: mha_ag_sdpa records the forward; its backward runs the backward above ---- */
/* The output's node backpropagates through the saved weights (plain) or, when the forward ran fused, by
 * recomputing them tile by tile (mha_sdpa_backward). Weights returned to the user get a node of their own:
 * gradients through both are summed by the engine, as the math is linear in them. */

#include <stdint.h>

#include "autograd/autograd_ops.h"
#include "attention/sdpa_backward.h"

/* Saved: q, k, v, then the weights (or, fused, the output), then the mask (slot 4, empty when none). */
typedef struct sdpa_node {
    mha_node base;
    bool is_causal;
    float scale;
    bool from_weights;         /* the output's node: slot 3 holds the weights (backward from them), else the output */
} sdpa_node;

static mha_sdpa_options node_sdpa_options(const mha_node *n) {
    const sdpa_node *node = (const sdpa_node *)n;
    mha_sdpa_options opt = {.attn_mask = n->saved[4].storage ? &n->saved[4] : NULL, .is_causal = node->is_causal,
                            .scale = node->scale};
    return opt;
}

static mha_status sdpa_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    mha_sdpa_options opt = node_sdpa_options(n);
    const bool from_weights = ((const sdpa_node *)n)->from_weights;
    const mha_tensor *weights = from_weights ? &n->saved[3] : NULL, *out = from_weights ? NULL : &n->saved[3];
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
    if (opt && opt->attn_mask) mha_ag_save(n, opt->attn_mask);
    else n->n_saved++; /* slot 4 stays empty: no mask */
    node->is_causal = opt && opt->is_causal;
    node->scale = opt ? opt->scale : 0.0f;
}

/* Fused or not, a forward whose weights fit this budget keeps them for its backward, as torch's math path does:
 * the backward from kept weights does four (L,S)-sized products per slice (dP, dV, dQ, dK), the fused one five
 * (it recomputes the scores first). Above it the fused path keeps memory O(L·D).
 * The trade at MultiheadAttention E=512 H=8 L=2048 (128 MiB of weights), one thread, min of 3, load ~2: keeping
 * them makes forward + backward 1460 ms against 1814 fused, and the recording forward alone 487 ms against 449
 * fused (no_grad 439) - 24% off the training step for 8% on a forward nobody backpropagates through, so they
 * are kept. */
static size_t keep_budget = (size_t)256 << 20;

size_t mha_ag_sdpa_keep_budget(size_t bytes) {
    size_t was = keep_budget;
    keep_budget = bytes;
    return was;
}

/* The bytes of the (batch..., L, S) weights of q (..., L, D), k (..., S, D), v and the mask, batch dims broadcast;
 * SIZE_MAX when the shapes do not fit (mha_sdpa reports that). */
static size_t weights_bytes(const mha_tensor *q, const mha_tensor *k, const mha_tensor *v, const mha_tensor *mask) {
    const mha_tensor *all[4] = {q, k, v, mask};
    size_t nb = 0, bshape[MHA_MAX_DIMS];
    for (int i = 0; i < 4; i++) {
        const mha_tensor *t = all[i];
        if (!t || t->ndim < 2) { if (i < 3) return SIZE_MAX; continue; }
        size_t lead = t->ndim - 2;
        while (nb < lead) bshape[MHA_MAX_DIMS - ++nb] = 1;
        for (size_t d = 0; d < lead; d++) { /* aligned on the right, as broadcasting */
            size_t at = MHA_MAX_DIMS - (lead - d);
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
    /* a float mask that requires grad is the fourth input (torch differentiates an added mask too) */
    const mha_tensor *mask = opt ? opt->attn_mask : NULL;
    const mha_tensor *in[4] = {q, k, v, mask && mask->dtype == MHA_FLOAT32 ? mask : NULL};
    if (!mha_ag_wants(in, 4)) return mha_sdpa(out, weights, q, k, v, opt);
    /* weights not asked for: kept for the backward all the same when they fit the budget */
    mha_tensor kept = MHA_TENSOR_EMPTY;
    const bool keep = !weights && weights_bytes(q, k, v, mask) <= keep_budget;
    mha_status st = mha_sdpa(out, weights ? weights : keep ? &kept : NULL, q, k, v, opt);
    if (st != MHA_OK) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(sdpa_node), out, "scaled_dot_product_attention", sdpa_node_backward, in, 4)) !=
        MHA_OK) {
        if (weights) mha_release(weights);
        mha_release(&kept);
        return st;
    }
    ((sdpa_node *)n)->from_weights = weights != NULL || keep; /* else fused, from the saved output */
    save_sdpa(n, q, k, v, weights ? weights : keep ? &kept : out, opt);
    mha_release(&kept);
    if (weights) {
        mha_node *wn;
        if ((st = mha_ag_record(&wn, sizeof(sdpa_node), weights, "scaled_dot_product_attention", sdpa_weights_node_backward,
                                in, 4)) != MHA_OK) {
            mha_release(out);
            return st;
        }
        save_sdpa(wn, q, k, v, weights, opt);
    }
    return MHA_OK;
}
