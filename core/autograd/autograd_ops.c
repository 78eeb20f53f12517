/* core/autograd/autograd_ops.c - the differentiable tensor ops: each runs the plain op of
 * core/tensor/ops.c or tensor.c, and when grad mode is on and an input requires grad, records a
 * node whose backward is written beside it. */
#include "autograd/autograd_ops.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

/* grads[i] = g summed back to input i's shape, when input i needs a gradient. */
static mha_status give(mha_tensor *grads, const mha_node *n, size_t i, const mha_tensor *g) {
    if (!n->inputs[i]) return MHA_OK;
    return mha_sum_to(&grads[i], g, n->in_shapes[i].ndim, n->in_shapes[i].shape);
}

/* A contiguous float tensor of t's shape, from a copy of t when needed; out empty on entry. */
static mha_status dense(mha_tensor *out, const mha_tensor *t) { return mha_contiguous(out, t); }

/* ================================ elementwise ================================ */

/* a op b: the op's node keeps which op */
typedef struct binary_node {
    mha_node base;
    mha_binop op;
} binary_node;

/* d(a op b): the gradient of each side before summing over broadcast dims. */
static mha_status binary_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const mha_binop op = ((const binary_node *)n)->op;
    const mha_tensor *a = &n->saved[0], *b = &n->saved[1], *out = &n->saved[2];
    mha_tensor ga = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY, t1 = MHA_TENSOR_EMPTY, t2 = MHA_TENSOR_EMPTY;
    mha_tensor zero = MHA_TENSOR_EMPTY;
    mha_status st = MHA_OK;
    switch (op) {
    case MHA_ADD:
        st = mha_share(&ga, g);
        if (st == MHA_OK) st = mha_share(&gb, g);
        break;
    case MHA_SUB:
        st = mha_share(&ga, g);
        if (st == MHA_OK) st = mha_unary(&gb, MHA_NEG, g);
        break;
    case MHA_MUL:
        if (n->inputs[0]) st = mha_binary(&ga, MHA_MUL, g, b);
        if (st == MHA_OK && n->inputs[1]) st = mha_binary(&gb, MHA_MUL, g, a);
        break;
    case MHA_DIV: /* d/da = 1/b, d/db = -a/b² = -out/b */
        if (n->inputs[0]) st = mha_binary(&ga, MHA_DIV, g, b);
        if (st == MHA_OK && n->inputs[1]) st = mha_binary(&t1, MHA_MUL, g, out);
        if (st == MHA_OK && n->inputs[1]) st = mha_binary(&t2, MHA_DIV, &t1, b);
        if (st == MHA_OK && n->inputs[1]) st = mha_unary(&gb, MHA_NEG, &t2);
        break;
    case MHA_POW: /* d/da = b·a^(b-1), d/db = out·log a (0 where a == 0 and b >= 0, as torch) */
        if (n->inputs[0]) {
            st = mha_binary_scalar(&t1, MHA_SUB, b, 1.0f, false);
            if (st == MHA_OK) st = mha_binary(&t2, MHA_POW, a, &t1);
            mha_release(&t1);
            if (st == MHA_OK) st = mha_binary(&t1, MHA_MUL, &t2, b);
            mha_release(&t2);
            if (st == MHA_OK) st = mha_binary(&ga, MHA_MUL, g, &t1);
            mha_release(&t1);
        }
        if (st == MHA_OK && n->inputs[1]) {
            mha_tensor a0 = MHA_TENSOR_EMPTY, bpos = MHA_TENSOR_EMPTY, both = MHA_TENSOR_EMPTY;
            st = mha_unary(&t1, MHA_LOG, a);
            if (st == MHA_OK) st = mha_binary(&t2, MHA_MUL, out, &t1);
            mha_release(&t1);
            if (st == MHA_OK) st = mha_compare_scalar(&a0, MHA_EQ, a, 0.0f);
            if (st == MHA_OK) st = mha_compare_scalar(&bpos, MHA_GE, b, 0.0f);
            if (st == MHA_OK) st = mha_logical(&both, MHA_AND, &a0, &bpos);
            if (st == MHA_OK) st = mha_full(&zero, 0, NULL, 0.0f);
            if (st == MHA_OK) st = mha_where(&t1, &both, &zero, &t2);
            if (st == MHA_OK) st = mha_binary(&gb, MHA_MUL, g, &t1);
            mha_release(&a0), mha_release(&bpos), mha_release(&both), mha_release(&t1), mha_release(&t2);
        }
        break;
    case MHA_MAXIMUM:
    case MHA_MINIMUM: { /* the larger (smaller) side takes g; a tie splits it in halves, as torch
                           1.13 */
        mha_tensor half = MHA_TENSOR_EMPTY, tie = MHA_TENSOR_EMPTY, lose_a = MHA_TENSOR_EMPTY, lose_b = MHA_TENSOR_EMPTY;
        bool is_max = op == MHA_MAXIMUM;
        st = mha_binary_scalar(&half, MHA_MUL, g, 0.5f, false);
        if (st == MHA_OK) st = mha_compare(&tie, MHA_EQ, a, b);
        if (st == MHA_OK) st = mha_where(&t1, &tie, &half, g); /* g, or g/2 at ties; full broadcast
                                                                  shape */
        if (st == MHA_OK) st = mha_compare(&lose_a, is_max ? MHA_LT : MHA_GT, a, b);
        if (st == MHA_OK) st = mha_compare(&lose_b, is_max ? MHA_GT : MHA_LT, a, b);
        if (st == MHA_OK && n->inputs[0]) st = mha_masked_fill(&ga, &t1, &lose_a, 0.0f);
        if (st == MHA_OK && n->inputs[1]) st = mha_masked_fill(&gb, &t1, &lose_b, 0.0f);
        mha_release(&half), mha_release(&tie), mha_release(&lose_a), mha_release(&lose_b), mha_release(&t1);
        break;
    }
    }
    if (st == MHA_OK && ga.storage) st = give(grads, n, 0, &ga);
    if (st == MHA_OK && gb.storage) st = give(grads, n, 1, &gb);
    mha_release(&ga), mha_release(&gb), mha_release(&t1), mha_release(&t2), mha_release(&zero);
    return st;
}

