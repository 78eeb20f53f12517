/* core/kernels_x86.c - the x86 register tiles and softmax steps (AVX-512 and AVX2+FMA), compiled for
 * those instruction sets function by function, so the rest of mha-repl builds for any x86-64. */
#include "kernels_isa.h"

#ifdef MHA_KERNELS_X86
#include <immintrin.h>
#include <math.h>

#define AVX512 __attribute__((target("avx512f,fma")))
#define AVX2 __attribute__((target("avx2,fma")))

/* exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x - n·ln 2 in [-ln2/2, ln2/2]; ln 2 is split in a
 * high part exact in float and a low part, so n·ln2_hi has no rounding error. exp(r) is Cephes'
 * degree-7 minimax polynomial (relative error about 1e-7, the float ulp). */
static const float LOG2E = 1.44269504088896341f;
static const float LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
static const float EXP_P0 = 1.9875691500e-4f, EXP_P1 = 1.3981999507e-3f, EXP_P2 = 8.3334519073e-3f,
                   EXP_P3 = 4.1665795894e-2f, EXP_P4 = 1.6666665459e-1f, EXP_P5 = 5.0000001201e-1f;

/* ---------------------------------------------------------------------------------------------
 * AVX-512: 32 registers of 16 floats. The tile is 8 rows by 32 columns: 16 accumulators, 2 for the
 * row of B, 1 for the broadcast A value - 2 FMAs per broadcast keep both FMA pipes busy.
 * ------------------------------------------------------------------------------------------- */
enum { MR512 = 8, NV512 = 2 }; /* NR = 16·NV512 = 32 */

AVX512 static void tile_avx512(size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add,
                               const float *col_scale) {
    __m512 acc[MR512][NV512];
#pragma GCC unroll 8
    for (int i = 0; i < MR512; i++)
        for (int v = 0; v < NV512; v++) acc[i][v] = _mm512_setzero_ps();
    for (size_t p = 0; p < kc; p++, a += MR512, b += 16 * NV512) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
        for (int i = 0; i < MR512; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    __m512 scale[NV512];
    for (int v = 0; v < NV512; v++) scale[v] = col_scale ? _mm512_loadu_ps(col_scale + 16 * v) : _mm512_set1_ps(1.0f);
#pragma GCC unroll 8
    for (int i = 0; i < MR512; i++, c += ldc) {
        for (int v = 0; v < NV512; v++) {
            if (add) acc[i][v] = _mm512_fmadd_ps(_mm512_loadu_ps(c + 16 * v), scale[v], acc[i][v]);
            _mm512_storeu_ps(c + 16 * v, acc[i][v]);
        }
    }
}

/* exp of 16 lanes. x = -inf (a masked key) gives exactly 0: x is clamped to -120, far below where
 * exp underflows (-103.9), and there scalef(p, n) = p·2^n, n = -173, rounds to 0. NaN stays NaN (max keeps its second
 * operand when one is NaN). Only x <= 0 reaches it from softmax. */
AVX512 static inline __attribute__((always_inline)) __m512 exp_avx512(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-120.0f), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    __m512 p = _mm512_set1_ps(EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* See kernel_isa.softmax_step. NR = 32 queries: two vectors per row of scores. */
AVX512 static void softmax_step_avx512(float *scores, size_t nk, float *m, float *l, float *alpha) {
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    for (int v = 0; v < NV512; v++) {
        float *s = scores + 16 * v;
        __m512 m_old = _mm512_loadu_ps(m + 16 * v), m_new = m_old;
        for (size_t p = 0; p < nk; p++) m_new = _mm512_max_ps(_mm512_loadu_ps(s + p * 32), m_new);
        /* a query with no visible key yet subtracts 0 instead of -inf, so exp(-inf - 0) = 0, not NaN */
        __m512 m_safe = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(m_new, neg_inf, _CMP_EQ_OQ), m_new, zero);
        __m512 sum0 = zero, sum1 = zero; /* two chains, so the adds overlap */
        size_t p = 0;
        for (; p + 1 < nk; p += 2) {
            __m512 e0 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + p * 32), m_safe));
            __m512 e1 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + (p + 1) * 32), m_safe));
            _mm512_storeu_ps(s + p * 32, e0);
            _mm512_storeu_ps(s + (p + 1) * 32, e1);
            sum0 = _mm512_add_ps(sum0, e0);
            sum1 = _mm512_add_ps(sum1, e1);
        }
        if (p < nk) {
            __m512 e0 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + p * 32), m_safe));
            _mm512_storeu_ps(s + p * 32, e0);
            sum0 = _mm512_add_ps(sum0, e0);
        }
        __m512 a = exp_avx512(_mm512_sub_ps(m_old, m_safe));
        _mm512_storeu_ps(alpha + 16 * v, a);
        _mm512_storeu_ps(l + 16 * v, _mm512_fmadd_ps(_mm512_loadu_ps(l + 16 * v), a, _mm512_add_ps(sum0, sum1)));
        _mm512_storeu_ps(m + 16 * v, m_new);
    }
}

