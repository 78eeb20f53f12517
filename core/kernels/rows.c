/* core/kernels/rows.c - the kernels that go along rows of elements (GELU and its derivative, layer
 * norm's rows and column sums): their plain references, and the calls that run the set's fast
 * ones (rows_simd.c), split over threads where it pays. */
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/kernels_isa.h"

float mha_gelu_ref(float x) { return (float)(0.5 * (double)x * erfc(-(double)x * 0.70710678118654752440)); }

float mha_gelu_grad_ref(float g, float x) {
    double dydx = 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * (double)x * x) / sqrt(2.0 * M_PI);
    return (float)(g * dydx);
}

/* GELU over many elements splits over threads in runs of GELU_RUN (each element is its own, so
 * any split gives the same bits), a few runs a thread so that a worker woken late still takes a
 * share. An element costs about what GELU_FLOPS of a product do (3 ns of this Xeon's core), which
 * mha_kernels_parts weighs against handing a part over. */
enum { GELU_RUN = 4096, GELU_FLOPS = 300, GELU_PARTS_PER_THREAD = 4 };

typedef struct gelu_job {
    float *out;            /* y, or dx */
    const float *g, *x;    /* g NULL: the forward */
    size_t n, run;         /* elements; run: elements a part, a multiple of every vector width */
} gelu_job;

static mha_status gelu_part(void *ctx, size_t part, size_t nparts) {
    const gelu_job *job = ctx;
    (void)nparts;
    const size_t from = part * job->run, n = min_size(job->run, job->n - from);
    if (job->g) mha_kernels_current()->gelu_grad(job->out + from, job->g + from, job->x + from, n);
    else mha_kernels_current()->gelu(job->out + from, job->x + from, n);
    return MHA_OK;
}

static void gelu_split(float *out, const float *g, const float *x, size_t n) {
    const size_t runs = round_up(n, GELU_RUN) / GELU_RUN;
    const size_t threads = mha_kernels_parts(runs, (double)n * GELU_FLOPS);
    gelu_job job = {out, g, x, n, n};
    if (threads <= 1) {
        gelu_part(&job, 0, 1);   /* one part: every element */
        return;
    }
    const size_t parts = min_size(runs, threads * GELU_PARTS_PER_THREAD);
    job.run = round_up(round_up(n, parts) / parts, 64);   /* a multiple of 64 */
    mha_run_parts(gelu_part, &job, (n + job.run - 1) / job.run);   /* no part fails */
}

void mha_gelu(float *y, const float *x, size_t n) { gelu_split(y, NULL, x, n); }

void mha_gelu_grad(float *dx, const float *g, const float *x, size_t n) { gelu_split(dx, g, x, n); }

/* ---- layer norm's rows: the references, then the dispatch ---- */

/* The terms a row's sums add up: x, (x - mean)², ĝ = dy∘w, and ĝ∘x̂. */
typedef enum { LN_X, LN_DEV2, LN_G, LN_GX } ln_term_kind;

static double ln_term(ln_term_kind kind, size_t i, const float *x, const float *dy, const float *w, double mean,
                      double rstd) {
    const double d = (double)x[i] - mean;
    switch (kind) {
    case LN_X: return x[i];
    case LN_DEV2: return d * d;
    case LN_G: return w ? (double)dy[i] * w[i] : dy[i];
    default: return (w ? (double)dy[i] * w[i] : dy[i]) * (d * rstd);
    }
}

/* A row's sum of n terms in kernels.h's lane order. */
static double ln_sum_ref(ln_term_kind kind, size_t n, const float *x, const float *dy, const float *w, double mean,
                         double rstd) {
    double lane[MHA_LN_LANES] = {0};
    const size_t whole = n - n % MHA_LN_LANES;
    for (size_t i = 0; i < whole; i++) lane[i % MHA_LN_LANES] += ln_term(kind, i, x, dy, w, mean, rstd);
    for (size_t h = MHA_LN_LANES / 2; h >= 1; h /= 2)
        for (size_t j = 0; j < h; j++) lane[j] += lane[j + h];
    double s = lane[0];
    for (size_t i = whole; i < n; i++) s += ln_term(kind, i, x, dy, w, mean, rstd);
    return s;
}

static void ln_stats_ref(double *mean, double *rstd, const float *x, size_t n, float eps) {
    const double count = (double)(n ? n : 1);
    *mean = ln_sum_ref(LN_X, n, x, NULL, NULL, 0.0, 0.0) / count;
    *rstd = 1.0 / sqrt(ln_sum_ref(LN_DEV2, n, x, NULL, NULL, *mean, 0.0) / count + (double)eps);
}

void mha_layer_norm_rows_ref(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                             size_t rows, size_t n, float eps) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        double m, rs;
        ln_stats_ref(&m, &rs, xr, n, eps);
        if (mean) mean[r] = m, rstd[r] = rs;
        for (size_t i = 0; i < n; i++) {
            double v = ((double)xr[i] - m) * rs;
            if (w) v *= w[i];
            if (b) v += b[i];
            y[r * n + i] = (float)v;
        }
    }
}

void mha_layer_norm_rows_backward_ref(float *dx, double *mean, double *rstd, const float *dy, const float *x,
                                      const float *w, size_t rows, size_t n, float eps) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *gr = dy + r * n;
        double m, rs;
        ln_stats_ref(&m, &rs, xr, n, eps);
        mean[r] = m, rstd[r] = rs;
        const double mean_g = ln_sum_ref(LN_G, n, xr, gr, w, m, rs) / (double)n;
        const double mean_gx = ln_sum_ref(LN_GX, n, xr, gr, w, m, rs) / (double)n;
        for (size_t i = 0; i < n; i++) {
            const double xhat = ((double)xr[i] - m) * rs, gh = w ? (double)gr[i] * w[i] : gr[i];
            dx[r * n + i] = (float)((gh - mean_g - xhat * mean_gx) * rs);
        }
    }
}

void mha_layer_norm_columns_ref(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                                const double *mean, const double *rstd, size_t rows, size_t cols) {
    for (size_t i = 0; i < cols; i++) {
        double sw = 0.0, sb = 0.0;
        for (size_t r = 0; r < rows; r++) {
            const double g = dy[r * ld + i];
            sw += g * (((double)x[r * ld + i] - mean[r]) * rstd[r]);
            sb += g;
        }
        acc_w[i] = sw, acc_b[i] = sb;
    }
}

void mha_layer_norm_rows(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                         size_t rows, size_t n, float eps) {
    mha_kernels_current()->layer_norm_rows(y, mean, rstd, x, w, b, rows, n, eps);
}

void mha_layer_norm_rows_backward(float *dx, double *mean, double *rstd, const float *dy, const float *x,
                                  const float *w, size_t rows, size_t n, float eps) {
    mha_kernels_current()->layer_norm_rows_backward(dx, mean, rstd, dy, x, w, rows, n, eps);
}

void mha_layer_norm_columns(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                            const double *mean, const double *rstd, size_t rows, size_t cols) {
    mha_kernels_current()->layer_norm_columns(acc_w, acc_b, dy, x, ld, mean, rstd, rows, cols);
}

void mha_column_sums_ref(double *acc, const float *g, size_t ld, size_t rows, size_t cols) {
    for (size_t j = 0; j < cols; j++) {
        double s = 0.0;
        for (size_t r = 0; r < rows; r++) s += g[r * ld + j];
        acc[j] = s;
    }
}

void mha_column_sums(double *acc, const float *g, size_t ld, size_t rows, size_t cols) {
    mha_kernels_current()->column_sums(acc, g, ld, rows, cols);
}