static const char *binop_name(mha_binop op) {
    static const char *const names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
    return names[op];
}

mha_status mha_ag_binary(mha_tensor *out, mha_binop op, const mha_tensor *a, const mha_tensor *b) {
    const mha_tensor *in[2] = {a, b};
    mha_status st = mha_binary(out, op, a, b);
    if (st != MHA_OK || !mha_ag_wants(in, 2)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(binary_node), out, binop_name(op), binary_backward, in, 2)) != MHA_OK) return st;
    ((binary_node *)n)->op = op;
    /* what binary_backward reads */
    const bool every = op == MHA_POW || op == MHA_MAXIMUM || op == MHA_MINIMUM;
    mha_ag_save_if(n, a, every || (op == MHA_MUL && n->inputs[1]));
    mha_ag_save_if(n, b, every || op == MHA_DIV || (op == MHA_MUL && n->inputs[0]));
    mha_ag_save_if(n, out, every || (op == MHA_DIV && n->inputs[1]));
    return MHA_OK;
}

/* a op s, or s op a when scalar_first */
typedef struct binary_scalar_node {
    mha_node base;
    mha_binop op;
    float scalar;
    bool scalar_first;
} binary_scalar_node;

/* a op s (or s op a): the scalar is a constant; only a gets a gradient. */
static mha_status binary_scalar_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const binary_scalar_node *node = (const binary_scalar_node *)n;
    const mha_tensor *a = &n->saved[0], *out = &n->saved[1];
    float s = node->scalar;
    bool first = node->scalar_first;
    mha_tensor ga = MHA_TENSOR_EMPTY, t1 = MHA_TENSOR_EMPTY, t2 = MHA_TENSOR_EMPTY;
    mha_status st = MHA_OK;
    switch (node->op) {
    case MHA_ADD: st = mha_share(&ga, g); break;
    case MHA_SUB: st = first ? mha_unary(&ga, MHA_NEG, g) : mha_share(&ga, g); break;
    case MHA_MUL: st = mha_binary_scalar(&ga, MHA_MUL, g, s, false); break;
    case MHA_DIV:
        if (!first) st = mha_binary_scalar(&ga, MHA_DIV, g, s, false);
        else { /* d(s/a)/da = -s/a² = -out/a */
            st = mha_binary(&t1, MHA_MUL, g, out);
            if (st == MHA_OK) st = mha_binary(&t2, MHA_DIV, &t1, a);
            if (st == MHA_OK) st = mha_unary(&ga, MHA_NEG, &t2);
        }
        break;
    case MHA_POW:
        if (!first) { /* d(a^s)/da = s·a^(s-1) */
            if (s == 0.0f) st = mha_binary_scalar(&ga, MHA_MUL, g, 0.0f, false);
            else {
                st = mha_binary_scalar(&t1, MHA_POW, a, s - 1.0f, false);
                if (st == MHA_OK) st = mha_binary_scalar(&t2, MHA_MUL, &t1, s, false);
                if (st == MHA_OK) st = mha_binary(&ga, MHA_MUL, g, &t2);
            }
        } else { /* d(s^a)/da = out·log s */
            st = mha_binary_scalar(&t1, MHA_MUL, out, logf(s), false);
            if (st == MHA_OK) st = mha_binary(&ga, MHA_MUL, g, &t1);
        }
        break;
    case MHA_MAXIMUM:
    case MHA_MINIMUM: {
        mha_tensor tie = MHA_TENSOR_EMPTY, lose = MHA_TENSOR_EMPTY;
        st = mha_binary_scalar(&t1, MHA_MUL, g, 0.5f, false);
        if (st == MHA_OK) st = mha_compare_scalar(&tie, MHA_EQ, a, s);
        if (st == MHA_OK) st = mha_where(&t2, &tie, &t1, g);
        if (st == MHA_OK) st = mha_compare_scalar(&lose, node->op == MHA_MAXIMUM ? MHA_LT : MHA_GT, a, s);
        if (st == MHA_OK) st = mha_masked_fill(&ga, &t2, &lose, 0.0f);
        mha_release(&tie), mha_release(&lose);
        break;
    }
    }
    if (st == MHA_OK) st = give(grads, n, 0, &ga);
    mha_release(&ga), mha_release(&t1), mha_release(&t2);
    return st;
}

