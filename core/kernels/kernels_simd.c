/* core/kernels/kernels_simd.c - the fast kernels of the matrix products and the attention (register
 * tiles, softmax steps, packing, dot products of rows, one decoding query) written once over a
 * vector of W floats (kernels_simd.h), compiled once per instruction set. Shapes use the packed
 * layouts of kernels_isa.h. */
#include "kernels/kernels_simd.h"

#if defined(MHA_SIMD_SKIP)
typedef int kernels_simd_not_on_this_cpu;
#else

/* ---------------------------------------------------------------------------------------------
 * The register tile (kernel_isa.tile, .tile_a_rows)
 * ------------------------------------------------------------------------------------------- */

/* c (rows,NR) row stride ldc = (add ? c·diag(col_scale) : bias ? bias : 0) + acc, acc the tile's
 * first `rows` x NV vectors, bias (NR) added to every row: a linear layer's
 * bias, the very sum its being written into c first and added would give. */
INLINE void tile_store_rows(vf acc[MR][NV], int rows, float *c, size_t ldc, bool add, const float *col_scale,
                            const float *bias) {
    vf scale[NV];
    for (int v = 0; v < NV; v++) scale[v] = col_scale ? load(col_scale + W * v) : splat(1.0f);
#pragma GCC unroll 16
    for (int i = 0; i < rows; i++, c += ldc) {
        for (int v = 0; v < NV; v++) {
            if (add) acc[i][v] = load(c + W * v) * scale[v] + acc[i][v];
            else if (bias) acc[i][v] = load(bias + W * v) + acc[i][v];
            store(c + W * v, acc[i][v]);
        }
    }
}

/* One step of the tile on its first R rows (a constant): acc (R,NR) += a (R) times b (NR), one A
 * value broadcast against the NV vectors of B. */
INLINE void tile_step(vf acc[MR][NV], const float *a, const float *b, const int R) {
    vf bv[NV];
    for (int v = 0; v < NV; v++) bv[v] = load(b + W * v);
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
        vf ai = splat(a[i]);
        for (int v = 0; v < NV; v++) acc[i][v] = ai * bv[v] + acc[i][v];
    }
}

/* Steps before the end at which the tile fetches C's rows into L1: late enough that the panels
 * streaming through L1 do not evict them first, early enough for L2's latency. */
enum { C_FETCH_STEPS = 24 };

/* Steps ahead at which a tile reading A in place by columns fetches them into L1, where the B
 * panels it streams from L2 evict them between passes (8: 10% faster than 16 on dW = dYᵀ·X of an
 * AVX-512 Xeon, its operands in L2 or in L3); and, where a step is long enough to spare a load
 * slot (MR·NV vectors of FMAs, at least 24: the AVX-512 tile), A_FAR_STEPS ahead into L2, for an A
 * read from memory: its rows are a page apart or more, so no hardware prefetcher follows them,
 * and 8 steps do not cover memory's latency. dV = Pᵀ·dO of forward + backward L=512, P last
 * written by the forward: 3.2 -> 2.6 ms a step on Zen 4; the AVX2 tile's 12 FMAs a step were
 * slower for it (3.4 -> 3.5 ms). */
enum { A_FETCH_STEPS = 8, A_FAR_STEPS = MR * NV >= 24 ? 32 : 0 };

/* kc steps in k order over the first R (a constant) of A's MR values of each step, a_step floats
 * apart (MR: a packed panel; a_cs: the columns of an A with contiguous columns, read in place,
 * fetched A_FETCH_STEPS ahead when fetch_a), C's R rows fetched to L2 as the tile starts and to
 * L1 C_FETCH_STEPS before it ends. */
INLINE void tile_steps(size_t kc, const float *a, ptrdiff_t a_step, const float *b, float *c, size_t ldc, bool add,
                       const float *col_scale, const float *bias, bool fetch_a, const int R) {
    vf acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
        for (int v = 0; v < NV; v++) acc[i][v] = splat(0.0f);
        __builtin_prefetch(c + (size_t)i * ldc, 1, 2);
        __builtin_prefetch(c + (size_t)i * ldc + NR - 1, 1, 2);
    }
    size_t p = 0;
    for (; p + C_FETCH_STEPS < kc; p++, a += a_step, b += NR) {
        if (fetch_a) {
            __builtin_prefetch(a + A_FETCH_STEPS * a_step, 0, 3);
            __builtin_prefetch(a + A_FETCH_STEPS * a_step + MR - 1, 0, 3);
            if (A_FAR_STEPS) __builtin_prefetch(a + A_FAR_STEPS * a_step + MR - 1, 0, 2);
        }
        tile_step(acc, a, b, R);
    }
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
        __builtin_prefetch(c + (size_t)i * ldc, 1, 3);
        __builtin_prefetch(c + (size_t)i * ldc + NR - 1, 1, 3);
    }
    for (; p < kc; p++, a += a_step, b += NR) tile_step(acc, a, b, R);
    tile_store_rows(acc, R, c, ldc, add, col_scale, bias);
}

