/* core/nn/sample.c - temperature, top-k and top-p (nucleus; Holtzman et al., 2020) sampling of one
 * token per row of logits, drawing from the process's seeded generator so a seed gives the same
 * tokens on every machine. */
#include "nn/sample.h"

#include <math.h>
#include <stdlib.h>

/* One candidate token: its unnormalised probability and its 0-based index in the vocabulary. */
typedef struct candidate { double p; size_t index; } candidate;

/* Sorts the most probable first; equal probabilities keep the lower index first. */
static int more_probable(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static mha_status check_sample(const mha_tensor *logits, const mha_sample_options *opt) {
    char shape[MHA_SHAPE_BUF];
    if (logits->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "sample: logits must be a float tensor, got a bool one of shape %s",
                        mha_shape_str(shape, sizeof shape, logits));
    if (logits->ndim == 0 || logits->shape[logits->ndim - 1] == 0)
        return mha_fail(MHA_E_SHAPE, "sample: logits must be (..., V) with a vocabulary of at least one token, "
                        "got shape %s", mha_shape_str(shape, sizeof shape, logits));
    if (!(opt->temperature >= 0) || isinf(opt->temperature))
        return mha_fail(MHA_E_ARG, "sample: temperature must be a number >= 0 (0 takes the argmax), got %g",
                        opt->temperature);
    if (!(opt->top_p > 0 && opt->top_p <= 1))
        return mha_fail(MHA_E_ARG, "sample: top_p must be in (0, 1], got %g", opt->top_p);
    return MHA_OK;
}

/* The first largest logit of row (V), or an error naming row r. */
static mha_status argmax_row(size_t *index, const float *row, size_t V, size_t r) {
    size_t best = 0;
    for (size_t j = 0; j < V; j++) {
        if (isnan(row[j])) return mha_fail(MHA_E_ARG, "sample: row %zu of logits holds NaN at index %zu", r + 1, j + 1);
        if (row[j] > row[best]) best = j;
    }
    if (row[best] == -INFINITY)
        return mha_fail(MHA_E_ARG, "sample: row %zu of logits is all -inf: no token can be drawn", r + 1);
    *index = best;
    return MHA_OK;
}

static int lower_index(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Draws one index from row (V) by passes 1-4 of sample.h, u being the row's uniform; best is the
 * row's argmax and cand V candidates of scratch. */
static size_t draw_row(const float *row, size_t V, const mha_sample_options *opt, size_t best, candidate *cand,
                       float u) {
    double max = row[best];
    size_t kept = 0;
    for (size_t j = 0; j < V; j++) {  /* pass 1: probabilities, unnormalised, in vocabulary order */
        double p = exp(((double)row[j] - max) / opt->temperature);
        if (p > 0) cand[kept++] = (candidate){p, j};
    }
    size_t k = opt->top_k && opt->top_k < kept ? opt->top_k : kept;
    if (k < kept || opt->top_p < 1) {
        qsort(cand, kept, sizeof *cand, more_probable);
        kept = k;   /* pass 2: the k most probable */
        if (opt->top_p < 1) {   /* pass 3: the shortest most-probable prefix holding top_p of the
                                   kept mass */
            double mass = 0, run = 0;
            for (size_t c = 0; c < kept; c++) mass += cand[c].p;
            size_t c = 0;
            while (c < kept && run < opt->top_p * mass) run += cand[c++].p;
            kept = c;
        }
        qsort(cand, kept, sizeof *cand, lower_index);   /* back to vocabulary order */
    }
    double mass = 0, run = 0;  /* pass 4: the inverse of the kept tokens' cumulative distribution */
    for (size_t c = 0; c < kept; c++) mass += cand[c].p;
    double target = (double)u * mass;
    for (size_t c = 0; c < kept; c++) {
        run += cand[c].p;
        if (run > target) return cand[c].index;
    }
    return cand[kept - 1].index;   /* u·mass rounded up to the whole mass */
}

mha_status mha_sample(mha_tensor *out, const mha_tensor *logits, const mha_sample_options *opt) {
    mha_status st = check_sample(logits, opt);
    if (st != MHA_OK) return st;
    size_t V = logits->shape[logits->ndim - 1], rows = mha_numel(logits) / V;
    bool greedy = opt->temperature == 0 || opt->top_k == 1;
    mha_tensor x = MHA_TENSOR_EMPTY, uniforms = MHA_TENSOR_EMPTY;
    candidate *cand = NULL;
    size_t cand_bytes = V * sizeof *cand;
    if ((st = mha_contiguous_named(&x, logits, "sample")) != MHA_OK) return st;
    if ((st = mha_empty_named(out, MHA_FLOAT32, logits->ndim - 1, logits->shape, "sample")) != MHA_OK) goto done;
    if (opt->has_seed) mha_seed(opt->seed);
    if (rows == 0) goto done;
    if (!greedy) {
        size_t shape[1] = {rows};
        /* one u per row, in row order */
        if ((st = mha_rand(&uniforms, 1, shape)) != MHA_OK) goto fail;
        if (!(cand = mha_alloc(cand_bytes))) {
            st = mha_fail(MHA_E_NOMEM, "sample: out of memory allocating %zu candidates", V);
            goto fail;
        }
    }
    const float *src = mha_f32(&x);
    float *index = mha_f32(out);
    for (size_t r = 0; r < rows; r++) {
        size_t best = 0;
        if ((st = argmax_row(&best, src + r * V, V, r)) != MHA_OK) goto fail;
        if (!greedy && src[r * V + best] == INFINITY) {
            st = mha_fail(MHA_E_ARG, "sample: row %zu of logits holds +inf at index %zu: its probabilities are "
                          "undefined (temperature 0 takes the argmax)", r + 1, best + 1);
            goto fail;
        }
        index[r] = (float)(greedy ? best : draw_row(src + r * V, V, opt, best, cand, mha_f32(&uniforms)[r]));
    }
    goto done;
fail:
    mha_release(out);
done:
    if (cand) mha_free(cand, cand_bytes);
    mha_release(&uniforms);
    mha_release(&x);
    return st;
}