mha_status mha_ag_binary_scalar(mha_tensor *out, mha_binop op, const mha_tensor *a, float s, bool scalar_first) {
    const mha_tensor *in[1] = {a};
    mha_status st = mha_binary_scalar(out, op, a, s, scalar_first);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(binary_scalar_node), out, binop_name(op), binary_scalar_backward, in, 1)) != MHA_OK)
        return st;
    binary_scalar_node *node = (binary_scalar_node *)n;
    node->op = op;
    node->scalar = s;
    node->scalar_first = scalar_first;
    /* what binary_scalar_backward reads: nothing for a + s, a - s, a·s and a / s */
    const bool s_over_a = op == MHA_DIV && scalar_first;
    mha_ag_save_if(n, a, s_over_a || (op == MHA_POW && !scalar_first) || op == MHA_MAXIMUM || op == MHA_MINIMUM);
    mha_ag_save_if(n, out, s_over_a || (op == MHA_POW && scalar_first));
    return MHA_OK;
}

/* f(x): the op's node keeps which f */
typedef struct unary_node {
    mha_node base;
    mha_unop op;
} unary_node;

/* dx = g · f'(x), written with x or y = f(x) as each derivative reads best (the node keeps that
 * one). */
static mha_status unary_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const mha_unop op = ((const unary_node *)n)->op;
    mha_tensor gc = MHA_TENSOR_EMPTY, xc = MHA_TENSOR_EMPTY, yc = MHA_TENSOR_EMPTY, dx = MHA_TENSOR_EMPTY;
    mha_status st = dense(&gc, g);
    if (st == MHA_OK && n->saved[0].storage) st = dense(&xc, &n->saved[0]);
    if (st == MHA_OK && n->saved[1].storage) st = dense(&yc, &n->saved[1]);
    if (st == MHA_OK) st = mha_empty(&dx, MHA_FLOAT32, g->ndim, g->shape);
    if (st == MHA_OK) {
        const float *gp = mha_f32(&gc), *x = xc.storage ? mha_f32(&xc) : NULL, *y = yc.storage ? mha_f32(&yc) : NULL;
        float *d = mha_f32(&dx);
        size_t count = mha_numel(g);
        if (op == MHA_GELU) mha_gelu_grad(d, gp, x, count);   /* d/dx x·Φ(x) = Φ(x) + x·φ(x) */
        for (size_t i = 0; op != MHA_GELU && i < count; i++) {
            double dydx = 0.0;
            switch (op) {
            case MHA_NEG: dydx = -1.0; break;
            /* sign(x), 0 at 0 as torch */
            case MHA_ABS: dydx = x[i] > 0 ? 1.0 : x[i] < 0 ? -1.0 : 0.0; break;
            case MHA_EXP: dydx = y[i]; break;
            case MHA_LOG: dydx = 1.0 / x[i]; break;
            case MHA_SQRT: dydx = 0.5 / y[i]; break;
            case MHA_TANH: dydx = 1.0 - (double)y[i] * y[i]; break;
            case MHA_RELU: dydx = y[i] > 0 ? 1.0 : 0.0; break;
            case MHA_GELU: break;   /* mha_gelu_grad above */
            case MHA_SIGMOID: dydx = (double)y[i] * (1.0 - y[i]); break;
            }
            d[i] = (float)(gp[i] * dydx);
        }
        grads[0] = dx;
        dx = MHA_TENSOR_EMPTY;
    }
    mha_release(&gc), mha_release(&xc), mha_release(&yc), mha_release(&dx);
    return st;
}

static const char *unop_name(mha_unop op) {
    static const char *const names[] = {"neg", "abs", "exp", "log", "sqrt", "tanh", "relu", "gelu", "sigmoid"};
    return names[op];
}

mha_status mha_ag_unary(mha_tensor *out, mha_unop op, const mha_tensor *t) {
    const mha_tensor *in[1] = {t};
    mha_status st = mha_unary(out, op, t);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(unary_node), out, unop_name(op), unary_backward, in, 1)) != MHA_OK) return st;
    ((unary_node *)n)->op = op;
    /* abs, log and gelu read x; the others y, or (neg) nothing */
    const bool reads_x = op == MHA_ABS || op == MHA_LOG || op == MHA_GELU;
    mha_ag_save_if(n, t, reads_x);
    mha_ag_save_if(n, out, !reads_x && op != MHA_NEG);
    return MHA_OK;
}

