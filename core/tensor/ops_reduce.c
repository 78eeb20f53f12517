/* core/tensor/ops_reduce.c - reductions of a tensor along one dim or over all of it: sum, mean,
 * max, min, argmax, argmin and var, accumulated in double and read in memory order whatever the
 * dim. */
#include <math.h>
#include <string.h>

#include "tensor/ops_internal.h"

static const char *const reduce_names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};

/* ---------------------------------------------------------------------------------------------
 * Reductions. The input is seen as (outer, reduced, inner) dims: for one dim d, outer = dims before
 * d, reduced = d, inner = dims after d; for MHA_ALL_DIMS every dim is reduced. For each outer
 * position the loop runs over the reduced positions and, inside, over the inner positions, keeping
 * one accumulator per inner position: contiguous inputs are read in memory order whatever d is.
 * Sums and means accumulate in double. var is two passes: the mean, then sum (x - mean)^2.
 * ------------------------------------------------------------------------------------------- */

typedef struct dims {
    size_t ndim;
    size_t shape[MHA_MAX_DIMS];
    ptrdiff_t stride[MHA_MAX_DIMS];
    size_t count;   /* product of the shape */
} dims;

/* t's dims [first, last), size-1 dims dropped and evenly stepped neighbours merged (C order kept,
 * so a position's counter along the merged dims is still its flat C-order index). */
static void dims_of(dims *d, const mha_tensor *t, size_t first, size_t last) {
    d->ndim = 0;
    d->count = 1;
    for (size_t i = first; i < last; i++) {
        d->count *= t->shape[i];
        if (t->shape[i] == 1) continue;
        if (d->ndim > 0 && d->stride[d->ndim - 1] == t->stride[i] * (ptrdiff_t)t->shape[i]) {
            d->shape[d->ndim - 1] *= t->shape[i];
            d->stride[d->ndim - 1] = t->stride[i];
        } else {
            d->shape[d->ndim] = t->shape[i];
            d->stride[d->ndim] = t->stride[i];
            d->ndim++;
        }
    }
}

/* Advance an odometer over d's dims [0, upto); returns the change of the element offset. */
static ptrdiff_t dims_step(const dims *d, size_t *index, size_t upto) {
    ptrdiff_t delta = 0;
    for (size_t k = upto; k-- > 0;) {
        index[k]++;
        delta += d->stride[k];
        if (index[k] < d->shape[k]) break;
        delta -= d->stride[k] * (ptrdiff_t)d->shape[k];
        index[k] = 0;
    }
    return delta;
}

typedef enum { PASS_FIRST, PASS_SUM, PASS_SQDEV, PASS_MAX, PASS_MIN, PASS_ARGMAX, PASS_ARGMIN } pass_kind;

/* Update the accumulators of n consecutive inner positions with the reduced position r:
 * x[i·sx] is the element for inner position i. */
static void accumulate(pass_kind kind, double *acc, size_t *arg, const double *mean, size_t r,
                       const float *x, ptrdiff_t sx, size_t n) {
    switch (kind) {
    case PASS_FIRST:    /* max/min/argmax/argmin start from the first element */
        for (size_t i = 0; i < n; i++) acc[i] = x[(ptrdiff_t)i * sx];
        if (arg) memset(arg, 0, n * sizeof *arg);
        break;
    case PASS_SUM:
        for (size_t i = 0; i < n; i++) acc[i] += x[(ptrdiff_t)i * sx];
        break;
    case PASS_SQDEV:
        for (size_t i = 0; i < n; i++) {
            double dev = x[(ptrdiff_t)i * sx] - mean[i];
            acc[i] += dev * dev;
        }
        break;
    case PASS_MAX:      /* once NaN, stays NaN: x > NaN is false */
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (isnan(v) || v > acc[i]) acc[i] = v;
        }
        break;
    case PASS_MIN:
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (isnan(v) || v < acc[i]) acc[i] = v;
        }
        break;
    case PASS_ARGMAX:   /* the first NaN wins and is kept; ties keep the first */
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (!isnan(acc[i]) && (isnan(v) || v > acc[i])) acc[i] = v, arg[i] = r;
        }
        break;
    case PASS_ARGMIN:
        for (size_t i = 0; i < n; i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (!isnan(acc[i]) && (isnan(v) || v < acc[i])) acc[i] = v, arg[i] = r;
        }
        break;
    }
}

typedef struct reduction {
    const char *fname;
    const float *x;             /* first element of the input */
    dims outer, red, inner;
    double *acc, *mean;         /* inner.count each */
    size_t *arg;                /* inner.count, for argmax/argmin */
    size_t since_poll;
} reduction;