/* See kernel_isa.softmax_row: 16 at a time, the ragged end through a lane mask. */
AVX512 static void softmax_row_avx512(float *x, size_t n, float *sum_out) {
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    const size_t body = n / 16 * 16;
    const __mmask16 tail = (__mmask16)((1u << (n - body)) - 1);
    __m512 mx = _mm512_mask_loadu_ps(neg_inf, tail, x + body);
    for (size_t j = 0; j < body; j += 16) mx = _mm512_max_ps(_mm512_loadu_ps(x + j), mx);
    const float max = _mm512_reduce_max_ps(mx);
    if (max == -INFINITY) { /* every key masked */
        for (size_t j = 0; j < n; j++) x[j] = NAN;
        for (size_t j = 0; sum_out && j < n; j++) sum_out[j] += x[j];
        return;
    }
    const __m512 m = _mm512_set1_ps(max);
    __m512 sum = _mm512_setzero_ps();
    for (size_t j = 0; j < body; j += 16) {
        __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j), m));
        _mm512_storeu_ps(x + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    __m512 e = exp_avx512(_mm512_sub_ps(_mm512_mask_loadu_ps(m, tail, x + body), m));
    _mm512_mask_storeu_ps(x + body, tail, e);
    sum = _mm512_mask_add_ps(sum, tail, sum, e);
    const __m512 total = _mm512_set1_ps(_mm512_reduce_add_ps(sum));
    if (sum_out == NULL) {
        for (size_t j = 0; j < body; j += 16) _mm512_storeu_ps(x + j, _mm512_div_ps(_mm512_loadu_ps(x + j), total));
        _mm512_mask_storeu_ps(x + body, tail, _mm512_div_ps(_mm512_mask_loadu_ps(total, tail, x + body), total));
        return;
    }
    for (size_t j = 0; j < body; j += 16) {
        __m512 w = _mm512_div_ps(_mm512_loadu_ps(x + j), total);
        _mm512_storeu_ps(x + j, w);
        _mm512_storeu_ps(sum_out + j, _mm512_add_ps(_mm512_loadu_ps(sum_out + j), w));
    }
    __m512 w = _mm512_div_ps(_mm512_mask_loadu_ps(total, tail, x + body), total);
    _mm512_mask_storeu_ps(x + body, tail, w);
    _mm512_mask_storeu_ps(sum_out + body, tail, _mm512_add_ps(_mm512_maskz_loadu_ps(tail, sum_out + body), w));
}

/* r[0..15] (16 rows of 16) <- its transpose, in four rounds of shuffles: pairs of rows interleaved,
 * then pairs of pairs (now each 128-bit lane holds 4x4 transposed), then the 128-bit lanes moved
 * across registers twice. After round 2, lane l of reg[4g + c] holds rows 4g..4g+3 at column 4l + c. */
AVX512 static inline __attribute__((always_inline)) void transpose16_avx512(__m512 r[16]) {
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
    for (int c = 0; c < 4; c++) {                /* round 4: column 4l + c gathers lane l of every group */
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD);
    }
}

/* See kernel_isa.pack_b_trans: 16x16 blocks, the ragged depth read through a lane mask. */
AVX512 static void pack_b_trans_avx512(float *dst, const float *b, ptrdiff_t b_cs, size_t kc, size_t cols,
                                       float scale) {
    const __m512 s = _mm512_set1_ps(scale);
    __m512 r[16];
    for (size_t p0 = 0; p0 < kc; p0 += 16) {
        const size_t depth = kc - p0 < 16 ? kc - p0 : 16;
        const __mmask16 lanes = (__mmask16)((1u << depth) - 1);
        for (size_t j0 = 0; j0 < 16 * NV512; j0 += 16) {
            for (size_t i = 0; i < 16; i++) {
                const float *column = b + (ptrdiff_t)(j0 + i) * b_cs + (ptrdiff_t)p0;
                r[i] = j0 + i < cols ? _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, column), s) : _mm512_setzero_ps();
            }
            transpose16_avx512(r);
            for (size_t p = 0; p < depth; p++) _mm512_storeu_ps(dst + (p0 + p) * 16 * NV512 + j0, r[p]);
        }
    }
}