/* where(cond, a, b): a's gradient where cond holds, b's elsewhere. */
static mha_status where_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const mha_tensor *cond = &n->saved[0];
    mha_tensor zero = MHA_TENSOR_EMPTY, ga = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY;
    mha_status st = mha_full(&zero, 0, NULL, 0.0f);
    if (st == MHA_OK && n->inputs[1]) st = mha_where(&ga, cond, g, &zero);
    if (st == MHA_OK && n->inputs[2]) st = mha_where(&gb, cond, &zero, g);
    if (st == MHA_OK && n->inputs[1]) st = give(grads, n, 1, &ga);
    if (st == MHA_OK && n->inputs[2]) st = give(grads, n, 2, &gb);
    mha_release(&zero), mha_release(&ga), mha_release(&gb);
    return st;
}

mha_status mha_ag_where(mha_tensor *out, const mha_tensor *cond, const mha_tensor *a, const mha_tensor *b) {
    const mha_tensor *in[3] = {cond, a, b};
    mha_status st = mha_where(out, cond, a, b);
    if (st != MHA_OK || !mha_ag_wants(in, 3)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(mha_node), out, "where", where_backward, in, 3)) != MHA_OK) return st;
    mha_ag_save(n, cond);
    return MHA_OK;
}

static mha_status masked_fill_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    return mha_masked_fill(&grads[0], g, &n->saved[0], 0.0f);
}

mha_status mha_ag_masked_fill(mha_tensor *out, const mha_tensor *t, const mha_tensor *mask, float value) {
    const mha_tensor *in[2] = {t, mask};
    mha_status st = mha_masked_fill(out, t, mask, value);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(mha_node), out, "masked_fill", masked_fill_backward, in, 2)) != MHA_OK) return st;
    mha_ag_save(n, mask);
    return MHA_OK;
}

/* ================================ reductions ================================ */

/* g, of the reduced shape, as a view broadcast back to the input's shape
 * (reduced dims as size 1). */
static mha_status unreduce(mha_tensor *out, const mha_tensor *g, const mha_shape_rec *in, size_t dim) {
    size_t kept[MHA_MAX_DIMS];
    ptrdiff_t kept_signed[MHA_MAX_DIMS];
    for (size_t d = 0; d < in->ndim; d++) {
        kept[d] = dim == MHA_ALL_DIMS || d == dim ? 1 : in->shape[d];
        kept_signed[d] = (ptrdiff_t)kept[d];
    }
    mha_tensor shaped = MHA_TENSOR_EMPTY;
    mha_status st = mha_reshape(&shaped, g, in->ndim, kept_signed);
    if (st == MHA_OK) st = mha_expand(out, &shaped, in->ndim, in->shape);
    mha_release(&shaped);
    return st;
}

/* sum, mean, max, min over dim (or MHA_ALL_DIMS); keepdim needs no keeping: g is reshaped either
 * way */
typedef struct reduce_node {
    mha_node base;
    mha_reduceop op;
    size_t dim;
} reduce_node;

static mha_status reduce_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const reduce_node *node = (const reduce_node *)n;
    const size_t dim = node->dim;
    const mha_shape_rec *in = &n->in_shapes[0];
    mha_tensor wide = MHA_TENSOR_EMPTY, t1 = MHA_TENSOR_EMPTY, t2 = MHA_TENSOR_EMPTY;
    mha_status st = unreduce(&wide, g, in, dim);
    size_t count = 1;
    for (size_t d = 0; d < in->ndim; d++)
        if (dim == MHA_ALL_DIMS || d == dim) count *= in->shape[d];
    if (st != MHA_OK) return st;
    switch (node->op) {
    case MHA_SUM: st = mha_contiguous(&grads[0], &wide); break;
    case MHA_MEAN: st = mha_binary_scalar(&grads[0], MHA_DIV, &wide, (float)count, false); break;
    case MHA_MAX:
    case MHA_MIN: {
        const mha_tensor *x = &n->saved[0], *y = &n->saved[1];
        mha_tensor yw = MHA_TENSOR_EMPTY, hit = MHA_TENSOR_EMPTY, hitf = MHA_TENSOR_EMPTY;
        st = unreduce(&yw, y, in, dim);
        if (st == MHA_OK) st = mha_compare(&hit, MHA_EQ, x, &yw);
        if (st == MHA_OK && dim != MHA_ALL_DIMS) {
            /* along a dim: the first extreme only (torch's max(dim) gradient follows its index) */
            mha_tensor c = MHA_TENSOR_EMPTY;
            st = mha_to_dtype(&c, &hit, MHA_FLOAT32);
            mha_release(&hit);
            if (st == MHA_OK) {
                float *p = mha_f32(&c);
                size_t outer = 1, len = in->shape[dim], inner = 1;
                for (size_t d = 0; d < dim; d++) outer *= in->shape[d];
                for (size_t d = dim + 1; d < in->ndim; d++) inner *= in->shape[d];
                for (size_t o = 0; o < outer; o++)
                    for (size_t i = 0; i < inner; i++) {
                        bool seen = false;
                        for (size_t j = 0; j < len; j++) {
                            float *e = &p[(o * len + j) * inner + i];
                            if (*e != 0.0f && !seen) seen = true;
                            else *e = 0.0f;
                        }
                    }
                st = mha_binary(&grads[0], MHA_MUL, &wide, &c);
            }
            mha_release(&c);
        } else if (st == MHA_OK) {
            /* over everything: g shared evenly among the ties, as torch 1.13 */
            mha_tensor ties = MHA_TENSOR_EMPTY;
            st = mha_to_dtype(&hitf, &hit, MHA_FLOAT32);
            if (st == MHA_OK) st = mha_reduce(&ties, MHA_SUM, &hitf, MHA_ALL_DIMS, false);
            if (st == MHA_OK) st = mha_binary(&t1, MHA_DIV, &hitf, &ties);
            if (st == MHA_OK) st = mha_binary(&grads[0], MHA_MUL, &wide, &t1);
            mha_release(&ties);
        }
        mha_release(&yw), mha_release(&hit), mha_release(&hitf);
        break;
    }
    default: st = mha_fail(MHA_E_ARG, "backward: %s has no gradient", n->name); break;
    }
    mha_release(&wide), mha_release(&t1), mha_release(&t2);
    return st;
}

