/* core/kernels.c - the compute kernels under the tensor ops: matrix multiply and attention over raw
 * float pointers, each plain reference kernel kept beside the fast kernel that tests hold equal to it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

/* ---------------------------------------------------------------------------------------------
 * Reference kernels: the formulas written as loops, nothing clever.
 * ------------------------------------------------------------------------------------------- */

/* C[i,j] (+)= sum_p A[i,p]·B[p,j], summed in double so the reference is the accurate one. */
void mha_sgemm_ref(float *c, size_t ldc,
                   const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                   size_t M, size_t N, size_t K, bool accumulate) {
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++) {
            double sum = accumulate ? c[i * ldc + j] : 0.0;
            for (size_t p = 0; p < K; p++)
                sum += (double)a[(ptrdiff_t)i * a_rs + (ptrdiff_t)p * a_cs] *
                       (double)b[(ptrdiff_t)p * b_rs + (ptrdiff_t)j * b_cs];
            c[i * ldc + j] = (float)sum;
        }
    }
}

/* The fast kernel; for now the reference, so the ops above can link while it is tuned. */
mha_status mha_sgemm(float *c, size_t ldc,
                     const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                     const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                     size_t M, size_t N, size_t K, bool accumulate) {
    if (mha_interrupted())
        return mha_fail(MHA_E_INTERRUPTED, "sgemm: (%zu,%zu) @ (%zu,%zu): interrupted", M, K, K, N);
    mha_sgemm_ref(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, accumulate);
    return MHA_OK;
}

/* softmax of one row in place: w_j = exp(x_j - max x) / sum_k exp(x_k - max x).
 * A row whose entries are all -inf (every key masked) becomes NaN, as in PyTorch and NumPy. */
static void softmax_row(float *row, size_t S) {
    float max = -INFINITY;
    for (size_t j = 0; j < S; j++)
        if (row[j] > max) max = row[j];
    if (max == -INFINITY) {
        for (size_t j = 0; j < S; j++) row[j] = NAN;
        return;
    }
    float sum = 0.0f;
    for (size_t j = 0; j < S; j++) {
        row[j] = expf(row[j] - max);
        sum += row[j];
    }
    for (size_t j = 0; j < S; j++) row[j] /= sum;
}

/* out = softmax(q·kᵀ·scale + mask)·v, in the order the lessons show it.
 * The (L,S) scores live in `weights` when the caller wants them, else in scratch. */
mha_status mha_attention_ref(const mha_attn_args *args, float *weights) {
    const size_t L = args->L, S = args->S, D = args->D, Dv = args->Dv;
    float *scores = weights; /* (L,S) row-major */
    size_t scratch_bytes = 0;
    if (scores == NULL && L > 0 && S > 0) {
        if (S > SIZE_MAX / sizeof(float) / L)
            return mha_fail(MHA_E_NOMEM, "attention: (%zu,%zu) scores: size overflows", L, S);
        scratch_bytes = L * S * sizeof(float);
        scores = mha_alloc(scratch_bytes);
        if (scores == NULL)
            return mha_fail(MHA_E_NOMEM, "attention: (%zu,%zu) scores: out of memory", L, S);
    }
    mha_status status = MHA_OK;

    /* pass 1: scores = q·kᵀ (kᵀ is k read with its strides swapped: no copy) */
    status = mha_sgemm(scores, S, args->q, (ptrdiff_t)args->ld_q, 1, args->k, 1, (ptrdiff_t)args->ld_k,
                       L, S, D, false);
    if (status != MHA_OK) goto done;

    /* pass 2: scale, add the mask, hide the future; pass 3: softmax along each row */
    for (size_t i = 0; i < L; i++) {
        float *row = scores + i * S;
        for (size_t j = 0; j < S; j++) {
            float x = row[j] * args->scale;
            if (args->mask) x += args->mask[(ptrdiff_t)i * args->mask_rs + (ptrdiff_t)j * args->mask_cs];
            if (args->causal && j > i) x = -INFINITY;
            row[j] = x;
        }
        softmax_row(row, S);
    }
    if (mha_interrupted()) {
        status = mha_fail(MHA_E_INTERRUPTED, "attention: (%zu,%zu) scores: interrupted", L, S);
        goto done;
    }

    /* pass 4: out = weights·v */
    if (S == 0) {
        for (size_t i = 0; i < L; i++) memset(args->out + i * args->ld_out, 0, Dv * sizeof(float));
    } else {
        status = mha_sgemm(args->out, args->ld_out, scores, (ptrdiff_t)S, 1, args->v, (ptrdiff_t)args->ld_v, 1,
                           L, Dv, S, false);
    }
done:
    if (scratch_bytes) mha_free(scores, scratch_bytes);
    return status;
}

/* The fused kernel; for now the reference path, so callers can link while it is written. */
mha_status mha_attention_fused(const mha_attn_args *args) {
    return mha_attention_ref(args, NULL);
}
