/* core/attention/attention_internal.h - what the attention files (sdpa.c, heads.c, multihead.c,
 * multihead_grad.c) share and nobody else needs: the checks and the pieces of both MHA forwards. */
#ifndef MHA_ATTENTION_INTERNAL_H
#define MHA_ATTENTION_INTERNAL_H

#include "attention/multihead.h"
#include "attention/sdpa.h"
#include "nn/nn_internal.h"
#include "tensor/tensor.h"

/* MultiheadAttention.forward's checks of the module, q, k, v and the masks (core/attention/multihead.c), for both of
 * its forwards: the plain one and the one composed of differentiable ops (core/attention/multihead_grad.c). */
mha_status mha_multihead_check(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                               const mha_tensor *value, const mha_forward_options *opt);

/* ---- the pieces both MultiheadAttention forwards share (heads.c); graph: record them as differentiable ops ---- */

/* (N,X,E) as its heads (N,H,X,D): a view. */
mha_status mha_split_heads(mha_tensor *out, const mha_tensor *t, size_t H, bool graph);
/* K or V (N,S,E) with bias_row (1,1,E, or NULL) and a zero row (zero_row) appended along dim 1: (N,S',E). */
mha_status mha_append_kv_rows(mha_tensor *out, const mha_tensor *x, const mha_tensor *bias_row, bool zero_row,
                              bool graph);
/* Whether the masks let the fused kernel run (when the weights are not wanted); appended: S' > S. */
bool mha_masks_fuse(const mha_forward_options *opt, bool appended);
/* The weights' head mean avg (N,L,S') of w (N,H,L,S'), LS = L·S', over stretches [from, to) of MHA_HEAD_STRETCH
 * positions, numbered across the batches (mha_head_stretches per batch). wide: summed in double, else in float. */
enum { MHA_HEAD_STRETCH = 512 };
size_t mha_head_stretches(size_t LS);
void mha_head_mean(float *avg, const float *w, size_t H, size_t LS, size_t from, size_t to, bool wide);

/* ---- sdpa_batch.c: the batch of sdpa's slices (sdpa.c's forward and backward) ---- */

/* Each flat batch index n is one (L,S) slice: q (..., L, D), k (..., S, D), v, the mask and the gradients
 * broadcast their leading dims together; each is expanded to the batch shape (a view, stride 0 where a dim
 * broadcasts) and slice n of it found at mha_batch_offset. group: query heads per K/V head (enable_gqa; 1
 * for every tensor but k and v, and for them too without GQA) - k and v keep their H_kv heads and slice n
 * reads head h / group of its query head h. */

/* Grows the batch shape (nb dims, right-aligned) to take in t's leading dims (all but its last 2), its heads
 * dim counted group times. False when a size is neither 1 nor the batch's. */
bool mha_batch_grow(size_t *nb, size_t *bshape, const mha_tensor *t, size_t group);
/* t expanded to (bshape..., rows, cols) (its heads dim bshape[nb-1] / group), or an error of fname naming arg. */
mha_status mha_batch_expand(mha_tensor *out, const mha_tensor *t, size_t nb, const size_t *bshape, size_t group,
                            size_t rows, size_t cols, const char *fname, const char *arg);
/* Element offset of batch n (flat, C order over the nb leading dims) in t expanded by mha_batch_expand. */
ptrdiff_t mha_batch_offset(const mha_tensor *t, size_t nb, size_t n, size_t group);
/* The mask (expanded to the batch) of slice n, as the plain path reads it; no mask: f = b = NULL. */
mha_mask_src mha_mask_slice(const mha_tensor *mask, size_t nb, size_t n);
/* The query heads per K/V head: H / H_kv of q (..., H, L, E), k and v (..., H_kv, S, E) with enable_gqa, else
 * 1; an error of fname when H is not a multiple of H_kv or k and v differ in heads. */
mha_status mha_sdpa_group(size_t *group, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                          bool enable_gqa, const char *fname);
/* A gradient over the batch g (bshape..., rows, cols) summed over each group of query heads: (..., H_kv, rows,
 * cols), the backward of reading one K/V head from group query heads. */
mha_status mha_sdpa_group_sum(mha_tensor *out, const mha_tensor *g, size_t nb, size_t group);

#endif
