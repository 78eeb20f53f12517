/* core/autograd/autograd_ops.h - differentiable versions of the tensor ops: the same signature and
 * result as the plain op (core/tensor/tensor.h), plus a node in the autograd graph when an input
 * requires grad. */
#ifndef MHA_AUTOGRAD_OPS_H
#define MHA_AUTOGRAD_OPS_H

#include "autograd/autograd.h"

/* elementwise (gradients summed back over broadcast dims) */
mha_status mha_ag_binary(mha_tensor *out, mha_binop op, const mha_tensor *a, const mha_tensor *b);
mha_status mha_ag_binary_scalar(mha_tensor *out, mha_binop op, const mha_tensor *a, float s, bool scalar_first);
mha_status mha_ag_unary(mha_tensor *out, mha_unop op, const mha_tensor *t);
mha_status mha_ag_where(mha_tensor *out, const mha_tensor *cond, const mha_tensor *a, const mha_tensor *b);
mha_status mha_ag_masked_fill(mha_tensor *out, const mha_tensor *t, const mha_tensor *mask, float value);

/* reductions: max/min over everything share g among ties (torch 1.13); along a dim the first
 * extreme takes it */
mha_status mha_ag_reduce(mha_tensor *out, mha_reduceop op, const mha_tensor *t, size_t dim, bool keepdim);
mha_status mha_ag_var(mha_tensor *out, const mha_tensor *t, size_t dim, bool keepdim, size_t correction);

mha_status mha_ag_matmul(mha_tensor *out, const mha_tensor *a, const mha_tensor *b);

/* views (the result shares storage with t, as the plain op's) and clone */
mha_status mha_ag_view(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape);
mha_status mha_ag_reshape(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape);
mha_status mha_ag_transpose(mha_tensor *out, const mha_tensor *t, size_t dim0, size_t dim1);
mha_status mha_ag_permute(mha_tensor *out, const mha_tensor *t, const size_t *perm);
mha_status mha_ag_narrow(mha_tensor *out, const mha_tensor *t, size_t dim, size_t start, size_t length);
mha_status mha_ag_select(mha_tensor *out, const mha_tensor *t, size_t dim, size_t index);
mha_status mha_ag_unsqueeze(mha_tensor *out, const mha_tensor *t, size_t dim);
mha_status mha_ag_squeeze(mha_tensor *out, const mha_tensor *t, size_t dim);
mha_status mha_ag_expand(mha_tensor *out, const mha_tensor *t, size_t ndim, const size_t *shape);
mha_status mha_ag_contiguous(mha_tensor *out, const mha_tensor *t);
mha_status mha_ag_clone(mha_tensor *out, const mha_tensor *t);
mha_status mha_ag_split(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t split_size, size_t dim);
mha_status mha_ag_chunk(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t chunks, size_t dim);

mha_status mha_ag_cat(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim);
mha_status mha_ag_stack(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim);

#endif
