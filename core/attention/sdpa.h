/* core/attention/sdpa.h - scaled dot-product attention: mha_sdpa on tensors, and the one plain per-head path
 * (every intermediate kept) that MultiheadAttention runs and that the fused kernel is tested against. */
#ifndef MHA_SDPA_H
#define MHA_SDPA_H

#include "tensor/tensor.h"

/* Letters used in every shape comment: N batch, L target (query) length, S source (key) length,
 * E embed dim, H heads, D head dim (E/H), Dv value head dim. */

/* Masks, everywhere in mha-repl: a bool mask is true where attention is NOT allowed (as in
 * nn.MultiheadAttention; note torch 2's F.scaled_dot_product_attention uses the opposite sense);
 * a float mask is added to the scores. */
typedef struct mha_sdpa_options {
    const mha_tensor *attn_mask; /* NULL, or bool/float broadcastable to (..., L, S) */
    bool is_causal;              /* also mask j > i */
    float scale;                 /* 0 means 1/sqrt(D) */
} mha_sdpa_options;

/* out = softmax(q·kᵀ·scale + mask)·v.  q (..., L, D), k (..., S, D), v (..., S, Dv), leading dims
 * broadcast -> out (..., L, Dv), weights (..., L, S). weights may be NULL: then the fused kernel runs
 * and the L×S matrix is never formed. */
mha_status mha_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                    const mha_tensor *v, const mha_sdpa_options *opt);


/* ---- one head, the plain way: the reference of the fused kernel (mha_attention_fused) ---- */

/* An additive mask over (L,S) read through strides: a float mask is added, a bool mask adds -inf
 * where true. Both pointers NULL: no mask. rs = 0 repeats one row (a key padding row) for every query. */
typedef struct mha_mask_src {
    const float *f;
    const bool *b;
    ptrdiff_t rs, cs;
} mha_mask_src;

typedef struct mha_head_args {
    float *out; size_t ld_out;     /* (L,Dv) */
    const float *q; size_t ld_q;   /* (L,D) */
    const float *k; size_t ld_k;   /* (S,D) */
    const float *v; size_t ld_v;   /* (S,Dv) */
    mha_mask_src attn, pad;        /* attn_mask slice; key padding row (rs 0) */
    size_t mask_cols;              /* masks and causal cover keys j < mask_cols; later ones (bias_k, zero_attn) stay visible */
    bool causal;                   /* -inf where j > row0 + i */
    size_t row0;                   /* the first query's index when these L queries are a block of rows of a
                                    * longer slice (the causal mask needs it; attn points at the block's rows) */
    float *weights_sum; size_t ld_sum; /* NULL, or (L,S): the weights are added in as softmax writes them */
    const float *k_packed, *v_packed;  /* NULL, or kᵀ (D,S) and v (S,Dv) packed by mha_sgemm_pack_b for many
                                        * blocks of rows: then the fast kernels read these, not k and v */
    float scale;
    size_t L, S, D, Dv;
} mha_head_args;

/* The kernels the plain path runs on. mha_attn_fast (mha_sgemm, mha_softmax_rows_sum) is what mha_sdpa and
 * MultiheadAttention run; mha_attn_ref (mha_sgemm_ref, mha_softmax_rows_sum_ref: loops, sums in double)
 * makes the same path the reference the fused kernel is held equal to (tests/core/test_attention.c). */
typedef struct mha_attn_kernels {
    mha_status (*matmul)(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                         ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate);
    void (*softmax_rows)(float *x, size_t ld, size_t rows, size_t n, float *sum, size_t ld_sum);
} mha_attn_kernels;
extern const mha_attn_kernels mha_attn_fast, mha_attn_ref;

/* out = softmax(q·kᵀ·scale + attn + pad, -inf where causal and j > i)·v, in the lessons' passes:
 * pass 1 scores, pass 2 masks, pass 3 softmax (adding into weights_sum when given), pass 4 ·v.
 * weights (L,S) row-major receives the weights (the caller's memory: this function allocates nothing);
 * scaled and masked, when not NULL, receive copies of the scores after pass 1 and pass 2. A row with
 * every key masked comes out NaN. */
mha_status mha_attention_plain(const mha_head_args *args, const mha_attn_kernels *kernels, float *weights,
                               float *scaled, float *masked);

#endif
