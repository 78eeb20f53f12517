/* core/attention/sdpa.h - scaled dot-product attention, forward and backward: mha_sdpa and
 * mha_sdpa_backward on tensors, and the one plain per-head path (every intermediate kept) that
 * MultiheadAttention runs. */
#ifndef MHA_SDPA_H
#define MHA_SDPA_H

#include "attention/masks.h"
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
    bool enable_gqa;             /* q (..., H, L, E), k and v (..., H_kv, S, E), H a multiple of
                                  * H_kv: query head h (0-based) reads K/V head h / (H/H_kv),
                                  * torch 2.5's grouped-query attention */
} mha_sdpa_options;

/* out = softmax(q·kᵀ·scale + mask)·v.  q (..., L, D), k (..., S, D), v (..., S, Dv), leading dims
 * broadcast -> out (..., L, Dv), weights (..., L, S). weights may be NULL: then the fused kernel
 * runs and the L×S matrix is never formed. */
mha_status mha_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                    const mha_tensor *v, const mha_sdpa_options *opt);
/* mha_sdpa, and when lse is not NULL each row's log-sum-exp (..., L) of the scaled, masked scores
 * s: lse_i = log Σ_j exp(s_ij) (natural log; -inf for a row with every key masked), the number the
 * fused kernel's running max m and sum l give as m + log l, and the plain path from its masked
 * scores. */
mha_status mha_sdpa_lse(mha_tensor *out, mha_tensor *weights, mha_tensor *lse, const mha_tensor *q,
                        const mha_tensor *k, const mha_tensor *v, const mha_sdpa_options *opt);

/* ---- one head, the plain way: the reference of the fused kernel (mha_attention_fused) ---- */


typedef struct mha_head_args {
    float *out; size_t ld_out;     /* (L,Dv) */
    const float *q; size_t ld_q;   /* (L,D) */
    const float *k; size_t ld_k;   /* (S,D) */
    const float *v; size_t ld_v;   /* (S,Dv) */
    mha_mask_src attn, pad;        /* attn_mask slice; key padding row (rs 0) */
    size_t mask_cols;              /* masks and causal cover keys j < mask_cols; later ones (bias_k,
                                      zero_attn) stay visible */
    bool causal;                   /* -inf where j > row0 + i */
    size_t row0;                   /* the first query's index when these L queries are a block of
                                    * rows of a longer slice (the causal mask needs it; attn points
                                    * at the block's rows) */
    float *weights_sum; size_t ld_sum; /* NULL, or (L,S): the weights are added in as softmax writes
                                          them */
    float *lse;             /* NULL, or (L): each row's log-sum-exp of the masked scores (pass 2) */
    const float *k_packed, *v_packed;  /* NULL, or kᵀ (D,S) and v (S,Dv) packed by
                                        * mha_sgemm_pack_b for many blocks of rows: then the fast
                                        * kernels read these, not k and v */
    float scale;
    size_t L, S, D, Dv;
} mha_head_args;

/* The kernels the plain path runs on. mha_attn_fast (mha_sgemm, mha_softmax_rows_sum) is what
 * mha_sdpa and MultiheadAttention run; mha_attn_ref (mha_sgemm_ref, mha_softmax_rows_sum_ref:
 * loops, sums in double) makes the same path the reference the fused kernel is held equal to
 * (tests/core/test_attention.c). */
typedef struct mha_attn_kernels {
    mha_status (*matmul)(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                         ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate);
    void (*softmax_rows)(float *x, size_t ld, size_t rows, size_t n, float *sum, size_t ld_sum);
} mha_attn_kernels;
extern const mha_attn_kernels mha_attn_fast, mha_attn_ref;

/* out = softmax(q·kᵀ·scale + attn + pad, -inf where causal and j > i)·v, in the lessons' passes:
 * pass 1 scores, pass 2 masks, pass 3 softmax (adding into weights_sum when given), pass 4 ·v.
 * weights (L,S) row-major receives the weights (the caller's memory: this function allocates
 * nothing); scaled and masked, when not NULL, receive copies of the scores after pass 1 and pass 2.
 * A row with every key masked comes out NaN. */