const kernel_isa mha_kernels_avx512 = {"avx512", MR512, 16 * NV512, tile_avx512, softmax_step_avx512,
                                       softmax_row_avx512, pack_b_trans_avx512, NULL, NULL, NULL, NULL};

/* ---------------------------------------------------------------------------------------------
 * AVX2 + FMA: 16 registers of 8 floats. The tile is 6 rows by 16 columns: 12 accumulators, 2 for
 * the row of B, 1 for the broadcast.
 * ------------------------------------------------------------------------------------------- */
enum { MR256 = 6, NV256 = 2 }; /* NR = 8·NV256 = 16 */

AVX2 static void tile_avx2(size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add,
                           const float *col_scale) {
    __m256 acc[MR256][NV256];
#pragma GCC unroll 6
    for (int i = 0; i < MR256; i++)
        for (int v = 0; v < NV256; v++) acc[i][v] = _mm256_setzero_ps();
    for (size_t p = 0; p < kc; p++, a += MR256, b += 8 * NV256) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR256; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    __m256 scale[NV256];
    for (int v = 0; v < NV256; v++) scale[v] = col_scale ? _mm256_loadu_ps(col_scale + 8 * v) : _mm256_set1_ps(1.0f);
#pragma GCC unroll 6
    for (int i = 0; i < MR256; i++, c += ldc) {
        for (int v = 0; v < NV256; v++) {
            if (add) acc[i][v] = _mm256_fmadd_ps(_mm256_loadu_ps(c + 8 * v), scale[v], acc[i][v]);
            _mm256_storeu_ps(c + 8 * v, acc[i][v]);
        }
    }
}

/* See kernel_isa.tile_a_rows: tile_avx2's loop with each A value broadcast from its own row of A. */
AVX2 static void tile_a_rows_avx2(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, size_t rows, const float *b,
                                  size_t kc, bool add) {
    const float *row[MR256];
    for (size_t i = 0; i < MR256; i++) row[i] = a + (ptrdiff_t)(i < rows ? i : rows - 1) * a_rs;
    __m256 acc[MR256][NV256];
#pragma GCC unroll 6
    for (int i = 0; i < MR256; i++)
        for (int v = 0; v < NV256; v++) acc[i][v] = _mm256_setzero_ps();
    for (size_t p = 0; p < kc; p++, b += 8 * NV256) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR256; i++) {
            __m256 ai = _mm256_broadcast_ss(row[i] + p);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR256; i++, c += ldc) {
        for (int v = 0; v < NV256; v++) {
            if (add) acc[i][v] = _mm256_fmadd_ps(_mm256_loadu_ps(c + 8 * v), _mm256_set1_ps(1.0f), acc[i][v]);
            _mm256_storeu_ps(c + 8 * v, acc[i][v]);
        }
    }
}

/* exp of 8 lanes: as exp_avx512, building 2^n in the exponent bits. x is clamped to -87.3 so 2^n
 * stays a normal float; below that the result is set to 0 (so -inf gives exactly 0). */
