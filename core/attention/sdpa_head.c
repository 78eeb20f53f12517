/* core/attention/sdpa_head.c - one (L,S) slice of attention the plain way, every intermediate kept:
 * what returns the weights, and on the reference kernels the reference the fused kernel is held
 * to. */
#include "attention/sdpa.h"

#include <math.h>
#include <string.h>

#include "attention/masks.h"
#include "kernels/kernels.h"

/* Shared by mha_sdpa (when weights are wanted) and MultiheadAttention, so what the trace records is
 * what produced the output. */
static mha_status sgemm_ref(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                            ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate) {
    mha_sgemm_ref(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, accumulate);
    return MHA_OK;
}

const mha_attn_kernels mha_attn_fast = {mha_sgemm, mha_softmax_rows_sum};
const mha_attn_kernels mha_attn_ref = {sgemm_ref, mha_softmax_rows_sum_ref};

/* Each row's log-sum-exp, lse_i = max + log Σ_j exp(s_ij - max) (summed in double), of s (rows, n);
 * -inf for a row with every key masked (max -inf: log 0). */
static void rows_lse(float *lse, const float *s, size_t rows, size_t n) {
    for (size_t i = 0; i < rows; i++) {
        const float *row = s + i * n;
        float max = -INFINITY;
        for (size_t j = 0; j < n; j++)
            if (row[j] > max || isnan(row[j])) max = row[j];
        double sum = 0.0;
        if (max != -INFINITY)
            for (size_t j = 0; j < n; j++) sum += exp((double)row[j] - max);
        lse[i] = max == -INFINITY ? -INFINITY : (float)(max + log(sum));
    }
}

/* The keys of query i of a causal head that its scale and softmax take: up to its diagonal (row0 +
 * i), rounded up to whole vectors of the widest set (16 floats: the kernel's ragged end costs more
 * than -inf keys do), at most S. */
static size_t cut_keys(const mha_head_args *job, size_t i) {
    const size_t n = (job->row0 + i + 1 + 15) / 16 * 16;
    return n < job->S ? n : job->S;
}

mha_status mha_attention_plain(const mha_head_args *job, const mha_attn_kernels *kernels, float *weights,
                               float *scaled, float *masked) {
    const size_t L = job->L, S = job->S;
    bool has_attn = job->attn.f || job->attn.b, has_pad = job->pad.f || job->pad.b;

    /* causal on the fast kernels: q·kᵀ skips tiles past the diagonal (the causal pass below fills
     * them; not when the scores are traced), weights·v the zero weights past it (mha_sgemm_tri:
     * the same bits) - unless keys were appended (bias_k, the zero key), which every query sees */
    const bool tri = job->causal && kernels == &mha_attn_fast && !job->k_packed && !scaled && job->mask_cols == S;
    const ptrdiff_t diag = (ptrdiff_t)job->row0;

    /* pass 1: scaled = q·kᵀ·scale (kᵀ is k read with its strides swapped) */
    mha_status st = job->k_packed && kernels == &mha_attn_fast
                        ? mha_sgemm_packed(weights, S, job->q, (ptrdiff_t)job->ld_q, 1, job->k_packed, L, S, job->D, false)
                    : tri ? mha_sgemm_tri(weights, S, job->q, (ptrdiff_t)job->ld_q, 1, job->k, 1, (ptrdiff_t)job->ld_k, L,
                                          S, job->D, false, MHA_TRI_C_LOWER, diag)
                          : kernels->matmul(weights, S, job->q, (ptrdiff_t)job->ld_q, 1, job->k, 1, (ptrdiff_t)job->ld_k,
                                            L, S, job->D, false);
    if (st != MHA_OK) return st;
    /* causal, no keys appended: past the diagonal a row is -inf, which the softmax turns into 0 (or
     * the row's NaN): the scale and the softmax stop at the diagonal, the same bits (not for the
     * traced scores, which are kept whole) */
    const bool cut = job->causal && job->mask_cols == S && !scaled;
    const float scale = job->scale;   /* a local: the loop vectorizes */
    for (size_t i = 0; cut && scale != 1.0f && i < L; i++) {
        float *row = weights + i * S;
        for (size_t j = 0, n = cut_keys(job, i); j < n; j++) row[j] *= scale;
    }
    if (!cut && scale != 1.0f)
        for (size_t n = 0; n < L * S; n++) weights[n] *= scale;
    if (scaled) memcpy(scaled, weights, L * S * sizeof *weights);

    /* pass 2: masked = scaled + (attn_mask + key padding), then -inf where j > i (causal); a float
     * mask alone with its columns contiguous (MultiheadAttention's additive one) row by row, a loop
     * the compiler vectorizes: the same sums */
    const bool float_rows = job->attn.f && job->attn.cs == 1 && !has_pad;
    for (size_t i = 0; float_rows && i < L; i++) {
        float *row = weights + i * S;
        const float *m = job->attn.f + (ptrdiff_t)i * job->attn.rs;
        for (size_t j = 0; j < job->mask_cols; j++) row[j] += m[j];
    }
    for (size_t i = 0; !float_rows && (has_attn || has_pad) && i < L; i++) {
        float *row = weights + i * S;
        for (size_t j = 0; j < job->mask_cols; j++) {
            float m = has_attn ? mha_mask_value(&job->attn, i, j) : 0.0f;
            if (has_pad) m = has_attn ? m + mha_mask_value(&job->pad, i, j) : mha_mask_value(&job->pad, i, j);
            row[j] += m;
        }
    }
    for (size_t i = 0; job->causal && i < L; i++)
        for (size_t j = job->row0 + i + 1; j < job->mask_cols; j++) weights[i * S + j] = -INFINITY;
    if (masked) memcpy(masked, weights, L * S * sizeof *weights);
    if (job->lse) rows_lse(job->lse, weights, L, S);

    /* pass 3: weights = softmax(masked) along each row (and weights_sum += weights, as they are
     * written) */
    for (size_t i = 0; cut && i < L; i++) {
        float *row = weights + i * S;
        const size_t n = cut_keys(job, i);
        kernels->softmax_rows(row, S, 1, n, job->weights_sum ? job->weights_sum + i * job->ld_sum : NULL, job->ld_sum);
        const float past = isnan(row[0]) ? row[0] : 0.0f;   /* exp(-inf - max)/sum */
        for (size_t j = n; j < S; j++) row[j] = past;
        for (size_t j = n; job->weights_sum && j < S; j++) job->weights_sum[i * job->ld_sum + j] += past;
    }
    if (!cut) kernels->softmax_rows(weights, S, L, S, job->weights_sum, job->ld_sum);

    /* pass 4: out = weights·v */
    if (job->v_packed && kernels == &mha_attn_fast)
        return mha_sgemm_packed(job->out, job->ld_out, weights, (ptrdiff_t)S, 1, job->v_packed, L, job->Dv, S, false);
    if (tri)
        return mha_sgemm_tri(job->out, job->ld_out, weights, (ptrdiff_t)S, 1, job->v, (ptrdiff_t)job->ld_v, 1, L, job->Dv,
                             S, false, MHA_TRI_A_LOWER, diag);
    return kernels->matmul(job->out, job->ld_out, weights, (ptrdiff_t)S, 1, job->v, (ptrdiff_t)job->ld_v, 1, L,
                           job->Dv, S, false);
}
