/* core/tensor/ops_matmul.c - matmul with torch.matmul's semantics (vectors, batch dims broadcast),
 * each 2-D product one mha_sgemm call on the operands' own strides. */
#include <string.h>

#include "kernels/kernels.h"
#include "tensor/ops_internal.h"

/* ---------------------------------------------------------------------------------------------
 * matmul, torch.matmul semantics:
 *   (K)·(K) -> ()                    a dot product
 *   (M,K)·(K,N) -> (M,N)
 *   (K)·(..., K,N) -> (..., N)       a 1-D a becomes (1,K); the added dim is removed
 *   (..., M,K)·(K) -> (..., M)       a 1-D b becomes (K,1); the added dim is removed
 *   (..., M,K)·(..., K,N) -> (..., M,N)   batch dims broadcast
 * Every 2-D product is one mha_sgemm call on the operands' own strides, so a transposed view (Wᵀ,
 * Kᵀ) costs no copy; an operand is copied only when neither of its matrix dims has unit stride.
 * ------------------------------------------------------------------------------------------- */

/* One operand's matrices: batch dims (right-aligned against the output's batch dims), then rows
 * (size, stride) and cols (size, stride). */
typedef struct matrices {
    const float *data;
    size_t batch_ndim;
    const size_t *batch_shape;
    const ptrdiff_t *batch_stride;
    size_t rows, cols;
    ptrdiff_t rs, cs;
} matrices;

/* a 1-D vector is a single row (as_row) or a single column; a size-1 dim's stride is never used,
 * so it is set to 1, which lets a vector with any stride pass the unit-stride test. */
static matrices matrices_of(const mha_tensor *t, bool as_row) {
    matrices m = {.data = mha_f32(t), .batch_shape = t->shape, .batch_stride = t->stride};
    if (t->ndim == 1) {
        m.rows = as_row ? 1 : t->shape[0];
        m.cols = as_row ? t->shape[0] : 1;
        m.rs = as_row ? 1 : t->stride[0];
        m.cs = as_row ? t->stride[0] : 1;
    } else {
        m.batch_ndim = t->ndim - 2;
        m.rows = t->shape[t->ndim - 2];
        m.cols = t->shape[t->ndim - 1];
        m.rs = t->stride[t->ndim - 2];
        m.cs = t->stride[t->ndim - 1];
    }
    if (m.rows == 1) m.rs = 1;
    if (m.cols == 1) m.cs = 1;
    return m;
}

static bool has_unit_stride(const matrices *m) { return m->rs == 1 || m->cs == 1; }

/* Offset of batch position `index` (over the output's batch_ndim dims) in m, broadcasting. */
static ptrdiff_t batch_offset(const matrices *m, size_t batch_ndim, const size_t *index) {
    ptrdiff_t off = 0;
    size_t lead = batch_ndim - m->batch_ndim;
    for (size_t d = lead; d < batch_ndim; d++)
        if (m->batch_shape[d - lead] != 1) off += (ptrdiff_t)index[d] * m->batch_stride[d - lead];
    return off;
}

/* True when a's batch dims step evenly through its rows (each batch starts rows·rs after the last)
 * and b is one matrix for every batch: then the batches are one tall (batch·M, K) product. */
static bool batches_fold(const matrices *a, const matrices *b, size_t batch_ndim, const size_t *batch_shape) {
    if (a->batch_ndim != batch_ndim) return false;
    for (size_t d = 0; d < b->batch_ndim; d++)
        if (b->batch_shape[d] != 1) return false;
    ptrdiff_t expected = a->rs * (ptrdiff_t)a->rows;
    for (size_t d = batch_ndim; d-- > 0;) {
        if (batch_shape[d] != 1 && a->batch_stride[d] != expected) return false;
        expected *= (ptrdiff_t)batch_shape[d];
    }
    return true;
}

static mha_status matmul_fail_kernel(mha_status st, const mha_tensor *a, const mha_tensor *b) {
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    if (st == MHA_E_INTERRUPTED) return interrupted("matmul");
    if (st == MHA_E_NOMEM)
        return mha_fail(st, "matmul: %s @ %s: out of memory for the kernel's scratch", shape_of(sa, a), shape_of(sb, b));
    return refail("matmul", st);
}