/* Fold the n reduced positions r0, r0+1, ... (elements x[i·sx]) into the single accumulator *acc
 * (and *arg): the path when no inner dims are left, as in a sum over the last dim. */
static void fold_run(pass_kind kind, double *acc, size_t *arg, const double *mean, size_t r0,
                     const float *x, ptrdiff_t sx, size_t n) {
    size_t i = 0;
    if (r0 == 0 && kind != PASS_SUM && kind != PASS_SQDEV) {   /* start from the first element */
        *acc = x[0];
        if (arg) *arg = 0;
        i = 1;
    }
    switch (kind) {
    case PASS_FIRST:
        break;
    case PASS_SUM: {    /* four partial sums, so the CPU can overlap the additions */
        double part[4] = {0.0, 0.0, 0.0, 0.0};
        for (; i + 4 <= n; i += 4)
            for (size_t k = 0; k < 4; k++) part[k] += x[(ptrdiff_t)(i + k) * sx];
        for (; i < n; i++) part[0] += x[(ptrdiff_t)i * sx];
        *acc += (part[0] + part[1]) + (part[2] + part[3]);
        break;
    }
    case PASS_SQDEV: {
        double part[4] = {0.0, 0.0, 0.0, 0.0}, m = *mean;
        for (; i + 4 <= n; i += 4) {
            for (size_t k = 0; k < 4; k++) {
                double dev = x[(ptrdiff_t)(i + k) * sx] - m;
                part[k] += dev * dev;
            }
        }
        for (; i < n; i++) {
            double dev = x[(ptrdiff_t)i * sx] - m;
            part[0] += dev * dev;
        }
        *acc += (part[0] + part[1]) + (part[2] + part[3]);
        break;
    }
    case PASS_MAX:
    case PASS_MIN: {    /* a NaN seen anywhere makes the result NaN; an earlier NaN in *acc stays */
        float best = (float)*acc;
        bool seen_nan = false;
        if (kind == PASS_MAX) {
            for (; i < n; i++) {
                float v = x[(ptrdiff_t)i * sx];
                seen_nan |= isnan(v);
                best = v > best ? v : best;
            }
        } else {
            for (; i < n; i++) {
                float v = x[(ptrdiff_t)i * sx];
                seen_nan |= isnan(v);
                best = v < best ? v : best;
            }
        }
        *acc = seen_nan ? NAN : best;
        break;
    }
    case PASS_ARGMAX:
    case PASS_ARGMIN:   /* the first NaN wins and is kept; ties keep the first */
        for (; i < n && !isnan(*acc); i++) {
            double v = x[(ptrdiff_t)i * sx];
            if (isnan(v) || (kind == PASS_ARGMAX ? v > *acc : v < *acc)) *acc = v, *arg = r0 + i;
        }
        break;
    }
}

/* One pass when no inner dims are left: runs along the innermost reduced dim, in C order. */
static mha_status reduce_runs(reduction *rd, pass_kind kind, ptrdiff_t base) {
    const dims *red = &rd->red;
    size_t run = red->ndim ? red->shape[red->ndim - 1] : 1;
    ptrdiff_t run_stride = red->ndim ? red->stride[red->ndim - 1] : 0;
    size_t runs = run ? red->count / run : 0, r = 0;
    size_t index[MHA_MAX_DIMS] = {0};
    ptrdiff_t off = 0;
    if (kind == PASS_SUM || kind == PASS_SQDEV) rd->acc[0] = 0.0;
    for (size_t j = 0; j < runs; j++) {
        for (size_t start = 0; start < run; start += BLOCK) {
            size_t n = run - start < BLOCK ? run - start : BLOCK;
            fold_run(kind, rd->acc, rd->arg, rd->mean, r, rd->x + base + off + (ptrdiff_t)start * run_stride,
                     run_stride, n);
            r += n;
            rd->since_poll += n;
            if (rd->since_poll >= BLOCK) {
                rd->since_poll = 0;
                if (mha_interrupted()) return interrupted(rd->fname);
            }
        }
        if (red->ndim > 1) off += dims_step(red, index, red->ndim - 1);
    }
    return MHA_OK;
}

