/* core/attention/attention_internal.h - what the attention files (sdpa.c, heads.c, multihead.c,
 * multihead_grad.c) share and nobody else needs: the checks and the pieces of both MHA forwards. */
#ifndef MHA_ATTENTION_INTERNAL_H
#define MHA_ATTENTION_INTERNAL_H

#include "attention/multihead.h"
#include "attention/sdpa.h"
#include "nn/nn_internal.h"
#include "tensor/tensor.h"

/* MultiheadAttention.forward's checks of the module, q, k, v and the masks
 * (core/attention/multihead.c), for both of its forwards: the plain one and the one composed of
 * differentiable ops (core/attention/multihead_grad.c). */
mha_status mha_multihead_check(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                               const mha_tensor *value, const mha_forward_options *opt);

/* ---- the pieces both MultiheadAttention forwards share (heads.c); graph: record them as
 * differentiable ops ---- */

/* (N,X,E) as its heads (N,H,X,D): a view. */
mha_status mha_split_heads(mha_tensor *out, const mha_tensor *t, size_t H, bool graph);
/* query, key and value one tensor (the same view of the same storage) and one in_proj_weight:
 * the in-projection is one product x·W_inᵀ + b_in (N,L,3E), Q, K and V its column thirds. */
bool mha_self_attention(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                        const mha_tensor *value);
/* K or V (N,S,E) with bias_row (1,1,E, or NULL) and a zero row (zero_row) appended along dim 1:
 * (N,S',E). */
mha_status mha_append_kv_rows(mha_tensor *out, const mha_tensor *x, const mha_tensor *bias_row, bool zero_row,
                              bool graph);
/* Whether the masks let the fused kernel run (when the weights are not wanted); appended: S' >
 * S. */
bool mha_masks_fuse(const mha_forward_options *opt, bool appended);
/* opt, or *as_rule: opt with its bool attn_mask, when that is the causal rule (mha_mask_is_causal),
 * alone (no key padding mask) and over no appended key, given as is_causal instead - where every
 * score of q (N,L,H·D) and k (N,S,H·D), views with contiguous rows, is finite (no inf or NaN in
 * them, too small to overflow): adding the mask's -inf past the diagonal and setting -inf there
 * then agree (an inf score plus -inf is NaN, as in torch), and so do the weights and gradients,
 * bit for bit, without the mask read per score. Whether the fused kernel runs is decided on opt
 * still (mha_masks_fuse), which keeps the bits of the path the mask chose. */
const mha_forward_options *mha_mask_as_rule(const mha_forward_options *opt, bool appended, const mha_tensor *q,
                                            const mha_tensor *k, size_t D, mha_forward_options *as_rule);
/* The weights' head mean avg (N,L,S') of w (N,H,L,S'), LS = L·S', over stretches [from, to) of
 * MHA_HEAD_STRETCH positions, numbered across the batches (mha_head_stretches per batch). wide:
 * summed in double, else in float. */
enum { MHA_HEAD_STRETCH = 512 };
size_t mha_head_stretches(size_t LS);
void mha_head_mean(float *avg, const float *w, size_t H, size_t LS, size_t from, size_t to, bool wide);

#endif