mha_status mha_ag_reduce(mha_tensor *out, mha_reduceop op, const mha_tensor *t, size_t dim, bool keepdim) {
    static const char *const names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
    const mha_tensor *in[1] = {t};
    mha_status st = mha_reduce(out, op, t, dim, keepdim);
    if (st != MHA_OK || op == MHA_ARGMAX || op == MHA_ARGMIN || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(reduce_node), out, names[op], reduce_backward, in, 1)) != MHA_OK) return st;
    reduce_node *node = (reduce_node *)n;
    node->op = op;
    node->dim = dim;
    if (op == MHA_MAX || op == MHA_MIN) {
        mha_ag_save(n, t);
        mha_ag_save(n, out);
    }
    return MHA_OK;
}

/* var over dim (or MHA_ALL_DIMS) with its correction (1: Bessel's) */
typedef struct var_node {
    mha_node base;
    size_t dim, correction;
} var_node;

/* var = Σ (x - mean)² / (n - correction)  ->  dx = g · 2 (x - mean) / (n - correction) */
static mha_status var_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const var_node *node = (const var_node *)n;
    const mha_shape_rec *in = &n->in_shapes[0];
    const mha_tensor *x = &n->saved[0];
    size_t count = 1;
    for (size_t d = 0; d < in->ndim; d++)
        if (node->dim == MHA_ALL_DIMS || d == node->dim) count *= in->shape[d];
    mha_tensor mean = MHA_TENSOR_EMPTY, dev = MHA_TENSOR_EMPTY, wide = MHA_TENSOR_EMPTY, t1 = MHA_TENSOR_EMPTY;
    mha_status st = mha_reduce(&mean, MHA_MEAN, x, node->dim, true);
    if (st == MHA_OK) st = mha_binary(&dev, MHA_SUB, x, &mean);
    if (st == MHA_OK) st = unreduce(&wide, g, in, node->dim);
    if (st == MHA_OK) st = mha_binary(&t1, MHA_MUL, &wide, &dev);
    const double scale = 2.0 / ((double)count - (double)node->correction);
    if (st == MHA_OK) st = mha_binary_scalar(&grads[0], MHA_MUL, &t1, (float)scale, false);
    mha_release(&mean), mha_release(&dev), mha_release(&wide), mha_release(&t1);
    return st;
}

mha_status mha_ag_var(mha_tensor *out, const mha_tensor *t, size_t dim, bool keepdim, size_t correction) {
    const mha_tensor *in[1] = {t};
    mha_status st = mha_var(out, t, dim, keepdim, correction);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(var_node), out, "var", var_backward, in, 1)) != MHA_OK) return st;
    var_node *node = (var_node *)n;
    node->dim = dim;
    node->correction = correction;
    mha_ag_save(n, t);
    return MHA_OK;
}

/* ================================ matmul ================================ */

/* a as a matrix stack: a vector (K) becomes (1,K) on the left, (K,1) on the right. */
static mha_status as_matrix(mha_tensor *out, const mha_tensor *t, bool left) {
    if (t->ndim >= 2) return mha_share(out, t);
    return mha_unsqueeze(out, t, left ? 0 : 1);
}

/* C = A·B (batched, broadcast): dA = dC·Bᵀ, dB = Aᵀ·dC, each summed over the batch dims it was
 * broadcast on. */
