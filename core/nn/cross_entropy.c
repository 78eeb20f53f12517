/* core/nn/cross_entropy.c - torch's cross_entropy (ignore_index, label smoothing, the three
 * reductions): the forward, its backward (formulas in nn.h) and its graph node. */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "nn/nn_internal.h"

static const mha_ce_options ce_defaults = {MHA_REDUCTION_MEAN, false, 0.0f, 0.0f};

static bool ce_ignored(const mha_ce_options *opt, float target) {
    return opt->has_ignore && target == opt->ignore_index;
}

/* logits with the class dim moved last, contiguous: (positions, C); checks targets' shape and
 * values (an ignored target may be any number) and the options. */
static mha_status ce_rows(mha_tensor *rows, mha_tensor *ctargets, const mha_tensor *logits, const mha_tensor *targets,
                          const mha_ce_options *opt, const char *fname) {
    char sl[MHA_SHAPE_BUF], st_[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(logits, fname, "logits")) != MHA_OK || (st = check_float(targets, fname, "targets")) != MHA_OK)
        return st;
    if (!(opt->label_smoothing >= 0.0f && opt->label_smoothing <= 1.0f))
        return mha_fail(MHA_E_ARG, "%s: label_smoothing %g must be from 0 to 1", fname, (double)opt->label_smoothing);
    if (opt->reduction != MHA_REDUCTION_MEAN && opt->reduction != MHA_REDUCTION_SUM && opt->reduction != MHA_REDUCTION_NONE)
        return mha_fail(MHA_E_ARG, "%s: reduction %d is not mean, sum or none", fname, (int)opt->reduction);
    if (logits->ndim == 0) return mha_fail(MHA_E_SHAPE, "%s: logits () is a scalar; expected (C), (N,C) or (N,C,d1,...)", fname);
    size_t cdim = logits->ndim == 1 ? 0 : 1, C = logits->shape[cdim];
    bool fits = targets->ndim + 1 == logits->ndim;
    for (size_t d = 0, e = 0; fits && d < logits->ndim; d++)
        if (d != cdim) fits = targets->shape[e++] == logits->shape[d];
    if (!fits)
        return mha_fail(MHA_E_SHAPE, "%s: targets %s must have logits %s's shape without the class dim %zu (of %zu classes)",
                        fname, SHAPE(st_, targets), SHAPE(sl, logits), cdim + 1, C);
    size_t perm[MHA_MAX_DIMS], k = 0;
    for (size_t d = 0; d < logits->ndim; d++)
        if (d != cdim) perm[k++] = d;
    perm[k] = cdim;
    mha_tensor moved = MHA_TENSOR_EMPTY;
    if ((st = mha_permute(&moved, logits, perm)) != MHA_OK) return st;
    st = mha_contiguous(rows, &moved);
    mha_release(&moved);
    if (st == MHA_OK) st = mha_contiguous(ctargets, targets);
    const float *t = st == MHA_OK ? mha_f32(ctargets) : NULL;
    for (size_t i = 0, n = t ? mha_numel(ctargets) : 0; i < n && st == MHA_OK; i++)
        if (!ce_ignored(opt, t[i]) && !(t[i] >= 0.0f && t[i] < (float)C && t[i] == floorf(t[i])))
            st = mha_fail(MHA_E_ARG, "%s: targets %s: entry %zu is %g, expected a whole number in [0, %zu)", fname,
                          SHAPE(st_, ctargets), i, (double)t[i], C);
    if (st != MHA_OK) mha_release(rows), mha_release(ctargets);
    return st;
}

/* ---- forward ---- */

mha_status mha_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets,
                             const mha_ce_options *opt) {
    if (!opt) opt = &ce_defaults;
    mha_tensor rows = MHA_TENSOR_EMPTY, ct = MHA_TENSOR_EMPTY, losses = MHA_TENSOR_EMPTY;
    mha_status st = ce_rows(&rows, &ct, logits, targets, opt, "cross_entropy");
    if (st != MHA_OK) return st;
    size_t C = rows.shape[rows.ndim - 1], P = mha_numel(&ct), counted = 0;
    const float *x = mha_f32(&rows), *t = mha_f32(&ct);
    const double eps = opt->label_smoothing;
    const bool none = opt->reduction == MHA_REDUCTION_NONE;
    if (none && (st = mha_empty(&losses, MHA_FLOAT32, targets->ndim, targets->shape)) != MHA_OK) goto done;
    double total = 0.0;
    for (size_t p = 0; p < P; p++) { /* loss_p = lse - (1-ε)·x_t - ε·mean_c x_c */
        double loss = 0.0;
        if (!ce_ignored(opt, t[p])) {
            const float *row = x + p * C;
            float max;
            double lse = log(logits_exp_sum(&max, row, C)) + max;
            if (eps == 0.0) {
                loss = lse - row[(size_t)t[p]];
            } else {
                double sum_x = 0.0;
                for (size_t c = 0; c < C; c++) sum_x += row[c];
                loss = (1.0 - eps) * (lse - row[(size_t)t[p]]) + eps * (lse - sum_x / (double)C);
            }
            counted++;
        }
        if (none) mha_f32(&losses)[p] = (float)loss;
        total += loss;
    }
    if (none) *out = losses, losses = MHA_TENSOR_EMPTY;
    else if (opt->reduction == MHA_REDUCTION_SUM) st = mha_full(out, 0, NULL, (float)total);
    /* none counted: 0/0 = NaN, as torch */
    else st = mha_full(out, 0, NULL, (float)(total / (double)counted));
done:
    mha_release(&rows), mha_release(&ct), mha_release(&losses);
    return st;
}

