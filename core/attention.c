/* core/attention.c - the attention layer of mha-repl: softmax, linear, layer norm, positional encoding,
 * masks, scaled dot-product attention and nn.MultiheadAttention computed in PyTorch 1.13's order. */
#include "attention.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* Shape strings for messages: SHAPE(buf, t) fills buf and returns it. */
#define SHAPE(buf, t) mha_shape_str((buf), sizeof(buf), (t))

/* The tensor argument `arg` of fname must be a filled float32 tensor. */
static mha_status check_float(const mha_tensor *t, const char *fname, const char *arg) {
    if (t == NULL || t->storage == NULL)
        return mha_fail(MHA_E_ARG, "%s: %s is missing (an empty or released tensor)", fname, arg);
    if (t->dtype != MHA_FLOAT32) {
        char s[MHA_SHAPE_BUF];
        return mha_fail(MHA_E_DTYPE, "%s: %s %s is bool, expected float32", fname, arg, SHAPE(s, t));
    }
    return MHA_OK;
}

static size_t prod(const size_t *shape, size_t from, size_t to) {
    size_t n = 1;
    for (size_t d = from; d < to; d++) n *= shape[d];
    return n;
}

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
    if ((st = mha_contiguous(&cx, x)) != MHA_OK) return st;
    if ((st = mha_empty(out, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK) {
        mha_release(&cx);
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
    if ((st = mha_contiguous(&cx, x)) != MHA_OK) return st;
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, x->shape, x->ndim * sizeof *shape);
    shape[x->ndim - 1] = n_out;
    if ((st = mha_empty(out, MHA_FLOAT32, x->ndim, shape)) != MHA_OK) {
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
    if ((st = mha_contiguous(&cx, x)) != MHA_OK) goto fail;
    if (weight && (st = mha_contiguous(&cw, weight)) != MHA_OK) goto fail;
    if (bias && (st = mha_contiguous(&cb, bias)) != MHA_OK) goto fail;
    if ((st = mha_empty(out, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK) goto fail;

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
    mha_status st = mha_empty(out, MHA_FLOAT32, 2, shape);
    if (st != MHA_OK) return st;
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
    mha_status st = mha_empty(out, MHA_BOOL, 2, shape);
    if (st != MHA_OK) return st;
    bool *m = mha_bool(out);
    for (size_t i = 0; i < L; i++)
        for (size_t j = 0; j < S; j++) m[i * S + j] = j > i;
    return MHA_OK;
}

/* ---------------------------------------------------------------------------------------------
 * One (L,S) slice of attention, the plain way. Shared by mha_sdpa (when weights are wanted) and
 * MultiheadAttention, so what the trace records is what produced the output.
 * ------------------------------------------------------------------------------------------- */

/* An additive mask over (L,S) read through strides: a float mask is added, a bool mask adds -inf
 * where true. Both pointers NULL: no mask. rs = 0 repeats one row (a key padding row) for every query. */
typedef struct mask_src {
    const float *f;
    const bool *b;
    ptrdiff_t rs, cs;
} mask_src;

static float mask_at(const mask_src *m, size_t i, size_t j) {
    ptrdiff_t at = (ptrdiff_t)i * m->rs + (ptrdiff_t)j * m->cs;
    if (m->f) return m->f[at];
    return m->b[at] ? -INFINITY : 0.0f;
}

typedef struct head_job {
    float *out; size_t ld_out;     /* (L,Dv) */
    const float *q; size_t ld_q;   /* (L,D) */
    const float *k; size_t ld_k;   /* (S,D) */
    const float *v; size_t ld_v;   /* (S,Dv) */
    mask_src attn, pad;            /* attn_mask slice; key padding row (rs 0) */
    size_t mask_cols;              /* masks and causal cover keys j < mask_cols; later ones (bias_k, zero_attn) stay visible */
    bool causal;                   /* -inf where j > i */
    float scale;
    size_t L, S, D, Dv;
} head_job;

/* weights (L,S) row-major receives the weights; scaled and masked, when not NULL, receive copies of
 * the scores after pass 1 and pass 2. */
static mha_status head_plain(const head_job *job, float *weights, float *scaled, float *masked) {
    const size_t L = job->L, S = job->S;
    bool has_attn = job->attn.f || job->attn.b, has_pad = job->pad.f || job->pad.b;

    /* pass 1: scaled = q·kᵀ·scale (kᵀ is k read with its strides swapped) */
    mha_status st = mha_sgemm(weights, S, job->q, (ptrdiff_t)job->ld_q, 1, job->k, 1, (ptrdiff_t)job->ld_k, L, S,
                              job->D, false);
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
                if (job->causal && j > i) row[j] = -INFINITY;
            }
        }
    }
    if (masked) memcpy(masked, weights, L * S * sizeof *weights);

    /* pass 3: weights = softmax(masked) along each row */
    mha_softmax_rows(weights, S, L, S);

    /* pass 4: out = weights·v */
    return mha_sgemm(job->out, job->ld_out, weights, (ptrdiff_t)S, 1, job->v, (ptrdiff_t)job->ld_v, 1, L, job->Dv, S,
                     false);
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
    mha_status st = mha_empty(&compact, MHA_FLOAT32, mask->ndim, shape);
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

/* The batch loop of mha_sdpa: each (broadcast) batch index is one attention slice writing its own
 * part of the result (and weights), so with MHA_THREADS the slices are shared out over threads. */
typedef struct sdpa_job {
    const mha_tensor *q;                  /* for messages */
    float *result, *weights;              /* (batches,L,Dv), (batches,L,S) or NULL for the fused path */
    const float *q_data, *k_data, *v_data;
    const ptrdiff_t *qs, *ks, *vs, *ms;   /* batch strides of q, k, v, the mask */
    size_t nb, batches;
    const size_t *bshape;
    mask_src mask;                        /* rs, cs, and its data at batch offset 0; none: f = b = NULL */
    bool causal;
    float scale;
    size_t L, S, D, Dv;
    atomic_bool failed;                   /* a part failed: the others stop at their next slice */
} sdpa_job;

/* Batches part, part + nparts, ...; each polls the interrupt flag first. */
static mha_status sdpa_part(void *ctx, size_t part, size_t nparts) {
    sdpa_job *job = ctx;
    const size_t L = job->L, S = job->S, D = job->D, Dv = job->Dv;
    mha_status st = MHA_OK;
    for (size_t n = part; n < job->batches && st == MHA_OK; n += nparts) {
        if (atomic_load(&job->failed)) break; /* the part that failed reports it */
        if (mha_interrupted()) {
            char sq[MHA_SHAPE_BUF];
            st = mha_fail(MHA_E_INTERRUPTED, "sdpa: q %s: interrupted at batch %zu of %zu", SHAPE(sq, job->q), n,
                          job->batches);
            break;
        }
        head_job head = {
            .out = job->result + n * L * Dv, .ld_out = Dv,
            .q = job->q_data + batch_offset(n, job->nb, job->bshape, job->qs), .ld_q = D,
            .k = job->k_data + batch_offset(n, job->nb, job->bshape, job->ks), .ld_k = D,
            .v = job->v_data + batch_offset(n, job->nb, job->bshape, job->vs), .ld_v = Dv,
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
                .out = head.out, .ld_out = Dv, .q = head.q, .ld_q = D, .k = head.k, .ld_k = D, .v = head.v, .ld_v = Dv,
                .mask = head.attn.f, .mask_rs = head.attn.rs, .mask_cs = head.attn.cs,
                .causal = job->causal, .scale = job->scale, .L = L, .S = S, .D = D, .Dv = Dv,
            };
            st = mha_attention_fused(&args);
        } else {
            st = head_plain(&head, job->weights + n * L * S, NULL, NULL);
        }
    }
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
    if ((st = mha_contiguous(&cq, q)) != MHA_OK || (st = mha_contiguous(&ck, k)) != MHA_OK ||
        (st = mha_contiguous(&cv, v)) != MHA_OK)
        goto done;
    /* the fused kernel reads float masks only: a bool mask becomes one of its own size, never (L,S) from a row */
    if (mask != NULL && fused && mask->dtype == MHA_BOOL) st = additive_mask(&fmask, mask);
    else if (mask != NULL) st = mha_share(&fmask, mask);
    if (st != MHA_OK) goto done;

    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, bshape, nb * sizeof *bshape);
    shape[nb] = L;
    shape[nb + 1] = Dv;
    if ((st = mha_empty(&result, MHA_FLOAT32, nb + 2, shape)) != MHA_OK) goto done;
    shape[nb + 1] = S;
    if (!fused && (st = mha_empty(&w, MHA_FLOAT32, nb + 2, shape)) != MHA_OK) goto done;

    ptrdiff_t qs[MHA_MAX_DIMS], ks[MHA_MAX_DIMS], vs[MHA_MAX_DIMS], ms[MHA_MAX_DIMS];
    batch_strides(qs, &cq, 2, nb, bshape);
    batch_strides(ks, &ck, 2, nb, bshape);
    batch_strides(vs, &cv, 2, nb, bshape);
    mask_src msrc = {0};
    if (mask != NULL) {
        batch_strides(ms, &fmask, 2, nb, bshape);
        msrc.rs = mask_rows == 1 || fmask.ndim < 2 ? 0 : fmask.stride[fmask.ndim - 2];
        msrc.cs = mask_cols == 1 || fmask.ndim < 1 ? 0 : fmask.stride[fmask.ndim - 1];
    }
    size_t batches = prod(bshape, 0, nb);
    sdpa_job job = {
        .q = q, .result = mha_f32(&result), .weights = fused ? NULL : mha_f32(&w),
        .q_data = mha_f32(&cq), .k_data = mha_f32(&ck), .v_data = mha_f32(&cv),
        .qs = qs, .ks = ks, .vs = vs, .ms = ms, .nb = nb, .batches = batches, .bshape = bshape,
        .mask = msrc, .causal = opt->is_causal, .scale = scale, .L = L, .S = S, .D = D, .Dv = Dv,
    };
    if (mask != NULL) {
        if (fmask.dtype == MHA_FLOAT32) job.mask.f = mha_f32(&fmask);
        else job.mask.b = mha_bool(&fmask);
    }
    atomic_init(&job.failed, false);
    const double flops = 2.0 * (double)batches * (double)L * (double)S * (double)(D + Dv); /* q·kᵀ and ·v */
    st = mha_run_parts(sdpa_part, &job, mha_kernels_parts(batches, flops));
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

/* ---------------------------------------------------------------------------------------------
 * nn.MultiheadAttention
 * ------------------------------------------------------------------------------------------- */

const char *const mha_multihead_param_names[] = {
    "in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight",
    "out_proj_weight", "out_proj_bias", "bias_k", "bias_v", NULL,
};

/* The slot of each name in mha_multihead_param_names, in the same order. */
static mha_tensor *param_slot(const mha_multihead *cm, size_t i) {
    mha_multihead *m = (mha_multihead *)cm; /* the caller decides whether to write through it */
    mha_tensor *slots[] = {&m->in_proj_weight, &m->in_proj_bias, &m->q_proj_weight, &m->k_proj_weight,
                           &m->v_proj_weight, &m->out_proj_weight, &m->out_proj_bias, &m->bias_k, &m->bias_v};
    return slots[i];
}

void mha_multihead_release(mha_multihead *m) {
    if (m == NULL) return;
    for (size_t i = 0; mha_multihead_param_names[i]; i++) mha_release(param_slot(m, i));
}

mha_status mha_multihead_init(mha_multihead *m, const mha_multihead_options *opt) {
    if (m == NULL || opt == NULL) return mha_fail(MHA_E_ARG, "MultiheadAttention: no module or no options given");
    const size_t E = opt->embed_dim, H = opt->num_heads;
    if (E == 0) return mha_fail(MHA_E_ARG, "MultiheadAttention: embed_dim must be positive, got 0");
    if (H == 0) return mha_fail(MHA_E_ARG, "MultiheadAttention: num_heads must be positive, got 0");
    if (E % H != 0)
        return mha_fail(MHA_E_ARG, "MultiheadAttention: embed_dim %zu is not divisible by num_heads %zu", E, H);
    m->embed_dim = E;
    m->num_heads = H;
    m->head_dim = E / H;
    m->kdim = opt->kdim ? opt->kdim : E;
    m->vdim = opt->vdim ? opt->vdim : E;
    m->bias = opt->bias;
    m->add_bias_kv = opt->add_bias_kv;
    m->add_zero_attn = opt->add_zero_attn;
    m->same_embed_dim = m->kdim == E && m->vdim == E;

    mha_status st = MHA_OK;
    size_t shape[3];
    if (m->same_embed_dim) {
        shape[0] = 3 * E, shape[1] = E;
        if ((st = mha_empty(&m->in_proj_weight, MHA_FLOAT32, 2, shape)) != MHA_OK) goto fail;
        if ((st = mha_xavier_uniform_(&m->in_proj_weight, 1.0f)) != MHA_OK) goto fail;
    } else {
        mha_tensor *w[3] = {&m->q_proj_weight, &m->k_proj_weight, &m->v_proj_weight};
        size_t in[3] = {E, m->kdim, m->vdim};
        for (int i = 0; i < 3; i++) {
            shape[0] = E, shape[1] = in[i];
            if ((st = mha_empty(w[i], MHA_FLOAT32, 2, shape)) != MHA_OK) goto fail;
            if ((st = mha_xavier_uniform_(w[i], 1.0f)) != MHA_OK) goto fail;
        }
    }
    /* out_proj is an nn.Linear: kaiming_uniform_(a=√5) is U(-1/√E, 1/√E) */
    shape[0] = E, shape[1] = E;
    float bound = (float)(1.0 / sqrt((double)E));
    if ((st = mha_empty(&m->out_proj_weight, MHA_FLOAT32, 2, shape)) != MHA_OK) goto fail;
    if ((st = mha_uniform_(&m->out_proj_weight, -bound, bound)) != MHA_OK) goto fail;
    if (m->bias) {
        shape[0] = 3 * E;
        if ((st = mha_zeros(&m->in_proj_bias, MHA_FLOAT32, 1, shape)) != MHA_OK) goto fail;
        shape[0] = E;
        if ((st = mha_zeros(&m->out_proj_bias, MHA_FLOAT32, 1, shape)) != MHA_OK) goto fail;
    }
    if (m->add_bias_kv) {
        shape[0] = 1, shape[1] = 1, shape[2] = E;
        if ((st = mha_empty(&m->bias_k, MHA_FLOAT32, 3, shape)) != MHA_OK) goto fail;
        if ((st = mha_xavier_normal_(&m->bias_k, 1.0f)) != MHA_OK) goto fail;
        if ((st = mha_empty(&m->bias_v, MHA_FLOAT32, 3, shape)) != MHA_OK) goto fail;
        if ((st = mha_xavier_normal_(&m->bias_v, 1.0f)) != MHA_OK) goto fail;
    }
    return MHA_OK;
fail:
    mha_multihead_release(m);
    return st;
}

/* "in_proj_weight, in_proj_bias, ..." : the parameters m has, for messages. */
static void present_names(char *buf, size_t n, const mha_multihead *m) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; mha_multihead_param_names[i] && used < n; i++)
        if (param_slot(m, i)->storage)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", mha_multihead_param_names[i]);
}

