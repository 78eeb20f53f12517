/* core/kernels/rows_simd.c - the kernels that go along rows of elements: GELU and its derivative,
 * layer norm's rows and column sums, written once over W lanes (kernels_simd.h) and compiled once
 * per instruction set, each bit for bit its reference in kernels.c. */
#include "kernels/kernels_simd.h"

#if defined(MHA_SIMD_SKIP)
typedef int rows_simd_not_on_this_cpu;
#else

/* ---------------------------------------------------------------------------------------------
 * GELU and its derivative, in double over W lanes, each checked against the reference's rounding
 * ------------------------------------------------------------------------------------------- */

/* W doubles span two registers of the set; the helpers below are always inlined, so their
 * vector returns never cross a call (GCC's note on the ABI of such returns does not apply; the
 * Makefile passes -Wno-psabi, which its pragma cannot do) */
typedef double vd __attribute__((vector_size(W * sizeof(double))));   /* W doubles */
typedef int64_t vl __attribute__((vector_size(W * sizeof(int64_t)))); /* W integers, or a mask */
typedef uint64_t vu __attribute__((vector_size(W * sizeof(uint64_t))));

INLINE vd blend_d(vl mask, vd a, vd b) { return (vd)((mask & (vl)a) | (~mask & (vl)b)); }
INLINE vd abs_d(vd x) { return (vd)((vl)x & INT64_MAX); }   /* the sign bit cleared */

/* exp(a) for -700 <= a <= 0: a = n·ln 2 + r, |r| <= ln 2 / 2 (ln 2 in two parts, the first with
 * 32 significant bits so n·hi is exact), Taylor's series of e^r to r^13 (its remainder below
 * 1e-17), times 2^n from the exponent bits. Relative error a few 1e-16. */
INLINE vd exp_d(vd a) {
    const double magic = 6755399441055744.0;   /* 1.5·2^52: x + magic - magic rounds x */
    const double ln2_hi = 0.693147180369123816490, ln2_lo = 1.90821492927058770002e-10;
    vd n = (a * 1.4426950408889634074 + magic) - magic;
    vd r = (a - n * ln2_hi) - n * ln2_lo;
    /* Σ r^k/k! for k <= 13 by Estrin's scheme: pairs joined by r², then r⁴, then r⁸ */
    vd r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    vd p01 = 1.0 + r, p23 = 0.5 + r * (1.0 / 6.0), p45 = 1.0 / 24.0 + r * (1.0 / 120.0);
    vd p67 = 1.0 / 720.0 + r * (1.0 / 5040.0), p89 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    vd pab = 1.0 / 3628800.0 + r * (1.0 / 39916800.0), pcd = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    vd p03 = p01 + r2 * p23, p47 = p45 + r2 * p67, p8b = p89 + r2 * pab;
    vd p = (p03 + r4 * p47) + r8 * (p8b + r4 * pcd);
    /* 2^n from the exponent bits, in unsigned arithmetic: a lane that falls back (NaN, |x| > 8)
     * may hold any bits here, and unsigned wrap-around and shifts are defined for every value */
    vu bits = ((vu)(n + magic) - (vu)((vd){0} + magic) + 1023) << 52;
    return p * (vd)bits;
}

/* erfcx(z) = exp(z²)·erfc(z) on 0 <= z <= 6: a polynomial in u = 1.5·(z - 3)/(z + 3) + 0.5
 * (coefficients from tests/fixtures/gen/gen_erfcx.py, relative error below 1e-14). */
static const double erfcx_poly[19] = {
    -2.057951587445991e-11, -4.013005595519683e-11, 1.1627426469069857e-10,
    9.1199410817411386e-10, 7.1385195689532927e-10, -1.4413667830016868e-08,
    -3.4679506864859071e-08, 2.2750229140869569e-07, 8.1172622114239527e-07,
    -4.5325842786500321e-06, -1.5153769786409199e-05, 0.00012716419156803797,
    7.0125306904862889e-05, -0.0039561516351009135, 0.023308261233384441,
    -0.081626845134148335, 0.20143885681918766, -0.36815156489825857,
    0.32158541645431804,
};

/* 2·Phi(x) = erfc(-x/√2) = 1 + erf(x/√2) for |x| <= 8.4, relative error below 1e-13; negative
 * the lanes where x < 0 (compared in float: W lanes in one register); *gauss gets exp(-x²/2). */
