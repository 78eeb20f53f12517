/* core/attention/sdpa_batch.h - the batch of sdpa's slices, for sdpa.c's forward and backward: the
 * argument checks that find it, the leading dims broadcast together, where slice n of each lies. */
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

/* The sizes of one mha_sdpa or mha_sdpa_backward call: the slice's L, S, D, Dv, the batch shape
 * (nb dims) and the query heads per K/V head. */
typedef struct mha_sdpa_sizes {
    size_t L, S, D, Dv, nb, bshape[MHA_MAX_DIMS];
    size_t group; /* query heads per K/V head */
} mha_sdpa_sizes;

/* mha_sdpa's argument checks (q, k, v and the attn_mask, or NULL), which find the sizes; enable_gqa
 * as mha_sdpa_options'. */
mha_status mha_sdpa_check(mha_sdpa_sizes *z, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                          const mha_tensor *mask, bool enable_gqa);
/* mha_sdpa_backward's: all = q, k, v, opt's attn_mask, dout, dweights, weights, out (each may be
 * NULL but q, k, v); dmask: the mask's gradient is wanted. */
mha_status mha_sdpa_backward_check(mha_sdpa_sizes *z, const mha_tensor *const all[8], bool enable_gqa, bool dmask);

#endif