mha_status mha_matmul(mha_tensor *out, const mha_tensor *a, const mha_tensor *b) {
    const char *fname = "matmul";
    char sa[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "a", a)) != MHA_OK ||
        (st = check_in(fname, "b", b)) != MHA_OK)
        return st;
    if (a->dtype != MHA_FLOAT32 || b->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "matmul: %s @ %s: argument %s is bool; matmul needs float32 tensors",
                        shape_of(sa, a), shape_of(sb, b), a->dtype != MHA_FLOAT32 ? "a" : "b");
    if (a->ndim == 0 || b->ndim == 0)
        return mha_fail(MHA_E_SHAPE, "matmul: %s @ %s: both arguments need at least one dim (use mul for a scalar)",
                        shape_of(sa, a), shape_of(sb, b));
    size_t k_a = a->shape[a->ndim - 1], k_b = b->shape[b->ndim == 1 ? 0 : b->ndim - 2];
    if (k_a != k_b)
        return mha_fail(MHA_E_SHAPE, "matmul: %s @ %s: inner sizes %zu and %zu differ", shape_of(sa, a),
                        shape_of(sb, b), k_a, k_b);

    /* the output's batch dims: a's and b's, broadcast */
    size_t batch_ndim = a->ndim > 2 ? a->ndim - 2 : 0, batch_shape[MHA_MAX_DIMS], bad_dim, size_x, size_y;
    memcpy(batch_shape, a->shape, batch_ndim * sizeof *batch_shape);
    if (!ops_broadcast_merge(&batch_ndim, batch_shape, b->ndim > 2 ? b->ndim - 2 : 0, b->shape, &bad_dim, &size_x, &size_y))
        return mha_fail(MHA_E_SHAPE, "matmul: %s @ %s: batch dims cannot broadcast: dim -%zu has %zu and %zu",
                        shape_of(sa, a), shape_of(sb, b), bad_dim + 2, size_x, size_y);

    /* copy an operand only when neither matrix dim has unit stride */
    mha_tensor a_copy = MHA_TENSOR_EMPTY, b_copy = MHA_TENSOR_EMPTY;
    matrices ma = matrices_of(a, true), mb = matrices_of(b, false);
    if (!has_unit_stride(&ma)) {
        if ((st = mha_contiguous(&a_copy, a)) != MHA_OK) return refail(fname, st);
        ma = matrices_of(&a_copy, true);
    }
    if (!has_unit_stride(&mb)) {
        if ((st = mha_contiguous(&b_copy, b)) != MHA_OK) {
            mha_release(&a_copy);
            return refail(fname, st);
        }
        mb = matrices_of(&b_copy, false);
    }

    size_t M = ma.rows, N = mb.cols, K = ma.cols;
    /* batch dims + (M) + (N): at most MHA_MAX_DIMS, since the batch dims came with an M or an N */
    size_t shape[MHA_MAX_DIMS], ndim = batch_ndim;
    memcpy(shape, batch_shape, batch_ndim * sizeof *shape);
    if (a->ndim > 1) shape[ndim++] = M;
    if (b->ndim > 1) shape[ndim++] = N;
    /* K == 0: every product is an empty sum, 0 */
    st = K == 0 ? mha_zeros(out, MHA_FLOAT32, ndim, shape) : mha_empty(out, MHA_FLOAT32, ndim, shape);
    if (st != MHA_OK) {
        st = refail(fname, st);
        goto done;
    }
    size_t batches = 0;   /* out holds batches·M·N elements: with M and N not 0 the count cannot
                             overflow */
    if (K == 0 || M == 0 || N == 0 || !shape_numel(&batches, batch_ndim, batch_shape, 1) || batches == 0) goto done;

    float *c = mha_f32(out);
    if (batches > 1 && batches_fold(&ma, &mb, batch_ndim, batch_shape)) {
        st = mha_sgemm(c, N, ma.data, ma.rs, ma.cs, mb.data, mb.rs, mb.cs, batches * M, N, K, false);
    } else {
        size_t index[MHA_MAX_DIMS] = {0};
        for (size_t i = 0; i < batches && st == MHA_OK; i++) {
            if (mha_interrupted()) {
                st = MHA_E_INTERRUPTED;
                break;
            }
            st = mha_sgemm(c + i * M * N, N, ma.data + batch_offset(&ma, batch_ndim, index), ma.rs, ma.cs,
                           mb.data + batch_offset(&mb, batch_ndim, index), mb.rs, mb.cs, M, N, K, false);
            for (size_t d = batch_ndim; d-- > 0;) {   /* odometer over the batch dims */
                if (++index[d] < batch_shape[d]) break;
                index[d] = 0;
            }
        }
    }
    if (st != MHA_OK) {
        st = matmul_fail_kernel(st, a, b);
        mha_release(out);
    }
done:
    mha_release(&a_copy);
    mha_release(&b_copy);
    return st;
}