INLINE vd two_phi(vd x, vi negative, vd *gauss) {
    vd z = abs_d(x) * 0.70710678118654752440;
    vd u = (z - 3.0) / (z + 3.0) * 1.5 + 0.5;
    /* the polynomial by Estrin's scheme: 5 dependent steps where Horner's rule takes 18 (c[18]
     * the constant term, c[0] u^18's; the rounding errors stay a few 1e-16) */
    const double *c = erfcx_poly;
    vd u2 = u * u, u4 = u2 * u2, u8 = u4 * u4, u16 = u8 * u8;
    vd q0 = c[18] + u * c[17], q1 = c[16] + u * c[15], q2 = c[14] + u * c[13], q3 = c[12] + u * c[11];
    vd q4 = c[10] + u * c[9], q5 = c[8] + u * c[7], q6 = c[6] + u * c[5], q7 = c[4] + u * c[3];
    vd q8 = c[2] + u * c[1];
    vd h0 = q0 + u2 * q1, h1 = q2 + u2 * q3, h2 = q4 + u2 * q5, h3 = q6 + u2 * q7;
    vd g0 = h0 + u4 * h1, g1 = h2 + u4 * h3;
    vd p = (g0 + u8 * g1) + u16 * (q8 + u2 * c[0]);
    *gauss = exp_d(-(z * z));
    vd e = *gauss * p;   /* erfc(|x|/√2) */
    return blend_d(__builtin_convertvector(negative, vl), e, 2.0 - e);
}

/* For |x| <= 3, in u = w/2.25 - 1 (w = x²/2), degree 16, coefficients highest power first from
 * tests/fixtures/gen/gen_erf.py: erf(z) = z·erf_poly (z = x/√2; relative error 4e-15), and
 * gelu'(x) = Phi(x) + x·phi(x) = 0.5 + x·gelu_grad_poly (relative error 1.7e-14). */
static const double erf_poly[17] = {
    9.466577302251564e-11, -6.9462297175013025e-10, 4.6585592841066558e-09,
    -3.1573913219682069e-08, 2.001292964694252e-07, -1.1780764441850486e-06,
    6.4237077303810241e-06, -3.2254635783812417e-05, 0.00014812007223277603,
    -0.00061724384231321252, 0.0023133106110260681, -0.0077191568569403447,
    0.022688198513144225, -0.058183901293656269, 0.13002914047169323,
    -0.26256990421328374, 0.64407009765020728,
};
static const double gelu_grad_poly[17] = {
    9.703241734807853e-10, -6.916839596393089e-09, 4.2614646631115244e-08,
    -2.6603288890072081e-07, 1.5486493105634442e-06, -8.2986771432864526e-06,
    4.0801979825442914e-05, -0.00018265192471397606, 0.00073736291239803839,
    -0.0026537648909410391, 0.0083951022394887671, -0.022935063217224983,
    0.052923554309695253, -0.10039700855700529, 0.15240676745655024,
    -0.18744094565064334, 0.2697613738032244,
};

/* GELU's x where those polynomials are near enough: they cover |x| <= 3, and at x = -2.5 the sum
 * 1 + erf, 0.0124, keeps a relative error of 3e-13 (below the 1e-12 that gelu's rounding check
 * assumes); further out two_phi's erfcx takes over. */
static const float NEAR_LO = -2.5f, NEAR_HI = 3.0f;

/* c (17 coefficients, highest power first) at u = x²/4.5 - 1, by Estrin's scheme: 5 dependent
 * steps where Horner's rule takes 16. */
INLINE vd poly16_near(vd x, const double *c) {
    vd u = x * x * (1.0 / 4.5) - 1.0;
    vd u2 = u * u, u4 = u2 * u2, u8 = u4 * u4, u16 = u8 * u8;
    vd q0 = c[16] + u * c[15], q1 = c[14] + u * c[13], q2 = c[12] + u * c[11], q3 = c[10] + u * c[9];
    vd q4 = c[8] + u * c[7], q5 = c[6] + u * c[5], q6 = c[4] + u * c[3], q7 = c[2] + u * c[1];
    vd h0 = q0 + u2 * q1, h1 = q2 + u2 * q3, h2 = q4 + u2 * q5, h3 = q6 + u2 * q7;
    return ((h0 + u4 * h1) + u8 * (h2 + u4 * h3)) + u16 * c[0];
}

