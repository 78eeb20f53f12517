/* core/kernels.h - the raw-pointer compute kernels under the tensor ops: matrix multiply and fused
 * attention, each a fast kernel beside the plain reference kernel that tests hold it equal to. */
#ifndef MHA_KERNELS_H
#define MHA_KERNELS_H

#include <stddef.h>
#include "tensor.h"

/* C = A·B (+ C when accumulate).  A (M,K) with element (i,p) at a[i*a_rs + p*a_cs];
 * B (K,N) with (p,j) at b[p*b_rs + j*b_cs]; C (M,N) row-major with row stride ldc.
 * General strides let callers pass a transposed operand (linear's Wᵀ, attention's Kᵀ) without a copy. */
void mha_sgemm_ref(float *c, size_t ldc,
                   const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                   size_t M, size_t N, size_t K, bool accumulate);
/* The fast kernel: packed, cache-blocked, register-tiled. MHA_E_NOMEM, MHA_E_INTERRUPTED. */
mha_status mha_sgemm(float *c, size_t ldc,
                     const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                     const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                     size_t M, size_t N, size_t K, bool accumulate);

/* The instruction set the fast kernels use: "avx512", "avx2" or "portable", the best this CPU has
 * unless the environment variable MHA_ISA names another it supports. mha_kernels_use_isa switches
 * (tests run every path on one machine); false, and no change, for a name this CPU cannot run.
 * Not to be called while a kernel runs on another thread. */
const char *mha_kernels_isa(void);
bool mha_kernels_use_isa(const char *name);

/* softmax along each of `rows` rows of n contiguous floats (row stride ld), in place:
 * x_j <- exp(x_j - max x) / sum_k exp(x_k - max x), vectorised; a row of all -inf becomes NaN. */
void mha_softmax_rows(float *x, size_t ld, size_t rows, size_t n);

/* One head of attention: out = softmax(q·kᵀ·scale + mask)·v.
 *   out (L,Dv) row stride ld_out; q (L,D) row stride ld_q; k (S,D) ld_k; v (S,Dv) ld_v (unit column stride)
 *   mask: NULL, or an additive float mask (L,S) with row stride mask_rs and column stride mask_cs;
 *         mask_rs = 0 broadcasts one row (a key padding mask) over every query.
 *   causal: also mask j > i.
 * A row with every key masked comes out NaN (mha_softmax's policy). */
typedef struct mha_attn_args {
    float *out; size_t ld_out;
    const float *q; size_t ld_q;
    const float *k; size_t ld_k;
    const float *v; size_t ld_v;
    const float *mask; ptrdiff_t mask_rs, mask_cs;
    bool causal;
    float scale;
    size_t L, S, D, Dv;
} mha_attn_args;

/* Reference: forms the (L,S) scores, softmax, then ·v. weights (L,S) row-major is written when not NULL. */
mha_status mha_attention_ref(const mha_attn_args *args, float *weights);
/* Fused: online softmax over key tiles, never forms the (L,S) matrix; extra memory O(tile·(D+Dv)). */
mha_status mha_attention_fused(const mha_attn_args *args);

#endif