mha_status mha_attention_plain(const mha_head_args *args, const mha_attn_kernels *kernels, float *weights,
                               float *scaled, float *masked);

/* ---- the backward, its passes numbered against the forward's (mha_attention_plain) ---- */

/* Forward, for one (L,S) slice: pass 1 s = q·kᵀ·scale, pass 2 s += mask (bool or causal: -inf),
 * pass 3 P = softmax_rows(s), pass 4 out = P·v. Backward, pass 4 first
 * (dout = dO, dweights = dP_extra):
 *   backward of pass 4 (·v):      dV = Pᵀ·dO        dP = dO·vᵀ + dP_extra
 *   backward of pass 3 (softmax): dS = P ∘ (dP - rowsum(P ∘ dP))
 *                                 (rowsum(P∘dP) = rowsum(dO∘out) when there is no dP_extra)
 *   backward of pass 2 (masks):   dS = 0 where a bool mask or is_causal masks;
 *                                 dMask = dS for a float mask
 *   backward of pass 1 (scores):  dQ = dS·k·scale   dK = dSᵀ·q·scale
 * Plain (weights given): P read from the forward's weights (..., L, S); out, when given and
 * dweights is not, gives rowsum(P∘dP) as rowsum(dO∘out) (Dv terms a row, not S).
 * Fused (weights NULL): out (the forward's result) is needed instead, for rowsum(P∘dP) =
 * rowsum(dO∘out). For each tile of 64 queries: up to 4096 keys the tile's whole score rows are
 * recomputed and softmaxed (one pass, the forward's row kernel); beyond, sweep 1 finds each row's
 * log-sum-exp over tiles of 512 keys and sweep 2 recomputes P = exp(s - lse) tile by tile (the
 * flash-attention method). Each tile adds its share of dQ, dK, dV. Extra memory: two
 * 64×min(S,4096 or 512) tiles per thread beside the gradients: O(S), never O(L·S).
 * Leading dims broadcast as in the forward; each gradient is summed back to its input's shape
 * (with enable_gqa, dK and dV of a K/V head are the sums over the query heads of its group). dq,
 * dk, dv may be NULL (not wanted); dout or dweights may be NULL
 * (no gradient there; dweights needs weights). dmask, when not NULL, gets the gradient of a float
 * attn_mask (torch gives one to a mask that requires grad): the mask is added to the scores, so
 * dMask = dS = P ∘ (dP - rowsum(P ∘ dP)), 0 where is_causal masks, summed to the mask's shape;
 * (L,S)-sized whatever the path. Masked positions: one a bool mask or is_causal masks passes no
 * gradient (dS = 0, the backward of masked_fill); a float mask is added, and its backward passes
 * everything on. So a fully masked row (NaN weights and output, the forward's policy) gives NaN in
 * dV (Pᵀ·dO) in both cases, and in dQ and dK only when the mask was a float one - exactly torch
 * 1.13's autograd through masked_fill or an added mask. */
mha_status mha_sdpa_backward(mha_tensor *dq, mha_tensor *dk, mha_tensor *dv, mha_tensor *dmask, const mha_tensor *dout,
                             const mha_tensor *dweights, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                             const mha_tensor *weights, const mha_tensor *out, const mha_sdpa_options *opt);

/* ---- the graph node ---- */

/* mha_sdpa recorded in the autograd graph. weights may be NULL (not wanted): when all the weights
 * fit the keep budget (256 MiB unless set, sdpa_testing.h) the forward keeps them for the backward
 * (4 products per slice), else it runs fused and the backward recomputes them tile by tile
 * (5 products, memory O(L·D)). */
mha_status mha_ag_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                       const mha_tensor *v, const mha_sdpa_options *opt);
/* mha_ag_sdpa, and each row's log-sum-exp into lse when not NULL (mha_sdpa_lse): a plain tensor,
 * outside the graph. */
mha_status mha_ag_sdpa_lse(mha_tensor *out, mha_tensor *weights, mha_tensor *lse, const mha_tensor *q,
                           const mha_tensor *k, const mha_tensor *v, const mha_sdpa_options *opt);

#endif
