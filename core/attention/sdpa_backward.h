/* core/attention/sdpa_backward.h - the backward of scaled dot-product attention: the plain one from the weights the
 * forward kept, and the fused one that recomputes them tile by tile (extra memory O(L·D), never O(L·S)). */
#ifndef MHA_SDPA_BACKWARD_H
#define MHA_SDPA_BACKWARD_H

#include "tensor/tensor.h"
#include "attention/attention.h"

/* Forward: s = q·kᵀ·scale + mask (causal: -inf where j > i), P = softmax_rows(s), out = P·v.
 * Backward, for one (L,S) slice (dout = dO, dweights = dP_extra):
 *   dV = Pᵀ·dO          dP = dO·vᵀ + dP_extra
 *   dS = P ∘ (dP - rowsum(P ∘ dP))        (softmax's backward; rowsum(P∘dP) = rowsum(dO∘out) when there is no dP_extra)
 *   dQ = dS·k·scale     dK = dSᵀ·q·scale
 * Plain (weights given): P read from the forward's weights (..., L, S).
 * Fused (weights NULL): out (the forward's result) is needed instead, for rowsum(P∘dP) = rowsum(dO∘out). For each
 *   tile of 64 queries: up to 4096 keys the tile's whole score rows are recomputed and softmaxed (one pass, the
 *   forward's row kernel); beyond, pass 1 finds each row's log-sum-exp over tiles of 512 keys and pass 2
 *   recomputes P = exp(s - lse) tile by tile (the flash-attention method). Each tile adds its share of dQ, dK,
 *   dV. Extra memory: two 64×min(S,4096 or 512) tiles per thread beside the gradients: O(S), never O(L·S).
 * Leading dims broadcast as in the forward; each gradient is summed back to its input's shape. dq, dk, dv may be
 * NULL (not wanted); dout or dweights may be NULL (no gradient there; dweights needs weights). dmask, when not
 * NULL, gets the gradient of a float attn_mask (torch gives one to a mask that requires grad): the mask is added
 * to the scores, so dMask = dS/scale = P ∘ (dP - rowsum(P ∘ dP)), 0 where is_causal masks, summed to the mask's
 * shape; (L,S)-sized whatever the path. Masked positions: one a bool mask or is_causal masks passes no gradient (dS = 0, the
 * backward of masked_fill); a float mask is added, and its backward passes everything on. So a fully masked row
 * (NaN weights and output, the forward's policy) gives NaN in dV (Pᵀ·dO) in both cases, and in dQ and dK only
 * when the mask was a float one - exactly torch 1.13's autograd through masked_fill or an added mask. */
mha_status mha_sdpa_backward(mha_tensor *dq, mha_tensor *dk, mha_tensor *dv, mha_tensor *dmask, const mha_tensor *dout,
                             const mha_tensor *dweights, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                             const mha_tensor *weights, const mha_tensor *out, const mha_sdpa_options *opt);

/* Tests: true makes the fused backward's pass 1 (rows over 4096 keys) sum its exps by the plain reference loop
 * instead of the vectorised softmax kernel; the gradients must agree to float rounding. */
void mha_sdpa_backward_plain_lse(bool on);

#endif
