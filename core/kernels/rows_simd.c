/* core/kernels/rows_simd.c - rows.c's kernels (GELU, layer norm, sums along rows and columns, the
 * largest magnitude) written once over W lanes and compiled once per set, each bit for bit its
 * reference in rows.c. */
#include "kernels/kernels_simd.h"

#if defined(MHA_SIMD_SKIP)
typedef int rows_simd_not_on_this_cpu;
#else

/* Each operation from here to the pop at the end is rounded as written (no FMA contraction), so
 * that every set gives the bits of the references in rows.c. */
#if defined(__clang__)
#define NO_CONTRACT _Pragma("STDC FP_CONTRACT OFF") /* first in a function's body */
#else
#define NO_CONTRACT
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

/* ---------------------------------------------------------------------------------------------
 * GELU and its derivative in float, W lanes at a time, the operations of rows.c's references
 * ------------------------------------------------------------------------------------------- */

/* c at t as rows.c's horner_ref, lane by lane (unrolled: the coefficients' loads go ahead) */
INLINE vf horner(const float *c, int deg, vf t) {
    NO_CONTRACT
    vf p = splat(c[0]);
#pragma GCC unroll 16
    for (int i = 1; i <= deg; i++) p = p * t + c[i];
    return p;
}

INLINE vf near_t(vf x) { NO_CONTRACT return x * x * GELU_NEAR_SCALE - 1.0f; }

/* exp(-(hi + lo)) as rows.c's exp_neg_ref, 0 past -EXP_MIN (s is never NaN: the callers take
 * |x| to at most GELU_A_MAX) */
INLINE vf exp_neg(vf hi, vf lo) {
    NO_CONTRACT
    vf s = hi + lo;
    vf sn = blend(s <= -EXP_MIN, s, splat(-EXP_MIN));   /* so n >= -126 in every lane */
    vf n = (sn * -EXP_LOG2E + GELU_ROUND) - GELU_ROUND;
    vf r = ((-hi - n * EXP_LN2_HI) - lo) - n * EXP_LN2_LO;
    vf p = splat(EXP_P[0]);
    for (int i = 1; i < 6; i++) p = p * r + EXP_P[i];
    p = p * (r * r) + (r + 1.0f);
    vi bits = (__builtin_convertvector(n, vi) + 127) << 23;   /* past -EXP_MIN: dropped */
    return (vf)((s <= -EXP_MIN) & (vi)(p * (vf)bits));
}

/* Phi(x) of the far path for every lane (rows.c's far_phi_ref); *gauss = exp(-x²/2). */
INLINE vf far_phi(vf x, vf *gauss) {
    NO_CONTRACT
    vf a = (vf)((vi)x & INT32_MAX);
    a = blend(a < GELU_A_MAX, a, splat(GELU_A_MAX));
    vf ah = (vf)((vi)a & (int32_t)GELU_SPLIT_MASK), al = a - ah;
    *gauss = exp_neg(ah * ah * 0.5f, ah * al + al * al * 0.5f);
    vf z = a * GELU_INV_SQRT2;
    vf half = *gauss * horner(mha_gelu_far_erfcx, GELU_FAR_DEG, (z - 2.0f) / (z + 2.0f)) * 0.5f;
    return blend(x < 0.0f, half, 1.0f - half);
}

INLINE vi near_lanes(vf x) { return (x >= GELU_NEAR_LO) & (x <= GELU_NEAR_HI); }   /* NaN: not */

/* The far path costs about four times the near one, and a vector takes it when any of its W lanes
 * lies outside the near range: at a pre-activation's usual spread (sd 1, 7% of x below -1.5) two
 * vectors in three. So a block of FAR_BLOCK elements goes in two passes: the near values for every
 * lane, the far lanes' x and g gathered on the way; then the far path on W gathered lanes at a
 * time, written over their near values. A vector with more than half its lanes far takes the far
 * path where it stands. Each lane goes through the same operations either way, so the bits are
 * the same; the inputs are gathered before the block's outputs overwrite them, so y may be x. */
enum { FAR_BLOCK = 512 };

typedef struct far_lanes {
    size_t n;
    uint32_t at[FAR_BLOCK];   /* the lanes' offsets from the block's start */
    float x[FAR_BLOCK], g[FAR_BLOCK];
} far_lanes;

/* Whether to gather the lanes `bits` of a vector rather than take its far path where it stands */
INLINE bool far_gathered(unsigned bits) { return (unsigned)__builtin_popcount(bits) <= W / 2; }