AVX2 static inline __attribute__((always_inline)) __m256 exp_avx2(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3f);
    __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ); /* false for NaN, which then stays NaN */
    x = _mm256_max_ps(lo, x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    __m256 p = _mm256_set1_ps(EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    return _mm256_andnot_ps(underflow, e);
}

/* See kernel_isa.softmax_step. NR = 16 queries: two vectors per row of scores, both halves in one loop
 * and two keys a step, so that four exponentials - each a chain of some fifteen dependent instructions -
 * are in flight at once, with a sum chain each. */
AVX2 static void softmax_step_avx2(float *scores, size_t nk, float *m, float *l, float *alpha) {
    const __m256 neg_inf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    __m256 m_old[NV256], m_safe[NV256], sum_even[NV256], sum_odd[NV256];
    for (int v = 0; v < NV256; v++) {
        __m256 m_new = m_old[v] = _mm256_loadu_ps(m + 8 * v);
        for (size_t p = 0; p < nk; p++) m_new = _mm256_max_ps(_mm256_loadu_ps(scores + p * 16 + 8 * v), m_new);
        _mm256_storeu_ps(m + 8 * v, m_new);
        /* a query with no visible key yet subtracts 0 instead of -inf, so exp(-inf - 0) = 0, not NaN */
        m_safe[v] = _mm256_blendv_ps(m_new, zero, _mm256_cmp_ps(m_new, neg_inf, _CMP_EQ_OQ));
        sum_even[v] = sum_odd[v] = zero;
    }
    size_t p = 0;
    for (; p + 1 < nk; p += 2) {
        float *s = scores + p * 16;
        __m256 e0 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s), m_safe[0]));
        __m256 e1 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + 8), m_safe[1]));
        __m256 e2 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + 16), m_safe[0]));
        __m256 e3 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + 24), m_safe[1]));
        _mm256_storeu_ps(s, e0);
        _mm256_storeu_ps(s + 8, e1);
        _mm256_storeu_ps(s + 16, e2);
        _mm256_storeu_ps(s + 24, e3);
        sum_even[0] = _mm256_add_ps(sum_even[0], e0);
        sum_even[1] = _mm256_add_ps(sum_even[1], e1);
        sum_odd[0] = _mm256_add_ps(sum_odd[0], e2);
        sum_odd[1] = _mm256_add_ps(sum_odd[1], e3);
    }
    for (int v = 0; v < NV256; v++) {
        if (p < nk) {
            __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(scores + p * 16 + 8 * v), m_safe[v]));
            _mm256_storeu_ps(scores + p * 16 + 8 * v, e);
            sum_even[v] = _mm256_add_ps(sum_even[v], e);
        }
        __m256 a = exp_avx2(_mm256_sub_ps(m_old[v], m_safe[v]));
        _mm256_storeu_ps(alpha + 8 * v, a);
        _mm256_storeu_ps(l + 8 * v, _mm256_fmadd_ps(_mm256_loadu_ps(l + 8 * v), a, _mm256_add_ps(sum_even[v], sum_odd[v])));
    }
}

/* See kernel_isa.softmax_row: 8 at a time; the ragged end is padded into a small buffer. */
AVX2 static void softmax_row_avx2(float *x, size_t n, float *sum_out) {
    const size_t body = n / 8 * 8, rest = n - body;
    float end[8];
    for (size_t j = 0; j < 8; j++) end[j] = j < rest ? x[body + j] : -INFINITY;
    __m256 mx = _mm256_loadu_ps(end);
    for (size_t j = 0; j < body; j += 8) mx = _mm256_max_ps(_mm256_loadu_ps(x + j), mx);
    float lanes[8], max = -INFINITY;
    _mm256_storeu_ps(lanes, mx);
    for (size_t j = 0; j < 8; j++) max = lanes[j] > max ? lanes[j] : max;
    if (max == -INFINITY) { /* every key masked */
        for (size_t j = 0; j < n; j++) x[j] = NAN;
        for (size_t j = 0; sum_out && j < n; j++) sum_out[j] += x[j];
        return;
    }
    const __m256 m = _mm256_set1_ps(max);
    __m256 sum = _mm256_setzero_ps();
    for (size_t j = 0; j < body; j += 8) {
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j), m));
        _mm256_storeu_ps(x + j, e);
        sum = _mm256_add_ps(sum, e);
    }
    __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(end), m)); /* the -inf padding gives 0 */
    _mm256_storeu_ps(end, e);
    sum = _mm256_add_ps(sum, e);
    _mm256_storeu_ps(lanes, sum);
    float total = 0.0f;
    for (size_t j = 0; j < 8; j++) total += lanes[j];
    const __m256 t = _mm256_set1_ps(total);
    if (sum_out == NULL) {
        for (size_t j = 0; j < body; j += 8) _mm256_storeu_ps(x + j, _mm256_div_ps(_mm256_loadu_ps(x + j), t));
    } else {
        for (size_t j = 0; j < body; j += 8) {
            __m256 w = _mm256_div_ps(_mm256_loadu_ps(x + j), t);
            _mm256_storeu_ps(x + j, w);
            _mm256_storeu_ps(sum_out + j, _mm256_add_ps(_mm256_loadu_ps(sum_out + j), w));
        }
    }
    for (size_t j = 0; j < rest; j++) {
        x[body + j] = end[j] / total;
        if (sum_out) sum_out[body + j] += x[body + j];
    }
}