static mha_status matmul_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    mha_tensor a2 = MHA_TENSOR_EMPTY, b2 = MHA_TENSOR_EMPTY, g2 = MHA_TENSOR_EMPTY, tr = MHA_TENSOR_EMPTY;
    mha_tensor prod = MHA_TENSOR_EMPTY, summed = MHA_TENSOR_EMPTY;
    const mha_tensor *a = &n->saved[0], *b = &n->saved[1];
    mha_status st = as_matrix(&a2, a, true);
    if (st == MHA_OK) st = as_matrix(&b2, b, false);
    if (st == MHA_OK) { /* g with the vector dims put back: (..., M, N) */
        ptrdiff_t shape[MHA_MAX_DIMS];
        size_t nd = g->ndim, k = 0;
        for (size_t d = 0; d < nd; d++) shape[k++] = (ptrdiff_t)g->shape[d];
        if (a->ndim == 1 && b->ndim == 1) k = 0, shape[k++] = 1, shape[k++] = 1;
        else if (a->ndim == 1) { /* (..., N) -> (..., 1, N) */
            shape[k] = shape[k - 1];
            shape[k - 1] = 1;
            k++;
        } else if (b->ndim == 1) shape[k++] = 1; /* (..., M) -> (..., M, 1) */
        st = mha_reshape(&g2, g, k, shape);
    }
    for (int side = 0; side < 2 && st == MHA_OK; side++) {
        if (!n->inputs[side]) continue;
        const mha_tensor *m2 = side == 0 ? &b2 : &a2;
        const mha_tensor *in = side == 0 ? a : b;
        st = mha_transpose(&tr, m2, m2->ndim - 2, m2->ndim - 1);
        if (st == MHA_OK) st = side == 0 ? mha_matmul(&prod, &g2, &tr) : mha_matmul(&prod, &tr, &g2);
        const mha_tensor *target = side == 0 ? &a2 : &b2;
        if (st == MHA_OK) st = mha_sum_to(&summed, &prod, target->ndim, target->shape);
        if (st == MHA_OK) {
            ptrdiff_t shape[MHA_MAX_DIMS];
            for (size_t d = 0; d < in->ndim; d++) shape[d] = (ptrdiff_t)in->shape[d];
            st = mha_reshape(&grads[side], &summed, in->ndim, shape);
        }
        mha_release(&tr), mha_release(&prod), mha_release(&summed);
    }
    mha_release(&a2), mha_release(&b2), mha_release(&g2);
    return st;
}

mha_status mha_ag_matmul(mha_tensor *out, const mha_tensor *a, const mha_tensor *b) {
    const mha_tensor *in[2] = {a, b};
    mha_status st = mha_matmul(out, a, b);
    if (st != MHA_OK || !mha_ag_wants(in, 2)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(mha_node), out, "matmul", matmul_backward, in, 2)) != MHA_OK) return st;
    mha_ag_save(n, a);
    mha_ag_save(n, b);
    return MHA_OK;
}

/* ================================ views ================================ */

/* view, reshape, unsqueeze, squeeze, contiguous: the same elements in a new shape -> g in the old
 * shape */
static mha_status reshape_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    ptrdiff_t shape[MHA_MAX_DIMS];
    const mha_shape_rec *in = &n->in_shapes[0];
    for (size_t d = 0; d < in->ndim; d++) shape[d] = (ptrdiff_t)in->shape[d];
    return mha_reshape(&grads[0], g, in->ndim, shape);
}

static mha_status record_reshape(mha_tensor *out, const mha_tensor *t, const char *name) {
    const mha_tensor *in[1] = {t};
    if (!mha_ag_wants(in, 1)) return MHA_OK;
    mha_node *n;
    return mha_ag_record(&n, sizeof(mha_node), out, name, reshape_backward, in, 1);
}

mha_status mha_ag_view(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape) {
    mha_status st = mha_view(out, t, ndim, shape);
    return st == MHA_OK ? record_reshape(out, t, "view") : st;
}
mha_status mha_ag_reshape(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape) {
    mha_status st = mha_reshape(out, t, ndim, shape);
    return st == MHA_OK ? record_reshape(out, t, "reshape") : st;
}
mha_status mha_ag_unsqueeze(mha_tensor *out, const mha_tensor *t, size_t dim) {
    mha_status st = mha_unsqueeze(out, t, dim);
    return st == MHA_OK ? record_reshape(out, t, "unsqueeze") : st;
}
mha_status mha_ag_squeeze(mha_tensor *out, const mha_tensor *t, size_t dim) {
    mha_status st = mha_squeeze(out, t, dim);
    return st == MHA_OK ? record_reshape(out, t, "squeeze") : st;
}
mha_status mha_ag_contiguous(mha_tensor *out, const mha_tensor *t) {
    mha_status st = mha_contiguous(out, t);
    return st == MHA_OK ? record_reshape(out, t, "contiguous") : st;
}
mha_status mha_ag_clone(mha_tensor *out, const mha_tensor *t) {
    mha_status st = mha_clone(out, t);
    return st == MHA_OK ? record_reshape(out, t, "clone") : st;
}

