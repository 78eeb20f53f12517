/* core/nn/functional.h - the functional pieces of attention, as torch.nn.functional has them: softmax,
 * linear, layer norm, the sinusoidal positional encoding and the causal mask. */
#ifndef MHA_FUNCTIONAL_H
#define MHA_FUNCTIONAL_H

#include "tensor/tensor.h"

/* Letters used in every shape comment: N batch, L target (query) length, S source (key) length,
 * E embed dim, H heads, D head dim (E/H), Dv value head dim. */

/* softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x), along dim.
 * Policy for a row whose entries are all -inf (every key masked): the row is NaN, as in PyTorch
 * and NumPy; the weights lesson shows why. */
mha_status mha_softmax(mha_tensor *out, const mha_tensor *x, size_t dim);

/* y = x·Wᵀ + b, PyTorch's layout. x (..., in), W (out, in), b (out) or NULL -> y (..., out). */
mha_status mha_linear(mha_tensor *out, const mha_tensor *x, const mha_tensor *W, const mha_tensor *b);

/* y = (x - mean) / sqrt(var + eps) * weight + bias over the last norm_ndim dims (biased var).
 * weight and bias have the shape of those dims, or are NULL. */
mha_status mha_layer_norm(mha_tensor *out, const mha_tensor *x, size_t norm_ndim,
                          const mha_tensor *weight, const mha_tensor *bias, float eps);

/* (L,E): PE[p,2i] = sin(p / 10000^(2i/E)), PE[p,2i+1] = cos(p / 10000^(2i/E)). */
mha_status mha_positional_encoding(mha_tensor *out, size_t L, size_t E);

/* (L,S) bool, true above the diagonal (j > i): "query i may not look at the future key j". */
mha_status mha_causal_mask(mha_tensor *out, size_t L, size_t S);


#endif
