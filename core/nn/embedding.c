/* core/nn/embedding.c - the rows of a weight table picked by indices: the forward, its backward
 * (the rows' gradients summed per index) and its graph node. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "nn/nn_internal.h"

/* Checks that every entry of indices is a whole number in [0, count); names fname and arg. */
static mha_status check_indices(const mha_tensor *cidx, size_t count, const char *fname, const char *arg) {
    char s[MHA_SHAPE_BUF];
    const float *p = mha_f32(cidx);
    for (size_t i = 0, n = mha_numel(cidx); i < n; i++)
        if (!(p[i] >= 0.0f && p[i] < (float)count && p[i] == floorf(p[i])))
            return mha_fail(MHA_E_ARG, "%s: %s %s: entry %zu is %g, expected a whole number in [0, %zu)", fname, arg,
                            SHAPE(s, cidx), i, (double)p[i], count);
    return MHA_OK;
}

/* ---- forward ---- */

mha_status mha_embedding(mha_tensor *out, const mha_tensor *indices, const mha_tensor *weight) {
    char sw[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(indices, "embedding", "indices")) != MHA_OK || (st = check_float(weight, "embedding", "weight")) != MHA_OK)
        return st;
    if (weight->ndim != 2) return mha_fail(MHA_E_SHAPE, "embedding: weight %s must be 2-D (num_embeddings, embedding_dim)", SHAPE(sw, weight));
    if (indices->ndim + 1 > MHA_MAX_DIMS)
        return mha_fail(MHA_E_SHAPE, "embedding: indices have %zu dims, at most %d supported", indices->ndim, MHA_MAX_DIMS - 1);
    mha_tensor cidx = MHA_TENSOR_EMPTY, cw = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous(&cidx, indices)) != MHA_OK) return st;
    if ((st = check_indices(&cidx, weight->shape[0], "embedding", "indices")) != MHA_OK ||
        (st = mha_contiguous(&cw, weight)) != MHA_OK) {
        mha_release(&cidx);
        return st;
    }
    size_t shape[MHA_MAX_DIMS], E = weight->shape[1];
    memcpy(shape, indices->shape, indices->ndim * sizeof *shape);
    shape[indices->ndim] = E;
    st = mha_empty(out, MHA_FLOAT32, indices->ndim + 1, shape);
    if (st == MHA_OK) {
        const float *idx = mha_f32(&cidx), *wp = mha_f32(&cw);
        float *dst = mha_f32(out);
        for (size_t p = 0, n = mha_numel(&cidx); p < n; p++) memcpy(dst + p * E, wp + (size_t)idx[p] * E, E * sizeof *dst);
    }
    mha_release(&cidx), mha_release(&cw);
    return st;
}

/* ---- backward ---- */

mha_status mha_embedding_backward(mha_tensor *dW, const mha_tensor *dy, const mha_tensor *indices, size_t num_embeddings) {
    char sy[MHA_SHAPE_BUF], si[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, "embedding_backward", "dy")) != MHA_OK || (st = check_float(indices, "embedding_backward", "indices")) != MHA_OK)
        return st;
    bool fits = dy->ndim == indices->ndim + 1;
    for (size_t d = 0; fits && d < indices->ndim; d++) fits = dy->shape[d] == indices->shape[d];
    if (!fits)
        return mha_fail(MHA_E_SHAPE, "embedding_backward: dy %s must be indices' shape %s plus the embedding dim",
                        SHAPE(sy, dy), SHAPE(si, indices));
    size_t E = dy->shape[dy->ndim - 1], shape[2] = {num_embeddings, E};
    mha_tensor cy = MHA_TENSOR_EMPTY, cidx = MHA_TENSOR_EMPTY, gw = MHA_TENSOR_EMPTY;
    double *acc = NULL;
    size_t acc_count = num_embeddings * E, acc_bytes = (acc_count ? acc_count : 1) * sizeof *acc;
    if ((st = mha_contiguous(&cy, dy)) != MHA_OK || (st = mha_contiguous(&cidx, indices)) != MHA_OK) goto done;
    if ((st = check_indices(&cidx, num_embeddings, "embedding_backward", "indices")) != MHA_OK) goto done;
    if ((st = mha_empty(&gw, MHA_FLOAT32, 2, shape)) != MHA_OK) goto done;
    if (!(acc = mha_alloc(acc_bytes))) {
        st = mha_fail(MHA_E_NOMEM, "embedding_backward: out of memory");
        goto done;
    }
    memset(acc, 0, acc_bytes);
    const float *g = mha_f32(&cy), *idx = mha_f32(&cidx);
    for (size_t p = 0, n = mha_numel(&cidx); p < n; p++) /* positions in order: deterministic
                                                            sums */
        for (size_t e = 0; e < E; e++) acc[(size_t)idx[p] * E + e] += g[p * E + e];
    for (size_t i = 0; i < num_embeddings * E; i++) mha_f32(&gw)[i] = (float)acc[i];
    *dW = gw, gw = MHA_TENSOR_EMPTY;
done:
    if (acc) mha_free(acc, acc_bytes);
    mha_release(&cy), mha_release(&cidx), mha_release(&gw);
    return st;
}

/* ---- the graph node: mha_ag_embedding records the forward; its backward runs the one above
 * ---- */

static mha_status embedding_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    return mha_embedding_backward(&grads[1], g, &n->saved[0], n->in_shapes[1].shape[0]);
}

mha_status mha_ag_embedding(mha_tensor *out, const mha_tensor *indices, const mha_tensor *weight) {
    const mha_tensor *in[2] = {indices, weight};
    mha_status st = mha_embedding(out, indices, weight);
    if (st != MHA_OK || !mha_ag_wants(in, 2)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(mha_node), out, "embedding", embedding_node_backward, in, 2)) != MHA_OK) return st;
    mha_ag_save(n, indices);
    return MHA_OK;
}
