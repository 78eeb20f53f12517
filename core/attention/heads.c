/* core/attention/heads.c - what MultiheadAttention's two forwards
 * (multihead.c, plain; multihead_grad.c, composed of differentiable ops) share: the head split, the
 * key/value rows add_bias_kv and add_zero_attn append, the head mean. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/attention_internal.h"
#include "attention/masks.h"
#include "kernels/kernels.h"
#include "autograd/autograd_ops.h"
#include "nn/nn.h"
#include "attention/attention.h"

/* (N,X,E) as its heads (N,H,X,D): a view, the head split the lessons show - (N,X,H,D), then heads
 * in front. */
mha_status mha_split_heads(mha_tensor *out, const mha_tensor *t, size_t H, bool graph) {
    ptrdiff_t shape[4] = {(ptrdiff_t)t->shape[0], (ptrdiff_t)t->shape[1], (ptrdiff_t)H, (ptrdiff_t)(t->shape[2] / H)};
    static const size_t perm[4] = {0, 2, 1, 3};
    mha_tensor split = MHA_TENSOR_EMPTY;
    mha_status st = graph ? mha_ag_view(&split, t, 4, shape) : mha_view(&split, t, 4, shape);
    if (st == MHA_OK) st = graph ? mha_ag_permute(out, &split, perm) : mha_permute(out, &split, perm);
    mha_release(&split);
    return st;
}

static bool same_view(const mha_tensor *a, const mha_tensor *b) {
    if (a == b) return true;
    if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim || a->dtype != b->dtype) return false;
    for (size_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d]) return false;
    return true;
}

bool mha_self_attention(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                        const mha_tensor *value) {
    return m->same_embed_dim && same_view(query, key) && same_view(key, value);
}

/* K or V (N,S,E) with bias_k/bias_v (1,1,E) as one more row, then a row of zeros: cat along dim 1
 * -> (N,S',E). torch appends the zeros after the head split; per head it is the same row. */
mha_status mha_append_kv_rows(mha_tensor *out, const mha_tensor *x, const mha_tensor *bias_row, bool zero_row,
                              bool graph) {
    const size_t N = x->shape[0], E = x->shape[2];
    size_t row_shape[3] = {N, 1, E}, one_row[3] = {1, 1, E};
    mha_tensor bias_rows = MHA_TENSOR_EMPTY, zero = MHA_TENSOR_EMPTY, zero_rows = MHA_TENSOR_EMPTY;
    const mha_tensor *parts[3] = {x};
    size_t n = 1;
    mha_status st = MHA_OK;
    if (bias_row) {
        st = graph ? mha_ag_expand(&bias_rows, bias_row, 3, row_shape) : mha_expand(&bias_rows, bias_row, 3, row_shape);
        parts[n++] = &bias_rows;
    }
    if (st == MHA_OK && zero_row) {
        st = mha_zeros(&zero, MHA_FLOAT32, 3, one_row);
        if (st == MHA_OK) st = mha_expand(&zero_rows, &zero, 3, row_shape);
        parts[n++] = &zero_rows;
    }
    if (st == MHA_OK && n == 1) st = graph ? mha_ag_alias(out, x) : mha_share(out, x);
    else if (st == MHA_OK) st = graph ? mha_ag_cat(out, parts, n, 1) : mha_cat(out, parts, n, 1);
    mha_release(&bias_rows), mha_release(&zero), mha_release(&zero_rows);
    return st;
}

/* Whether the fused kernel can run in place of the plain path, when nobody looks at the (L,S')
 * weights: its one additive mask and causal flag say what the masks say - no mask, a key padding
 * row, a float attn_mask without appended keys (the causal flag would mask appended keys too). */
bool mha_masks_fuse(const mha_forward_options *opt, bool appended) {
    const mha_tensor *am = opt->attn_mask, *kpm = opt->key_padding_mask;
    return !(am && kpm) && !(am && (am->dtype == MHA_BOOL || appended)) && !(opt->is_causal && appended);
}

/* The largest |x| of a (N,X,E) view with contiguous rows, as the bits of a float
 * (mha_abs_max_bits). */
static uint32_t rows_abs_max_bits(const mha_tensor *t) {
    const float *base = mha_f32(t);
    uint32_t top = 0;
    for (size_t n = 0; n < t->shape[0]; n++)
        for (size_t x = 0; x < t->shape[1]; x++) {
            const uint32_t row = mha_abs_max_bits(base + (ptrdiff_t)n * t->stride[0] + (ptrdiff_t)x * t->stride[1],
                                                  t->shape[2]);
            top = row > top ? row : top;
        }
    return top;
}

