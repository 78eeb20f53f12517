/* core/attention/window.c - the sliding-window mask with attention sinks (Mistral's window; Xiao et
 * al., StreamingLLM, 2024, for the sinks): each query sees its last W keys and the first `sinks`
 * keys. */
#include "attention/positions.h"

mha_status mha_sliding_window_mask(mha_tensor *out, size_t L, size_t W, size_t sinks, size_t S) {
    if (W == 0)
        return mha_fail(MHA_E_ARG, "sliding_window_mask: W must be at least 1 (a query sees itself), got 0 for "
                        "(L, S) = (%zu,%zu)", L, S);
    if (L > S)
        return mha_fail(MHA_E_ARG, "sliding_window_mask: L = %zu queries exceed S = %zu positions; the queries are "
                        "the last L of the S positions", L, S);
    size_t shape[2] = {L, S};
    mha_status st = mha_empty_named(out, MHA_BOOL, 2, shape, "sliding_window_mask");
    if (st != MHA_OK || L == 0 || S == 0) return st;   /* no element: no row to walk */
    bool *mask = mha_bool(out);
    for (size_t i = 0; i < L; i++) {
        size_t t = S - L + i;   /* the position of query i */
        for (size_t j = 0; j < S; j++) {
            bool seen = j <= t && (t - j < W || j < sinks);
            mask[i * S + j] = !seen;
        }
    }
    return MHA_OK;
}
