/* core/attention/multihead_grad.h - MultiheadAttention with gradients: its parameters as autograd
 * leaves, and a forward that records the graph (composed of linear, narrow, cat, views and sdpa)
 * whenever an input or a parameter requires grad. */
#ifndef MHA_MULTIHEAD_GRAD_H
#define MHA_MULTIHEAD_GRAD_H

#include "autograd/autograd.h"
#include "attention/attention.h"

/* Marks every parameter m has as a leaf that requires grad (flag true), or clears them. */
mha_status mha_multihead_requires_grad(mha_multihead *m, bool flag);
void mha_multihead_zero_grad(mha_multihead *m);
/* mha_multihead_forward without a trace; when grad mode is on and an input or parameter requires
 * grad, computed by differentiable ops in the same order and with the same kernels
 * (fused or plain, as the plain forward would choose), so out and weights carry the graph back to
 * query, key, value and every parameter. */
mha_status mha_ag_multihead_forward(mha_tensor *out, mha_tensor *weights, const mha_multihead *m, const mha_tensor *query,
                                    const mha_tensor *key, const mha_tensor *value, const mha_forward_options *opt);

#endif