/* See kernel_isa.tile. */
static void tile(size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add, const float *col_scale,
                 const float *bias) {
    tile_steps(kc, a, MR, b, c, ldc, add, col_scale, bias, false, MR);
}

/* See kernel_isa.tile_part: a third or two thirds of the tile's rows, each row's sum the same. */
static void tile_part(size_t rows, size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add,
                      const float *col_scale, const float *bias) {
    if (rows <= MR / 3) tile_steps(kc, a, MR, b, c, ldc, add, col_scale, bias, false, MR / 3);
    else if (rows <= 2 * MR / 3) tile_steps(kc, a, MR, b, c, ldc, add, col_scale, bias, false, 2 * MR / 3);
    else tile_steps(kc, a, MR, b, c, ldc, add, col_scale, bias, false, MR);
}

/* See kernel_isa.tile_a_cols: tile's steps with A's column p at a + p·a_cs, so the same FMAs in the
 * same order as tile on the panel pack_a_cols makes of the same rows. */
static void tile_a_cols(float *c, size_t ldc, const float *a, ptrdiff_t a_cs, const float *b, size_t kc, bool add,
                        const float *bias) {
    tile_steps(kc, a, a_cs, b, c, ldc, add, NULL, bias, true, MR);
}

/* See kernel_isa.tile_a_rows: tile's loop with each A value broadcast from its own row of A, so the
 * same FMAs in the same order as tile on the panel pack_a_rows makes of the same rows; on R rows
 * of the tile (R <= MR, a constant), c's rows from R on not written. */
INLINE void tile_a_rows_r(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, size_t rows, const float *b, size_t kc,
                          bool add, const float *bias, const int R) {
    const float *row[MR];
    for (size_t i = 0; i < (size_t)R; i++) row[i] = a + (ptrdiff_t)(i < rows ? i : rows - 1) * a_rs;
    vf acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = splat(0.0f);
    for (size_t p = 0; p < kc; p++, b += NR) {
        vf bv[NV];
        for (int v = 0; v < NV; v++) bv[v] = load(b + W * v);
#pragma GCC unroll 16
        for (int i = 0; i < R; i++) {
            vf ai = splat(row[i][p]);
            for (int v = 0; v < NV; v++) acc[i][v] = ai * bv[v] + acc[i][v];
        }
    }
    tile_store_rows(acc, R, c, ldc, add, NULL, bias);
}

/* A ragged last panel of rows (64 = 5·12 + 4 queries of a head) runs the tile's loop on a third or
 * two thirds of MR rows, not all MR: each row's sum is the same either way. */
__attribute__((noinline)) static void tile_a_rows_part(float *c, size_t ldc, const float *a, ptrdiff_t a_rs,
                                                        size_t rows, const float *b, size_t kc, bool add,
                                                        const float *bias) {
    if (rows <= MR / 3) tile_a_rows_r(c, ldc, a, a_rs, rows, b, kc, add, bias, MR / 3);
    else tile_a_rows_r(c, ldc, a, a_rs, rows, b, kc, add, bias, 2 * MR / 3);
}