/* Appends the lanes `bits` of the vector at offset i: their offsets, x and g. */
INLINE void far_gather(far_lanes *f, unsigned bits, size_t i, vf xv, vf gv) {
    for (; bits; bits &= bits - 1) {
        const unsigned l = (unsigned)__builtin_ctz(bits);
        f->at[f->n] = (uint32_t)(i + l), f->x[f->n] = xv[l], f->g[f->n] = gv[l], f->n++;
    }
}

/* Gathered lanes j.. of v, W of them or the rest (then lane j's value in the lanes left over) */
INLINE vf far_load(const float *v, size_t j, size_t n) { return load_part(v + j, n - j, v[j]); }

/* The far path's gelu(x), or gelu'(x) when grad. */
INLINE vf far_value(vf xv, bool grad) {
    NO_CONTRACT
    vf gauss, phi = far_phi(xv, &gauss);
    return grad ? phi + xv * (gauss * GELU_INV_SQRT_2PI) : xv * phi;
}

/* The vector at offset i of the block at b: gelu(x), or g·gelu'(x) when grad; its far lanes
 * gathered into f or done in place. */
INLINE void gelu_vector(float *out, const float *g, const float *x, size_t b, size_t i, bool grad, far_lanes *f) {
    NO_CONTRACT
    const vf xv = load(x + i), p = horner(grad ? mha_gelu_near_grad : mha_gelu_near_phi, GELU_NEAR_DEG, near_t(xv));
    vf v = grad ? 0.5f + xv * p : xv * 0.5f * (1.0f + xv * p);
    const vf gv = grad ? load(g + i) : v;
    const vi near = near_lanes(xv);
    const unsigned far = lane_bits(~near);
    if (far && far_gathered(far)) far_gather(f, far, i - b, xv, gv);
    else if (far) v = blend(near, v, far_value(xv, grad));
    store(out + i, grad ? gv * v : v);
}

/* gelu (grad false) or gelu_grad over n floats: blocks of FAR_BLOCK, the ragged end by the
 * references. */
INLINE void gelu_rows(float *out, const float *g, const float *x, size_t n, bool grad) {
    NO_CONTRACT
    far_lanes f;
    for (size_t b = 0; b + W <= n; b += FAR_BLOCK) {
        const size_t end = b + (n - b < FAR_BLOCK ? (n - b) / W * W : FAR_BLOCK);
        f.n = 0;
        for (size_t i = b; i < end; i += W) gelu_vector(out, g, x, b, i, grad, &f);
        for (size_t j = 0; j < f.n; j += W) {
            vf v = far_value(far_load(f.x, j, f.n), grad);
            if (grad) v = far_load(f.g, j, f.n) * v;
            for (size_t l = 0; l < W && j + l < f.n; l++) out[b + f.at[j + l]] = v[l];
        }
    }
    for (size_t i = n / W * W; i < n; i++) out[i] = grad ? mha_gelu_grad_ref(g[i], x[i]) : mha_gelu_ref(x[i]);
}

/* y = gelu(x) for n floats, each mha_gelu_ref's: the near polynomial, the far path where a lane
 * lies past it. */
void SET_FN(gelu)(float *y, const float *x, size_t n) { gelu_rows(y, NULL, x, n, false); }

/* dx = g·gelu'(x) for n floats, each mha_gelu_grad_ref's, as gelu; dx may be g or x. */
void SET_FN(gelu_grad)(float *dx, const float *g, const float *x, size_t n) { gelu_rows(dx, g, x, n, true); }

/* ---------------------------------------------------------------------------------------------
 * Layer norm's rows (kernels.h): in double, W/2 elements a step. Each operation is rounded as
 * written (as the GELU above), and a row's sums run over MHA_LN_LANES
 * lanes whatever W is, so every set gives the bits of the references in kernels.c.
 * ------------------------------------------------------------------------------------------- */

/* Half a vector of floats widened to doubles fills one register (vd, W doubles, takes two): LN
 * steps WH elements at a time, a row's sum in LN_VECS such registers. */
enum { WH = W / 2, LN_VECS = MHA_LN_LANES / WH };
typedef double vh __attribute__((vector_size(WH * sizeof(double))));
typedef float vfh __attribute__((vector_size(WH * sizeof(float))));

/* WH floats at p widened to doubles, and back (rounded to nearest); one instruction where
 * GCC's __builtin_convertvector takes the register in halves */