/* ---- backward ---- */

mha_status mha_cross_entropy_backward(mha_tensor *dlogits, const mha_tensor *dloss, const mha_tensor *logits,
                                      const mha_tensor *targets, const mha_ce_options *opt) {
    if (!opt) opt = &ce_defaults;
    char sd[MHA_SHAPE_BUF], st_[MHA_SHAPE_BUF];
    mha_tensor rows = MHA_TENSOR_EMPTY, ct = MHA_TENSOR_EMPTY, moved = MHA_TENSOR_EMPTY, cg = MHA_TENSOR_EMPTY;
    mha_status st = ce_rows(&rows, &ct, logits, targets, opt, "cross_entropy_backward");
    if (st != MHA_OK) return st;
    const bool none = opt->reduction == MHA_REDUCTION_NONE;
    mha_tensor grad = MHA_TENSOR_EMPTY;
    if ((st = check_float(dloss, "cross_entropy_backward", "dloss")) != MHA_OK) goto done;
    if (none ? !mha_same_shape(dloss, targets) : dloss->ndim != 0) {
        st = mha_fail(MHA_E_SHAPE, "cross_entropy_backward: dloss %s must be %s (the loss's shape with reduction %s)",
                      SHAPE(sd, dloss), none ? SHAPE(st_, targets) : "()", none ? "'none'" : "'mean' or 'sum'");
        goto done;
    }
    if ((st = mha_contiguous(&cg, dloss)) != MHA_OK) goto done;
    size_t C = rows.shape[rows.ndim - 1], P = mha_numel(&ct), counted = 0;
    const float *x = mha_f32(&rows), *t = mha_f32(&ct), *g = mha_f32(&cg);
    for (size_t p = 0; p < P; p++) counted += !ce_ignored(opt, t[p]);
    /* 'mean' divides by the positions counted (none counted: every position is ignored, each
     * gradient 0) */
    const double scale = opt->reduction == MHA_REDUCTION_MEAN ? (double)counted : 1.0;
    const double eps = opt->label_smoothing, uniform = eps / (double)C;
    if ((st = mha_empty(&grad, MHA_FLOAT32, rows.ndim, rows.shape)) != MHA_OK) goto done;
    float *gp = mha_f32(&grad);
    for (size_t p = 0; p < P; p++) {
        if (ce_ignored(opt, t[p])) {
            for (size_t c = 0; c < C; c++) gp[p * C + c] = 0.0f;
            continue;
        }
        const float *row = x + p * C;
        float max;
        double sum = logits_exp_sum(&max, row, C), w = g[none ? p : 0];
        for (size_t c = 0; c < C; c++) {
            /* each term by the exp the sum took it with (mha_exp_sum's) */
            double soft = mha_exp_double_ref((double)row[c] - max) / sum;
            double target = (c == (size_t)t[p] ? 1.0 - eps : 0.0) + uniform;
            gp[p * C + c] = (float)(w * (soft - target) / scale);
        }
    }
    /* back from (positions..., C) to the logits' layout */
    size_t cdim = logits->ndim == 1 ? 0 : 1, inverse[MHA_MAX_DIMS];
    for (size_t d = 0, k = 0; d < logits->ndim; d++)
        if (d != cdim) inverse[d] = k++;
    inverse[cdim] = logits->ndim - 1;
    if ((st = mha_permute(&moved, &grad, inverse)) == MHA_OK) st = mha_contiguous(dlogits, &moved);
done:
    mha_release(&rows), mha_release(&ct), mha_release(&moved), mha_release(&grad), mha_release(&cg);
    return st;
}

/* ---- the graph node: mha_ag_cross_entropy records the forward; its backward runs the one above
 * ---- */

typedef struct cross_entropy_node {
    mha_node base;
    mha_ce_options opt;        /* a copy: the caller's options may be gone by the backward */
} cross_entropy_node;

static mha_status cross_entropy_node_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const cross_entropy_node *node = (const cross_entropy_node *)n;
    return mha_cross_entropy_backward(&grads[0], g, &n->saved[0], &n->saved[1], &node->opt);
}

mha_status mha_ag_cross_entropy(mha_tensor *out, const mha_tensor *logits, const mha_tensor *targets,
                                const mha_ce_options *opt) {
    static const mha_ce_options defaults = {MHA_REDUCTION_MEAN, false, 0.0f, 0.0f};
    const mha_tensor *in[2] = {logits, targets};
    mha_status st = mha_cross_entropy(out, logits, targets, opt);
    if (st != MHA_OK || !mha_ag_wants(in, 1)) return st;
    mha_node *n;
    if ((st = mha_ag_record(&n, sizeof(cross_entropy_node), out, "cross_entropy", cross_entropy_node_backward, in, 2)) !=
        MHA_OK)
        return st;
    ((cross_entropy_node *)n)->opt = opt ? *opt : defaults;
    mha_ag_save(n, logits);
    mha_ag_save(n, targets);
    return MHA_OK;
}