mha_status mha_multihead_param(mha_tensor **slot, const mha_multihead *m, const char *name) {
    char have[256];
    if (m == NULL || name == NULL) return mha_fail(MHA_E_ARG, "MultiheadAttention: no module or no parameter name given");
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        if (strcmp(name, mha_multihead_param_names[i]) != 0) continue;
        if (param_slot(m, i)->storage == NULL) {
            present_names(have, sizeof have, m);
            return mha_fail(MHA_E_ARG, "MultiheadAttention: this module has no %s (its options leave it out); it has %s",
                            name, have);
        }
        *slot = param_slot(m, i);
        return MHA_OK;
    }
    present_names(have, sizeof have, m);
    return mha_fail(MHA_E_ARG, "MultiheadAttention: no parameter named '%s'; this module has %s", name, have);
}

mha_status mha_multihead_set_param(mha_multihead *m, const char *name, const mha_tensor *value) {
    char sv[MHA_SHAPE_BUF], sp[MHA_SHAPE_BUF];
    mha_tensor *slot;
    mha_status st = mha_multihead_param(&slot, m, name);
    if (st != MHA_OK) return st;
    if (value == NULL || value->storage == NULL)
        return mha_fail(MHA_E_ARG, "MultiheadAttention: %s: the new value is an empty (released) tensor", name);
    if (value->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "MultiheadAttention: %s must be float32, got a bool tensor %s", name,
                        SHAPE(sv, value));
    if (!mha_same_shape(value, slot))
        return mha_fail(MHA_E_SHAPE, "MultiheadAttention: %s: expected %s, got %s", name, SHAPE(sp, slot),
                        SHAPE(sv, value));
    mha_tensor copy = MHA_TENSOR_EMPTY;
    if ((st = mha_clone(&copy, value)) != MHA_OK) return st;
    mha_release(slot);
    *slot = copy;
    return MHA_OK;
}

