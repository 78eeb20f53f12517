/* core/optim/optim.h - torch.optim's update rules (SGD, Adam, AdamW) and clip_grad_norm_'s scaling,
 * as kernels on float arrays (one parameter of n elements per call, torch 1.13's float32
 * operations) and as steps on tensors. */
#ifndef MHA_OPTIM_H
#define MHA_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "tensor/tensor.h"

/* Hyperparameters are doubles, as Python floats are; each is rounded to float32 where torch rounds
 * it. */
typedef struct mha_sgd_options {
    double lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
} mha_sgd_options;

/* One step of torch.optim.SGD on param (n) with its gradient grad (n):
 *   g = ±grad + weight_decay·param                                  (− when maximize)
 *   momentum ≠ 0:  buf = g on the first step, else buf = momentum·buf + (1 − dampening)·g
 *                  g = g + momentum·buf (nesterov), else g = buf
 *   param = param − lr·g
 * buf (n) is the momentum buffer, read (unless first) and written when momentum ≠ 0, else unused
 * (NULL). */
void mha_sgd_step(float *param, float *buf, const float *grad, size_t n, const mha_sgd_options *opt, bool first);

typedef struct mha_adam_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad, maximize;
    bool decoupled;  /* AdamW: decay the parameter itself instead of adding weight_decay·param to
                        the gradient */
} mha_adam_options;

/* One step of torch.optim.Adam (decoupled false) or AdamW (true); step counts this step
 * (1 on the first).
 *   AdamW: param = param·(1 − lr·weight_decay)          Adam: g = ±grad + weight_decay·param
 *   m = β1·m + (1 − β1)·g          v = β2·v + (1 − β2)·g²
 *   amsgrad: vmax = max(vmax, v), used as v
 *   param = param − lr/(1 − β1^step) · m / (√v / √(1 − β2^step) + eps)
 * exp_avg (m), exp_avg_sq (v) and, with amsgrad, max_exp_avg_sq (vmax) are n floats, zero before
 * step 1. */
void mha_adam_step(float *param, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, const float *grad,
                   size_t n, const mha_adam_options *opt, size_t step);

/* Σ x_i², accumulated in double: the square of a gradient's 2-norm. */
double mha_sum_squares(const float *x, size_t n);

/* torch.nn.utils.clip_grad_norm_'s factor: min(1, max_norm / (total_norm + 1e-6)), in float32 as
 * torch does it. */
float mha_clip_coef(float total_norm, double max_norm);

/* x = x·s, in place (a gradient scaled by mha_clip_coef). */
void mha_scale(float *x, size_t n, float s);

/* ---- the steps on tensors, as the optimizers of lua/nn/optim.lua take them ----
 * param and every state tensor are written in place and each write is counted in its storage's
 * version (tensor.h's write rule, without its refusal: torch's optimizer.step() writes under
 * no_grad), so a graph that saved a parameter refuses to backward after the step. param: a
 * contiguous float32 tensor; grad and each state tensor (buf; exp_avg, exp_avg_sq,
 * max_exp_avg_sq): contiguous float32 of param's shape, a state tensor NULL where the step does not
 * use it. MHA_E_ARG, naming the step, for anything else. */
mha_status mha_sgd_step_tensor(mha_tensor *param, mha_tensor *buf, const mha_tensor *grad, const mha_sgd_options *opt,
                               bool first);
mha_status mha_adam_step_tensor(mha_tensor *param, mha_tensor *exp_avg, mha_tensor *exp_avg_sq,
                                mha_tensor *max_exp_avg_sq, const mha_tensor *grad, const mha_adam_options *opt,
                                size_t step);
/* g = g·s in place, through g's strides (a gradient, as clip_grad_norm_'s g.detach().mul_(s));
 * counted as an in-place write. MHA_E_ARG for a bool or empty g, MHA_E_NOMEM when a strided g's
 * copy cannot be made. */
mha_status mha_scale_tensor(mha_tensor *g, float s);

#endif