/* permute (and transpose, a permutation of two dims): out's dim d is the input's dim perm[d] */
typedef struct permute_node {
    mha_node base;
    size_t perm[MHA_MAX_DIMS];
} permute_node;

/* g permuted back by the inverse permutation. */
static mha_status permute_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const size_t *perm = ((const permute_node *)n)->perm;
    size_t inverse[MHA_MAX_DIMS];
    for (size_t d = 0; d < g->ndim; d++) inverse[perm[d]] = d;
    return mha_permute(&grads[0], g, inverse);
}

static mha_status record_permute(mha_tensor *out, const mha_tensor *t, const size_t *perm, const char *name) {
    const mha_tensor *in[1] = {t};
    if (!mha_ag_wants(in, 1)) return MHA_OK;
    mha_node *n;
    mha_status st = mha_ag_record(&n, sizeof(permute_node), out, name, permute_backward, in, 1);
    if (st == MHA_OK) memcpy(((permute_node *)n)->perm, perm, t->ndim * sizeof *perm);
    return st;
}

mha_status mha_ag_permute(mha_tensor *out, const mha_tensor *t, const size_t *perm) {
    mha_status st = mha_permute(out, t, perm);
    return st == MHA_OK ? record_permute(out, t, perm, "permute") : st;
}

mha_status mha_ag_transpose(mha_tensor *out, const mha_tensor *t, size_t dim0, size_t dim1) {
    mha_status st = mha_transpose(out, t, dim0, dim1);
    if (st != MHA_OK) return st;
    size_t perm[MHA_MAX_DIMS];
    for (size_t d = 0; d < t->ndim; d++) perm[d] = d;
    perm[dim0] = dim1;
    perm[dim1] = dim0;
    return record_permute(out, t, perm, "transpose");
}

/* narrow (dim, start, length) and select (dim, index: length 1, dim dropped): g placed into zeros.
 * With the input seen as (outer, size along dim, inner), g's length·inner values of each outer
 * index are one run: one memcpy (a W_q, W_k, W_v slice of in_proj_weight is a single run). */
typedef struct slice_node {
    mha_node base;
    size_t dim, start, length;
    bool is_select;            /* the dim is dropped (g has one dim fewer) */
    bool is_piece;             /* a piece of split or chunk, whose pieces are disjoint */
} slice_node;

static mha_status slice_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const slice_node *node = (const slice_node *)n;
    const size_t dim = node->dim;
    const mha_shape_rec *in = &n->in_shapes[0];
    mha_tensor gx = MHA_TENSOR_EMPTY, cg = MHA_TENSOR_EMPTY;
    mha_status st = mha_zeros(&gx, MHA_FLOAT32, in->ndim, in->shape);
    if (st == MHA_OK) st = mha_contiguous(&cg, g);
    if (st == MHA_OK) {
        size_t outer = 1, inner = 1;
        for (size_t d = 0; d < dim; d++) outer *= in->shape[d];
        for (size_t d = dim + 1; d < in->ndim; d++) inner *= in->shape[d];
        const size_t run = (node->is_select ? 1 : node->length) * inner;
        float *dst = mha_f32(&gx);
        const float *src = mha_f32(&cg);
        for (size_t o = 0; o < outer && run > 0; o++)
            memcpy(dst + (o * in->shape[dim] + node->start) * inner, src + o * run, run * sizeof *dst);
    }
    mha_release(&cg);
    if (st == MHA_OK) grads[0] = gx;
    else mha_release(&gx);
    return st;
}

/* slice_backward added into acc (the input's gradient so far, contiguous, no other view): the
 * part takes acc + g; elsewhere acc + 0, which is acc but for -0, which becomes +0: the bits of
 * acc + the zero-filled gradient slice_backward makes. A piece of split or chunk leaves the rest
 * alone and takes g itself where acc is still +0: its pieces' gradients side by side, torch's
 * backward of split (cat), without two passes over the rest a piece. */
static mha_status slice_backward_add(mha_tensor *acc, const mha_node *n, const mha_tensor *g) {
    const slice_node *node = (const slice_node *)n;
    const mha_shape_rec *in = &n->in_shapes[0];
    mha_tensor cg = MHA_TENSOR_EMPTY;
    mha_status st = mha_contiguous(&cg, g);
    if (st != MHA_OK) return st;
    size_t outer = 1, inner = 1;
    for (size_t d = 0; d < node->dim; d++) outer *= in->shape[d];
    for (size_t d = node->dim + 1; d < in->ndim; d++) inner *= in->shape[d];
    const size_t run = (node->is_select ? 1 : node->length) * inner, span = in->shape[node->dim] * inner;
    const size_t first = node->start * inner; /* where the part starts in each span */
    float *dst = mha_f32(acc);
    const float *src = mha_f32(&cg);
    for (size_t o = 0; o < outer; o++, dst += span, src += run) {
        if (node->is_piece) {
            mha_ag_place_into(dst + first, src, run);
            continue;
        }
        mha_ag_add_into(dst, NULL, first);
        mha_ag_add_into(dst + first, src, run);
        mha_ag_add_into(dst + first + run, NULL, span - first - run);
    }
    mha_release(&cg);
    return MHA_OK;
}

