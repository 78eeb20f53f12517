/* core/nn/nn_internal.h - what the files of core/nn/ share and nobody else needs: shape strings for
 * messages, the float argument check, a shape product, a row's normaliser, a failure re-raised
 * under the caller's name. */
#ifndef MHA_NN_INTERNAL_H
#define MHA_NN_INTERNAL_H

#include <stdio.h>

#include "kernels/kernels.h"
#include "tensor/tensor.h"

/* Shape strings for messages: SHAPE(buf, t) fills buf (MHA_SHAPE_BUF bytes) and returns it. */
#define SHAPE(buf, t) mha_shape_str((buf), sizeof(buf), (t))

/* The tensor argument `arg` of fname must be a filled float32 tensor. */
static inline mha_status check_float(const mha_tensor *t, const char *fname, const char *arg) {
    if (t == NULL || t->storage == NULL)
        return mha_fail(MHA_E_ARG, "%s: %s is missing (an empty or released tensor)", fname, arg);
    if (t->dtype != MHA_FLOAT32) {
        char s[MHA_SHAPE_BUF];
        return mha_fail(MHA_E_DTYPE, "%s: %s %s is bool, expected float32", fname, arg, SHAPE(s, t));
    }
    return MHA_OK;
}

/* shape[from] · ... · shape[to-1]; 1 when from == to. */
static inline size_t prod(const size_t *shape, size_t from, size_t to) {
    size_t n = 1;
    for (size_t d = from; d < to; d++) n *= shape[d];
    return n;
}

/* Σ_j exp(row_j - max) of a row of n logits (contiguous) and its max, NaN where one is (the sum
 * then NaN): the normaliser of log_softmax and cross_entropy, lse = max + log(sum) (mha_exp_sum,
 * so exp never overflows). */
static inline double logits_exp_sum(float *max_out, const float *row, size_t n) {
    float max = n ? row[0] : 0.0f;
    bool nan = false;
    for (size_t j = 1; j < n; j++) { /* a select, not a branch: maxss */
        max = row[j] > max ? row[j] : max;
        nan |= row[j] != row[j];
    }
    for (size_t j = 1; nan && j < n; j++) /* a NaN: the last one is the max */
        if (row[j] != row[j]) max = row[j];
    *max_out = max;
    return mha_exp_sum(row, n, max);
}

/* A failure of a call made on fname's behalf (the matrix multiply's packing), re-raised under fname
 * when memory ran out, so the message names the function the user called and then where it ran out:
 * "linear: sgemm: (4,8) @ (8,8): out of memory for packing". Other failures pass as they are. */
static inline mha_status nomem_under(mha_status st, const char *fname) {
    if (st != MHA_E_NOMEM) return st;
    char why[480];
    snprintf(why, sizeof why, "%s", mha_errmsg());
    return mha_fail(st, "%s: %s", fname, why);
}

#endif