/* One pass over the reduced and inner positions under one outer position (element offset base). */
static mha_status reduce_pass(reduction *rd, pass_kind kind, ptrdiff_t base) {
    if (rd->inner.count == 1) return reduce_runs(rd, kind, base);
    const dims *in = &rd->inner;
    size_t row = in->ndim ? in->shape[in->ndim - 1] : 1;    /* inner positions in one inner row */
    ptrdiff_t row_stride = in->ndim ? in->stride[in->ndim - 1] : 0;
    size_t rows = row ? in->count / row : 0;
    size_t red_index[MHA_MAX_DIMS] = {0};
    ptrdiff_t red_off = 0;
    if (kind == PASS_SUM || kind == PASS_SQDEV)
        for (size_t i = 0; i < in->count; i++) rd->acc[i] = 0.0;
    for (size_t r = 0; r < rd->red.count; r++) {
        pass_kind k = r == 0 && kind != PASS_SUM && kind != PASS_SQDEV ? PASS_FIRST : kind;
        size_t in_index[MHA_MAX_DIMS] = {0};
        ptrdiff_t in_off = 0;
        for (size_t j = 0; j < rows; j++) {
            for (size_t start = 0; start < row; start += BLOCK) {
                size_t n = row - start < BLOCK ? row - start : BLOCK;
                size_t i0 = j * row + start;
                accumulate(k, rd->acc + i0, rd->arg ? rd->arg + i0 : NULL, rd->mean ? rd->mean + i0 : NULL, r,
                           rd->x + base + red_off + in_off + (ptrdiff_t)start * row_stride, row_stride, n);
                rd->since_poll += n;
                if (rd->since_poll >= BLOCK) {
                    rd->since_poll = 0;
                    if (mha_interrupted()) return interrupted(rd->fname);
                }
            }
            if (in->ndim > 1) in_off += dims_step(in, in_index, in->ndim - 1);
        }
        red_off += dims_step(&rd->red, red_index, rd->red.ndim);
    }
    return MHA_OK;
}

/* Shape of a reduction's result: dim removed, or kept as 1 (all dims when dim is MHA_ALL_DIMS). */
static size_t reduced_shape(size_t *shape, const mha_tensor *t, size_t dim, bool keepdim) {
    size_t ndim = 0;
    for (size_t i = 0; i < t->ndim; i++) {
        bool reduced = dim == MHA_ALL_DIMS || i == dim;
        if (!reduced) shape[ndim++] = t->shape[i];
        else if (keepdim) shape[ndim++] = 1;
    }
    return ndim;
}

/* One outer position of reduce: the inner results into dst (inner floats) from the rows at base. */
static mha_status reduce_row(float *dst, reduction *rd, int op, ptrdiff_t base, size_t n, size_t correction) {
    const size_t inner = rd->inner.count;
    mha_status st;
    switch (op) {
    case MHA_SUM:
    case MHA_MEAN:
        st = reduce_pass(rd, PASS_SUM, base);
        for (size_t i = 0; i < inner && st == MHA_OK; i++)
            dst[i] = (float)(op == MHA_SUM ? rd->acc[i] : n ? rd->acc[i] / (double)n : NAN);
        break;
    case MHA_MAX:
    case MHA_MIN:
        st = reduce_pass(rd, op == MHA_MAX ? PASS_MAX : PASS_MIN, base);
        for (size_t i = 0; i < inner && st == MHA_OK; i++) dst[i] = (float)rd->acc[i];
        break;
    case MHA_ARGMAX:
    case MHA_ARGMIN:
        st = reduce_pass(rd, op == MHA_ARGMAX ? PASS_ARGMAX : PASS_ARGMIN, base);
        for (size_t i = 0; i < inner && st == MHA_OK; i++) dst[i] = (float)rd->arg[i];
        break;
    default: {  /* var = sum (x - mean)^2 / (n - correction); NumPy's 0/0 = NaN, x/0 = inf when n <=
                   correction */
        st = reduce_pass(rd, PASS_SUM, base);
        for (size_t i = 0; i < inner && st == MHA_OK; i++) rd->mean[i] = n ? rd->acc[i] / (double)n : NAN;
        if (st == MHA_OK) st = reduce_pass(rd, PASS_SQDEV, base);
        double divisor = n > correction ? (double)(n - correction) : 0.0;
        for (size_t i = 0; i < inner && st == MHA_OK; i++)
            dst[i] = divisor > 0.0 ? (float)(rd->acc[i] / divisor)
                     : rd->acc[i] > 0.0 ? INFINITY : NAN;
        break;
    }
    }
    return st;
}