/* 2·Phi(x) = 1 + erf(x/√2) for NEAR_LO <= x <= NEAR_HI: no division and no exponential, a third
 * of two_phi's work. */
INLINE vd two_phi_near(vd x) { return 1.0 + x * 0.70710678118654752440 * poly16_near(x, erf_poly); }

/* Whether every lane of x lies in [NEAR_LO, NEAR_HI] (false for NaN). */
INLINE bool all_near(vf x) { return !any_lane(~((x >= NEAR_LO) & (x <= NEAR_HI))); }

/* y = gelu(x) = 0.5·x·erfc(-x/√2) for n floats, each the very float of the reference
 * (mha_gelu_ref, which rounds libm's double result): a lane whose double value lies within 1e-12
 * (relative) of a float rounding boundary (the two ends of that interval round to different bits:
 * a zero's sign too), or |x| > 8, or NaN, takes the reference's path. */
void SET_FN(gelu)(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + W <= n; i += W) {
        vf xv = load(x + i);
        vd xd = __builtin_convertvector(xv, vd);
        vd gauss;
        vd v = 0.5 * xd * (all_near(xv) ? two_phi_near(xd) : two_phi(xd, xv < 0.0f, &gauss));
        vd tol = abs_d(v) * 1e-12;
        vf lo = __builtin_convertvector(v - tol, vf), hi = __builtin_convertvector(v + tol, vf);
        vi bad = ((vi)lo != (vi)hi) | (lo != lo) | ~((xv <= 8.0f) & (xv >= -8.0f));
        store(y + i, lo);
        if (any_lane(bad))
            for (size_t j = 0; j < W; j++)
                if (bad[j]) y[i + j] = mha_gelu_ref(x[i + j]);
    }
    for (; i < n; i++) y[i] = mha_gelu_ref(x[i]);
}

/* dx = g·gelu'(x) = g·(Phi(x) + x·phi(x)) for n floats, each the very float of the reference
 * (mha_gelu_grad_ref), checked as gelu is, the derivative's error taken as absolute (1e-12); a
 * derivative within 1e-12 of 0 takes the reference's path, so the sign of a zero is its too. */
