/* core/nn/nn.h - the layer ops, one file per op family (softmax.c, linear.c, layer_norm.c,
 * embedding.c, cross_entropy.c, positional.c): each forward, its plain backward (callable by hand)
 * and its recorded version. */
#ifndef MHA_NN_H
#define MHA_NN_H

#include "tensor/tensor.h"

/* Letters used in every shape comment: N batch, L target (query) length, S source (key) length,
 * E embed dim, H heads, D head dim (E/H), Dv value head dim.
 * Each op comes three ways: the forward (mha_softmax), its plain backward, the gradients of the
 * inputs from dy, the gradient of the output (mha_softmax_backward), and the forward recorded in
 * the autograd graph when an input requires grad (mha_ag_softmax: the same result, a node whose
 * backward is the plain one). */

/* ---- softmax.c: softmax, log_softmax ---- */

/* softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x), along dim.
 * Policy for a row whose entries are all -inf (every key masked): the row is NaN, as in PyTorch
 * and NumPy; the weights lesson shows why. */
mha_status mha_softmax(mha_tensor *out, const mha_tensor *x, size_t dim);

/* log_softmax(x)_i = x_i - max x - log Σ_j exp(x_j - max x), along dim. A row of all -inf is
 * NaN. */
mha_status mha_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim);

/* y = softmax(x, dim):     dx = y ∘ (dy - Σ_dim dy∘y) */
mha_status mha_softmax_backward(mha_tensor *dx, const mha_tensor *dy, const mha_tensor *y, size_t dim);
/* y = log_softmax(x, dim): dx = dy - exp(y) ∘ Σ_dim dy */
mha_status mha_log_softmax_backward(mha_tensor *dx, const mha_tensor *dy, const mha_tensor *y, size_t dim);
/* recorded in the graph */
mha_status mha_ag_softmax(mha_tensor *out, const mha_tensor *x, size_t dim);
mha_status mha_ag_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim);

/* ---- linear.c ---- */

/* y = x·Wᵀ + b, PyTorch's layout. x (..., in), W (out, in), b (out) or NULL -> y (..., out). */
mha_status mha_linear(mha_tensor *out, const mha_tensor *x, const mha_tensor *W, const mha_tensor *b);

/* y = x·Wᵀ + b:  dx = dy·W,  dW = Σ_rows dyᵀ·x,  db = Σ_rows dy.  x (..., in), W (out, in), dy
 * (..., out). Any output may be NULL (not wanted). */
mha_status mha_linear_backward(mha_tensor *dx, mha_tensor *dW, mha_tensor *db, const mha_tensor *dy,
                               const mha_tensor *x, const mha_tensor *W);
/* recorded in the graph */
mha_status mha_ag_linear(mha_tensor *out, const mha_tensor *x, const mha_tensor *W, const mha_tensor *b);

/* ---- layer_norm.c ---- */

/* y = (x - mean) / sqrt(var + eps) * weight + bias over the last norm_ndim dims (biased var).
 * weight and bias have the shape of those dims, or are NULL. */
mha_status mha_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim,
                          const mha_tensor *weight, const mha_tensor *bias, float eps);

/* y = (x - μ)/σ · w + b over the last norm_ndim dims, σ = sqrt(var + eps) (biased var), x̂ =
 * (x - μ)/σ:
 *   dx = (ĝ - mean(ĝ) - x̂·mean(ĝ∘x̂)) / σ with ĝ = dy∘w;  dw = Σ dy∘x̂;  db = Σ dy.
 * w may be NULL (1); dw, db may be NULL. */
mha_status mha_layer_norm_backward(mha_tensor *dx, mha_tensor *dw, mha_tensor *db, const mha_tensor *dy,
                                   const mha_tensor *x, size_t norm_ndim, const mha_tensor *w, float eps);
/* recorded in the graph */
mha_status mha_ag_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim, const mha_tensor *weight,
                             const mha_tensor *bias, float eps);

/* ---- embedding.c ---- */

/* out[..., :] = weight[index[...], :]: indices (any shape) hold 0-based whole numbers below
 * weight->shape[0] (float tensor); weight (num_embeddings, E) -> out (indices' shape..., E). */
mha_status mha_embedding(mha_tensor *out, const mha_tensor *indices, const mha_tensor *weight);

/* out = weight[indices]: dW[r] = Σ over positions p with indices[p] = r of dy[p]
 * (a (num_embeddings, E) tensor) */
mha_status mha_embedding_backward(mha_tensor *dW, const mha_tensor *dy, const mha_tensor *indices, size_t num_embeddings);
/* recorded in the graph */
mha_status mha_ag_embedding(mha_tensor *out, const mha_tensor *indices, const mha_tensor *weight);

/* ---- cross_entropy.c ---- */

/* How a loss over positions is reduced, as torch's reduction argument. */
typedef enum { MHA_REDUCTION_MEAN, MHA_REDUCTION_SUM, MHA_REDUCTION_NONE } mha_reduction;

/* torch.nn.functional.cross_entropy's options (torch 1.13 semantics). A position whose target
 * equals ignore_index (when has_ignore; compared in the targets' own numbering) counts for nothing:
 * loss 0, gradient 0, and 'mean' divides by the positions not ignored
 * (all ignored: 0/0 = NaN, as torch). label_smoothing ε in [0, 1] mixes the one-hot target with the
 * uniform distribution over the C classes. */
typedef struct mha_ce_options {
    mha_reduction reduction;
    bool has_ignore;
    float ignore_index;
    float label_smoothing;
} mha_ce_options;

/* torch.nn.functional.cross_entropy(logits, targets, ...): logits (C), (N,C) or (N,C,d1,...)
 * (the class dim is 1, or 0 for 1-D logits, as in torch); targets hold 0-based classes, shape =
 * logits' without the class dim. Per position p with target t, lse = log Σ_c exp(x_c):
 *   loss_p = (1-ε)·(lse - x_t) + ε/C · Σ_c (lse - x_c)          (0 when t is ignored)
 * out is the mean over the positions not ignored, their sum (scalars), or loss_p itself
 * (targets' shape). opt NULL: reduction 'mean', nothing ignored, no smoothing. */
mha_status mha_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets,
                             const mha_ce_options *opt);

/* loss = cross_entropy(logits, targets, opt): per position p not ignored
 *   dlogits_p = w_p · (softmax(x_p) - (1-ε)·onehot(t_p) - ε/C),   0 for an ignored position,
 * with w_p = dloss / (positions not ignored) for 'mean', dloss for 'sum', dloss_p for 'none'. dloss
 * is a scalar for 'mean' and 'sum', of targets' shape for 'none'. opt NULL as for
 * mha_cross_entropy. */
mha_status mha_cross_entropy_backward(mha_tensor *dlogits, const mha_tensor *dloss, const mha_tensor *logits,
                                      const mha_tensor *targets, const mha_ce_options *opt);
/* recorded in the graph */
mha_status mha_ag_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets,
                                const mha_ce_options *opt);

/* ---- positional.c ---- */

/* (L,E): PE[p,2i] = sin(p / 10000^(2i/E)), PE[p,2i+1] = cos(p / 10000^(2i/E)). */
mha_status mha_positional_encoding(mha_tensor *out, size_t L, size_t E);

#endif
