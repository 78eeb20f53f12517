/* core/nn/linear.c - y = x·Wᵀ + b (PyTorch's layout): the forward on the blocked matrix multiply,
 * its backward (formulas in nn.h) and its graph node. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "kernels/kernels.h"
#include "nn/nn_internal.h"

/* ---- forward ---- */

mha_status mha_linear(mha_tensor *out, const mha_tensor *x, const mha_tensor *W, const mha_tensor *b) {
    char sx[MHA_SHAPE_BUF], sw[MHA_SHAPE_BUF], sb[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(x, "linear", "x")) != MHA_OK || (st = check_float(W, "linear", "W")) != MHA_OK) return st;
    if (b != NULL && (st = check_float(b, "linear", "b")) != MHA_OK) return st;
    if (W->ndim != 2)
        return mha_fail(MHA_E_SHAPE, "linear: W %s must be 2-D (out, in)", SHAPE(sw, W));
    if (x->ndim == 0)
        return mha_fail(MHA_E_SHAPE, "linear: x () is a scalar; expected (..., %zu)", W->shape[1]);
    size_t in = W->shape[1], n_out = W->shape[0];
    if (x->shape[x->ndim - 1] != in)
        return mha_fail(MHA_E_SHAPE, "linear: x %s and W %s: x's last size %zu is not W's in_features %zu",
                        SHAPE(sx, x), SHAPE(sw, W), x->shape[x->ndim - 1], in);
    if (b != NULL && (b->ndim != 1 || b->shape[0] != n_out))
        return mha_fail(MHA_E_SHAPE, "linear: b %s does not match W %s: expected (%zu)", SHAPE(sb, b), SHAPE(sw, W),
                        n_out);

    mha_tensor cx = MHA_TENSOR_EMPTY, cb = MHA_TENSOR_EMPTY;   /* cb: b, or a strided b's copy */
    if ((st = mha_contiguous_named(&cx, x, "linear")) != MHA_OK) return st;
    if (b != NULL && (st = mha_contiguous_named(&cb, b, "linear")) != MHA_OK) goto done;
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, x->shape, x->ndim * sizeof *shape);
    shape[x->ndim - 1] = n_out;
    if ((st = mha_empty_named(out, MHA_FLOAT32, x->ndim, shape, "linear")) != MHA_OK) goto done;
    /* y = b + x·Wᵀ, torch's addmm(b, x, Wᵀ), b added in the product's store; Wᵀ (in, out) is W
     * read with its strides swapped: element (p, j) = W[j, p] */
    st = mha_sgemm_bias(mha_f32(out), n_out, mha_f32(&cx), (ptrdiff_t)in, 1, mha_f32(W), W->stride[1], W->stride[0],
                        prod(x->shape, 0, x->ndim - 1), n_out, in, b != NULL ? mha_f32(&cb) : NULL);
    st = nomem_under(st, "linear");
    if (st != MHA_OK) mha_release(out);
done:
    mha_release(&cx);
    mha_release(&cb);
    return st;
}

/* ---- backward ---- */

mha_status mha_linear_backward(mha_tensor *dx, mha_tensor *dW, mha_tensor *db, const mha_tensor *dy,
                               const mha_tensor *x, const mha_tensor *W) {
    char sy[MHA_SHAPE_BUF], sx[MHA_SHAPE_BUF], sw[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(dy, "linear_backward", "dy")) != MHA_OK || (st = check_float(x, "linear_backward", "x")) != MHA_OK ||
        (st = check_float(W, "linear_backward", "W")) != MHA_OK)
        return st;
    bool fits = W->ndim == 2 && x->ndim >= 1 && dy->ndim == x->ndim && x->shape[x->ndim - 1] == W->shape[1] &&
                dy->shape[dy->ndim - 1] == W->shape[0];
    for (size_t d = 0; fits && d + 1 < x->ndim; d++) fits = x->shape[d] == dy->shape[d];
    if (!fits)
        return mha_fail(MHA_E_SHAPE, "linear_backward: dy %s, x %s, W %s: expected dy (..., out), x (..., in), W (out, in)",
                        SHAPE(sy, dy), SHAPE(sx, x), SHAPE(sw, W));
    const size_t n_out = W->shape[0], in = W->shape[1], rows = prod(x->shape, 0, x->ndim - 1);
    mha_tensor cy = MHA_TENSOR_EMPTY, cx = MHA_TENSOR_EMPTY, gx = MHA_TENSOR_EMPTY, gW = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous(&cy, dy)) != MHA_OK) goto done;
    const float *g = mha_f32(&cy);
    if (dx) { /* dx (rows,in) = dy (rows,out) · W (out,in) */
        if ((st = mha_empty(&gx, MHA_FLOAT32, x->ndim, x->shape)) != MHA_OK) goto done;
        st = mha_sgemm(mha_f32(&gx), in, g, (ptrdiff_t)n_out, 1, mha_f32(W), W->stride[0], W->stride[1], rows, in, n_out, false);
        if (st != MHA_OK) goto done;
    }
    if (dW) { /* dW (out,in) = dyᵀ (out,rows) · x (rows,in) */
        if ((st = mha_contiguous(&cx, x)) != MHA_OK) goto done;
        if ((st = mha_empty(&gW, MHA_FLOAT32, 2, W->shape)) != MHA_OK) goto done;
        if (rows == 0) memset(mha_f32(&gW), 0, n_out * in * sizeof(float));
        else st = mha_sgemm(mha_f32(&gW), in, g, 1, (ptrdiff_t)n_out, mha_f32(&cx), (ptrdiff_t)in, 1, n_out, in, rows, false);
        if (st != MHA_OK) goto done;
    }
    if (db) { /* db (out) = Σ_rows dy, summed in double in row order */
        if ((st = mha_empty(&gb, MHA_FLOAT32, 1, &W->shape[0])) != MHA_OK) goto done;
        double *sums = mha_alloc((n_out ? n_out : 1) * sizeof *sums);
        if (!sums) {
            st = mha_fail(MHA_E_NOMEM, "linear_backward: out of memory for the bias gradient's %zu sums", n_out);
            goto done;
        }
        mha_column_sums(sums, g, n_out, rows, n_out);
        float *p = mha_f32(&gb);
        for (size_t j = 0; j < n_out; j++) p[j] = (float)sums[j];
        mha_free(sums, (n_out ? n_out : 1) * sizeof *sums);
    }
    if (dx) *dx = gx, gx = MHA_TENSOR_EMPTY;
    if (dW) *dW = gW, gW = MHA_TENSOR_EMPTY;
    if (db) *db = gb, gb = MHA_TENSOR_EMPTY;
done:
    mha_release(&cy), mha_release(&cx), mha_release(&gx), mha_release(&gW), mha_release(&gb);
    return st;
}

/* ---- the graph node: mha_ag_linear records the forward; its backward runs the one above ---- */

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
