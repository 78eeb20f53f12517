/* core/nn/autograd_nn.c - the differentiable layer ops: softmax, log_softmax, linear, layer_norm, embedding,
 * cross_entropy and scaled dot-product attention, each recording a node whose backward is in nn_ops.c/sdpa_backward.c. */
#include "autograd/autograd_ops.h"

#include <stdint.h>
#include <string.h>

#include "nn/nn_ops.h"
#include "attention/sdpa_backward.h"

/* ---- softmax, log_softmax ---- */

typedef struct softmax_node {
    mha_node base;
    size_t dim;
    bool is_log;               /* log_softmax */
} softmax_node;

static mha_status softmax_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const softmax_node *node = (const softmax_node *)n;
    return node->is_log ? mha_log_softmax_backward(&grads[0], g, &n->saved[0], node->dim)
                        : mha_softmax_backward(&grads[0], g, &n->saved[0], node->dim);
}

static mha_status record_softmax(mha_tensor *out, const mha_tensor *x, size_t dim, bool is_log) {
    const mha_tensor *in[1] = {x};
    if (!mha_ag_wants(in, 1)) return MHA_OK;
    mha_node *n;
    mha_status st = mha_ag_record(&n, sizeof(softmax_node), out, is_log ? "log_softmax" : "softmax",
                                  softmax_node_backward, in, 1);
    if (st != MHA_OK) return st;
    ((softmax_node *)n)->dim = dim;
    ((softmax_node *)n)->is_log = is_log;
    mha_ag_save(n, out);
    return MHA_OK;
}

mha_status mha_ag_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    mha_status st = mha_softmax(out, x, dim);
    return st == MHA_OK ? record_softmax(out, x, dim, false) : st;
}

mha_status mha_ag_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim) {
    mha_status st = mha_log_softmax(out, x, dim);
    return st == MHA_OK ? record_softmax(out, x, dim, true) : st;
}

/* ---- linear ---- */

static mha_status linear_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    return mha_linear_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                               n->n_inputs > 2 && n->inputs[2] ? &grads[2] : NULL, g, &n->saved[0], &n->saved[1]);
}

mha_status mha_ag_linear(mha_tensor *out, const mha_tensor *x, const mha_tensor *W, const mha_tensor *b) {
    const mha_tensor *in[3] = {x, W, b};
    mha_status st = mha_linear(out, x, W, b);
    if (st != MHA_OK || !mha_ag_wants(in, 3)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(mha_node), out, "linear", linear_node_backward, in, b ? 3 : 2)) != MHA_OK) return st;
    mha_ag_save(n, x);
    mha_ag_save(n, W);
    return MHA_OK;
}

/* ---- layer_norm ---- */

typedef struct layer_norm_node {
    mha_node base;
    size_t norm_ndim;
    float eps;
} layer_norm_node;

static mha_status layer_norm_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const layer_norm_node *node = (const layer_norm_node *)n;
    const mha_tensor *w = n->n_saved > 1 && n->saved[1].storage ? &n->saved[1] : NULL;
    return mha_layer_norm_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                                   n->inputs[2] ? &grads[2] : NULL, g, &n->saved[0], node->norm_ndim, w, node->eps);
}

mha_status mha_ag_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim, const mha_tensor *weight,
                             const mha_tensor *bias, float eps) {
    const mha_tensor *in[3] = {x, weight, bias};
    mha_status st = mha_layer_norm(out, x, norm_ndim, weight, bias, eps);
    if (st != MHA_OK || !mha_ag_wants(in, 3)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(layer_norm_node), out, "layer_norm", layer_norm_node_backward, in, 3)) != MHA_OK)
        return st;
    ((layer_norm_node *)n)->norm_ndim = norm_ndim;
    ((layer_norm_node *)n)->eps = eps;
    mha_ag_save(n, x);
    if (weight) mha_ag_save(n, weight);
    return MHA_OK;
}

/* ---- embedding, cross_entropy ---- */

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

