/* core/attention/positions.h - where a query may look and how far away a key is: ALiBi's distance
 * bias (alibi.c) and the sliding-window mask with attention sinks (window.c). RoPE is in
 * core/nn/rope.h. */
#ifndef MHA_POSITIONS_H
#define MHA_POSITIONS_H

#include "tensor/tensor.h"

/* Letters: H heads, L queries, S keys. The L queries are the last L of the S positions: query i
 * (0-based) sits at position S - L + i, as in decoding from a KV cache; L <= S. */

/* (H) float: ALiBi's head slopes (Press et al., 2022, their get_slopes), in double, rounded once:
 *   H a power of two:  slope_h = 2^(-8h/H), h = 1..H  (start·ratio^(h-1), start = ratio = 2^(-8/H))
 *   otherwise, n = the largest power of two below H: the n slopes of n, then slopes 1, 3, 5, ...
 *   of 2n, H - n of them. H >= 1. */
mha_status mha_alibi_slopes(mha_tensor *out, size_t H);

/* (H, L, S) float, to add to the scores: bias[h][i][j] = -slope_h · |(S - L + i) - j|. */
mha_status mha_alibi_bias(mha_tensor *out, size_t H, size_t L, size_t S);

/* (L, S) bool, true where a query may NOT look (the project's mask sense, as mha_causal_mask):
 * query i at position t = S - L + i sees key j when j <= t and (t - j < W or j < sinks). W >= 1;
 * W >= S gives the causal mask of the last L rows (mha_causal_mask(L, S) when L = S). */
mha_status mha_sliding_window_mask(mha_tensor *out, size_t L, size_t W, size_t sinks, size_t S);

#endif