void mha_trace_release(mha_trace *trace) {
    if (trace == NULL) return;
    for (size_t i = 0; i < trace->count; i++) mha_release(&trace->tensors[i]);
    trace->count = 0;
}

const mha_tensor *mha_trace_get(const mha_trace *trace, const char *name) {
    for (size_t i = 0; i < trace->count; i++)
        if (strcmp(trace->names[i], name) == 0) return &trace->tensors[i];
    return NULL;
}

/* Records t under name: batched tensors as they are, unbatched ones without their leading N of 1. */
static mha_status trace_put(mha_trace *trace, const char *name, const mha_tensor *t, bool batched) {
    if (trace == NULL) return MHA_OK;
    if (trace->count >= MHA_TRACE_MAX)
        return mha_fail(MHA_E_ARG, "MultiheadAttention.forward: trace: more than %d entries", MHA_TRACE_MAX);
    mha_tensor *slot = &trace->tensors[trace->count];
    mha_status st = batched ? mha_share(slot, t) : mha_select(slot, t, 0, 0);
    if (st != MHA_OK) return st;
    trace->names[trace->count++] = name;
    return MHA_OK;
}

/* (N,X,E) as its heads (N,H,X,D): a view, the head split the lessons show. */
static mha_status split_heads(mha_tensor *out, const mha_tensor *t, size_t H) {
    ptrdiff_t shape[4] = {(ptrdiff_t)t->shape[0], (ptrdiff_t)t->shape[1], (ptrdiff_t)H,
                          (ptrdiff_t)(t->shape[2] / H)};
    static const size_t perm[4] = {0, 2, 1, 3};
    mha_tensor split = MHA_TENSOR_EMPTY;
    mha_status st = mha_view(&split, t, 4, shape);
    if (st == MHA_OK) st = mha_permute(out, &split, perm);
    mha_release(&split);
    return st;
}