/* r[0..7] (8 rows of 8) <- its transpose: rows interleaved in pairs, then pairs of pairs (each 128-bit
 * half now 4x4 transposed), then the halves exchanged. */
AVX2 static inline __attribute__((always_inline)) void transpose8_avx2(__m256 r[8]) {
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

/* See kernel_isa.pack_b_trans: 8x8 blocks, the ragged depth read through a lane mask. */
AVX2 static void pack_b_trans_avx2(float *dst, const float *b, ptrdiff_t b_cs, size_t kc, size_t cols, float scale) {
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 r[8];
    for (size_t p0 = 0; p0 < kc; p0 += 8) {
        const size_t depth = kc - p0 < 8 ? kc - p0 : 8;
        const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)depth), lane);
        for (size_t j0 = 0; j0 < 8 * NV256; j0 += 8) {
            for (size_t i = 0; i < 8; i++) {
                const float *column = b + (ptrdiff_t)(j0 + i) * b_cs + (ptrdiff_t)p0;
                /* a whole depth of 8 is read with a plain load: a masked one is slower on Zen */
                r[i] = j0 + i >= cols ? _mm256_setzero_ps()
                       : _mm256_mul_ps(depth == 8 ? _mm256_loadu_ps(column) : _mm256_maskload_ps(column, lanes), s);
            }
            transpose8_avx2(r);
            for (size_t p = 0; p < depth; p++) _mm256_storeu_ps(dst + (p0 + p) * 8 * NV256 + j0, r[p]);
        }
    }
}

/* See kernel_isa.pack_a_rows: 8 columns of the 6 rows at a time, padded to 8 rows of zeros, transposed
 * 8x8; column p's 6 values are stored as 4 + 2. The ragged depth goes one column at a time. */
AVX2 static void pack_a_rows_avx2(float *dst, const float *a, ptrdiff_t a_rs, size_t kc, size_t rows) {
    __m256 r[8];
    size_t p0 = 0;
    for (; p0 + 8 <= kc; p0 += 8) {
        for (size_t i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(a + (ptrdiff_t)i * a_rs + (ptrdiff_t)p0) : _mm256_setzero_ps();
        transpose8_avx2(r);
        for (size_t p = 0; p < 8; p++) {
            float *d = dst + (p0 + p) * MR256;
            _mm_storeu_ps(d, _mm256_castps256_ps128(r[p]));
            _mm_storel_pi((__m64 *)(d + 4), _mm256_extractf128_ps(r[p], 1));
        }
    }
    for (; p0 < kc; p0++)
        for (size_t i = 0; i < MR256; i++) dst[p0 * MR256 + i] = i < rows ? a[(ptrdiff_t)i * a_rs + (ptrdiff_t)p0] : 0.0f;
}

/* See kernel_isa.pack_a_cols. Column by column (each read in one run of lines, where panel by panel
 * would touch kc lines a stride apart for 24 bytes each), scattering each whole panel's 6 floats as
 * 4 + 2; the ragged last panel float by float, padded with zeros. A column of a block is a run of only
 * mc/16 lines (9 at MC = 144), too short for the hardware prefetcher to follow: the column PF_COLS
 * ahead is prefetched by hand (at (2048,2048)ᵀ·(2048,64), 20.5 -> 17.8 ms on a loaded machine). */
enum { PF_COLS = 8 }; /* columns ahead that pack_a_cols_avx2 prefetches */
AVX2 static void pack_a_cols_avx2(float *dst, const float *a, ptrdiff_t a_cs, size_t kc, size_t rows) {
    const size_t whole = rows / MR256, rest = rows % MR256;
    float *ragged = dst + whole * MR256 * kc;
    for (size_t p = 0; p < kc; p++, a += a_cs) {
        const float *src = a;
        float *d = dst + p * MR256;
        if (p + PF_COLS < kc)
            for (size_t i = 0; i < rows; i += 16) _mm_prefetch((const char *)(a + PF_COLS * a_cs + (ptrdiff_t)i), _MM_HINT_T0);
        for (size_t q = 0; q < whole; q++, src += MR256, d += MR256 * kc) {
            _mm_storeu_ps(d, _mm_loadu_ps(src));
            _mm_storel_pi((__m64 *)(d + 4), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(src + 4)));
        }
        for (size_t i = 0; rest && i < MR256; i++) ragged[p * MR256 + i] = i < rest ? src[i] : 0.0f;
    }
}

