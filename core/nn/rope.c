/* core/nn/rope.c - rotary position embedding (Su et al., RoFormer, 2021): the forward, its backward
 * (the same rotation by the opposite angle) and its graph node, both layouts (core/nn/rope.h says
 * which pairs each turns). */
#include "nn/rope.h"

#include <math.h>

#include "autograd/autograd.h"

/* Checks x and opt for fname ("rope" or "rope_backward"); arg names x's role ("x" or "dy"). */
static mha_status check_rope(const mha_tensor *x, const mha_rope_options *opt, const char *fname, const char *arg) {
    char shape[MHA_SHAPE_BUF];
    if (x->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "%s: %s must be a float tensor, got a bool one of shape %s", fname, arg,
                        mha_shape_str(shape, sizeof shape, x));
    if (x->ndim < 2)
        return mha_fail(MHA_E_SHAPE, "%s: %s must be (..., L, D) with at least 2 dims, got shape %s", fname, arg,
                        mha_shape_str(shape, sizeof shape, x));
    if (x->shape[x->ndim - 1] % 2 != 0)
        return mha_fail(MHA_E_SHAPE, "%s: the last dim D of %s %s is odd (%zu); RoPE turns pairs of features, so D "
                        "must be even", fname, arg, mha_shape_str(shape, sizeof shape, x), x->shape[x->ndim - 1]);
    if (!(opt->base > 0) || isinf(opt->base))
        return mha_fail(MHA_E_ARG, "%s: base must be a positive number, got %g", fname, opt->base);
    if (opt->layout != MHA_ROPE_HALF && opt->layout != MHA_ROPE_INTERLEAVED)
        return mha_fail(MHA_E_ARG, "%s: unknown layout %d", fname, (int)opt->layout);
    return MHA_OK;
}

/* out = x turned by sign·p·θ_i (sign +1: rope, -1: its backward). x (rows, L, D) contiguous, out
 * the same; cos_sin (L, D/2, 2) holds cos and sin of the angle p·θ_i of row l, frequency i. */
static void rotate(float *out, const float *x, const double *cos_sin, size_t rows, size_t L, size_t D,
                   mha_rope_layout layout, double sign) {
    size_t half = D / 2;
    for (size_t r = 0; r < rows; r++) {
        for (size_t l = 0; l < L; l++) {
            const float *src = x + (r * L + l) * D;
            float *dst = out + (r * L + l) * D;
            const double *cs = cos_sin + l * half * 2;
            for (size_t i = 0; i < half; i++) {
                size_t a = layout == MHA_ROPE_HALF ? i : 2 * i;
                size_t b = layout == MHA_ROPE_HALF ? i + half : 2 * i + 1;
                double c = cs[2 * i], s = sign * cs[2 * i + 1];
                double xa = src[a], xb = src[b];
                dst[a] = (float)(xa * c - xb * s);
                dst[b] = (float)(xb * c + xa * s);
            }
        }
    }
}

/* The body of rope and its backward: check, make x contiguous, tabulate the angles, rotate. */
static mha_status rope_apply(mha_tensor *out, const mha_tensor *x, const mha_rope_options *opt, double sign,
                             const char *fname, const char *arg) {
    mha_status st = check_rope(x, opt, fname, arg);
    if (st != MHA_OK) return st;
    size_t L = x->shape[x->ndim - 2], D = x->shape[x->ndim - 1], half = D / 2;
    mha_tensor cx = MHA_TENSOR_EMPTY;
    if ((st = mha_contiguous_named(&cx, x, fname)) != MHA_OK) return st;
    if ((st = mha_empty_named(out, MHA_FLOAT32, x->ndim, x->shape, fname)) != MHA_OK) goto done;
    if (mha_numel(x) == 0) goto done;   /* no element: nothing to turn */
    size_t table_bytes = L * half * 2 * sizeof(double);
    double *cos_sin = mha_alloc(table_bytes);
    if (!cos_sin) {
        mha_release(out);
        st = mha_fail(MHA_E_NOMEM, "%s: out of memory allocating the (%zu,%zu) angle table", fname, L, half);
        goto done;
    }
    for (size_t l = 0; l < L; l++) {
        double p = (double)opt->offset + (double)l;
        for (size_t i = 0; i < half; i++) {
            double theta = pow(opt->base, -2.0 * (double)i / (double)D);   /* θ_i = base^(-2i/D) */
            cos_sin[(l * half + i) * 2] = cos(p * theta);
            cos_sin[(l * half + i) * 2 + 1] = sin(p * theta);
        }
    }
    size_t rows = mha_numel(x) / (L * D);
    rotate(mha_f32(out), mha_f32(&cx), cos_sin, rows, L, D, opt->layout, sign);
    mha_free(cos_sin, table_bytes);
done:
    mha_release(&cx);
    return st;
}

mha_status mha_rope(mha_tensor *out, const mha_tensor *x, const mha_rope_options *opt) {
    return rope_apply(out, x, opt, 1.0, "rope", "x");
}

mha_status mha_rope_backward(mha_tensor *dx, const mha_tensor *dy, const mha_rope_options *opt) {
    return rope_apply(dx, dy, opt, -1.0, "rope_backward", "dy");
}

/* ---- the graph node: it keeps the options; its backward turns the gradient back ---- */

typedef struct rope_node {
    mha_node base;
    mha_rope_options opt;
} rope_node;

static mha_status rope_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    return mha_rope_backward(&grads[0], g, &((const rope_node *)n)->opt);
}

mha_status mha_ag_rope(mha_tensor *out, const mha_tensor *x, const mha_rope_options *opt) {
    const mha_tensor *in[1] = {x};
    mha_status st = mha_rope(out, x, opt);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(rope_node), out, "rope", rope_node_backward, in, 1)) != MHA_OK)
        return st;
    ((rope_node *)n)->opt = *opt;
    return MHA_OK;
}
