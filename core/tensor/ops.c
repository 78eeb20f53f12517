/* core/tensor/ops.c - what every tensor operation of core/ops_*.c stands on: the dtype rules they
 * follow, broadcasting of shapes, and the strided elementwise loop with its fast path for
 * contiguous operands. */
#include <string.h>

#include "tensor/ops_internal.h"

/* ---------------------------------------------------------------------------------------------
 * dtype rules (the core has float32 and bool; PyTorch's behaviour is followed where it is clear)
 *
 * - Arithmetic (add sub mul div pow maximum minimum): a bool operand beside a float one reads as
 *   0/1 and the result is float, as PyTorch promotes bool + float32 -> float32. Subtracting a bool
 *   tensor is refused, as PyTorch refuses it ("to invert a mask use logical_not"). Two bool
 *   operands are refused too: PyTorch answers with a mix of logical results (add = or, mul = and),
 *   errors (sub, pow) and floats (div) that a student should not have to learn; the message points
 *   to logical_and/logical_or. A bool tensor with a number (mask * 2.5) reads as 0/1.
 * - Unary: neg, abs, relu and gelu refuse bool, as PyTorch does; exp, log, sqrt, tanh and sigmoid
 *   read it as 0/1 and give float, as PyTorch does.
 * - Comparisons give bool; a bool operand reads as 0/1. Logical ops need bool operands.
 * - where: cond must be bool; two bool branches give bool, otherwise float. masked_fill: the mask
 *   must be bool; a bool tensor stays bool (value != 0).
 * - Reductions read bool as 0/1 and give float (so mask.sum() counts; PyTorch would give int64,
 *   which the core does not have). cat and stack promote to float when any input is float.
 * - matmul needs float32 operands.
 *
 * NaN: maximum/minimum, max/min and argmax/argmin propagate NaN as PyTorch and NumPy do: a NaN
 * operand makes maximum NaN, a slice holding a NaN has max NaN, and argmax/argmin of such a slice
 * is the index of its first NaN. Comparisons with NaN are false (ne is true), as in IEEE 754.
 * ------------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------------
 * Broadcasting
 * ------------------------------------------------------------------------------------------- */

bool ops_broadcast_merge(size_t *ndim, size_t *shape, size_t b_ndim, const size_t *b_shape,
                         size_t *bad_dim, size_t *size_a, size_t *size_b) {
    size_t nd = *ndim > b_ndim ? *ndim : b_ndim;
    size_t merged[MHA_MAX_DIMS];
    for (size_t i = 0; i < nd; i++) {
        size_t x = i + *ndim >= nd ? shape[i + *ndim - nd] : 1;
        size_t y = i + b_ndim >= nd ? b_shape[i + b_ndim - nd] : 1;
        if (x == y || y == 1) {
            merged[i] = x;
        } else if (x == 1) {
            merged[i] = y;
        } else {
            *bad_dim = nd - i, *size_a = x, *size_b = y;
            return false;
        }
    }
    memcpy(shape, merged, nd * sizeof *shape);
    *ndim = nd;
    return true;
}

mha_status mha_broadcast_shape(size_t *ndim, size_t *shape, const mha_tensor *a, const mha_tensor *b, const char *fname) {
    size_t bad_dim, size_a, size_b, nd = a->ndim, merged[MHA_MAX_DIMS];
    memcpy(merged, a->shape, a->ndim * sizeof *merged);
    if (ops_broadcast_merge(&nd, merged, b->ndim, b->shape, &bad_dim, &size_a, &size_b)) {
        *ndim = nd;
        memcpy(shape, merged, nd * sizeof *shape);
        return MHA_OK;
    }
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    return mha_fail(MHA_E_SHAPE, "%s: shapes %s and %s cannot broadcast: dim -%zu has %zu and %zu",
                    fname ? fname : "broadcast", shape_of(sa, a), shape_of(sb, b), bad_dim, size_a, size_b);
}

/* ---------------------------------------------------------------------------------------------
 * The elementwise loop: walks one output shape over up to MAX_OPERANDS strided operands (operand
 * 0 is the output). Dims of size 1 are dropped and neighbouring dims merged where every operand
 * steps through them evenly, so contiguous same-shape operands become one long row with unit
 * strides: the fast path. A row function does the work on a row of at most BLOCK elements.
 * ------------------------------------------------------------------------------------------- */

mha_status ops_run_loop(const char *fname, size_t ndim, const size_t *shape, const operand *ops,
                        size_t nops, row_fn *row, const void *ctx) {
    size_t dims = 0;                                /* dims left after dropping and merging */
    size_t size[MHA_MAX_DIMS];
    ptrdiff_t stride[MAX_OPERANDS][MHA_MAX_DIMS];
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) return MHA_OK;           /* no elements: nothing to do */
        if (shape[i] == 1) continue;
        ptrdiff_t s[MAX_OPERANDS];
        for (size_t k = 0; k < nops; k++) {
            size_t lead = ndim - ops[k].ndim;       /* missing leading dims broadcast */
            s[k] = i < lead || ops[k].shape[i - lead] == 1 ? 0 : ops[k].stride[i - lead];
        }
        bool merge = dims > 0;
        for (size_t k = 0; k < nops && merge; k++) merge = stride[k][dims - 1] == s[k] * (ptrdiff_t)shape[i];
        if (merge) {
            size[dims - 1] *= shape[i];
            for (size_t k = 0; k < nops; k++) stride[k][dims - 1] = s[k];
        } else {
            size[dims] = shape[i];
            for (size_t k = 0; k < nops; k++) stride[k][dims] = s[k];
            dims++;
        }
    }

    size_t inner = dims ? size[dims - 1] : 1, outer = 1;
    ptrdiff_t s_inner[MAX_OPERANDS];
    for (size_t k = 0; k < nops; k++) s_inner[k] = dims ? stride[k][dims - 1] : 0;
    for (size_t d = 0; d + 1 < dims; d++) outer *= size[d];

    size_t index[MHA_MAX_DIMS] = {0};
    ptrdiff_t off[MAX_OPERANDS] = {0};              /* element offsets of the current row */
    size_t since_poll = 0;
    for (size_t o = 0; o < outer; o++) {
        for (size_t start = 0; start < inner; start += BLOCK) {
            size_t n = inner - start < BLOCK ? inner - start : BLOCK;
            char *p[MAX_OPERANDS];
            for (size_t k = 0; k < nops; k++)
                p[k] = ops[k].data + (off[k] + (ptrdiff_t)start * s_inner[k]) * (ptrdiff_t)ops[k].elsize;
            row(ctx, p, s_inner, (ptrdiff_t)n);
            since_poll += n;
            if (since_poll >= BLOCK) {
                since_poll = 0;
                if (mha_interrupted()) return interrupted(fname);
            }
        }
        for (size_t d = dims > 1 ? dims - 1 : 0; d-- > 0;) {   /* odometer over the outer dims */
            index[d]++;
            for (size_t k = 0; k < nops; k++) off[k] += stride[k][d];
            if (index[d] < size[d]) break;
            for (size_t k = 0; k < nops; k++) off[k] -= stride[k][d] * (ptrdiff_t)size[d];
            index[d] = 0;
        }
    }
    return MHA_OK;
}