/* The sum of the 8 lanes, always in this order: (l0+l4, l1+l5, l2+l6, l3+l7), then pairs, then the two. */
AVX2 static inline float hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* One tile of dot products: C[i,j] (+)= a_i · bt_j for i < m <= DOT_MR, j < n <= DOT_NR, each an 8-lane
 * FMA chain along K (the ragged end read through a lane mask as zeros), then hsum_avx2. Inlined with
 * constant m, n for the full tile, so the 12 sums stay in registers; the per-element arithmetic is
 * the same at the edges. */
enum { DOT_MR = 4, DOT_NR = 3 };

AVX2 static inline __attribute__((always_inline)) void dot_tile_avx2(float *c, size_t ldc, const float *a, size_t lda,
                                                                     const float *bt, size_t ldb, size_t m, size_t n,
                                                                     size_t K, bool add) {
    __m256 acc[DOT_MR][DOT_NR];
#pragma GCC unroll 4
    for (size_t i = 0; i < DOT_MR; i++)
#pragma GCC unroll 3
        for (size_t j = 0; j < DOT_NR; j++) acc[i][j] = _mm256_setzero_ps();
    const size_t body = K / 8 * 8;
    for (size_t p = 0; p < body; p += 8) {
        __m256 w[DOT_NR];
#pragma GCC unroll 3
        for (size_t j = 0; j < n; j++) w[j] = _mm256_loadu_ps(bt + j * ldb + p);
#pragma GCC unroll 4
        for (size_t i = 0; i < m; i++) {
            __m256 x = _mm256_loadu_ps(a + i * lda + p);
#pragma GCC unroll 3
            for (size_t j = 0; j < n; j++) acc[i][j] = _mm256_fmadd_ps(x, w[j], acc[i][j]);
        }
    }
    if (body < K) {
        const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(K - body)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 w[DOT_NR];
#pragma GCC unroll 3
        for (size_t j = 0; j < n; j++) w[j] = _mm256_maskload_ps(bt + j * ldb + body, lanes);
#pragma GCC unroll 4
        for (size_t i = 0; i < m; i++) {
            __m256 x = _mm256_maskload_ps(a + i * lda + body, lanes);
#pragma GCC unroll 3
            for (size_t j = 0; j < n; j++) acc[i][j] = _mm256_fmadd_ps(x, w[j], acc[i][j]);
        }
    }
#pragma GCC unroll 4
    for (size_t i = 0; i < m; i++)
#pragma GCC unroll 3
        for (size_t j = 0; j < n; j++) c[i * ldc + j] = (add ? c[i * ldc + j] : 0.0f) + hsum_avx2(acc[i][j]);
}

/* See kernel_isa.dot_rows. DOT_NR rows of Bt (in L1) against every DOT_MR rows of A (in L2), so each row
 * of Bt - the large operand, W - is read from memory once, in a stream the prefetcher follows. */
AVX2 static void dot_rows_avx2(float *c, size_t ldc, const float *a, size_t lda, const float *bt, size_t ldb, size_t M,
                               size_t N, size_t K, bool add) {
    for (size_t j0 = 0; j0 < N; j0 += DOT_NR) {
        const size_t n = N - j0 < DOT_NR ? N - j0 : DOT_NR;
        for (size_t i0 = 0; i0 < M; i0 += DOT_MR) {
            const size_t m = M - i0 < DOT_MR ? M - i0 : DOT_MR;
            float *ct = c + i0 * ldc + j0;
            const float *at = a + i0 * lda, *bj = bt + j0 * ldb;
            if (m == DOT_MR && n == DOT_NR) dot_tile_avx2(ct, ldc, at, lda, bj, ldb, DOT_MR, DOT_NR, K, add);
            else dot_tile_avx2(ct, ldc, at, lda, bj, ldb, m, n, K, add);
        }
    }
}

const kernel_isa mha_kernels_avx2 = {"avx2", MR256, 8 * NV256, tile_avx2, softmax_step_avx2, softmax_row_avx2,
                                     pack_b_trans_avx2, dot_rows_avx2, pack_a_rows_avx2,
                                     pack_a_cols_avx2, tile_a_rows_avx2};

#endif
