/* core/attention/masks.c - the masks attention is given: the causal mask, true where a query may
 * not look at a later key, and a bool mask as the additive float mask it stands for. */
#include "attention/masks.h"

#include <math.h>

mha_status mha_causal_mask(mha_tensor *out, size_t L, size_t S) {
    size_t shape[2] = {L, S};
    mha_status st = mha_empty_named(out, MHA_BOOL, 2, shape, "causal_mask");
    if (st != MHA_OK || L == 0 || S == 0) return st;   /* no element: no row to walk */
    bool *m = mha_bool(out);
    for (size_t i = 0; i < L; i++)
        for (size_t j = 0; j < S; j++) m[i * S + j] = j > i;
    return MHA_OK;
}

bool mha_mask_is_causal(const mha_tensor *mask) {
    if (!mask || mask->dtype != MHA_BOOL || mask->ndim != 2 || !mask->storage) return false;
    const bool *m = mha_bool(mask);
    for (size_t i = 0; i < mask->shape[0]; i++)
        for (size_t j = 0; j < mask->shape[1]; j++)
            if (m[(ptrdiff_t)i * mask->stride[0] + (ptrdiff_t)j * mask->stride[1]] != (j > i)) return false;
    return true;
}

/* A bool mask as the float mask it stands for (true -> -inf, false -> 0), of the mask's own size: a
 * broadcast (stride 0) dimension stays broadcast, so an expanded key padding row stays one row. */
mha_status mha_mask_additive(mha_tensor *out, const mha_tensor *mask, const char *fname) {
    mha_tensor compact = MHA_TENSOR_EMPTY;
    size_t shape[MHA_MAX_DIMS];
    for (size_t d = 0; d < mask->ndim; d++) shape[d] = mask->stride[d] == 0 ? 1 : mask->shape[d];
    mha_status st = mha_empty_named(&compact, MHA_FLOAT32, mask->ndim, shape, fname);
    if (st != MHA_OK) return st;
    float *dst = mha_f32(&compact);
    const bool *src = mha_bool(mask);
    for (size_t n = 0, total = mha_numel(&compact); n < total; n++) {
        ptrdiff_t at = 0;
        for (size_t d = mask->ndim, rest = n; d-- > 0; rest /= shape[d]) at += (ptrdiff_t)(rest % shape[d]) * mask->stride[d];
        dst[n] = src[at] ? -INFINITY : 0.0f;
    }
    st = mha_expand(out, &compact, mask->ndim, mask->shape);
    mha_release(&compact);
    return st;
}
