/* core/kernels/rows.c - the kernels that go along rows (GELU and its derivative, layer norm's rows,
 * column sums, row dot products, the logits' normaliser, the largest magnitude): their references,
 * and the calls that run the set's fast ones (rows_simd.c), split over threads where it pays. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_isa.h"

/* ---- GELU in float: the coefficients, the references, then the dispatch ---- */

/* Every operation below is one float rounding, as rows_simd.c's (no FMA contraction), so that every
 * set gives these bits; the coefficients come from tests/fixtures/gen/gen_erf.py, which prints each
 * fit's largest error: gelu within 8.1e-7 relative of float64's, gelu' within 2e-7 absolute. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

/* near: 2·Phi(x) = 1 + x·P(t) and gelu'(x) = 0.5 + x·R(t); far: exp(z²)·erfc(z) in u */
const float mha_gelu_near_phi[GELU_NEAR_DEG + 1] = {
    4.98610643e-06, -2.52106238e-05, 0.000104230014, -0.000434016139,
    0.00163602224, -0.00545934448, 0.0160429161, -0.041142039,
    0.0919444934, -0.185664967, 0.455426335,
};
const float mha_gelu_near_grad[GELU_NEAR_DEG + 1] = {
    4.56987873e-05, -0.000206819372, 0.000731758366, -0.00262914062,
    0.00839803368, -0.0229459368, 0.0529228635, -0.100395054,
    0.152406827, -0.187441051, 0.269761384,
};
const float mha_gelu_far_erfcx[GELU_FAR_DEG + 1] = {
    -7.99129703e-06, -2.27285145e-05, 2.36555607e-05, 0.000170225641,
    4.47606544e-05, -0.000980388722, -0.000847330317, 0.006997169,
    0.00373290689, -0.0789785609, 0.241658196, -0.427185833,
    0.255395681,
};

/* c (deg + 1 coefficients, highest power first) at t, by Horner's rule */
static float horner_ref(const float *c, int deg, float t) {
    float p = c[0];
    for (int i = 1; i <= deg; i++) p = p * t + c[i];
    return p;
}

/* The near polynomials' variable, t = x²·(2/9) - 1 in [-1, 1] for |x| <= 3. */
static float near_t_ref(float x) { return x * x * GELU_NEAR_SCALE - 1.0f; }

/* exp(-(hi + lo)) for 0 <= hi + lo, lo a small correction to hi: n = round(-(hi + lo)/ln 2) and
 * r = -(hi + lo) - n·ln 2 with lo taken in r (where it counts, not lost in hi + lo), then Cephes'
 * polynomial of the softmax's exp, times 2^n; 0 past 87.3, where 2^n would leave the normal
 * floats. */
static float exp_neg_ref(float hi, float lo) {
    const float s = hi + lo;
    if (!(s <= -EXP_MIN)) return 0.0f;
    const float n = (s * -EXP_LOG2E + GELU_ROUND) - GELU_ROUND;
    float r = ((-hi - n * EXP_LN2_HI) - lo) - n * EXP_LN2_LO;
    float p = EXP_P[0];
    for (int i = 1; i < 6; i++) p = p * r + EXP_P[i];
    p = p * (r * r) + (r + 1.0f);
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n;
}

/* x·x/2 as hi + lo: x's top 12 significant bits squared are exact in hi, the rest in lo. Then
 * exp(-x²/2) keeps its relative accuracy out to |x| = 14, where x² alone would lose 1e-5. */
static float exp_neg_half_square_ref(float a) {
    uint32_t bits;
    memcpy(&bits, &a, sizeof bits);
    bits &= GELU_SPLIT_MASK;
    float ah;
    memcpy(&ah, &bits, sizeof ah);
    const float al = a - ah;
    return exp_neg_ref(ah * ah * 0.5f, ah * al + al * al * 0.5f);
}

/* far: Phi(x) from erfc(z) = exp(-z²)·erfcx(z), z = |x|/√2, |x| taken to at most 14, NaN too
 * (exp_neg_ref gives 0 from |x| = 13.2 on); *gauss = exp(-x²/2) for phi. */
static float far_phi_ref(float x, float *gauss) {
    float a = fabsf(x);
    if (!(a < GELU_A_MAX)) a = GELU_A_MAX;
    *gauss = exp_neg_half_square_ref(a);
    const float z = a * GELU_INV_SQRT2;
    const float half = *gauss * horner_ref(mha_gelu_far_erfcx, GELU_FAR_DEG, (z - 2.0f) / (z + 2.0f)) * 0.5f;
    return x < 0.0f ? half : 1.0f - half;
}

