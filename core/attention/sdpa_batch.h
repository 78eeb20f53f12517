/* core/attention/sdpa_batch.h - the batch of sdpa's slices, for sdpa.c's forward and backward: the
 * leading dims of q, k, v and the mask broadcast together, and where slice n of each lies. */
#ifndef MHA_SDPA_BATCH_H
#define MHA_SDPA_BATCH_H

#include "attention/masks.h"
#include "tensor/tensor.h"

/* Each flat batch index n is one (L,S) slice: q (..., L, D), k (..., S, D), v, the mask and the
 * gradients broadcast their leading dims together; each is expanded to the batch shape
 * (a view, stride 0 where a dim broadcasts) and slice n of it found at mha_batch_offset. group:
 * query heads per K/V head (enable_gqa; 1 for every tensor but k and v, and for them too without
 * GQA) - k and v keep their H_kv heads and slice n reads head h / group of its query head h. */

/* Grows the batch shape (nb dims, right-aligned) to take in t's leading dims (all but its last 2),
 * its heads dim counted group times. False when a size is neither 1 nor the batch's. */
bool mha_batch_grow(size_t *nb, size_t *bshape, const mha_tensor *t, size_t group);
/* t expanded to (bshape..., rows, cols) (its heads dim bshape[nb-1] / group), or an error of fname
 * naming arg. */
mha_status mha_batch_expand(mha_tensor *out, const mha_tensor *t, size_t nb, const size_t *bshape, size_t group,
                            size_t rows, size_t cols, const char *fname, const char *arg);
/* Element offset of batch n (flat, C order over the nb leading dims) in t expanded by
 * mha_batch_expand. */
ptrdiff_t mha_batch_offset(const mha_tensor *t, size_t nb, size_t n, size_t group);
/* The mask (expanded to the batch) of slice n, as the plain path reads it; no mask: f = b =
 * NULL. */
mha_mask_src mha_mask_slice(const mha_tensor *mask, size_t nb, size_t n);
/* The query heads per K/V head: H / H_kv of q (..., H, L, E), k and v (..., H_kv, S, E) with
 * enable_gqa, else 1; an error of fname when H is not a multiple of H_kv or k and v differ in
 * heads. */
mha_status mha_sdpa_group(size_t *group, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                          bool enable_gqa, const char *fname);
/* A gradient over the batch g (bshape..., rows, cols) summed over each group of query heads:
 * (..., H_kv, rows, cols), the backward of reading one K/V head from group query heads. */
mha_status mha_sdpa_group_sum(mha_tensor *out, const mha_tensor *g, size_t nb, size_t group);

#endif