typedef struct cross_entropy_node {
    mha_node base;
    mha_ce_options opt;        /* a copy: the caller's options may be gone by the backward */
} cross_entropy_node;

static mha_status cross_entropy_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const cross_entropy_node *node = (const cross_entropy_node *)n;
    return mha_cross_entropy_backward(&grads[0], g, &n->saved[0], &n->saved[1], &node->opt);
}

mha_status mha_ag_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets,
                                const mha_ce_options *opt) {
    static const mha_ce_options defaults = {MHA_REDUCTION_MEAN, false, 0.0f, 0.0f};
    const mha_tensor *in[2] = {logits, targets};
    mha_status st = mha_cross_entropy(out, logits, targets, opt);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(cross_entropy_node), out, "cross_entropy", cross_entropy_node_backward, in, 2)) !=
        MHA_OK)
        return st;
    ((cross_entropy_node *)n)->opt = opt ? *opt : defaults;
    mha_ag_save(n, logits);
    mha_ag_save(n, targets);
    return MHA_OK;
}

/* ---- scaled dot-product attention ----
 * The output's node backpropagates through the saved weights (plain) or, when the forward ran fused, by
 * recomputing them tile by tile (sdpa_backward.c). Weights returned to the user get a node of their own
 * ("sdpa_weights"): gradients through both are summed by the engine, as the math is linear in them. */

/* Saved: q, k, v, then the weights (or, fused, the output), then the mask (slot 4, empty when none). */
typedef struct sdpa_node {
    mha_node base;
    bool is_causal;
    float scale;
    bool from_weights;         /* the output's node: slot 3 holds the weights (backward from them), else the output */
} sdpa_node;

static mha_sdpa_options node_sdpa_options(const mha_node *n) {
    const sdpa_node *node = (const sdpa_node *)n;
    mha_sdpa_options opt = {.attn_mask = n->saved[4].storage ? &n->saved[4] : NULL, .is_causal = node->is_causal,
                            .scale = node->scale};
    return opt;
}

static mha_status sdpa_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    mha_sdpa_options opt = node_sdpa_options(n);
    const bool from_weights = ((const sdpa_node *)n)->from_weights;
    const mha_tensor *weights = from_weights ? &n->saved[3] : NULL, *out = from_weights ? NULL : &n->saved[3];
    return mha_sdpa_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                             n->inputs[2] ? &grads[2] : NULL, n->inputs[3] ? &grads[3] : NULL, g, NULL, &n->saved[0], &n->saved[1], &n->saved[2],
                             weights, out, &opt);
}

/* the weights' own node: only q and k get a gradient through the softmax (v's is zeros) */
static mha_status sdpa_weights_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    mha_sdpa_options opt = node_sdpa_options(n);
    return mha_sdpa_backward(n->inputs[0] ? &grads[0] : NULL, n->inputs[1] ? &grads[1] : NULL,
                             n->inputs[2] ? &grads[2] : NULL, n->inputs[3] ? &grads[3] : NULL, NULL, g,
                             &n->saved[0], &n->saved[1], &n->saved[2], &n->saved[3], NULL, &opt);
}

static void save_sdpa(mha_node *n, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v, const mha_tensor *kept,
                      const mha_sdpa_options *opt) {
    sdpa_node *node = (sdpa_node *)n;
    mha_ag_save(n, q);
    mha_ag_save(n, k);
    mha_ag_save(n, v);
    mha_ag_save(n, kept);
    if (opt && opt->attn_mask) mha_ag_save(n, opt->attn_mask);
    else n->n_saved++; /* slot 4 stays empty: no mask */
    node->is_causal = opt && opt->is_causal;
    node->scale = opt ? opt->scale : 0.0f;
}