static bool gelu_near(float x) { return x >= GELU_NEAR_LO && x <= GELU_NEAR_HI; }

float mha_gelu_ref(float x) {
    if (gelu_near(x)) return x * 0.5f * (1.0f + x * horner_ref(mha_gelu_near_phi, GELU_NEAR_DEG, near_t_ref(x)));
    float gauss;
    return x * far_phi_ref(x, &gauss);
}

float mha_gelu_grad_ref(float g, float x) {
    if (gelu_near(x)) return g * (0.5f + x * horner_ref(mha_gelu_near_grad, GELU_NEAR_DEG, near_t_ref(x)));
    float gauss;
    const float phi = far_phi_ref(x, &gauss);
    return g * (phi + x * (gauss * GELU_INV_SQRT_2PI));
}

/* The exponential in double of a row of logits' normaliser (mha_exp_sum, kernels.h). */
double mha_exp_double_ref(double d) {
    if (!(d >= EXPD_MIN)) return d != d ? d : 0.0;   /* NaN stays NaN; far below: 0 */
    const double n = (d * EXPD_LOG2E + EXPD_ROUND) - EXPD_ROUND;
    const double r = (d - n * EXPD_LN2_HI) - n * EXPD_LN2_LO;
    double p = EXPD_TAYLOR[0];
    for (int i = 1; i <= EXPD_DEG; i++) p = p * r + EXPD_TAYLOR[i];
    const uint64_t bits = (uint64_t)((int64_t)n + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#if !defined(__clang__)
#pragma GCC pop_options
#endif

/* GELU over many elements splits over threads in runs of GELU_RUN (each element is its own, so
 * any split gives the same bits), a few runs a thread so that a worker woken late still takes a
 * share. An element costs about what GELU_FLOPS of a product do (0.6 ns of this Xeon's core on the
 * near path, 1.5 ns on the far), which mha_kernels_parts weighs against handing a part over. */
enum { GELU_RUN = 4096, GELU_FLOPS = 150, GELU_PARTS_PER_THREAD = 4 };

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

/* The terms a row's sums add up: x, (x - mean)², ĝ = dy∘w, ĝ∘x̂ (layer norm's), exp(x - mean)
 * (mha_exp_sum's, mean the row's max). */
typedef enum { LN_X, LN_DEV2, LN_G, LN_GX, ROW_EXP } ln_term_kind;

static double ln_term(ln_term_kind kind, size_t i, const float *x, const float *dy, const float *w, double mean,
                      double rstd) {
    const double d = (double)x[i] - mean;
    switch (kind) {
    case LN_X: return x[i];
    case LN_DEV2: return d * d;
    case LN_G: return w ? (double)dy[i] * w[i] : dy[i];
    case ROW_EXP: return mha_exp_double_ref(d);
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

void mha_layer_norm_rows_backward_ref(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                      const float *x, const float *w, size_t rows, size_t n, float eps) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *gr = dy + r * n;
        double m = given ? mean[r] : 0.0, rs = given ? rstd[r] : 0.0;
        if (!given) {
            ln_stats_ref(&m, &rs, xr, n, eps);
            mean[r] = m, rstd[r] = rs;
        }
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

void mha_layer_norm_rows_backward(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                  const float *x, const float *w, size_t rows, size_t n, float eps) {
    mha_kernels_current()->layer_norm_rows_backward(dx, mean, rstd, given, dy, x, w, rows, n, eps);
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

void mha_row_dots_ref(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n) {
    for (size_t r = 0; r < rows; r++) {
        double s = 0.0;
        for (size_t j = 0; j < n; j++) s += (double)a[r * lda + j] * b[r * ldb + j];
        dot[r] = (float)s;
    }
}

void mha_row_dots(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n) {
    mha_kernels_current()->row_dots(dot, a, lda, b, ldb, rows, n);
}

/* ---- the largest magnitude: the reference, then the dispatch ---- */

uint32_t mha_abs_max_bits_ref(const float *x, size_t n) {
    uint32_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        u &= 0x7fffffffu;
        best = u > best ? u : best;
    }
    return best;
}

uint32_t mha_abs_max_bits(const float *x, size_t n) { return mha_kernels_current()->abs_max_bits(x, n); }

double mha_exp_sum_ref(const float *x, size_t n, double max) { return ln_sum_ref(ROW_EXP, n, x, NULL, NULL, max, 0.0); }

double mha_exp_sum(const float *x, size_t n, double max) { return mha_kernels_current()->exp_sum(x, n, max); }
