/* core/kernels/kernels_simd.c - the fast kernels (register tiles, softmax steps, packing, dot
 * products of rows) written once over a vector of W floats, and compiled once per instruction set
 * (Makefile):
 *   -DMHA_SIMD_AVX512: W = 16, a 12x32 tile, for CPUs with AVX-512F;
 *   -DMHA_SIMD_AVX2:   W = 8,  a 6x16 tile, for CPUs with AVX2 and FMA;
 *   neither:           W = 4,  a 4x8 tile, plain C vectors (SSE2 on x86-64, NEON on arm64):
 *                      portable.
 * Arithmetic is written with GCC's vector extensions (a * b + c is one FMA where the CPU has them:
 * the Makefile compiles this file with -ffp-contract=fast); the few steps C cannot say - a
 * lane-wise max, rounding, 2^n, the sum of the lanes, a transposition - are per-set primitives
 * below. So an improvement to a kernel reaches every CPU, and the tests hold every variant equal to
 * the references of core/kernels/kernels.c. Shapes use the packed layouts of kernels_isa.h. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_isa.h"

#if (defined(MHA_SIMD_AVX512) || defined(MHA_SIMD_AVX2)) && !defined(MHA_KERNELS_X86)
typedef int kernels_simd_not_on_this_cpu; /* the AVX variants exist on x86-64 (GCC, clang) only */
#else

/* Every function below is compiled for the set's instructions
 * (GCC's pragma, or clang's attribute). */
#if defined(MHA_SIMD_AVX512)
#define SIMD_TARGET "avx512f,avx512dq,fma"
#elif defined(MHA_SIMD_AVX2)
#define SIMD_TARGET "avx2,fma"
#endif
#if defined(SIMD_TARGET) && defined(__clang__)
#pragma clang attribute push(__attribute__((target(SIMD_TARGET))), apply_to = function)
#elif defined(SIMD_TARGET)
#define PRAGMA(text) _Pragma(#text)
#define GCC_TARGET(set) PRAGMA(GCC target(set))
GCC_TARGET(SIMD_TARGET)
#endif

#if defined(MHA_SIMD_AVX512)
#include <immintrin.h>
/* the tile: 24 accumulators of 32 registers, 2 B vectors, 1 broadcast: each B vector loaded
 * serves 12 FMAs, and the tile stores C once per 12 rows; dot_rows: 24 sums */
enum { W = 16, MR = 12, NV = 2, DOT_MR = 4, DOT_NR = 6 };
#define KERNELS_NAME "avx512"
#define KERNELS_SET mha_kernels_avx512
#elif defined(MHA_SIMD_AVX2)
#include <immintrin.h>
/* the tile: 12 accumulators of 16 registers, 2 B vectors, 1 broadcast; dot_rows: 12 sums */
enum { W = 8, MR = 6, NV = 2, DOT_MR = 4, DOT_NR = 3 };
#define KERNELS_NAME "avx2"
#define KERNELS_SET mha_kernels_avx2
#else
/* the tile: 8 accumulators, in the 16 registers of SSE2 or NEON; dot_rows: 12 sums */
enum { W = 4, MR = 4, NV = 2, DOT_MR = 4, DOT_NR = 3 };
#define KERNELS_NAME "portable"
#define KERNELS_SET mha_kernels_portable
#endif
enum { NR = W * NV };             /* columns of the register tile: NV vectors of W */

typedef float vf __attribute__((vector_size(W * sizeof(float))));     /* W floats */
typedef int32_t vi __attribute__((vector_size(W * sizeof(int32_t)))); /* W integers, or a lane
                                                                         mask */

#define INLINE static inline __attribute__((always_inline))

/* ---------------------------------------------------------------------------------------------
 * Loads, stores and the per-set primitives
 * ------------------------------------------------------------------------------------------- */

INLINE vf load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }   /* unaligned */
INLINE void store(float *p, vf v) { memcpy(p, &v, sizeof v); }
INLINE vf splat(float x) { return x - (vf){0}; } /* x - 0 is x, -0 and NaN included */

/* The first n < W floats of p, the other lanes `fill`: a ragged end, never reading past p[n-1]. */
INLINE vf load_part(const float *p, size_t n, float fill) {
    float lanes[W];
    for (size_t i = 0; i < W; i++) lanes[i] = i < n ? p[i] : fill;
    return load(lanes);
}

/* Lane by lane: mask ? a : b, the mask a comparison's result (all ones or all zeros per lane). */
INLINE vf blend(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }

