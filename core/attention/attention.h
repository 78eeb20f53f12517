/* core/attention/attention.h - the attention layer of mha-repl in one include, for the bindings and tests:
 * nn/nn.h (softmax, linear, ...), sdpa.h (scaled dot-product attention), multihead.h, the masks. */
#ifndef MHA_ATTENTION_H
#define MHA_ATTENTION_H

#include "nn/nn.h"
#include "attention/sdpa.h"
#include "attention/multihead.h"

/* ---- masks.c ---- */

/* (L,S) bool, true above the diagonal (j > i): "query i may not look at the future key j". */
mha_status mha_causal_mask(mha_tensor *out, size_t L, size_t S);
/* A bool mask as the float mask it stands for (true -> -inf, false -> 0), of the mask's own size: a
 * broadcast (stride 0) dimension stays broadcast, so an expanded key padding row stays one row. */
mha_status mha_mask_additive(mha_tensor *out, const mha_tensor *mask, const char *fname);

/* ---- sdpa.c: the graph node ---- */

/* mha_sdpa recorded in the autograd graph. weights may be NULL (not wanted): when all the weights fit the keep
 * budget (256 MiB unless set) the forward keeps them for the backward (4 products per slice), else it runs
 * fused and the backward recomputes them tile by tile (5 products, memory O(L·D)). mha_ag_sdpa_keep_budget sets
 * the budget in bytes (0: always fused; tests) and returns the one before. */
size_t mha_ag_sdpa_keep_budget(size_t bytes);
mha_status mha_ag_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                       const mha_tensor *v, const mha_sdpa_options *opt);
/* mha_ag_sdpa, and each row's log-sum-exp into lse when not NULL (mha_sdpa_lse): a plain tensor, outside the graph. */
mha_status mha_ag_sdpa_lse(mha_tensor *out, mha_tensor *weights, mha_tensor *lse, const mha_tensor *q,
                           const mha_tensor *k, const mha_tensor *v, const mha_sdpa_options *opt);

#endif
