/* core/attention/masks.c - the masks attention is given: the causal mask, true where a query may not look
 * at a later key. */
#include "attention/attention.h"

mha_status mha_causal_mask(mha_tensor *out, size_t L, size_t S) {
    size_t shape[2] = {L, S};
    mha_status st = mha_empty_named(out, MHA_BOOL, 2, shape, "causal_mask");
    if (st != MHA_OK || L == 0 || S == 0) return st;   /* no element: no row to walk */
    bool *m = mha_bool(out);
    for (size_t i = 0; i < L; i++)
        for (size_t j = 0; j < S; j++) m[i * S + j] = j > i;
    return MHA_OK;
}