/* The shape checks of torch's _mha_shape_check and multi_head_attention_forward, with messages that
 * name the argument and its shape. */
static mha_status forward_check(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                                const mha_tensor *value, const mha_forward_options *opt) {
    static const char *fn = "MultiheadAttention.forward";
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF], sm[MHA_SHAPE_BUF];
    mha_status st;
    if (m == NULL || m->out_proj_weight.storage == NULL)
        return mha_fail(MHA_E_ARG, "%s: the module is not initialised (or was released)", fn);
    if ((st = check_float(query, fn, "query")) != MHA_OK || (st = check_float(key, fn, "key")) != MHA_OK ||
        (st = check_float(value, fn, "value")) != MHA_OK)
        return st;
    if (query->ndim != 2 && query->ndim != 3)
        return mha_fail(MHA_E_SHAPE, "%s: query %s must be (N,L,E) batched or (L,E) unbatched", fn, SHAPE(sq, query));
    if (key->ndim != query->ndim || value->ndim != query->ndim)
        return mha_fail(MHA_E_SHAPE, "%s: query %s is %s, so key and value must be %zu-D, got key %s and value %s", fn,
                        SHAPE(sq, query), query->ndim == 3 ? "batched" : "unbatched", query->ndim, SHAPE(sk, key),
                        SHAPE(sv, value));
    const size_t lead = query->ndim == 3; /* 1 when there is a batch dim in front */
    const size_t b = lead;                /* index of the length dim */
    if (query->shape[b + 1] != m->embed_dim)
        return mha_fail(MHA_E_SHAPE, "%s: query %s: last size %zu is not embed_dim %zu", fn, SHAPE(sq, query),
                        query->shape[b + 1], m->embed_dim);
    if (key->shape[b + 1] != m->kdim)
        return mha_fail(MHA_E_SHAPE, "%s: key %s: last size %zu is not kdim %zu", fn, SHAPE(sk, key),
                        key->shape[b + 1], m->kdim);
    if (value->shape[b + 1] != m->vdim)
        return mha_fail(MHA_E_SHAPE, "%s: value %s: last size %zu is not vdim %zu", fn, SHAPE(sv, value),
                        value->shape[b + 1], m->vdim);
    if (key->shape[b] != value->shape[b] || (lead && key->shape[0] != value->shape[0]))
        return mha_fail(MHA_E_SHAPE, "%s: key %s and value %s: batch or length differ", fn, SHAPE(sk, key),
                        SHAPE(sv, value));
    if (lead && query->shape[0] != key->shape[0])
        return mha_fail(MHA_E_SHAPE, "%s: query %s and key %s: batch sizes %zu and %zu differ", fn, SHAPE(sq, query),
                        SHAPE(sk, key), query->shape[0], key->shape[0]);
    const size_t N = lead ? query->shape[0] : 1, L = query->shape[b], S = key->shape[b], H = m->num_heads;
    const mha_tensor *kpm = opt->key_padding_mask, *am = opt->attn_mask;
    if (kpm != NULL) {
        if (kpm->storage == NULL) return mha_fail(MHA_E_ARG, "%s: key_padding_mask is an empty (released) tensor", fn);
        bool ok = lead ? kpm->ndim == 2 && kpm->shape[0] == N && kpm->shape[1] == S : kpm->ndim == 1 && kpm->shape[0] == S;
        if (!ok) {
            if (lead) return mha_fail(MHA_E_SHAPE, "%s: key_padding_mask: expected (%zu,%zu), got %s", fn, N, S, SHAPE(sm, kpm));
            return mha_fail(MHA_E_SHAPE, "%s: key_padding_mask: expected (%zu) for unbatched query %s, got %s", fn, S,
                            SHAPE(sq, query), SHAPE(sm, kpm));
        }
    }
    if (am != NULL) {
        if (am->storage == NULL) return mha_fail(MHA_E_ARG, "%s: attn_mask is an empty (released) tensor", fn);
        bool ok = (am->ndim == 2 && am->shape[0] == L && am->shape[1] == S) ||
                  (am->ndim == 3 && am->shape[0] == N * H && am->shape[1] == L && am->shape[2] == S);
        if (!ok)
            return mha_fail(MHA_E_SHAPE, "%s: attn_mask: expected (%zu,%zu) or (%zu,%zu,%zu), got %s", fn, L, S, N * H, L,
                            S, SHAPE(sm, am));
    }
    return MHA_OK;
}