/* op is an mha_reduceop, or -1 for var (with correction). */
static mha_status reduce(mha_tensor *out, int op, const mha_tensor *t, size_t dim, bool keepdim, size_t correction) {
    const char *fname = op < 0 ? "var" : reduce_names[op];
    char sh[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_out(fname, out)) != MHA_OK || (st = check_in(fname, "x", t)) != MHA_OK) return st;
    if (dim != MHA_ALL_DIMS && dim >= t->ndim && !(t->ndim == 0 && dim == 0))
        return mha_fail(MHA_E_ARG, "%s: dim %zu is out of range for the %zu-dim tensor %s", fname, dim, t->ndim,
                        shape_of(sh, t));
    if (t->ndim == 0) dim = MHA_ALL_DIMS;          /* a scalar's only "dim" is all of it */

    size_t n = dim == MHA_ALL_DIMS ? mha_numel(t) : t->shape[dim];
    bool extreme = op == MHA_MAX || op == MHA_MIN || op == MHA_ARGMAX || op == MHA_ARGMIN;
    if (extreme && n == 0) {
        if (dim == MHA_ALL_DIMS)
            return mha_fail(MHA_E_SHAPE, "%s: the tensor %s is empty; %s of no elements is undefined", fname,
                            shape_of(sh, t), fname);
        return mha_fail(MHA_E_SHAPE, "%s: dim -%zu of the tensor %s has size 0; %s of no elements is undefined",
                        fname, t->ndim - dim, shape_of(sh, t), fname);
    }

    reduction rd = {.fname = fname};
    mha_tensor t_float = MHA_TENSOR_EMPTY;
    if ((st = as_float(fname, &t_float, &t)) != MHA_OK) return st;
    rd.x = (const float *)t->storage->data + t->offset;
    if (dim == MHA_ALL_DIMS) {
        dims_of(&rd.outer, t, 0, 0);
        dims_of(&rd.red, t, 0, t->ndim);
        dims_of(&rd.inner, t, 0, 0);
    } else {
        dims_of(&rd.outer, t, 0, dim);
        dims_of(&rd.red, t, dim, dim + 1);
        dims_of(&rd.inner, t, dim + 1, t->ndim);
    }

    size_t shape[MHA_MAX_DIMS], ndim = reduced_shape(shape, t, dim, keepdim);
    size_t inner = rd.inner.count;
    bool has_arg = op == MHA_ARGMAX || op == MHA_ARGMIN;
    size_t acc_bytes = inner * sizeof(double), arg_bytes = has_arg ? inner * sizeof(size_t) : 0;
    size_t mean_bytes = op < 0 ? acc_bytes : 0;
    if ((st = alloc_out(fname, out, MHA_FLOAT32, ndim, shape)) != MHA_OK) goto done;
    if (mha_numel(out) == 0) goto done;
    if (n == 0) {   /* nothing to reduce: sum 0, mean and var 0/0 = NaN, without walking the outer
                       positions */
        float *result = mha_f32(out);
        for (size_t i = 0, m = mha_numel(out); i < m; i++) result[i] = op == MHA_SUM ? 0.0f : NAN;
        goto done;
    }
    rd.acc = mha_alloc(acc_bytes);
    rd.mean = mean_bytes ? mha_alloc(mean_bytes) : NULL;
    rd.arg = arg_bytes ? mha_alloc(arg_bytes) : NULL;
    if (!rd.acc || (mean_bytes && !rd.mean) || (arg_bytes && !rd.arg)) {
        st = mha_fail(MHA_E_NOMEM, "%s: out of memory for %zu accumulators", fname, inner);
        mha_release(out);
        goto done;
    }

    float *result = mha_f32(out);
    size_t outer_index[MHA_MAX_DIMS] = {0};
    ptrdiff_t base = 0;
    for (size_t o = 0; o < rd.outer.count; o++) {
        float *dst = result + o * inner;
        st = reduce_row(dst, &rd, op, base, n, correction);
        if (st != MHA_OK) {
            mha_release(out);
            break;
        }
        base += dims_step(&rd.outer, outer_index, rd.outer.ndim);
    }
done:
    mha_free(rd.acc, acc_bytes);
    mha_free(rd.mean, mean_bytes);
    mha_free(rd.arg, arg_bytes);
    mha_release(&t_float);
    return st;
}

mha_status mha_reduce(mha_tensor *out, mha_reduceop op, const mha_tensor *t, size_t dim, bool keepdim) {
    if ((unsigned)op > MHA_ARGMIN) return mha_fail(MHA_E_ARG, "reduce: unknown operation %d", (int)op);
    return reduce(out, (int)op, t, dim, keepdim, 0);
}

mha_status mha_var(mha_tensor *out, const mha_tensor *t, size_t dim, bool keepdim, size_t correction) {
    return reduce(out, -1, t, dim, keepdim, correction);
}
