/* core/attention/alibi.c - ALiBi (Press, Smith and Lewis, "Train Short, Test Long", 2022): a
 * per-head slope and the bias -slope·distance it adds to the scores instead of adding positions to
 * the tokens. */
#include "attention/positions.h"

#include <math.h>

/* Slope k of a power of two n, as the official get_slopes_power_of_2: start·ratio^k. */
static double slope_power_of_2(size_t n, size_t k) {
    double start = pow(2.0, -pow(2.0, -(log2((double)n) - 3.0)));   /* 2^(-8/n) */
    return start * pow(start, (double)k);
}

/* Slope h (0-based) of H heads, the official get_slopes rule, recursive in the same way. */
static double slope_of(size_t H, size_t h) {
    size_t n = 1;
    while (n * 2 <= H) n *= 2;   /* the largest power of two <= H */
    if (n == H || h < n) return slope_power_of_2(n, h);
    return slope_of(2 * n, 2 * (h - n));   /* every other slope of 2n: get_slopes(2n)[0::2] */
}

mha_status mha_alibi_slopes(mha_tensor *out, size_t H) {
    if (H == 0) return mha_fail(MHA_E_ARG, "%s", "alibi_slopes: H must be at least 1 (one slope per head), got 0");
    size_t shape[1] = {H};
    mha_status st = mha_empty_named(out, MHA_FLOAT32, 1, shape, "alibi_slopes");
    if (st != MHA_OK) return st;
    float *slopes = mha_f32(out);
    for (size_t h = 0; h < H; h++) slopes[h] = (float)slope_of(H, h);
    return MHA_OK;
}

mha_status mha_alibi_bias(mha_tensor *out, size_t H, size_t L, size_t S) {
    if (H == 0) return mha_fail(MHA_E_ARG, "%s", "alibi_bias: H must be at least 1 (one slope per head), got 0");
    if (L > S)
        return mha_fail(MHA_E_ARG, "alibi_bias: L = %zu queries exceed S = %zu positions; the queries are the last "
                        "L of the S positions", L, S);
    size_t shape[3] = {H, L, S};
    mha_status st = mha_empty_named(out, MHA_FLOAT32, 3, shape, "alibi_bias");
    if (st != MHA_OK || L == 0 || S == 0) return st;   /* no element: no row to walk */
    float *bias = mha_f32(out);
    for (size_t h = 0; h < H; h++) {
        double slope = (double)(float)slope_of(H, h);   /* the slope alibi_slopes gives, as a
                                                           float */
        for (size_t i = 0; i < L; i++) {
            size_t t = S - L + i;   /* the position of query i */
            for (size_t j = 0; j < S; j++) {
                double distance = t >= j ? (double)(t - j) : (double)(j - t);
                bias[(h * L + i) * S + j] = (float)(-slope * distance);
            }
        }
    }
    return MHA_OK;
}