/* K or V (N,S,E) with the rows add_bias_kv and add_zero_attn append: (N,S',E). Shares x when none. */
static mha_status append_kv_rows(mha_tensor *out, const mha_tensor *x, const mha_tensor *bias_row, bool zero_row) {
    const size_t N = x->shape[0], S = x->shape[1], E = x->shape[2];
    const size_t S2 = S + (bias_row != NULL) + zero_row;
    if (S2 == S) return mha_share(out, x);
    size_t shape[3] = {N, S2, E};
    mha_status st = mha_empty(out, MHA_FLOAT32, 3, shape);
    if (st != MHA_OK) return st;
    float *dst = mha_f32(out);
    const float *src = mha_f32(x);
    for (size_t n = 0; n < N; n++) {
        float *rows = dst + n * S2 * E;
        memcpy(rows, src + n * S * E, S * E * sizeof *rows);
        if (bias_row) memcpy(rows + S * E, mha_f32(bias_row), E * sizeof *rows);
        if (zero_row) memset(rows + (S2 - 1) * E, 0, E * sizeof *rows);
    }
    return MHA_OK;
}

/* Step 6 of the forward for every (batch, head) slice: what one head reads and writes, as pointers
 * into the forward's tensors. Slices write disjoint parts of concat, weights and the trace, so with
 * MHA_THREADS they are shared out over threads (heads_part) and the output is the same to the bit. */
typedef struct heads_job {
    size_t N, H, L, S, S2, E, D;        /* S2 = S' the keys after bias_k and the zero key */
    float *concat;                      /* (N,L,E) the head outputs side by side */
    const float *q, *q_scaled;          /* Q and Q/√D (N,L,E) */
    const float *k, *v;                 /* K, V with the appended rows (N,S',E) */
    const float *am_f;                  /* attn_mask (L,S) or (N·H,L,S), float or bool; NULL for none */
    const bool *am_b;
    bool am_per_head;                   /* (N·H,L,S) */
    const float *kpm_f;                 /* key_padding_mask (N,S), float or bool; NULL for none */
    const bool *kpm_b;
    const float *pad_rows;              /* (N,S') the key padding as float rows, for the fused kernel */
    bool causal, fused;
    float *weights;                     /* (N,H,L,S') when kept, else NULL */
    float *scores, *scaled, *masked;    /* (N,H,L,S') for the trace, else NULL */
    float *scratch;                     /* (nparts,L,S') when neither weights nor fused: one slice per part */
    atomic_bool failed;                 /* a part failed: the others stop at their next slice */
} heads_job;

/* One head h of batch n: the plain attention of head_plain (scores, softmax, ·V into concat), or the
 * fused kernel's online softmax giving the same head output. */
