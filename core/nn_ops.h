/* core/nn_ops.h - the ops training needs beside attention: log_softmax, embedding, cross_entropy (forward),
 * and the plain backward of every op with a closed form, callable by hand (a lesson derives a gradient). */
#ifndef MHA_NN_OPS_H
#define MHA_NN_OPS_H

#include "tensor.h"

/* log_softmax(x)_i = x_i - max x - log Σ_j exp(x_j - max x), along dim. A row of all -inf is NaN. */
mha_status mha_log_softmax(mha_tensor *out, const mha_tensor *x, size_t dim);

/* out[..., :] = weight[index[...], :]: indices (any shape) hold 0-based whole numbers below
 * weight->shape[0] (float tensor); weight (num_embeddings, E) -> out (indices' shape..., E). */
mha_status mha_embedding(mha_tensor *out, const mha_tensor *indices, const mha_tensor *weight);

/* torch.nn.functional.cross_entropy(logits, targets), reduction 'mean': logits (C), (N,C) or (N,C,d1,...)
 * (the class dim is 1, or 0 for 1-D logits, as in torch); targets hold 0-based classes, shape = logits'
 * without the class dim. loss = mean over positions of -log_softmax(logits)[target]. out is a scalar. */
mha_status mha_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets);

/* ---- plain backward functions: gradients of the inputs from dy, the gradient of the output ---- */

/* y = softmax(x, dim):     dx = y ∘ (dy - Σ_dim dy∘y) */
mha_status mha_softmax_backward(mha_tensor *dx, const mha_tensor *dy, const mha_tensor *y, size_t dim);
/* y = log_softmax(x, dim): dx = dy - exp(y) ∘ Σ_dim dy */
mha_status mha_log_softmax_backward(mha_tensor *dx, const mha_tensor *dy, const mha_tensor *y, size_t dim);
/* y = x·Wᵀ + b:  dx = dy·W,  dW = Σ_rows dyᵀ·x,  db = Σ_rows dy.  x (..., in), W (out, in), dy (..., out).
 * Any output may be NULL (not wanted). */
mha_status mha_linear_backward(mha_tensor *dx, mha_tensor *dW, mha_tensor *db, const mha_tensor *dy,
                               const mha_tensor *x, const mha_tensor *W);
/* y = (x - μ)/σ · w + b over the last norm_ndim dims, σ = sqrt(var + eps) (biased var), x̂ = (x - μ)/σ:
 *   dx = (ĝ - mean(ĝ) - x̂·mean(ĝ∘x̂)) / σ with ĝ = dy∘w;  dw = Σ dy∘x̂;  db = Σ dy.
 * w may be NULL (1); dw, db may be NULL. */
mha_status mha_layer_norm_backward(mha_tensor *dx, mha_tensor *dw, mha_tensor *db, const mha_tensor *dy,
                                   const mha_tensor *x, size_t norm_ndim, const mha_tensor *w, float eps);
/* out = weight[indices]: dW[r] = Σ over positions p with indices[p] = r of dy[p] (a (num_embeddings, E) tensor) */
mha_status mha_embedding_backward(mha_tensor *dW, const mha_tensor *dy, const mha_tensor *indices, size_t num_embeddings);
/* loss = cross_entropy(logits, targets): dlogits = dloss · (softmax(logits) - onehot(targets)) / positions */
mha_status mha_cross_entropy_backward(mha_tensor *dlogits, float dloss, const mha_tensor *logits, const mha_tensor *targets);

#endif