#if defined(MHA_SIMD_AVX512)
INLINE vf vmax(vf a, vf b) { return _mm512_max_ps(a, b); } /* b where either is NaN, as maxps */
INLINE vf round_even(vf x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#elif defined(MHA_SIMD_AVX2)
INLINE vf vmax(vf a, vf b) { return _mm256_max_ps(a, b); }
INLINE vf round_even(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
INLINE vf vmax(vf a, vf b) { return blend(a > b, a, b); }
/* |x| < 2^22: adding and removing 1.5·2^23 leaves x rounded to the nearest integer, ties to even */
INLINE vf round_even(vf x) { const float big = 12582912.0f; return (x + big) - big; }
#endif

/* Whether any lane of a mask (all ones or all zeros per lane) is set: the sign bits at once. */
#if defined(MHA_SIMD_AVX512)
INLINE bool any_lane(vi mask) { return _mm512_movepi32_mask((__m512i)mask) != 0; }
#elif defined(MHA_SIMD_AVX2)
INLINE bool any_lane(vi mask) { return _mm256_movemask_ps((__m256)mask) != 0; }
#else
INLINE bool any_lane(vi mask) {
    int32_t any = 0;
    for (int i = 0; i < W; i++) any |= mask[i];
    return any != 0;
}
#endif

/* The largest lane (once per softmax row). */
INLINE float max_lanes(vf v) {
    float m = v[0];
    for (int i = 1; i < W; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* The sum of the lanes, in one order on every set: halves added lane by lane until one is left
 * ((l0+l4, l1+l5, l2+l6, l3+l7), then pairs, then the two, at W = 8). */
#if defined(MHA_SIMD_AVX512)
INLINE float sum_lanes(vf v) { return _mm512_reduce_add_ps(v); }  /* GCC and clang halve as above */
#elif defined(MHA_SIMD_AVX2)
INLINE float sum_lanes(vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#else
INLINE float sum_lanes(vf v) {
    for (int half = W / 2; half >= 1; half /= 2)
        for (int i = 0; i < half; i++) v[i] += v[i + half];
    return v[0];
}
#endif

/* r[0..W) (W rows of W) <- its transpose. */
#if defined(MHA_SIMD_AVX512)
/* In four rounds of shuffles: pairs of rows interleaved, then pairs of pairs (now each 128-bit lane
 * holds 4x4 transposed), then the 128-bit lanes moved across registers twice. */
INLINE void transpose(vf r[W]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {            /* round 1: a0 b0 a1 b1 | a2 b2 a3 b3 */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {            /* round 2: a0 b0 c0 d0 | a1 b1 c1 d1 | ... */
        r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
        r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {                /* round 3: lanes 0,2 and 1,3 of two row groups */
        t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    }
    for (int c = 0; c < 4; c++) {         /* round 4: column 4l + c gathers lane l of every group */
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD);
    }
}
#elif defined(MHA_SIMD_AVX2)
/* Rows interleaved in pairs, then pairs of pairs (each 128-bit half now 4x4 transposed), then the
 * halves exchanged. */
INLINE void transpose(vf r[W]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 8; g += 4) {
        r[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
        r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        t[c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x20);
        t[4 + c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x31);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}
#else
INLINE void transpose(vf r[W]) {
    float t[W][W];
    for (int i = 0; i < W; i++)
        for (int j = 0; j < W; j++) t[j][i] = r[i][j];
    for (int i = 0; i < W; i++) r[i] = load(t[i]);
}
#endif

/* ---------------------------------------------------------------------------------------------
 * The register tile (kernel_isa.tile, .tile_a_rows)
 * ------------------------------------------------------------------------------------------- */

/* c (MR,NR) row stride ldc = (add ? c·diag(col_scale) : 0) + acc, acc the tile's MR x NV
 * vectors. */
INLINE void tile_store(vf acc[MR][NV], float *c, size_t ldc, bool add, const float *col_scale) {
    vf scale[NV];
    for (int v = 0; v < NV; v++) scale[v] = col_scale ? load(col_scale + W * v) : splat(1.0f);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++, c += ldc) {
        for (int v = 0; v < NV; v++) {
            if (add) acc[i][v] = load(c + W * v) * scale[v] + acc[i][v];
            store(c + W * v, acc[i][v]);
        }
    }
}

/* One step of the tile: acc (MR,NR) += a (MR) times b (NR), one A value broadcast against the NV
 * vectors of B. */
INLINE void tile_step(vf acc[MR][NV], const float *a, const float *b) {
    vf bv[NV];
    for (int v = 0; v < NV; v++) bv[v] = load(b + W * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        vf ai = splat(a[i]);
        for (int v = 0; v < NV; v++) acc[i][v] = ai * bv[v] + acc[i][v];
    }
}

/* Steps before the end at which the tile fetches C's rows into L1: late enough that the panels
 * streaming through L1 do not evict them first, early enough for L2's latency. */
enum { C_FETCH_STEPS = 24 };

/* Steps ahead at which a tile reading A in place by columns fetches them into L1, where the B
 * panels it streams from L2 evict them between passes (8: 10% faster than 16 on dW = dYᵀ·X of an
 * AVX-512 Xeon, its operands in L2 or in L3). */
enum { A_FETCH_STEPS = 8 };

/* kc steps in k order over A's MR values of each step, a_step floats apart (MR: a packed panel;
 * a_cs: the columns of an A with contiguous columns, read in place, fetched A_FETCH_STEPS ahead
 * when fetch_a), C's rows fetched to L2 as the tile starts and to L1 C_FETCH_STEPS before it
 * ends. */
INLINE void tile_steps(size_t kc, const float *a, ptrdiff_t a_step, const float *b, float *c, size_t ldc, bool add,
                       const float *col_scale, bool fetch_a) {
    vf acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        for (int v = 0; v < NV; v++) acc[i][v] = splat(0.0f);
        __builtin_prefetch(c + (size_t)i * ldc, 1, 2);
        __builtin_prefetch(c + (size_t)i * ldc + NR - 1, 1, 2);
    }
    size_t p = 0;
    for (; p + C_FETCH_STEPS < kc; p++, a += a_step, b += NR) {
        if (fetch_a) {
            __builtin_prefetch(a + A_FETCH_STEPS * a_step, 0, 3);
            __builtin_prefetch(a + A_FETCH_STEPS * a_step + MR - 1, 0, 3);
        }
        tile_step(acc, a, b);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        __builtin_prefetch(c + (size_t)i * ldc, 1, 3);
        __builtin_prefetch(c + (size_t)i * ldc + NR - 1, 1, 3);
    }
    for (; p < kc; p++, a += a_step, b += NR) tile_step(acc, a, b);
    tile_store(acc, c, ldc, add, col_scale);
}

/* See kernel_isa.tile. */
static void tile(size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add, const float *col_scale) {
    tile_steps(kc, a, MR, b, c, ldc, add, col_scale, false);
}

/* See kernel_isa.tile_a_cols: tile's steps with A's column p at a + p·a_cs, so the same FMAs in the
 * same order as tile on the panel pack_a_cols makes of the same rows. */
static void tile_a_cols(float *c, size_t ldc, const float *a, ptrdiff_t a_cs, const float *b, size_t kc, bool add) {
    tile_steps(kc, a, a_cs, b, c, ldc, add, NULL, true);
}

/* See kernel_isa.tile_a_rows: tile's loop with each A value broadcast from its own row of A, so the
 * same FMAs in the same order as tile on the panel pack_a_rows makes of the same rows. */
static void tile_a_rows(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, size_t rows, const float *b, size_t kc,
                        bool add) {
    const float *row[MR];
    for (size_t i = 0; i < MR; i++) row[i] = a + (ptrdiff_t)(i < rows ? i : rows - 1) * a_rs;
    vf acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = splat(0.0f);
    for (size_t p = 0; p < kc; p++, b += NR) {
        vf bv[NV];
        for (int v = 0; v < NV; v++) bv[v] = load(b + W * v);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            vf ai = splat(row[i][p]);
            for (int v = 0; v < NV; v++) acc[i][v] = ai * bv[v] + acc[i][v];
        }
    }
    tile_store(acc, c, ldc, add, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax (kernel_isa.softmax_step, .softmax_row)
 * ------------------------------------------------------------------------------------------- */

/* exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x - n·ln 2 in [-ln2/2, ln2/2]; ln 2 is split in a
 * high part exact in float and a low part, so n·ln2_hi has no rounding error. exp(r) is Cephes'
 * degree-7 minimax polynomial (relative error about 1e-7, the float ulp). Only x <= 0 comes from
 * softmax; a masked key's -inf gives exactly 0, and NaN stays NaN. */
static const float LOG2E = 1.44269504088896341f;
static const float LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
static const float EXP_P0 = 1.9875691500e-4f, EXP_P1 = 1.3981999507e-3f, EXP_P2 = 8.3334519073e-3f,
                   EXP_P3 = 4.1665795894e-2f, EXP_P4 = 1.6666665459e-1f, EXP_P5 = 5.0000001201e-1f;

/* p·2^n, n integral, for x >= EXP_MIN, and 0 below it (x the argument of the exp): x is clamped
 * at -87.3, where n = -126 still makes 2^n a normal float, and every set returns 0 below it, so
 * that none writes the subnormals of x in [-103, -87.3] that another would not (nor pays the
 * microcode assist an underflow costs: half the lanes of a causal mask's row are -inf) */
static const float EXP_MIN = -87.3f;
#if defined(MHA_SIMD_AVX512)
INLINE vf pow2_times(vf p, vf n, vf x) {   /* not x < EXP_MIN: true for NaN, which stays NaN */
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(x, splat(EXP_MIN), _CMP_NLT_UQ), p, n);
}
#else
/* 2^n built in the exponent bits */
INLINE vf pow2_times(vf p, vf n, vf x) {
    vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
    return (vf)(~(x < EXP_MIN) & (vi)(p * (vf)bits));   /* false for NaN, which then stays NaN */
}
#endif

INLINE vf vexp(vf x) {
    vf xc = vmax(splat(EXP_MIN), x);  /* maxps keeps its second operand, NaN, when one is NaN */
    vf n = round_even(xc * LOG2E);
    vf r = xc - n * LN2_HI;
    r = r - n * LN2_LO;
    vf p = splat(EXP_P0);
    p = p * r + EXP_P1;
    p = p * r + EXP_P2;
    p = p * r + EXP_P3;
    p = p * r + EXP_P4;
    p = p * r + EXP_P5;
    p = p * (r * r) + (r + 1.0f);
    return pow2_times(p, n, x);
}

/* See kernel_isa.softmax_step. NR queries: NV vectors per row of scores, all of them in one loop
 * and two keys a step, so that 2·NV exponentials - each a chain of some fifteen dependent
 * instructions - are in flight at once, with a sum chain each. */
static void softmax_step(float *scores, size_t nk, float *m, float *l, float *alpha) {
    const vf neg_inf = splat(-INFINITY), zero = splat(0.0f);
    vf m_old[NV], m_safe[NV], sum_even[NV], sum_odd[NV];
    for (int v = 0; v < NV; v++) {
        vf m_new = m_old[v] = load(m + W * v);
        for (size_t p = 0; p < nk; p++) m_new = vmax(load(scores + p * NR + W * v), m_new);
        store(m + W * v, m_new);
        /* a query with no visible key yet subtracts 0 instead of -inf, so exp(-inf - 0) = 0, not
         * NaN */
        m_safe[v] = blend(m_new == neg_inf, zero, m_new);
        sum_even[v] = sum_odd[v] = zero;
    }
    size_t p = 0;
    for (; p + 1 < nk; p += 2) {
        float *s = scores + p * NR;
        for (int v = 0; v < NV; v++) {
            vf e0 = vexp(load(s + W * v) - m_safe[v]);
            vf e1 = vexp(load(s + NR + W * v) - m_safe[v]);
            store(s + W * v, e0);
            store(s + NR + W * v, e1);
            sum_even[v] += e0;
            sum_odd[v] += e1;
        }
    }
    for (int v = 0; v < NV; v++) {
        if (p < nk) {
            vf e = vexp(load(scores + p * NR + W * v) - m_safe[v]);
            store(scores + p * NR + W * v, e);
            sum_even[v] += e;
        }
        vf a = vexp(m_old[v] - m_safe[v]);
        store(alpha + W * v, a);
        store(l + W * v, load(l + W * v) * a + (sum_even[v] + sum_odd[v]));
    }
}

/* See kernel_isa.softmax_row: W at a time; the ragged end is padded with -inf in a small buffer. */
static void softmax_row(float *x, size_t n, float *sum_out) {
    const size_t body = n / W * W, rest = n - body;
    /* the ragged end, padded with -inf (max unchanged, exp 0: adding it leaves the sum's
     * bits); a row of whole vectors skips it, and the stall of reloading lanes stored one by one */
    float end[W];
    vf mx = splat(-INFINITY);
    if (rest) {
        store(end, load_part(x + body, rest, -INFINITY));
        mx = load(end);
    }
    for (size_t j = 0; j < body; j += W) mx = vmax(load(x + j), mx);
    const float max = max_lanes(mx);
    if (max == -INFINITY) { /* every key masked */
        for (size_t j = 0; j < n; j++) x[j] = NAN;
        for (size_t j = 0; sum_out && j < n; j++) sum_out[j] += x[j];
        return;
    }
    const vf m = splat(max);
    vf sum = splat(0.0f);
    for (size_t j = 0; j < body; j += W) {
        vf e = vexp(load(x + j) - m);
        store(x + j, e);
        sum += e;
    }
    if (rest) {
        vf e = vexp(load(end) - m); /* the -inf padding gives 0 */
        store(end, e);
        sum += e;
    }
    const float total = sum_lanes(sum);
    const vf t = splat(total);
    for (size_t j = 0; j < body; j += W) {
        vf w = load(x + j) / t;
        store(x + j, w);
        if (sum_out) store(sum_out + j, load(sum_out + j) + w);
    }
    for (size_t j = 0; j < rest; j++) {
        x[body + j] = end[j] / total;
        if (sum_out) sum_out[body + j] += x[body + j];
    }
}

/* ---------------------------------------------------------------------------------------------
 * Packing (kernel_isa.pack_b_trans, .pack_a_rows, .pack_a_cols)
 * ------------------------------------------------------------------------------------------- */

/* How far ahead (floats) the packing routines fetch each row they read: the rows of a block are
 * read a vector at a time, many rows side by side, more runs at once than the hardware prefetcher
 * follows ((512,512)·(512,1536)ᵀ on AVX-512: packing 15% of the time without it). */
enum { PACK_FETCH_AHEAD = 64 };

/* See kernel_isa.pack_b_trans: WxW blocks transposed in registers, the ragged depth read in
 * part. */
static void pack_b_trans(float *dst, const float *b, ptrdiff_t b_cs, size_t kc, size_t cols, float scale) {
    vf r[W];
    for (size_t p0 = 0; p0 < kc; p0 += W) {
        const size_t depth = kc - p0 < W ? kc - p0 : W;
        for (size_t j0 = 0; j0 < NR; j0 += W) {
            for (size_t i = 0; i < W; i++) {
                const float *column = b + (ptrdiff_t)(j0 + i) * b_cs + (ptrdiff_t)p0;
                if (j0 + i < cols && p0 + PACK_FETCH_AHEAD < kc) __builtin_prefetch(column + PACK_FETCH_AHEAD, 0, 3);
                r[i] = j0 + i >= cols ? splat(0.0f) : (depth == W ? load(column) : load_part(column, depth, 0.0f)) * scale;
            }
            transpose(r);
            for (size_t p = 0; p < depth; p++) store(dst + (p0 + p) * NR + j0, r[p]);
        }
    }
}

/* See kernel_isa.pack_a_rows: W columns of the MR rows at a time, padded to W rows of zeros and
 * transposed WxW; the first MR lanes of each column are kept. The ragged depth goes one column at a
 * time. */
static void pack_a_rows(float *dst, const float *a, ptrdiff_t a_rs, size_t kc, size_t rows) {
    vf r[W];
    size_t p0 = 0;
    for (; p0 + W <= kc; p0 += W) {
        for (size_t i = 0; i < rows && i < MR && p0 + PACK_FETCH_AHEAD < kc; i++)
            __builtin_prefetch(a + (ptrdiff_t)i * a_rs + (ptrdiff_t)(p0 + PACK_FETCH_AHEAD), 0, 3);
        for (size_t i = 0; i < W; i++) r[i] = i < rows && i < MR ? load(a + (ptrdiff_t)i * a_rs + (ptrdiff_t)p0) : splat(0.0f);
        transpose(r);
        for (size_t p = 0; p < W; p++) memcpy(dst + (p0 + p) * MR, &r[p], MR * sizeof(float));
    }
    for (; p0 < kc; p0++)
        for (size_t i = 0; i < MR; i++) dst[p0 * MR + i] = i < rows ? a[(ptrdiff_t)i * a_rs + (ptrdiff_t)p0] : 0.0f;
}

/* See kernel_isa.pack_a_cols. Column by column (each read in one run of lines, where panel by panel
 * would touch kc lines a stride apart for a few floats each), copying each whole panel's MR floats;
 * the ragged last panel float by float, padded with zeros. A column of a block is a run of only a
 * few lines (9 at MC = 144), too short for the hardware prefetcher to follow: the column PF_COLS
 * ahead is prefetched by hand (at (2048,2048)ᵀ·(2048,64) on AVX2, 20.5 -> 17.8 ms on a loaded
 * machine). */
enum { PF_COLS = 8 };
static void pack_a_cols(float *dst, const float *a, ptrdiff_t a_cs, size_t kc, size_t rows) {
    const size_t whole = rows / MR, rest = rows % MR;
    float *ragged = dst + whole * MR * kc;
    for (size_t p = 0; p < kc; p++, a += a_cs) {
        const float *src = a;
        float *d = dst + p * MR;
        if (p + PF_COLS < kc)
            for (size_t i = 0; i < rows; i += 16) __builtin_prefetch(a + PF_COLS * a_cs + (ptrdiff_t)i, 0, 3);
        for (size_t q = 0; q < whole; q++, src += MR, d += MR * kc) memcpy(d, src, MR * sizeof(float));
        for (size_t i = 0; rest && i < MR; i++) ragged[p * MR + i] = i < rest ? src[i] : 0.0f;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Dot products of rows (kernel_isa.dot_rows)
 * ------------------------------------------------------------------------------------------- */

/* One tile of dot products: C[i,j] (+)= a_i · bt_j for i < m <= DOT_MR, j < n <= DOT_NR, each a
 * W-lane FMA chain along K (the ragged end read in part, as zeros), then sum_lanes. Inlined with
 * constant m, n for the full tile, so the sums stay in registers; the per-element arithmetic is the
 * same at the edges. */

INLINE void dot_tile(float *c, size_t ldc, const float *a, size_t lda, const float *bt, size_t ldb, size_t m, size_t n,
                     size_t K, bool add) {
    vf acc[DOT_MR][DOT_NR];
#pragma GCC unroll 8
    for (size_t i = 0; i < DOT_MR; i++)
#pragma GCC unroll 6
        for (size_t j = 0; j < DOT_NR; j++) acc[i][j] = splat(0.0f);
    const size_t body = K / W * W;
    for (size_t p = 0; p < body; p += W) {
        vf w[DOT_NR];   /* rows past n are never read: zeros keep the compiler sure of it */
#pragma GCC unroll 6
        for (size_t j = 0; j < DOT_NR; j++) w[j] = j < n ? load(bt + j * ldb + p) : splat(0.0f);
#pragma GCC unroll 8
        for (size_t i = 0; i < m; i++) {
            vf x = load(a + i * lda + p);
#pragma GCC unroll 6
            for (size_t j = 0; j < n; j++) acc[i][j] = x * w[j] + acc[i][j];
        }
    }
    if (body < K) {
        vf w[DOT_NR];
        for (size_t j = 0; j < DOT_NR; j++) w[j] = j < n ? load_part(bt + j * ldb + body, K - body, 0.0f) : splat(0.0f);
        for (size_t i = 0; i < m; i++) {
            vf x = load_part(a + i * lda + body, K - body, 0.0f);
            for (size_t j = 0; j < n; j++) acc[i][j] = x * w[j] + acc[i][j];
        }
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < m; i++)
#pragma GCC unroll 6
        for (size_t j = 0; j < n; j++) c[i * ldc + j] = (add ? c[i * ldc + j] : 0.0f) + sum_lanes(acc[i][j]);
}

/* See kernel_isa.dot_rows. DOT_NR rows of Bt (in L1) against every DOT_MR rows of A (in L2), so
 * each row of Bt - the large operand, W - is read from memory once, in a stream the prefetcher
 * follows. */
static void dot_rows(float *c, size_t ldc, const float *a, size_t lda, const float *bt, size_t ldb, size_t M, size_t N,
                     size_t K, bool add) {
    for (size_t j0 = 0; j0 < N; j0 += DOT_NR) {
        const size_t n = N - j0 < DOT_NR ? N - j0 : DOT_NR;
        for (size_t i0 = 0; i0 < M; i0 += DOT_MR) {
            const size_t m = M - i0 < DOT_MR ? M - i0 : DOT_MR;
            float *ct = c + i0 * ldc + j0;
            const float *at = a + i0 * lda, *bj = bt + j0 * ldb;
            if (m == DOT_MR && n == DOT_NR) dot_tile(ct, ldc, at, lda, bj, ldb, DOT_MR, DOT_NR, K, add);
            else dot_tile(ct, ldc, at, lda, bj, ldb, m, n, K, add);
        }
    }
}


/* ---------------------------------------------------------------------------------------------
 * GELU and its derivative, in double over W lanes, each checked against the reference's rounding
 * ------------------------------------------------------------------------------------------- */

/* W doubles span two registers of the set; the helpers below are always inlined, so their
 * vector returns never cross a call (GCC's note on the ABI of such returns does not apply) */
#pragma GCC diagnostic ignored "-Wpsabi"
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
static void gelu(float *y, const float *x, size_t n) {
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
static void gelu_grad(float *dx, const float *g, const float *x, size_t n) {
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
 * One query of the fused attention, K and V read in place (kernel_isa.attend_one): a decoding step
 * ------------------------------------------------------------------------------------------- */

/* scores[p] = Σ_d K(p,d)·qs(d) for the nk keys of a tile (K rows ld_k apart), qs = q·scale: the
 * sum over d in order from 0, one FMA a term, as the register tile adds it for one query's lane.
 * W keys at a time, their rows turned into columns of d by transpose; a ragged block (fewer keys,
 * or fewer dims) takes zeros for what is past K, never read. */
static void one_query_scores(float *scores, const float *k, size_t ld_k, const float *qs, size_t nk, size_t D) {
    for (size_t p0 = 0; p0 < nk; p0 += W) {
        const size_t keys = nk - p0 < W ? nk - p0 : W;
        const float *rows = k + p0 * ld_k;
        vf s = splat(0.0f);
        size_t d0 = 0;
        if (keys == W) {
            for (; d0 + W <= D; d0 += W) {   /* whole W x W blocks, in registers */
                vf r[W];
#pragma GCC unroll 16
                for (size_t i = 0; i < W; i++) r[i] = load(rows + i * ld_k + d0);
                transpose(r); /* r[dd]: K(p0.., d0 + dd) */
#pragma GCC unroll 16
                for (size_t dd = 0; dd < W; dd++) s = r[dd] * splat(qs[d0 + dd]) + s;
            }
        }
        for (; d0 < D; d0 += W) {
            const size_t dims = D - d0 < W ? D - d0 : W;
            vf r[W];
            for (size_t i = 0; i < W; i++)
                r[i] = i >= keys ? splat(0.0f) : load_part(rows + i * ld_k + d0, dims, 0.0f);
            transpose(r);
            for (size_t dd = 0; dd < dims; dd++) s = r[dd] * splat(qs[d0 + dd]) + s;
        }
        if (keys == W) store(scores + p0, s);
        else for (size_t i = 0; i < keys; i++) scores[p0 + i] = s[i];
    }
}

/* acc(d) = acc(d)·alpha + Σ_p P(p)·V(p,d) over nvec vectors of d (1..ONE_CHUNK, a constant where it
 * is inlined; the last with `last` lanes, W: whole), V rows ld_v apart: the sum over p in order
 * from 0 as the tile adds it, then the rescaling as its store does - an axpy along V's rows. */
enum { ONE_CHUNK = 4 };
INLINE void one_query_values_block(float *acc, const float *v, size_t ld_v, const float *P, size_t nk, float alpha,
                                   size_t nvec, size_t last) {
    vf t[ONE_CHUNK];
#pragma GCC unroll 4
    for (size_t c = 0; c < ONE_CHUNK; c++) t[c] = splat(0.0f);
    for (size_t p = 0; p < nk; p++) {
        const vf e = splat(P[p]);
        const float *row = v + p * ld_v;
#pragma GCC unroll 4
        for (size_t c = 0; c < ONE_CHUNK; c++) {
            if (c + 1 < nvec || (c + 1 == nvec && last == W)) t[c] = load(row + c * W) * e + t[c];
            else if (c + 1 == nvec) t[c] = load_part(row + c * W, last, 0.0f) * e + t[c];
        }
    }
#pragma GCC unroll 4
    for (size_t c = 0; c < ONE_CHUNK && c < nvec; c++) {
        const size_t n = c + 1 == nvec ? last : W;
        vf sum = (n == W ? load(acc + c * W) : load_part(acc + c * W, n, 0.0f)) * splat(alpha) + t[c];
        if (n == W) store(acc + c * W, sum);
        else for (size_t i = 0; i < n; i++) acc[c * W + i] = sum[i];
    }
}

/* one_query_values_block over all Dv, ONE_CHUNK whole vectors at a time, then the rest. */
static void one_query_values(float *acc, const float *v, size_t ld_v, const float *P, size_t nk, size_t Dv,
                             float alpha) {
    size_t d0 = 0;
    for (; d0 + ONE_CHUNK * W <= Dv; d0 += ONE_CHUNK * W)
        one_query_values_block(acc + d0, v + d0, ld_v, P, nk, alpha, ONE_CHUNK, W);
    const size_t rest = Dv - d0, last = rest % W ? rest % W : W;
    switch ((rest + W - 1) / W) {   /* 0 .. ONE_CHUNK vectors left, each count a constant */
    case 1: one_query_values_block(acc + d0, v + d0, ld_v, P, nk, alpha, 1, last); break;
    case 2: one_query_values_block(acc + d0, v + d0, ld_v, P, nk, alpha, 2, last); break;
    case 3: one_query_values_block(acc + d0, v + d0, ld_v, P, nk, alpha, 3, last); break;
    case 4: one_query_values_block(acc + d0, v + d0, ld_v, P, nk, alpha, 4, last); break;
    default: break;
    }
}

/* See kernel_isa.attend_one. Per key tile: pass 1 the scores, pass 2 the mask, pass 3 softmax_step
 * for one lane (max, exponentials, the even and odd keys' sums, l·alpha + sum), pass 4 the values;
 * then out = acc / l and lse = m + log l, as fused_part ends. */
static void attend_one(const mha_attn_args *args, size_t key_tile) {
    const size_t S = args->S, D = args->D, Dv = args->Dv;
    const size_t key_end = args->causal && S > 1 ? 1 : S;   /* query 0 sees key 0 under causal */
    float scores[MHA_ONE_QUERY_KEYS + W], acc[MHA_ONE_QUERY_DIM], qs[MHA_ONE_QUERY_DIM];
    float m = -INFINITY, l = 0.0f;
    memset(acc, 0, Dv * sizeof *acc);
    for (size_t d = 0; d < D; d++) qs[d] = args->q[d] * args->scale;   /* pack_b's scale·Qᵀ */
    for (size_t k0 = 0; k0 < key_end; k0 += key_tile) {
        const size_t nk = key_end - k0 < key_tile ? key_end - k0 : key_tile;
        /* pass 1: scores = K·(scale·q) */
        one_query_scores(scores, args->k + k0 * args->ld_k, args->ld_k, qs, nk, D);
        /* pass 2: the additive mask of query 0 */
        if (args->mask)
            for (size_t p = 0; p < nk; p++) scores[p] += args->mask[(ptrdiff_t)(k0 + p) * args->mask_cs];
        /* pass 3: online softmax, P = exp(scores - m') */
        /* m' = max(m, max_p scores[p]) by lanes, then across them: NaN skipped as vmax skips it;
         * only the sign of a zero max may differ from one key at a time, and exp(s - (±0)) and
         * m + log l are the same floats either way */
        vf m_lanes = splat(m);
        for (size_t p0 = 0; p0 < nk; p0 += W)
            m_lanes = vmax(nk - p0 < W ? load_part(scores + p0, nk - p0, -INFINITY) : load(scores + p0), m_lanes);
        const float m_new = max_lanes(m_lanes);
        const vf m_safe = splat(m_new == -INFINITY ? 0.0f : m_new);
        for (size_t p0 = 0; p0 < nk; p0 += W) {
            const size_t keys = nk - p0 < W ? nk - p0 : W;
            vf e = vexp((keys == W ? load(scores + p0) : load_part(scores + p0, keys, 0.0f)) - m_safe);
            if (keys == W) store(scores + p0, e);
            else for (size_t i = 0; i < keys; i++) scores[p0 + i] = e[i];
        }
        vf even = splat(0.0f), odd = splat(0.0f);
        size_t p = 0;
        for (; p + 1 < nk; p += 2) {
            even += splat(scores[p]);
            odd += splat(scores[p + 1]);
        }
        if (p < nk) even += splat(scores[p]);
        const vf alpha = vexp(splat(m) - m_safe);
        l = (splat(l) * alpha + (even + odd))[0];
        m = m_new;
        /* pass 4: acc = acc·alpha + P·V */
        one_query_values(acc, args->v + k0 * args->ld_v, args->ld_v, scores, nk, Dv, alpha[0]);
    }
    /* out = acc / l; a query that saw no key (l = 0) is NaN, like softmax of all -inf */
    const float inv = l > 0.0f ? 1.0f / l : NAN;
    for (size_t d = 0; d < Dv; d++) args->out[d] = acc[d] * inv;
    if (args->lse) args->lse[0] = l > 0.0f ? (float)((double)m + log((double)l)) : -INFINITY;
}

const kernel_isa KERNELS_SET = {KERNELS_NAME, MR, NR, tile, softmax_step, softmax_row, pack_b_trans,
                                dot_rows, pack_a_rows, pack_a_cols, tile_a_rows, tile_a_cols, gelu, gelu_grad,
                                attend_one};

#if defined(SIMD_TARGET) && defined(__clang__)
#pragma clang attribute pop
#endif

#endif