static mha_status forward_head(const heads_job *job, size_t n, size_t h, float *scratch) {
    const size_t H = job->H, L = job->L, S = job->S, S2 = job->S2, E = job->E, D = job->D;
    const size_t slice = (n * H + h) * L * S2;
    head_job head = {
        .out = job->concat + n * L * E + h * D, .ld_out = E,
        .q = job->q_scaled + n * L * E + h * D, .ld_q = E,
        .k = job->k + n * S2 * E + h * D, .ld_k = E,
        .v = job->v + n * S2 * E + h * D, .ld_v = E,
        .mask_cols = S, .causal = job->causal, .scale = 1.0f, .L = L, .S = S2, .D = D, .Dv = D,
    };
    if (job->am_f || job->am_b) {
        size_t off = job->am_per_head ? (n * H + h) * L * S : 0;
        head.attn.rs = (ptrdiff_t)S, head.attn.cs = 1;
        if (job->am_f) head.attn.f = job->am_f + off;
        else head.attn.b = job->am_b + off;
    }
    if (job->kpm_f || job->kpm_b) {
        head.pad.rs = 0, head.pad.cs = 1;
        if (job->kpm_f) head.pad.f = job->kpm_f + n * S;
        else head.pad.b = job->kpm_b + n * S;
    }
    if (job->fused) {
        bool pad = job->kpm_f || job->kpm_b;
        mha_attn_args args = {
            .out = head.out, .ld_out = E, .q = head.q, .ld_q = E, .k = head.k, .ld_k = E, .v = head.v, .ld_v = E,
            .mask = pad ? job->pad_rows + n * S2 : head.attn.f, .mask_rs = pad ? 0 : head.attn.rs,
            .mask_cs = 1, .causal = job->causal, .scale = 1.0f, .L = L, .S = S2, .D = D, .Dv = D,
        };
        return mha_attention_fused(&args);
    }
    if (job->scores != NULL) { /* raw scores Q·Kᵀ, for the trace only: the output flows from the scaled ones */
        mha_status st = mha_sgemm(job->scores + slice, S2, job->q + n * L * E + h * D, (ptrdiff_t)E, 1, head.k, 1,
                                  (ptrdiff_t)E, L, S2, D, false);
        if (st != MHA_OK) return st;
    }
    return head_plain(&head, job->weights ? job->weights + slice : scratch, job->scaled ? job->scaled + slice : NULL,
                      job->masked ? job->masked + slice : NULL);
}

