/* core/attention/attention_internal.h - what the attention files (functional.c, sdpa.c, heads.c, multihead.c,
 * multihead_grad.c) share and nobody else needs: messages, argument checks, the pieces of both MHA forwards. */
#ifndef MHA_ATTENTION_INTERNAL_H
#define MHA_ATTENTION_INTERNAL_H

#include <stdio.h>

#include "attention/multihead.h"
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

/* MultiheadAttention.forward's checks of the module, q, k, v and the masks (core/attention/multihead.c), for both of
 * its forwards: the plain one and the one composed of differentiable ops (core/attention/multihead_grad.c). */
mha_status mha_multihead_check(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                               const mha_tensor *value, const mha_forward_options *opt);

/* ---- the pieces both MultiheadAttention forwards share (heads.c); graph: record them as differentiable ops ---- */

/* (N,X,E) as its heads (N,H,X,D): a view. */
mha_status mha_split_heads(mha_tensor *out, const mha_tensor *t, size_t H, bool graph);
/* K or V (N,S,E) with bias_row (1,1,E, or NULL) and a zero row (zero_row) appended along dim 1: (N,S',E). */
mha_status mha_append_kv_rows(mha_tensor *out, const mha_tensor *x, const mha_tensor *bias_row, bool zero_row,
                              bool graph);
/* Whether the masks let the fused kernel run (when the weights are not wanted); appended: S' > S. */
bool mha_masks_fuse(const mha_forward_options *opt, bool appended);
/* The weights' head mean avg (N,L,S') of w (N,H,L,S'), LS = L·S', over stretches [from, to) of MHA_HEAD_STRETCH
 * positions, numbered across the batches (mha_head_stretches per batch). wide: summed in double, else in float. */
enum { MHA_HEAD_STRETCH = 512 };
size_t mha_head_stretches(size_t LS);
void mha_head_mean(float *avg, const float *w, size_t H, size_t LS, size_t from, size_t to, bool wide);

/* shape[from] · ... · shape[to-1]; 1 when from == to. */
static inline size_t prod(const size_t *shape, size_t from, size_t to) {
    size_t n = 1;
    for (size_t d = from; d < to; d++) n *= shape[d];
    return n;
}

/* A failure of a call made on fname's behalf (a kernel's scratch, linear inside the forward), re-raised
 * under fname when memory ran out, so the message names the function the user called and then where
 * it ran out: "linear: sgemm: (4,8) @ (8,8): out of memory for packing". Other failures pass as they are. */
static inline mha_status nomem_under(mha_status st, const char *fname) {
    if (st != MHA_E_NOMEM) return st;
    char why[480];
    snprintf(why, sizeof why, "%s", mha_errmsg());
    return mha_fail(st, "%s: %s", fname, why);
}

#endif