static void tile_a_rows(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, size_t rows, const float *b, size_t kc,
                        bool add, const float *bias) {
    if (rows <= 2 * MR / 3) {
        tile_a_rows_part(c, ldc, a, a_rs, rows, b, kc, add, bias);
        return;
    }
    tile_a_rows_r(c, ldc, a, a_rs, rows, b, kc, add, bias, MR);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax (kernel_isa.softmax_step, .softmax_row)
 * ------------------------------------------------------------------------------------------- */

/* exp(x) as kernels_isa.h says (the constants shared with GELU's), with FMAs where the set has
 * them. Only x <= 0 comes from softmax; a masked key's -inf gives exactly 0, and NaN stays NaN.
 * pow2_times: p·2^n, n integral, for x >= EXP_MIN, and 0 below it (x the argument of the exp): x
 * is clamped at EXP_MIN and every set returns 0 below it, so that none writes the subnormals of x
 * in [-103, -87.3] that another would not (nor pays the microcode assist an underflow costs: half
 * the lanes of a causal mask's row are -inf) */
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
    vf n = round_even(xc * EXP_LOG2E);
    vf r = xc - n * EXP_LN2_HI;
    r = r - n * EXP_LN2_LO;
    vf p = splat(EXP_P[0]);
    p = p * r + EXP_P[1];
    p = p * r + EXP_P[2];
    p = p * r + EXP_P[3];
    p = p * r + EXP_P[4];
    p = p * r + EXP_P[5];
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
 * part; W rows of B's columns at a time along the whole depth, so that each row is read as one run
 * (across the panel's NR rows at each depth, a Wᵀ that comes from memory - the projections' W in a
 * training step - was read at 0.8 ns a float: forward + backward L=512 47.7-47.9 -> 47.3-47.5 ms on
 * Zen 4, AVX-512; the same on AVX2). */
static void pack_b_trans(float *dst, const float *b, ptrdiff_t b_cs, size_t kc, size_t cols, float scale) {
    vf r[W];
    const vf s = splat(scale);
    for (size_t j0 = 0; j0 < NR; j0 += W) {
        for (size_t p0 = 0; p0 < kc; p0 += W) {
            const size_t depth = kc - p0 < W ? kc - p0 : W;
            const float *column = b + (ptrdiff_t)j0 * b_cs + (ptrdiff_t)p0;
            float *out = dst + p0 * NR + j0;
            if (depth == W && j0 + W <= cols) { /* whole: unrolled, so r stays in registers */
                const bool fetch = p0 + PACK_FETCH_AHEAD < kc;
#pragma GCC unroll 16
                for (size_t i = 0; i < W; i++) {
                    if (fetch) __builtin_prefetch(column + (ptrdiff_t)i * b_cs + PACK_FETCH_AHEAD, 0, 3);
                    r[i] = load(column + (ptrdiff_t)i * b_cs) * s;
                }
                transpose(r);
#pragma GCC unroll 16
                for (size_t p = 0; p < W; p++) store(out + p * NR, r[p]);
                continue;
            }
            for (size_t i = 0; i < W; i++) /* the ragged depth or last columns, zeros past them */
                r[i] = j0 + i >= cols ? splat(0.0f) : load_part(column + (ptrdiff_t)i * b_cs, depth, 0.0f) * s;
            transpose(r);
            for (size_t p = 0; p < depth; p++) store(out + p * NR, r[p]);
        }
    }
}

/* See kernel_isa.pack_b_rows: PACK_ROWS rows of B at a time, panel by panel. Row by row across
 * every panel, the stores went to as many lines as panels, each kc·NR floats from the last: the
 * same set of L1 for all (kc = 256: 32 KiB apart), which 16 panels overflow. */
enum { PACK_ROWS = 8 };
static void pack_b_rows(float *dst, const float *b, ptrdiff_t b_rs, size_t kc, size_t panels, float scale) {
    const vf s = splat(scale);
    for (size_t p0 = 0; p0 < kc; p0 += PACK_ROWS) {
        const size_t rows = kc - p0 < PACK_ROWS ? kc - p0 : PACK_ROWS;
        for (size_t q = 0; q < panels; q++)
            for (size_t p = p0; p < p0 + rows; p++)
#pragma GCC unroll 4
                for (size_t j = 0; j < NR; j += W)
                    store(dst + (q * kc + p) * NR + j, load(b + (ptrdiff_t)p * b_rs + q * NR + j) * s);
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

/* One tile of dot products: C[i,j] = (add ? C[i,j] : bias ? bias[j] : 0) + a_i · bt_j for i < m <=
 * DOT_MR, j < n <= DOT_NR, each a
 * W-lane FMA chain along K (the ragged end read in part, as zeros), then sum_lanes. Inlined with
 * constant m, n for the full tile, so the sums stay in registers; the per-element arithmetic is the
 * same at the edges. */

INLINE void dot_tile(float *c, size_t ldc, const float *a, size_t lda, const float *bt, size_t ldb, size_t m, size_t n,
                     size_t K, bool add, const float *bias) {
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
        for (size_t j = 0; j < n; j++)
            c[i * ldc + j] = (add ? c[i * ldc + j] : bias ? bias[j] : 0.0f) + sum_lanes(acc[i][j]);
}

/* See kernel_isa.dot_rows. DOT_NR rows of Bt (in L1) against every DOT_MR rows of A (in L2), so
 * each row of Bt - the large operand, W - is read from memory once, in a stream the prefetcher
 * follows. */
static void dot_rows(float *c, size_t ldc, const float *a, size_t lda, const float *bt, size_t ldb, size_t M, size_t N,
                     size_t K, bool add, const float *bias) {
    for (size_t j0 = 0; j0 < N; j0 += DOT_NR) {
        const size_t n = N - j0 < DOT_NR ? N - j0 : DOT_NR;
        for (size_t i0 = 0; i0 < M; i0 += DOT_MR) {
            const size_t m = M - i0 < DOT_MR ? M - i0 : DOT_MR;
            float *ct = c + i0 * ldc + j0;
            const float *at = a + i0 * lda, *bj = bt + j0 * ldb;
            const float *bias_j = bias ? bias + j0 : NULL;
            if (m == DOT_MR && n == DOT_NR) dot_tile(ct, ldc, at, lda, bj, ldb, DOT_MR, DOT_NR, K, add, bias_j);
            else dot_tile(ct, ldc, at, lda, bj, ldb, m, n, K, add, bias_j);
        }
    }
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

const kernel_isa KERNELS_SET = {KERNELS_NAME, MR, NR, tile, tile_part, softmax_step, softmax_row, pack_b_trans, pack_b_rows,
                                dot_rows, pack_a_rows, pack_a_cols, tile_a_rows, tile_a_cols, SET_FN(gelu),
                                SET_FN(gelu_grad), SET_FN(layer_norm_rows), SET_FN(layer_norm_rows_backward),
                                SET_FN(layer_norm_columns), SET_FN(column_sums), SET_FN(row_dots), attend_one,
                                SET_FN(abs_max_bits), SET_FN(exp_sum)};

#if defined(SIMD_TARGET) && defined(__clang__)
#pragma clang attribute pop
#endif

#endif