/* Slices part, part + nparts, ... in (batch, head) order; each polls the interrupt flag first. */
static mha_status heads_part(void *ctx, size_t part, size_t nparts) {
    heads_job *job = ctx;
    float *scratch = job->scratch ? job->scratch + part * job->L * job->S2 : NULL;
    mha_status st = MHA_OK;
    for (size_t slice = part; slice < job->N * job->H && st == MHA_OK; slice += nparts) {
        if (atomic_load(&job->failed)) break; /* the part that failed reports it */
        const size_t n = slice / job->H, h = slice % job->H;
        if (mha_interrupted())
            st = mha_fail(MHA_E_INTERRUPTED, "MultiheadAttention.forward: interrupted at batch %zu, head %zu", n, h);
        else
            st = forward_head(job, n, h, scratch);
    }
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

mha_status mha_multihead_forward(mha_tensor *out, mha_tensor *weights, const mha_multihead *m,
                                 const mha_tensor *query, const mha_tensor *key, const mha_tensor *value,
                                 const mha_forward_options *opt, mha_trace *trace) {
    static const char *fn = "MultiheadAttention.forward";
    const mha_forward_options defaults = {.need_weights = true, .average_attn_weights = true};
    if (opt == NULL) opt = &defaults;
    mha_status st = forward_check(m, query, key, value, opt);
    if (st != MHA_OK) return st;

    const bool batched = query->ndim == 3;
    const size_t E = m->embed_dim, H = m->num_heads, D = m->head_dim;
    const size_t N = batched ? query->shape[0] : 1, L = query->shape[batched], S = key->shape[batched];
    const size_t S2 = S + m->add_bias_kv + m->add_zero_attn; /* keys after bias_k and the zero key */
    const bool want_weights = opt->need_weights && weights != NULL;
    const bool keep_weights = want_weights || trace != NULL;

    /* every tensor this function makes, so one exit releases them all */
    enum { IN_Q, IN_K, IN_V, W_Q, W_K, W_V, B_Q, B_K, B_V, Q, K, V, KX, VX, QS, SCORES, SCALED, MASKED, WEIGHTS,
           CONCAT, OUTPUT, AVG, HEADS, AM, KPM, PAD_ROWS, NTENSORS };
    mha_tensor t[NTENSORS];
    for (int i = 0; i < NTENSORS; i++) t[i] = MHA_TENSOR_EMPTY;
    float *scratch = NULL;
    size_t scratch_bytes = 0;

    /* step 1: the inputs as (N,X,·); an unbatched input is a batch of one */
    const mha_tensor *inputs[3] = {query, key, value};
    for (int i = 0; i < 3; i++) {
        st = batched ? mha_share(&t[IN_Q + i], inputs[i]) : mha_unsqueeze(&t[IN_Q + i], inputs[i], 0);
        if (st != MHA_OK) goto fail;
    }
    if ((st = trace_put(trace, "query", &t[IN_Q], batched)) != MHA_OK ||
        (st = trace_put(trace, "key", &t[IN_K], batched)) != MHA_OK ||
        (st = trace_put(trace, "value", &t[IN_V], batched)) != MHA_OK)
        goto fail;

    /* step 2: in-projection, Q = query·W_qᵀ + b_q (W_q the first E rows of in_proj_weight, or q_proj_weight) */
    for (int i = 0; i < 3; i++) {
        if (m->same_embed_dim) st = mha_narrow(&t[W_Q + i], &m->in_proj_weight, 0, (size_t)i * E, E);
        else st = mha_share(&t[W_Q + i], i == 0 ? &m->q_proj_weight : i == 1 ? &m->k_proj_weight : &m->v_proj_weight);
        if (st == MHA_OK && m->bias) st = mha_narrow(&t[B_Q + i], &m->in_proj_bias, 0, (size_t)i * E, E);
        if (st == MHA_OK) st = mha_linear(&t[Q + i], &t[IN_Q + i], &t[W_Q + i], m->bias ? &t[B_Q + i] : NULL);
        if (st != MHA_OK) goto fail;
    }
    if ((st = trace_put(trace, "Q", &t[Q], batched)) != MHA_OK || (st = trace_put(trace, "K", &t[K], batched)) != MHA_OK ||
        (st = trace_put(trace, "V", &t[V], batched)) != MHA_OK)
        goto fail;

    /* step 3: bias_k/bias_v appended as one more key and value, then the zero key and value (torch appends
     * the zeros after the head split; per head it is the same row) */
    if ((st = append_kv_rows(&t[KX], &t[K], m->add_bias_kv ? &m->bias_k : NULL, m->add_zero_attn)) != MHA_OK ||
        (st = append_kv_rows(&t[VX], &t[V], m->add_bias_kv ? &m->bias_v : NULL, m->add_zero_attn)) != MHA_OK)
        goto fail;

    /* step 4: q scaled before q·kᵀ, as torch 1.13 does: q_scaled = Q / √D */
    if ((st = mha_empty(&t[QS], MHA_FLOAT32, 3, t[Q].shape)) != MHA_OK) goto fail;
    {
        const float root = (float)sqrt((double)D);
        const float *src = mha_f32(&t[Q]);
        float *dst = mha_f32(&t[QS]);
        for (size_t n = 0; n < N * L * E; n++) dst[n] = src[n] / root;
    }

    size_t shape4[4] = {N, H, L, S2};
    if (keep_weights && (st = mha_empty(&t[WEIGHTS], MHA_FLOAT32, 4, shape4)) != MHA_OK) goto fail;
    if (trace != NULL) {
        if ((st = mha_empty(&t[SCORES], MHA_FLOAT32, 4, shape4)) != MHA_OK ||
            (st = mha_empty(&t[SCALED], MHA_FLOAT32, 4, shape4)) != MHA_OK ||
            (st = mha_empty(&t[MASKED], MHA_FLOAT32, 4, shape4)) != MHA_OK)
            goto fail;
    }
    /* When nobody looks at the (L,S') weights, the fused kernel runs wherever its one additive mask and causal
     * flag can say what the masks say: no mask, a key padding row, a float attn_mask without appended keys. */
    const mha_tensor *am = opt->attn_mask, *kpm = opt->key_padding_mask;
    const bool appended = S2 > S;
    const bool fused = !keep_weights && !(am && kpm) && !(am && (am->dtype == MHA_BOOL || appended)) &&
                       !(opt->is_causal && appended);
    /* the (batch, head) slices shared out over threads (MHA_THREADS), by the FLOPs of q·kᵀ and weights·v */
    const size_t nparts = mha_kernels_parts(N * H, 4.0 * (double)(N * H) * (double)L * (double)S2 * (double)D);
    if (!keep_weights && !fused && L * S2 > 0) { /* one (L,S') slice per part, reused for each of its heads */
        scratch_bytes = nparts * L * S2 * sizeof(float);
        if ((scratch = mha_alloc(scratch_bytes)) == NULL) {
            st = mha_fail(MHA_E_NOMEM, "%s: (%zu,%zu) scores: out of memory", fn, L, S2);
            goto fail;
        }
    }
    size_t shape3[3] = {N, L, E};
    if ((st = mha_empty(&t[CONCAT], MHA_FLOAT32, 3, shape3)) != MHA_OK) goto fail;

    /* step 5: the masks, read where the caller left them. attn_mask (L,S) or (N·H,L,S) and key_padding_mask
     * (N,S) add up (bool: true -> -inf); the appended keys are never masked (torch pads the masks with 0).
     * The fused kernel gets the key padding as float rows (N,S'), the padding columns 0. */
    if (am && (st = mha_contiguous(&t[AM], am)) != MHA_OK) goto fail;
    if (kpm && (st = mha_contiguous(&t[KPM], kpm)) != MHA_OK) goto fail;
    if (kpm && fused) {
        size_t shape_rows[2] = {N, S2};
        if ((st = mha_zeros(&t[PAD_ROWS], MHA_FLOAT32, 2, shape_rows)) != MHA_OK) goto fail;
        float *rows = mha_f32(&t[PAD_ROWS]);
        for (size_t n = 0; n < N; n++)
            for (size_t j = 0; j < S; j++)
                rows[n * S2 + j] = kpm->dtype == MHA_FLOAT32 ? mha_f32(&t[KPM])[n * S + j]
                                                             : mha_bool(&t[KPM])[n * S + j] ? -INFINITY : 0.0f;
    }

    /* step 6: per batch and head, the plain attention of head_plain (scores, softmax, ·V into concat),
     * or the fused kernel's online softmax giving the same head output (forward_head) */
    {
        heads_job job = {
            .N = N, .H = H, .L = L, .S = S, .S2 = S2, .E = E, .D = D,
            .concat = mha_f32(&t[CONCAT]), .q = mha_f32(&t[Q]), .q_scaled = mha_f32(&t[QS]),
            .k = mha_f32(&t[KX]), .v = mha_f32(&t[VX]),
            .am_f = am && am->dtype == MHA_FLOAT32 ? mha_f32(&t[AM]) : NULL,
            .am_b = am && am->dtype == MHA_BOOL ? mha_bool(&t[AM]) : NULL, .am_per_head = am && am->ndim == 3,
            .kpm_f = kpm && kpm->dtype == MHA_FLOAT32 ? mha_f32(&t[KPM]) : NULL,
            .kpm_b = kpm && kpm->dtype == MHA_BOOL ? mha_bool(&t[KPM]) : NULL,
            .pad_rows = kpm && fused ? mha_f32(&t[PAD_ROWS]) : NULL,
            .causal = opt->is_causal, .fused = fused,
            .weights = keep_weights ? mha_f32(&t[WEIGHTS]) : NULL,
            .scores = trace ? mha_f32(&t[SCORES]) : NULL, .scaled = trace ? mha_f32(&t[SCALED]) : NULL,
            .masked = trace ? mha_f32(&t[MASKED]) : NULL, .scratch = scratch,
        };
        atomic_init(&job.failed, false);
        st = mha_run_parts(heads_part, &job, nparts);
    }
    if (st != MHA_OK) goto fail;

    /* step 7: out-projection, output = concat·W_oᵀ + b_o */
    if ((st = mha_linear(&t[OUTPUT], &t[CONCAT], &m->out_proj_weight, m->bias ? &m->out_proj_bias : NULL)) != MHA_OK)
        goto fail;

    if (trace != NULL) {
        const char *names[3] = {"Q_heads", "K_heads", "V_heads"};
        const int from[3] = {Q, KX, VX};
        for (int i = 0; i < 3; i++) {
            st = split_heads(&t[HEADS], &t[from[i]], H);
            if (st == MHA_OK) st = trace_put(trace, names[i], &t[HEADS], batched);
            mha_release(&t[HEADS]);
            if (st != MHA_OK) goto fail;
        }
        if ((st = trace_put(trace, "scores", &t[SCORES], batched)) != MHA_OK ||
            (st = trace_put(trace, "scaled_scores", &t[SCALED], batched)) != MHA_OK ||
            (st = trace_put(trace, "masked_scores", &t[MASKED], batched)) != MHA_OK ||
            (st = trace_put(trace, "weights", &t[WEIGHTS], batched)) != MHA_OK)
            goto fail;
        st = split_heads(&t[HEADS], &t[CONCAT], H);
        if (st == MHA_OK) st = trace_put(trace, "head_outputs", &t[HEADS], batched);
        if (st != MHA_OK || (st = trace_put(trace, "concat", &t[CONCAT], batched)) != MHA_OK ||
            (st = trace_put(trace, "output", &t[OUTPUT], batched)) != MHA_OK)
            goto fail;
    }

    /* step 8: the weights returned: mean over heads (torch: sum over heads / H), or every head */
    if (want_weights) {
        const mha_tensor *ret = &t[WEIGHTS];
        if (opt->average_attn_weights) {
            size_t shape_avg[3] = {N, L, S2};
            if ((st = mha_zeros(&t[AVG], MHA_FLOAT32, 3, shape_avg)) != MHA_OK) goto fail;
            float *avg = mha_f32(&t[AVG]);
            const float *w = mha_f32(&t[WEIGHTS]);
            for (size_t n = 0; n < N; n++)
                for (size_t h = 0; h < H; h++)
                    for (size_t x = 0; x < L * S2; x++) avg[n * L * S2 + x] += w[(n * H + h) * L * S2 + x];
            for (size_t x = 0; x < N * L * S2; x++) avg[x] /= (float)H;
            ret = &t[AVG];
        }
        if ((st = batched ? mha_share(weights, ret) : mha_select(weights, ret, 0, 0)) != MHA_OK) goto fail;
    }
    if ((st = batched ? mha_share(out, &t[OUTPUT]) : mha_select(out, &t[OUTPUT], 0, 0)) != MHA_OK) {
        if (want_weights) mha_release(weights);
        goto fail;
    }
    for (int i = 0; i < NTENSORS; i++) mha_release(&t[i]);
    mha_free(scratch, scratch_bytes);
    return MHA_OK;
fail:
    for (int i = 0; i < NTENSORS; i++) mha_release(&t[i]);
    mha_free(scratch, scratch_bytes);
    mha_trace_release(trace);
    return st;
}
