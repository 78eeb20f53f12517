/* core/attention/masks.h - the masks attention is given: the causal mask, and a bool mask as the
 * additive float mask it stands for. */
#ifndef MHA_MASKS_H
#define MHA_MASKS_H

#include <math.h>

#include "tensor/tensor.h"

/* (L,S) bool, true above the diagonal (j > i): "query i may not look at the future key j". */
mha_status mha_causal_mask(mha_tensor *out, size_t L, size_t S);
/* Whether mask is a bool (L,S) mask true exactly where j > i: mha_causal_mask's, which attention
 * may then apply as its causal rule (is_causal) instead of reading it. */
bool mha_mask_is_causal(const mha_tensor *mask);
/* A bool mask as the float mask it stands for (true -> -inf, false -> 0), of the mask's own size: a
 * broadcast (stride 0) dimension stays broadcast, so an expanded key padding row stays one row. */
mha_status mha_mask_additive(mha_tensor *out, const mha_tensor *mask, const char *fname);

/* An additive mask over (L,S) read through strides: a float mask is added, a bool mask adds -inf
 * where true. Both pointers NULL: no mask. rs = 0 repeats one row (a key padding row) for every
 * query. */
typedef struct mha_mask_src {
    const float *f;
    const bool *b;
    ptrdiff_t rs, cs;
} mha_mask_src;

/* A mask's value at (i, j): a float mask's own, a bool mask's -inf or 0; 0 without a mask. */
static inline float mha_mask_value(const mha_mask_src *m, size_t i, size_t j) {
    ptrdiff_t at = (ptrdiff_t)i * m->rs + (ptrdiff_t)j * m->cs;
    if (m->f) return m->f[at];
    if (m->b) return m->b[at] ? -INFINITY : 0.0f;
    return 0.0f;
}

#endif
