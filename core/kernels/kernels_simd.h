/* core/kernels/kernels_simd.h - private to the kernels: what the per-set sources (kernels_simd.c,
 * rows_simd.c) share, each compiled once per instruction set (Makefile):
 *   -DMHA_SIMD_AVX512: W = 16, a 12x32 tile, for CPUs with AVX-512F;
 *   -DMHA_SIMD_AVX2:   W = 8,  a 6x16 tile, for CPUs with AVX2 and FMA;
 *   neither:           W = 4,  a 4x8 tile, plain C vectors (SSE2 on x86-64, NEON on arm64):
 *                      portable.
 * Arithmetic is written with GCC's vector extensions (a * b + c is one FMA where the CPU has them:
 * the Makefile compiles these files with -ffp-contract=fast); the few steps C cannot say - a
 * lane-wise max, rounding, 2^n, the sum of the lanes, a transposition - are the per-set primitives
 * below. So an improvement to a kernel reaches every CPU, and the tests hold every variant equal to
 * the references of core/kernels/kernels.c. A source including this ends with its set's
 * `#pragma clang attribute pop` (under clang) when MHA_SIMD_SKIP is not defined. */
#ifndef MHA_KERNELS_SIMD_H
#define MHA_KERNELS_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_isa.h"

#if (defined(MHA_SIMD_AVX512) || defined(MHA_SIMD_AVX2)) && !defined(MHA_KERNELS_X86)
#define MHA_SIMD_SKIP 1 /* the AVX variants exist on x86-64 (GCC, clang) only */
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
#define SET_FN(name) name##_avx512
#elif defined(MHA_SIMD_AVX2)
#include <immintrin.h>
/* the tile: 12 accumulators of 16 registers, 2 B vectors, 1 broadcast; dot_rows: 12 sums */
enum { W = 8, MR = 6, NV = 2, DOT_MR = 4, DOT_NR = 3 };
#define KERNELS_NAME "avx2"
#define KERNELS_SET mha_kernels_avx2
#define SET_FN(name) name##_avx2
#else
/* the tile: 8 accumulators, in the 16 registers of SSE2 or NEON; dot_rows: 12 sums */
enum { W = 4, MR = 4, NV = 2, DOT_MR = 4, DOT_NR = 3 };
#define KERNELS_NAME "portable"
#define KERNELS_SET mha_kernels_portable
#define SET_FN(name) name##_portable
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

/* Lane by lane: mask ? a : b, the mask a comparison's result (all ones or all zeros per lane). */
INLINE vf blend(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }

/* The first n floats of p (n < W), the other lanes `fill`: a ragged end, never reading past
 * p[n-1] (the AVX sets' masked loads do not touch the lanes left out). */
#if defined(MHA_SIMD_AVX512)
INLINE vf load_part(const float *p, size_t n, float fill) {
    return _mm512_mask_loadu_ps(splat(fill), (__mmask16)(n >= W ? 0xffffu : (1u << n) - 1u), p);
}
#elif defined(MHA_SIMD_AVX2)
INLINE vf load_part(const float *p, size_t n, float fill) {
    const vi lane = {0, 1, 2, 3, 4, 5, 6, 7}, in = lane < (int32_t)(n < W ? n : W);
    return blend(in, _mm256_maskload_ps(p, (__m256i)in), splat(fill));
}
#else
INLINE vf load_part(const float *p, size_t n, float fill) {
    float lanes[W];
    for (size_t i = 0; i < W; i++) lanes[i] = i < n ? p[i] : fill;
    return load(lanes);
}
#endif

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

/* The lanes of a mask (all ones or all zeros per lane) as bits, lane l in bit l: the sign bits at
 * once. */
#if defined(MHA_SIMD_AVX512)
INLINE unsigned lane_bits(vi mask) { return _mm512_movepi32_mask((__m512i)mask); }
#elif defined(MHA_SIMD_AVX2)
INLINE unsigned lane_bits(vi mask) { return (unsigned)_mm256_movemask_ps((__m256)mask); }
#else
INLINE unsigned lane_bits(vi mask) {
    unsigned bits = 0;
    for (int i = 0; i < W; i++) bits |= (mask[i] != 0) << i;
    return bits;
}
#endif

INLINE bool any_lane(vi mask) { return lane_bits(mask) != 0; }

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

#if defined(MHA_SIMD_AVX512) || defined(MHA_SIMD_AVX2)
/* 8 rows of 8 floats <- their transpose: rows interleaved in pairs, then pairs of pairs (each
 * 128-bit half now 4x4 transposed), then the halves exchanged. The AVX2 set's W x W transpose, and
 * the AVX-512 set's of half vectors (rows_simd.c). */
INLINE void transpose_8x8(__m256 r[8]) {
    __m256 t[8];
#pragma GCC unroll 16
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 16
    for (int g = 0; g < 8; g += 4) {
        r[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
        r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 4; c++) {
        t[c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x20);
        t[4 + c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x31);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 8; i++) r[i] = t[i];
}
#endif

/* r[0..W) (W rows of W) <- its transpose. */
#if defined(MHA_SIMD_AVX512)
/* In four rounds of shuffles: pairs of rows interleaved, then pairs of pairs (now each 128-bit lane
 * holds 4x4 transposed), then the 128-bit lanes moved across registers twice. */
INLINE void transpose(vf r[W]) {
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) {            /* round 1: a0 b0 a1 b1 | a2 b2 a3 b3 */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 16
    for (int g = 0; g < 16; g += 4) {            /* round 2: a0 b0 c0 d0 | a1 b1 c1 d1 | ... */
        r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
        r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 4; c++) {                /* round 3: lanes 0,2 and 1,3 of two row groups */
        t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 4; c++) {         /* round 4: column 4l + c gathers lane l of every group */
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD);
    }
}
#elif defined(MHA_SIMD_AVX2)
INLINE void transpose(vf r[W]) { transpose_8x8(r); }
#else
INLINE void transpose(vf r[W]) {
    float t[W][W];
#pragma GCC unroll 16
    for (int i = 0; i < W; i++)
#pragma GCC unroll 16
        for (int j = 0; j < W; j++) t[j][i] = r[i][j];
#pragma GCC unroll 16
    for (int i = 0; i < W; i++) r[i] = load(t[i]);
}
#endif

/* rows_simd.c's kernels (kernels_isa.h says what each does), named per set for kernels_simd.c's
 * table */
void SET_FN(gelu)(float *y, const float *x, size_t n);
void SET_FN(gelu_grad)(float *dx, const float *g, const float *x, size_t n);
void SET_FN(layer_norm_rows)(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                             size_t rows, size_t n, float eps);
void SET_FN(layer_norm_rows_backward)(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                     const float *x, const float *w, size_t rows, size_t n, float eps);
void SET_FN(layer_norm_columns)(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                                const double *mean, const double *rstd, size_t rows, size_t cols);

void SET_FN(column_sums)(double *acc, const float *g, size_t ld, size_t rows, size_t cols);
void SET_FN(row_dots)(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n);
uint32_t SET_FN(abs_max_bits)(const float *x, size_t n);
double SET_FN(exp_sum)(const float *x, size_t n, double max);
#endif
#endif