#if defined(MHA_SIMD_AVX512)
INLINE vh widen(const float *p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
INLINE void narrow(float *p, vh v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
#elif defined(MHA_SIMD_AVX2)
INLINE vh widen(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
INLINE void narrow(float *p, vh v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
#else
INLINE vh widen(const float *p) {
    vfh v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, vh);
}
INLINE void narrow(float *p, vh v) {
    vfh f = __builtin_convertvector(v, vfh);
    memcpy(p, &f, sizeof f);
}
#endif

/* The sum of the lanes, halved as the references do (lane j + lane j + h): while h spans whole
 * registers, register k + register k + h/WH, then the lanes of the one left. */
INLINE double ln_total(const vh acc[LN_VECS]) {
    NO_CONTRACT
    vh v[LN_VECS];
    memcpy(v, acc, sizeof v);
    for (size_t half = LN_VECS / 2; half >= 1; half /= 2)
        for (size_t k = 0; k < half; k++) v[k] += v[k + half];
    double lane[WH];
    memcpy(lane, &v[0], sizeof lane);
    for (size_t h = WH / 2; h >= 1; h /= 2)
        for (size_t j = 0; j < h; j++) lane[j] += lane[j + h];
    return lane[0];
}

/* Rows whose stats are summed side by side (ln_stats_rows): as many as keep every row's sums in
 * registers (4 on AVX-512, a row's sums 2 registers; 2 on AVX2, 4 each; 1 on the portable set),
 * so that each chain of additions waits for its own row's only. */
enum { LN_ROWS = LN_VECS <= 2 ? 4 : LN_VECS <= 4 ? 2 : 1 };

/* Each of R <= LN_ROWS rows' (n floats apart) mean and rstd = 1/sqrt(biased variance + eps), two
 * passes over its n floats: every row's own operations, the rows side by side. */
INLINE void ln_stats_rows(double *mean, double *rstd, const float *x, size_t n, float eps, size_t R) {
    NO_CONTRACT
    const size_t whole = n - n % MHA_LN_LANES;
    const double count = (double)(n ? n : 1);
    vh acc[LN_ROWS][LN_VECS];
    double m[LN_ROWS];
#pragma GCC unroll 4
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
        for (size_t k = 0; k < LN_VECS; k++) acc[r][k] = (vh){0};
    for (size_t i = 0; i < whole; i += MHA_LN_LANES)
#pragma GCC unroll 4
        for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
            for (size_t k = 0; k < LN_VECS; k++) acc[r][k] += widen(x + r * n + i + k * WH);
#pragma GCC unroll 4
    for (size_t r = 0; r < R; r++) {
        double s = ln_total(acc[r]);
        for (size_t i = whole; i < n; i++) s += x[r * n + i];
        m[r] = s / count;
        for (size_t k = 0; k < LN_VECS; k++) acc[r][k] = (vh){0};
    }
    for (size_t i = 0; i < whole; i += MHA_LN_LANES)
#pragma GCC unroll 4
        for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
            for (size_t k = 0; k < LN_VECS; k++) {
                vh d = widen(x + r * n + i + k * WH) - m[r];
                acc[r][k] += d * d;
            }
#pragma GCC unroll 4
    for (size_t r = 0; r < R; r++) {
        double v = ln_total(acc[r]);
        for (size_t i = whole; i < n; i++) {
            double d = (double)x[r * n + i] - m[r];
            v += d * d;
        }
        mean[r] = m[r];
        rstd[r] = 1.0 / sqrt(v / count + (double)eps);
    }
}

/* One row's mean and rstd. */
INLINE void ln_stats(double *mean, double *rstd, const float *x, size_t n, float eps) {
    ln_stats_rows(mean, rstd, x, n, eps, 1);
}

void SET_FN(layer_norm_rows)(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                            size_t rows, size_t n, float eps) {
    NO_CONTRACT
    for (size_t r0 = 0; r0 < rows; r0 += LN_ROWS) {
        const size_t R = rows - r0 < LN_ROWS ? rows - r0 : LN_ROWS;
        double m[LN_ROWS], rs[LN_ROWS];
        if (R == LN_ROWS) ln_stats_rows(m, rs, x + r0 * n, n, eps, LN_ROWS);
        else
            for (size_t r = 0; r < R; r++) ln_stats(&m[r], &rs[r], x + (r0 + r) * n, n, eps);
        for (size_t r = 0; r < R; r++) {
            const float *xr = x + (r0 + r) * n;
            float *yr = y + (r0 + r) * n;
            if (mean) mean[r0 + r] = m[r], rstd[r0 + r] = rs[r];
            size_t i = 0;
            for (; i + WH <= n; i += WH) {
                vh v = (widen(xr + i) - m[r]) * rs[r];
                if (w) v *= widen(w + i);
                if (b) v += widen(b + i);
                narrow(yr + i, v);
            }
            for (; i < n; i++) {
                double v = ((double)xr[i] - m[r]) * rs[r];
                if (w) v *= w[i];
                if (b) v += b[i];
                yr[i] = (float)v;
            }
        }
    }
}

/* ĝ = dy∘w, W elements (w NULL: dy) */
INLINE vh ln_g(const float *dy, const float *w, size_t i) { return w ? widen(dy + i) * widen(w + i) : widen(dy + i); }

/* Rows whose gradient sums run side by side (ln_grad_means): two sums a row, in registers on
 * AVX-512; one row at a time elsewhere. */
enum { LN_BACK_ROWS = LN_VECS <= 2 ? 4 : 1 };

/* For R <= LN_BACK_ROWS rows (n floats apart) of dy and x with their mean m and rstd rs: the means
 * over the row of ĝ and of ĝ∘x̂ (x̂ = (x - m)·rs), every row's own operations, side by side. */
INLINE void ln_grad_means(double *mean_g, double *mean_gx, const float *dy, const float *x, const float *w,
                          const double *m, const double *rs, size_t n, size_t R) {
    NO_CONTRACT
    const size_t whole = n - n % MHA_LN_LANES;
    vh acc_g[LN_BACK_ROWS][LN_VECS], acc_gx[LN_BACK_ROWS][LN_VECS];   /* Σ ĝ, Σ ĝ∘x̂ */
#pragma GCC unroll 4
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
        for (size_t k = 0; k < LN_VECS; k++) acc_g[r][k] = (vh){0}, acc_gx[r][k] = (vh){0};
    for (size_t i = 0; i < whole; i += MHA_LN_LANES)
#pragma GCC unroll 4
        for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
            for (size_t k = 0; k < LN_VECS; k++) {
                const size_t at = r * n + i + k * WH;
                vh gh = ln_g(dy + r * n, w, i + k * WH);
                acc_g[r][k] += gh;
                acc_gx[r][k] += gh * ((widen(x + at) - m[r]) * rs[r]);
            }
#pragma GCC unroll 4
    for (size_t r = 0; r < R; r++) {
        double sg = ln_total(acc_g[r]), sgx = ln_total(acc_gx[r]);
        for (size_t i = whole; i < n; i++) {
            double gh = w ? (double)dy[r * n + i] * w[i] : dy[r * n + i];
            sg += gh;
            sgx += gh * (((double)x[r * n + i] - m[r]) * rs[r]);
        }
        mean_g[r] = sg / (double)n, mean_gx[r] = sgx / (double)n;
    }
}

void SET_FN(layer_norm_rows_backward)(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                     const float *x, const float *w, size_t rows, size_t n, float eps) {
    NO_CONTRACT
    for (size_t r0 = 0; r0 < rows; r0 += LN_BACK_ROWS) {
        const size_t R = rows - r0 < LN_BACK_ROWS ? rows - r0 : LN_BACK_ROWS;
        double m[LN_BACK_ROWS], rs[LN_BACK_ROWS], mean_g[LN_BACK_ROWS], mean_gx[LN_BACK_ROWS];
        for (size_t r = 0; r < R; r++) {
            if (!given) ln_stats(&mean[r0 + r], &rstd[r0 + r], x + (r0 + r) * n, n, eps);
            m[r] = mean[r0 + r], rs[r] = rstd[r0 + r];
        }
        if (R == LN_BACK_ROWS) ln_grad_means(mean_g, mean_gx, dy + r0 * n, x + r0 * n, w, m, rs, n, LN_BACK_ROWS);
        else
            for (size_t r = 0; r < R; r++)
                ln_grad_means(&mean_g[r], &mean_gx[r], dy + (r0 + r) * n, x + (r0 + r) * n, w, &m[r], &rs[r], n, 1);
        for (size_t r = 0; r < R; r++) {
            const float *xr = x + (r0 + r) * n, *gr = dy + (r0 + r) * n;
            float *dxr = dx + (r0 + r) * n;
            size_t i = 0;
            for (; i + WH <= n; i += WH) {
                vh xhat = (widen(xr + i) - m[r]) * rs[r];
                narrow(dxr + i, (ln_g(gr, w, i) - mean_g[r] - xhat * mean_gx[r]) * rs[r]);
            }
            for (; i < n; i++) {
                const double xhat = ((double)xr[i] - m[r]) * rs[r], gh = w ? (double)gr[i] * w[i] : gr[i];
                dxr[i] = (float)((gh - mean_g[r] - xhat * mean_gx[r]) * rs[r]);
            }
        }
    }
}

/* WH columns at a time down every row: each column's two sums a plain loop over the rows. */
void SET_FN(layer_norm_columns)(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                               const double *mean, const double *rstd, size_t rows, size_t cols) {
    NO_CONTRACT
    size_t i = 0;
    for (; i + WH <= cols; i += WH) {
        vh sw = (vh){0}, sb = (vh){0};
        for (size_t r = 0; r < rows; r++) {
            vh g = widen(dy + r * ld + i);
            sw += g * ((widen(x + r * ld + i) - mean[r]) * rstd[r]);
            sb += g;
        }
        memcpy(acc_w + i, &sw, sizeof sw);
        memcpy(acc_b + i, &sb, sizeof sb);
    }
    if (i < cols) mha_layer_norm_columns_ref(acc_w + i, acc_b + i, dy + i, x + i, ld, mean, rstd, rows, cols - i);
}

/* WH columns at a time down every row, as layer_norm_columns. */
void SET_FN(column_sums)(double *acc, const float *g, size_t ld, size_t rows, size_t cols) {
    NO_CONTRACT
    size_t j = 0;
    for (; j + 2 * WH <= cols; j += 2 * WH) {   /* two chains of additions at once */
        vh s0 = (vh){0}, s1 = (vh){0};
        for (size_t r = 0; r < rows; r++) s0 += widen(g + r * ld + j), s1 += widen(g + r * ld + j + WH);
        memcpy(acc + j, &s0, sizeof s0);
        memcpy(acc + j + WH, &s1, sizeof s1);
    }
    if (j < cols) mha_column_sums_ref(acc + j, g + j, ld, rows, cols - j);
}

/* ---------------------------------------------------------------------------------------------
 * The softmax backward's rowsum(P∘dP) (kernels.h mha_row_dots): WH rows side by side, one double
 * lane a row, so that each row's sum runs over its keys in order, as the reference's
 * ------------------------------------------------------------------------------------------- */

/* WH x WH floats (WH rows of WH) <- its transpose: AVX-512's 8 x 8 in AVX halves
 * (kernels_simd.h), AVX2's 4 x 4 in SSE, the portable set's 2 x 2 by hand. */
#if defined(MHA_SIMD_AVX512)
INLINE void transpose_half(vfh m[WH]) {
    __m256 r[8];
    memcpy(r, m, sizeof r);
    transpose_8x8(r);
    memcpy(m, r, sizeof r);
}
#elif defined(MHA_SIMD_AVX2)
INLINE void transpose_half(vfh m[WH]) {
    __m128 r0 = m[0], r1 = m[1], r2 = m[2], r3 = m[3];
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    m[0] = r0, m[1] = r1, m[2] = r2, m[3] = r3;
}
#else
INLINE void transpose_half(vfh m[WH]) {
    const float t = m[0][1];
    m[0][1] = m[1][0], m[1][0] = t;
}
#endif

/* WH keys at a time from each of WH rows, transposed so that a vector holds one key of every row,
 * widened and added in key order (each product of two floats exact in double); the rows past the
 * last WH by the reference. */
void SET_FN(row_dots)(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n) {
    size_t r0 = 0;
    for (; r0 + WH <= rows; r0 += WH) {
        vh acc = (vh){0};
        size_t j = 0;
        for (; j + WH <= n; j += WH) {
            vfh x[WH], y[WH];
#pragma GCC unroll 8
            for (size_t r = 0; r < WH; r++) {
                memcpy(&x[r], a + (r0 + r) * lda + j, sizeof x[r]);
                memcpy(&y[r], b + (r0 + r) * ldb + j, sizeof y[r]);
            }
            transpose_half(x), transpose_half(y);
#pragma GCC unroll 8
            for (size_t k = 0; k < WH; k++)
                acc += __builtin_convertvector(x[k], vh) * __builtin_convertvector(y[k], vh);
        }
        for (; j < n; j++) {
            vh xk = (vh){0}, yk = (vh){0};
            for (size_t r = 0; r < WH; r++) xk[r] = a[(r0 + r) * lda + j], yk[r] = b[(r0 + r) * ldb + j];
            acc += xk * yk;
        }
        for (size_t r = 0; r < WH; r++) dot[r0 + r] = (float)acc[r];
    }
    if (r0 < rows) mha_row_dots_ref(dot + r0, a + r0 * lda, lda, b + r0 * ldb, ldb, rows - r0, n);
}

/* ---------------------------------------------------------------------------------------------
 * The normaliser of a row of logits (kernels.h mha_exp_sum): rows.c's mha_exp_double_ref lane by
 * lane, the terms summed as layer norm's (ln_total).
 * ------------------------------------------------------------------------------------------- */

typedef int64_t vhl __attribute__((vector_size(WH * sizeof(int64_t)))); /* vh's lanes as integers */

INLINE vh blend_h(vhl mask, vh a, vh b) { return (vh)((mask & (vhl)a) | (~mask & (vhl)b)); }

/* mha_exp_double_ref lane by lane; 2^n from the bits of t = d·log2e + 1.5·2^52 (n: the low bits) */
INLINE vh exp_double(vh d) {
    NO_CONTRACT
    const vhl in = d >= EXPD_MIN;   /* NaN: not */
    const vh dc = blend_h(in, d, (vh){0});
    const vh t = dc * EXPD_LOG2E + EXPD_ROUND, n = t - EXPD_ROUND;
    const vh r = (dc - n * EXPD_LN2_HI) - n * EXPD_LN2_LO;
    vh p = (vh){0} + EXPD_TAYLOR[0];
#pragma GCC unroll 16
    for (int i = 1; i <= EXPD_DEG; i++) p = p * r + EXPD_TAYLOR[i];
    const vh scale = (vh)(((vhl)t + 1023) << 52);
    return blend_h(in, p * scale, blend_h(d != d, d, (vh){0}));
}

double SET_FN(exp_sum)(const float *x, size_t n, double max) {
    NO_CONTRACT
    const size_t whole = n - n % MHA_LN_LANES;
    vh acc[LN_VECS];
    for (size_t k = 0; k < LN_VECS; k++) acc[k] = (vh){0};
    for (size_t i = 0; i < whole; i += MHA_LN_LANES)
#pragma GCC unroll 8
        for (size_t k = 0; k < LN_VECS; k++) acc[k] += exp_double(widen(x + i + k * WH) - max);
    double s = ln_total(acc);
    for (size_t i = whole; i < n; i++) s += mha_exp_double_ref((double)x[i] - max);
    return s;
}

/* ---------------------------------------------------------------------------------------------
 * The largest magnitude (kernels.h mha_abs_max_bits): the bits of |x| as integers, which order as
 * the magnitudes do (NaN above inf), ABS_VECS vectors of maxima side by side so that each compare
 * and blend waits for its own; a maximum, so any order gives the reference's answer.
 * ------------------------------------------------------------------------------------------- */

enum { ABS_VECS = 4 };

INLINE vi abs_bits(const float *p) { return (vi)load(p) & INT32_MAX; }
/* the larger of each lane's two, both below 2^31: a signed comparison orders them */
INLINE vi max_bits(vi a, vi b) {
    const vi more = a > b;
    return (more & a) | (~more & b);
}

uint32_t SET_FN(abs_max_bits)(const float *x, size_t n) {
    vi top[ABS_VECS];
    for (int r = 0; r < ABS_VECS; r++) top[r] = (vi){0};
    size_t i = 0;
    for (; i + ABS_VECS * W <= n; i += ABS_VECS * W)
#pragma GCC unroll 4
        for (int r = 0; r < ABS_VECS; r++) top[r] = max_bits(abs_bits(x + i + r * W), top[r]);
    for (; i + W <= n; i += W) top[0] = max_bits(abs_bits(x + i), top[0]);
    for (int r = 1; r < ABS_VECS; r++) top[0] = max_bits(top[r], top[0]);
    uint32_t best = mha_abs_max_bits_ref(x + i, n - i);
    for (int l = 0; l < W; l++) best = (uint32_t)top[0][l] > best ? (uint32_t)top[0][l] : best;
    return best;
}

#if !defined(__clang__)
#pragma GCC pop_options
#endif

#if defined(SIMD_TARGET) && defined(__clang__)
#pragma clang attribute pop
#endif

#endif