static mha_status record_slice(mha_tensor *out, const mha_tensor *t, size_t dim, size_t start, size_t length,
                               bool is_select, bool is_piece, const char *name) {
    const mha_tensor *in[1] = {t};
    if (!mha_ag_wants(in, 1)) return MHA_OK;
    mha_node *n;
    mha_status st = mha_ag_record(&n, sizeof(slice_node), out, name, slice_backward, in, 1);
    if (st != MHA_OK) return st;
    slice_node *node = (slice_node *)n;
    node->dim = dim, node->start = start, node->length = length, node->is_select = is_select;
    node->is_piece = is_piece;
    n->backward_add = slice_backward_add;
    return MHA_OK;
}

mha_status mha_ag_narrow(mha_tensor *out, const mha_tensor *t, size_t dim, size_t start, size_t length) {
    mha_status st = mha_narrow(out, t, dim, start, length);
    return st == MHA_OK ? record_slice(out, t, dim, start, length, false, false, "narrow") : st;
}

mha_status mha_ag_select(mha_tensor *out, const mha_tensor *t, size_t dim, size_t index) {
    mha_status st = mha_select(out, t, dim, index);
    return st == MHA_OK ? record_slice(out, t, dim, index, 1, true, false, "select") : st;
}

/* expand: g summed over the broadcast dims */
static mha_status expand_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) { return give(grads, n, 0, g); }

mha_status mha_ag_expand(mha_tensor *out, const mha_tensor *t, size_t ndim, const size_t *shape) {
    const mha_tensor *in[1] = {t};
    mha_status st = mha_expand(out, t, ndim, shape);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    return mha_ag_record(&n, sizeof(mha_node), out, "expand", expand_backward, in, 1);
}

/* split and chunk: each piece a narrow of t, their gradients side by side (slice_backward_add) */
static mha_status record_pieces(mha_tensor *outs, size_t n_out, const mha_tensor *t, size_t dim, const char *name) {
    size_t start = 0;
    for (size_t i = 0; i < n_out; i++) {
        mha_status st = record_slice(&outs[i], t, dim, start, outs[i].shape[dim], false, true, name);
        if (st != MHA_OK) {
            for (size_t j = 0; j < n_out; j++) mha_release(&outs[j]);
            return st;
        }
        start += outs[i].shape[dim];
    }
    return MHA_OK;
}

mha_status mha_ag_split(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t split_size, size_t dim) {
    mha_status st = mha_split(outs, max_out, n_out, t, split_size, dim);
    return st == MHA_OK ? record_pieces(outs, *n_out, t, dim, "split") : st;
}

mha_status mha_ag_chunk(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t chunks, size_t dim) {
    mha_status st = mha_chunk(outs, max_out, n_out, t, chunks, dim);
    return st == MHA_OK ? record_pieces(outs, *n_out, t, dim, "chunk") : st;
}

/* ================================ joining ================================ */

/* cat along dim, or stack along a new dim */
typedef struct join_node {
    mha_node base;
    size_t dim;
    bool is_stack;
} join_node;

/* cat: input i's gradient is g's slice of its rows along dim; stack: g's i-th entry along the new
 * dim. */
static mha_status join_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const join_node *node = (const join_node *)n;
    size_t start = 0;
    for (size_t i = 0; i < n->n_inputs; i++) {
        size_t len = node->is_stack ? 1 : n->in_shapes[i].shape[node->dim];
        mha_status st = MHA_OK;
        if (n->inputs[i]) {
            mha_tensor part = MHA_TENSOR_EMPTY;
            st = node->is_stack ? mha_select(&part, g, node->dim, i) : mha_narrow(&part, g, node->dim, start, len);
            if (st == MHA_OK) st = mha_contiguous(&grads[i], &part);
            mha_release(&part);
        }
        if (st != MHA_OK) return st;
        start += len;
    }
    return MHA_OK;
}

static mha_status record_join(mha_tensor *out, const mha_tensor *const *ts, size_t n_in, size_t dim, bool is_stack) {
    if (!mha_ag_wants(ts, n_in)) return MHA_OK;
    mha_node *n;
    mha_status st = mha_ag_record(&n, sizeof(join_node), out, is_stack ? "stack" : "cat", join_backward, ts, n_in);
    if (st != MHA_OK) return st;
    join_node *node = (join_node *)n;
    node->dim = dim;
    node->is_stack = is_stack;
    return MHA_OK;
}

mha_status mha_ag_cat(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim) {
    mha_status st = mha_cat(out, ts, n, dim);
    return st == MHA_OK ? record_join(out, ts, n, dim, false) : st;
}

mha_status mha_ag_stack(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim) {
    mha_status st = mha_stack(out, ts, n, dim);
    return st == MHA_OK ? record_join(out, ts, n, dim, true) : st;
}