/* Whether every score q·kᵀ/√D is finite: q and k finite, and their largest magnitudes too small
 * for a sum of D products to overflow. */
static bool scores_finite(const mha_tensor *q, const mha_tensor *k, size_t D) {
    const uint32_t bq = rows_abs_max_bits(q), bk = rows_abs_max_bits(k);
    if (bq >= 0x7f800000u || bk >= 0x7f800000u) return false;
    float aq, ak;
    memcpy(&aq, &bq, sizeof aq), memcpy(&ak, &bk, sizeof ak);
    return (double)aq * (double)ak * sqrt((double)D) * 2.0 < (double)FLT_MAX;
}

const mha_forward_options *mha_mask_as_rule(const mha_forward_options *opt, bool appended, const mha_tensor *q,
                                            const mha_tensor *k, size_t D, mha_forward_options *as_rule) {
    if (appended || opt->is_causal || opt->key_padding_mask || !mha_mask_is_causal(opt->attn_mask) ||
        !scores_finite(q, k, D))
        return opt;
    *as_rule = *opt;
    as_rule->attn_mask = NULL, as_rule->is_causal = true;
    return as_rule;
}

size_t mha_head_stretches(size_t LS) { return (LS + MHA_HEAD_STRETCH - 1) / MHA_HEAD_STRETCH; }

/* avg = (Σ_h w[h]) / H, head 0 first, each stretch of positions summed in a buffer that stays in
 * L1: one pass, without reading and writing avg H + 2 times. wide: the sum in double, rounded to
 * float once (mha_reduce's sum over dim 1); else every step rounded to float
 * (float addition: a double sum of two floats rounded to float is the float sum). The division is
 * float's either way. Positions are independent: any split gives the same bits. MEAN_LANES
 * positions a vector (GCC vector extensions; two SSE2 registers of doubles on the baseline build):
 * each position's additions are the plain loop's, so are its bits, and the pass runs at the speed
 * of memory rather than of one scalar conversion and add per float (L=512, 8 heads: 1.0 ms instead
 * of 1.4). */
enum { MEAN_LANES = 4 };
typedef double mean_vd __attribute__((vector_size(MEAN_LANES * sizeof(double))));
typedef float mean_vf __attribute__((vector_size(MEAN_LANES * sizeof(float))));

/* One stretch of len positions at w (head h at w + h·LS) into avg: sum[] in double (wide) or the
 * float sums (narrow), whole vectors then the positions left. */
static void stretch_mean(float *avg, const float *w, size_t H, size_t LS, size_t len, bool wide) {
    mean_vd wide_sum[MHA_HEAD_STRETCH / MEAN_LANES];
    mean_vf sum[MHA_HEAD_STRETCH / MEAN_LANES];
    const size_t nv = len / MEAN_LANES;
    for (size_t i = 0; i < nv; i++) wide_sum[i] = (mean_vd){0}, sum[i] = (mean_vf){0};
    for (size_t h = 0; h < H; h++) {
        const float *head = w + h * LS;
        mean_vf x;
        if (wide)
            for (size_t i = 0; i < nv; i++) {
                memcpy(&x, head + i * MEAN_LANES, sizeof x);
                wide_sum[i] += __builtin_convertvector(x, mean_vd);
            }
        else
            for (size_t i = 0; i < nv; i++) {
                memcpy(&x, head + i * MEAN_LANES, sizeof x);
                sum[i] += x;
            }
    }
    for (size_t i = 0; i < nv; i++) {
        mean_vf mean = (wide ? __builtin_convertvector(wide_sum[i], mean_vf) : sum[i]) / (float)H;
        memcpy(avg + i * MEAN_LANES, &mean, sizeof mean);
    }
    for (size_t x = nv * MEAN_LANES; x < len; x++) {
        double acc = 0.0;
        for (size_t h = 0; h < H; h++) acc = wide ? acc + w[h * LS + x] : (float)(acc + w[h * LS + x]);
        avg[x] = (float)acc / (float)H;
    }
}

void mha_head_mean(float *avg, const float *w, size_t H, size_t LS, size_t from, size_t to, bool wide) {
    const size_t per_batch = mha_head_stretches(LS);
    for (size_t s = from; s < to; s++) {
        const size_t n = s / per_batch, x0 = s % per_batch * MHA_HEAD_STRETCH;
        const size_t len = LS - x0 < MHA_HEAD_STRETCH ? LS - x0 : MHA_HEAD_STRETCH;
        stretch_mean(avg + n * LS + x0, w + n * H * LS + x0, H, LS, len, wide);
    }
}