/* Fused or not, a forward whose weights fit this budget keeps them for its backward, as torch's math path does:
 * the backward from kept weights does four (L,S)-sized products per slice (dP, dV, dQ, dK), the fused one five
 * (it recomputes the scores first). Above it the fused path keeps memory O(L·D).
 * The trade at MultiheadAttention E=512 H=8 L=2048 (128 MiB of weights), one thread, min of 3, load ~2: keeping
 * them makes forward + backward 1460 ms against 1814 fused, and the recording forward alone 487 ms against 449
 * fused (no_grad 439) - 24% off the training step for 8% on a forward nobody backpropagates through, so they
 * are kept. */
static size_t keep_budget = (size_t)256 << 20;

size_t mha_ag_sdpa_keep_budget(size_t bytes) {
    size_t was = keep_budget;
    keep_budget = bytes;
    return was;
}

/* The bytes of the (batch..., L, S) weights of q (..., L, D), k (..., S, D), v and the mask, batch dims broadcast;
 * SIZE_MAX when the shapes do not fit (mha_sdpa reports that). */
static size_t weights_bytes(const mha_tensor *q, const mha_tensor *k, const mha_tensor *v, const mha_tensor *mask) {
    const mha_tensor *all[4] = {q, k, v, mask};
    size_t nb = 0, bshape[MHA_MAX_DIMS];
    for (int i = 0; i < 4; i++) {
        const mha_tensor *t = all[i];
        if (!t || t->ndim < 2) { if (i < 3) return SIZE_MAX; continue; }
        size_t lead = t->ndim - 2;
        while (nb < lead) bshape[MHA_MAX_DIMS - ++nb] = 1;
        for (size_t d = 0; d < lead; d++) { /* aligned on the right, as broadcasting */
            size_t at = MHA_MAX_DIMS - (lead - d);
            if (bshape[at] == 1) bshape[at] = t->shape[d];
            else if (t->shape[d] != 1 && t->shape[d] != bshape[at]) return SIZE_MAX;
        }
    }
    double bytes = (double)q->shape[q->ndim - 2] * (double)k->shape[k->ndim - 2] * sizeof(float);
    for (size_t d = MHA_MAX_DIMS - nb; d < MHA_MAX_DIMS; d++) bytes *= (double)bshape[d];
    return bytes < (double)SIZE_MAX ? (size_t)bytes : SIZE_MAX;
}

mha_status mha_ag_sdpa(mha_tensor *out, mha_tensor *weights, const mha_tensor *q, const mha_tensor *k,
                       const mha_tensor *v, const mha_sdpa_options *opt) {
    /* a float mask that requires grad is the fourth input (torch differentiates an added mask too) */
    const mha_tensor *mask = opt ? opt->attn_mask : NULL;
    const mha_tensor *in[4] = {q, k, v, mask && mask->dtype == MHA_FLOAT32 ? mask : NULL};
    if (!mha_ag_wants(in, 4)) return mha_sdpa(out, weights, q, k, v, opt);
    /* weights not asked for: kept for the backward all the same when they fit the budget */
    mha_tensor kept = MHA_TENSOR_EMPTY;
    const bool keep = !weights && weights_bytes(q, k, v, mask) <= keep_budget;
    mha_status st = mha_sdpa(out, weights ? weights : keep ? &kept : NULL, q, k, v, opt);
    if (st != MHA_OK) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(sdpa_node), out, "scaled_dot_product_attention", sdpa_node_backward, in, 4)) !=
        MHA_OK) {
        if (weights) mha_release(weights);
        mha_release(&kept);
        return st;
    }
    ((sdpa_node *)n)->from_weights = weights != NULL || keep; /* else fused, from the saved output */
    save_sdpa(n, q, k, v, weights ? weights : keep ? &kept : out, opt);
    mha_release(&kept);
    if (weights) {
        mha_node *wn;
        if ((st = mha_ag_record(&wn, sizeof(sdpa_node), weights, "scaled_dot_product_attention", sdpa_weights_node_backward,
                                in, 4)) != MHA_OK) {
            mha_release(out);
            return st;
        }
        save_sdpa(wn, q, k, v, weights, opt);
    }
    return MHA_OK;
}