void SET_FN(gelu_grad)(float *dx, const float *g, const float *x, size_t n) {
    size_t i = 0;
    for (; i + W <= n; i += W) {
        vf xv = load(x + i);
        vd xd = __builtin_convertvector(xv, vd), gd = __builtin_convertvector(load(g + i), vd);
        vd gauss, dydx;
        if (all_near(xv)) {
            dydx = 0.5 + xd * poly16_near(xd, gelu_grad_poly);
        } else {
            dydx = 0.5 * two_phi(xd, xv < 0.0f, &gauss);
            dydx += xd * gauss * 0.39894228040143267794;   /* x·phi(x), phi's exp shared with Phi */
        }
        vd v = gd * dydx, tol = abs_d(gd) * 1e-12;
        vf lo = __builtin_convertvector(v - tol, vf), hi = __builtin_convertvector(v + tol, vf);
        vf small = __builtin_convertvector(abs_d(dydx), vf);
        vi bad = ((vi)lo != (vi)hi) | (lo != lo) | ~((xv <= 8.0f) & (xv >= -8.0f)) | (small < 1e-12f);
        store(dx + i, lo);
        if (any_lane(bad))
            for (size_t j = 0; j < W; j++)
                if (bad[j]) dx[i + j] = mha_gelu_grad_ref(g[i + j], x[i + j]);
    }
    for (; i < n; i++) dx[i] = mha_gelu_grad_ref(g[i], x[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Layer norm's rows (kernels.h): in double, W/2 elements a step. Each operation is rounded as
 * written (no FMA contraction from here to the pop below), and a row's sums run over MHA_LN_LANES
 * lanes whatever W is, so every set gives the bits of the references in kernels.c.
 * ------------------------------------------------------------------------------------------- */
#if defined(__clang__)
#define NO_CONTRACT _Pragma("STDC FP_CONTRACT OFF") /* first in a function's body */
#else
#define NO_CONTRACT
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

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

/* A row's mean and rstd = 1/sqrt(biased variance + eps), two passes over its n floats. */
INLINE void ln_stats(double *mean, double *rstd, const float *x, size_t n, float eps) {
    NO_CONTRACT
    const size_t whole = n - n % MHA_LN_LANES;
    const double count = (double)(n ? n : 1);
    vh acc[LN_VECS];
    for (size_t k = 0; k < LN_VECS; k++) acc[k] = (vh){0};
    for (size_t i = 0; i < whole; i += MHA_LN_LANES)
        for (size_t k = 0; k < LN_VECS; k++) acc[k] += widen(x + i + k * WH);
    double s = ln_total(acc);
    for (size_t i = whole; i < n; i++) s += x[i];
    const double m = s / count;
    for (size_t k = 0; k < LN_VECS; k++) acc[k] = (vh){0};
    for (size_t i = 0; i < whole; i += MHA_LN_LANES)
        for (size_t k = 0; k < LN_VECS; k++) {
            vh d = widen(x + i + k * WH) - m;
            acc[k] += d * d;
        }
    double v = ln_total(acc);
    for (size_t i = whole; i < n; i++) {
        double d = (double)x[i] - m;
        v += d * d;
    }
    *mean = m;
    *rstd = 1.0 / sqrt(v / count + (double)eps);
}

void SET_FN(layer_norm_rows)(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                            size_t rows, size_t n, float eps) {
    NO_CONTRACT
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        double m, rs;
        ln_stats(&m, &rs, xr, n, eps);
        if (mean) mean[r] = m, rstd[r] = rs;
        size_t i = 0;
        for (; i + WH <= n; i += WH) {
            vh v = (widen(xr + i) - m) * rs;
            if (w) v *= widen(w + i);
            if (b) v += widen(b + i);
            narrow(yr + i, v);
        }
        for (; i < n; i++) {
            double v = ((double)xr[i] - m) * rs;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = (float)v;
        }
    }
}

/* ĝ = dy∘w, W elements (w NULL: dy) */
INLINE vh ln_g(const float *dy, const float *w, size_t i) { return w ? widen(dy + i) * widen(w + i) : widen(dy + i); }

void SET_FN(layer_norm_rows_backward)(float *dx, double *mean, double *rstd, const float *dy, const float *x,
                                     const float *w, size_t rows, size_t n, float eps) {
    NO_CONTRACT
    const size_t whole = n - n % MHA_LN_LANES;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *gr = dy + r * n;
        double m, rs;
        ln_stats(&m, &rs, xr, n, eps);
        mean[r] = m, rstd[r] = rs;
        vh acc_g[LN_VECS], acc_gx[LN_VECS];   /* Σ ĝ, Σ ĝ∘x̂ */
        for (size_t k = 0; k < LN_VECS; k++) acc_g[k] = (vh){0}, acc_gx[k] = (vh){0};
        for (size_t i = 0; i < whole; i += MHA_LN_LANES)
            for (size_t k = 0; k < LN_VECS; k++) {
                const size_t at = i + k * WH;
                vh gh = ln_g(gr, w, at);
                acc_g[k] += gh;
                acc_gx[k] += gh * ((widen(xr + at) - m) * rs);
            }
        double sg = ln_total(acc_g), sgx = ln_total(acc_gx);
        for (size_t i = whole; i < n; i++) {
            double gh = w ? (double)gr[i] * w[i] : gr[i];
            sg += gh;
            sgx += gh * (((double)xr[i] - m) * rs);
        }
        const double mean_g = sg / (double)n, mean_gx = sgx / (double)n;
        size_t i = 0;
        for (; i + WH <= n; i += WH) {
            vh xhat = (widen(xr + i) - m) * rs;
            narrow(dx + r * n + i, (ln_g(gr, w, i) - mean_g - xhat * mean_gx) * rs);
        }
        for (; i < n; i++) {
            const double xhat = ((double)xr[i] - m) * rs, gh = w ? (double)gr[i] * w[i] : gr[i];
            dx[r * n + i] = (float)((gh - mean_g - xhat * mean_gx) * rs);
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

#if !defined(__clang__)
#pragma GCC pop_options
#endif

#if defined(SIMD_TARGET) && defined(__clang__)
#pragma clang attribute pop
#endif

#endif
