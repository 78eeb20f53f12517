/* tests/core/test_kernels.c - holds the fast kernels (packed sgemm, fused attention) equal to the
 * reference kernels, and both to plain double-precision loops written here, on every instruction set. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "check.h"
#include "kernels/kernels.h"
#include "kernels/kernels_testing.h"

/* Tolerances, |got - want| <= atol + rtol·|want|:
 *   sgemm: rtol 1e-5, atol = 4·K·u·max|a|·max|b| (u = 2^-24, the float unit roundoff), the size of
 *          the rounding a float sum of K products may collect, so entries near 0 do not fail on it;
 *   attention: rtol 1e-5, atol 2e-6 (outputs are averages of values in [-1,1], so about 1). */
static const double RTOL = 1e-5;
static const double U = 5.9604644775390625e-08; /* 2^-24 */
static const double ATTN_ATOL = 2e-6;

static const size_t AWKWARD[] = {1, 3, 7, 17, 33, 65, 129, 257};
enum { NAWK = sizeof AWKWARD / sizeof AWKWARD[0] };

#define SPLITMIX_SEED 0x6d68612d6b65726eULL
#include "splitmix.h"
static float *random_floats(size_t n) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = uniform(-1.0f, 1.0f);
    return x;
}

/* ---- sgemm ---- */

/* One layout of the operands: A stored (M,K) row-major, or transposed (K,M); the same for B;
 * row strides padded by `pad`; columns every `step` elements. */
typedef struct layout {
    const char *name;
    bool a_trans, b_trans;
    size_t pad, step;
    bool accumulate;
} layout;

/* Runs fast and reference on one (M,N,K) and layout; returns 0 and explains on mismatch. */
static int sgemm_case(char *why, size_t whylen, const layout *lay, size_t M, size_t N, size_t K) {
    size_t st = lay->step;
    /* A (M,K): element (i,p) */
    size_t a_rows = lay->a_trans ? K : M, a_cols = lay->a_trans ? M : K;
    size_t lda = a_cols * st + lay->pad;
    size_t b_rows = lay->b_trans ? N : K, b_cols = lay->b_trans ? K : N;
    size_t ldb = b_cols * st + lay->pad;
    size_t ldc = N + lay->pad;
    float *a = random_floats(a_rows * lda), *b = random_floats(b_rows * ldb);
    float *c_fast = random_floats(M * ldc), *c_ref = malloc(M * ldc * sizeof(float));
    memcpy(c_ref, c_fast, M * ldc * sizeof(float));
    ptrdiff_t a_rs = lay->a_trans ? (ptrdiff_t)st : (ptrdiff_t)lda, a_cs = lay->a_trans ? (ptrdiff_t)lda : (ptrdiff_t)st;
    ptrdiff_t b_rs = lay->b_trans ? (ptrdiff_t)st : (ptrdiff_t)ldb, b_cs = lay->b_trans ? (ptrdiff_t)ldb : (ptrdiff_t)st;

    mha_status status = mha_sgemm(c_fast, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, lay->accumulate);
    mha_sgemm_ref(c_ref, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, lay->accumulate);
    int ok = status == MHA_OK;
    if (!ok) snprintf(why, whylen, "(%zu,%zu,%zu): status %d: %s", M, N, K, (int)status, mha_errmsg());
    double atol = 4.0 * (double)K * U; /* entries are in [-1,1] */
    for (size_t i = 0; ok && i < M; i++) {
        for (size_t j = 0; ok && j < ldc; j++) {
            float got = c_fast[i * ldc + j], want = c_ref[i * ldc + j];
            /* the padding between rows of C must be left alone */
            ok = j < N ? check_close_value(got, want, RTOL, atol) : got == want;
            if (!ok)
                snprintf(why, whylen, "M,N,K = %zu,%zu,%zu: C[%zu,%zu] = %.9g, reference %.9g (atol %.3g)",
                         M, N, K, i, j, (double)got, (double)want, atol);
        }
    }
    free(a); free(b); free(c_fast); free(c_ref);
    return ok;
}

/* Every (M,N,K) from the awkward sizes, or only those with one size awkward and the others small. */
static void check_sgemm_layout(const char *isa, const layout *lay, bool every) {
    char name[192], why[256] = "";
    snprintf(name, sizeof name, "sgemm[%s] == reference, %s", isa, lay->name);
    int ok = 1;
    for (size_t x = 0; ok && x < NAWK; x++)
        for (size_t y = 0; ok && y < NAWK; y++)
            for (size_t z = 0; ok && z < NAWK; z++) {
                if (!every && (x > 3) + (y > 3) + (z > 3) > 1) continue;
                ok = sgemm_case(why, sizeof why, lay, AWKWARD[x], AWKWARD[y], AWKWARD[z]);
            }
    CHECK(name, ok, "%s", why);
}

/* An operand whose packed panels run across its contiguous lines (A row-major, B stored transposed:
 * Wᵀ, Kᵀ) is packed by a transposition in registers; one whose panels run along them (A stored
 * transposed, B row-major) is packed by copying. The packed panels, hence every bit of C, must be the
 * same. Awkward sizes cover the ragged depth (K mod 16) and the ragged last panel (M mod MR, N mod NR). */
static void check_sgemm_transposed_exact(const char *isa) {
    char name[192], why[256] = "";
    int ok = 1;
    mha_kernels_set_dot_rows(false); /* a short A with Bᵀ is otherwise dot products: see check_sgemm_dot_rows */
    for (size_t x = 0; ok && x < NAWK; x++)
        for (size_t z = 0; ok && z < NAWK; z++) {
            const size_t M = AWKWARD[x], N = AWKWARD[(x + 3) % NAWK], K = AWKWARD[z], ld = K + 3;
            /* a (M,K) and bt (N,K) stored with their lines padded to ld; a_t (K,M) and b (K,N) the same values */
            float *a = random_floats(M * ld), *bt = random_floats(N * ld);
            float *a_t = malloc(K * M * sizeof(float)), *b = malloc(K * N * sizeof(float));
            float *c_across = malloc(M * N * sizeof(float)), *c_along = malloc(M * N * sizeof(float));
            for (size_t p = 0; p < K; p++) {
                for (size_t i = 0; i < M; i++) a_t[p * M + i] = a[i * ld + p];
                for (size_t j = 0; j < N; j++) b[p * N + j] = bt[j * ld + p];
            }
            mha_status s1 = mha_sgemm(c_across, N, a, (ptrdiff_t)ld, 1, bt, 1, (ptrdiff_t)ld, M, N, K, false);
            mha_status s2 = mha_sgemm(c_along, N, a_t, 1, (ptrdiff_t)M, b, (ptrdiff_t)N, 1, M, N, K, false);
            ok = s1 == MHA_OK && s2 == MHA_OK && memcmp(c_across, c_along, M * N * sizeof(float)) == 0;
            if (!ok) snprintf(why, sizeof why, "M=%zu N=%zu K=%zu: the two layouts differ", M, N, K);
            free(a); free(bt); free(a_t); free(b); free(c_across); free(c_along);
        }
    mha_kernels_set_dot_rows(true);
    snprintf(name, sizeof name, "sgemm[%s]: A row-major with Bᵀ stored gives the very bits of Aᵀ stored with B row-major "
             "(packed path)", isa);
    CHECK(name, ok, "%s", why);
}

/* The dot-product path (a short A times Bᵀ, kernels.h): each element of C must come out the same
 * whichever tile it falls in, so that a split of C over threads cannot change a bit: the whole
 * product equals, bit for bit, every row computed alone and every column computed alone; and it
 * equals the packed path within rounding. Awkward sizes cover the ragged tile (M mod 4, N mod 3) and
 * the ragged depth (K mod 8). */
static void check_sgemm_dot_rows(const char *isa) {
    char name[256], why[256] = "";
    int ok = 1;
    for (size_t x = 0; ok && x < NAWK; x++)
        for (size_t z = 0; ok && z < NAWK; z++) {
            const size_t M = AWKWARD[x] % 70, N = AWKWARD[(x + 2) % NAWK], K = AWKWARD[z], ld = K + 5;
            if (M == 0) continue;
            float *a = random_floats(M * ld), *bt = random_floats(N * ld);
            float *whole = malloc(M * N * sizeof(float)), *parts = malloc(M * N * sizeof(float));
            float *packed = malloc(M * N * sizeof(float));
            mha_status s = mha_sgemm(whole, N, a, (ptrdiff_t)ld, 1, bt, 1, (ptrdiff_t)ld, M, N, K, false);
            for (size_t i = 0; s == MHA_OK && i < M; i++) /* row by row */
                s = mha_sgemm(parts + i * N, N, a + i * ld, (ptrdiff_t)ld, 1, bt, 1, (ptrdiff_t)ld, 1, N, K, false);
            ok = s == MHA_OK && memcmp(whole, parts, M * N * sizeof(float)) == 0;
            for (size_t j = 0; ok && s == MHA_OK && j < N; j++) /* column by column */
                s = mha_sgemm(parts + j, N, a, (ptrdiff_t)ld, 1, bt + j * ld, 1, (ptrdiff_t)ld, M, 1, K, false);
            ok = ok && s == MHA_OK && memcmp(whole, parts, M * N * sizeof(float)) == 0;
            if (!ok) snprintf(why, sizeof why, "M=%zu N=%zu K=%zu: rows or columns alone differ from the whole", M, N, K);
            mha_kernels_set_dot_rows(false);
            s = mha_sgemm(packed, N, a, (ptrdiff_t)ld, 1, bt, 1, (ptrdiff_t)ld, M, N, K, false);
            mha_kernels_set_dot_rows(true);
            for (size_t e = 0; ok && e < M * N; e++) {
                ok = s == MHA_OK && check_close_value(whole[e], packed[e], RTOL, 4.0 * (double)K * U);
                if (!ok) snprintf(why, sizeof why, "M=%zu N=%zu K=%zu: element %zu: dot %.9g, packed %.9g", M, N, K, e,
                                  (double)whole[e], (double)packed[e]);
            }
            free(a); free(bt); free(whole); free(parts); free(packed);
        }
    snprintf(name, sizeof name, "sgemm[%s]: dot-product path (short A, Bᵀ): rows alone and columns alone give the bits "
             "of the whole; equals the packed path within rounding", isa);
    CHECK(name, ok, "%s", why);
}

/* B packed once (mha_sgemm_pack_b) and used by mha_sgemm_packed: the very bits of mha_sgemm's packed path
 * on the same operands, for B row-major and B stored transposed, over awkward sizes, past one depth
 * pass (KC = 256) and one slice of B (NC = 2048 columns), accumulating or not. */
static void check_sgemm_packed_b(const char *isa) {
    char name[192], why[256] = "";
    int ok = 1;
    const size_t shapes[][3] = {{1, 1, 1}, {7, 17, 3}, {33, 65, 129}, {65, 257, 33}, {13, 300, 520}, {5, 2100, 300}};
    mha_kernels_set_dot_rows(false);
    for (size_t c = 0; ok && c < sizeof shapes / sizeof shapes[0]; c++) {
        const size_t M = shapes[c][0], N = shapes[c][1], K = shapes[c][2];
        for (int trans = 0; ok && trans < 2; trans++) {
            const size_t lda = K + 1, ldb = trans ? K + 2 : N + 2;
            float *a = random_floats(M * lda), *b = random_floats((trans ? N : K) * ldb);
            float *c_plain = random_floats(M * N), *c_packed = malloc(M * N * sizeof(float));
            float *packed = malloc(mha_sgemm_packed_b_size(N, K) * sizeof(float));
            memcpy(c_packed, c_plain, M * N * sizeof(float));
            const ptrdiff_t b_rs = trans ? 1 : (ptrdiff_t)ldb, b_cs = trans ? (ptrdiff_t)ldb : 1;
            const bool acc = c % 2 == 1;
            mha_status s1 = mha_sgemm(c_plain, N, a, (ptrdiff_t)lda, 1, b, b_rs, b_cs, M, N, K, acc);
            mha_sgemm_pack_b(packed, b, b_rs, b_cs, N, K);
            mha_status s2 = mha_sgemm_packed(c_packed, N, a, (ptrdiff_t)lda, 1, packed, M, N, K, acc);
            ok = s1 == MHA_OK && s2 == MHA_OK && memcmp(c_plain, c_packed, M * N * sizeof(float)) == 0;
            if (!ok) snprintf(why, sizeof why, "M=%zu N=%zu K=%zu, B %s: the products differ", M, N, K,
                              trans ? "transposed" : "row-major");
            free(a); free(b); free(c_plain); free(c_packed); free(packed);
        }
    }
    mha_kernels_set_dot_rows(true);
    snprintf(name, sizeof name, "sgemm[%s]: B packed once (sgemm_pack_b, sgemm_packed) gives the bits of sgemm", isa);
    CHECK(name, ok, "%s", why);
}

/* A narrow product with A's rows or A's columns contiguous reads A in place instead of packing it
 * (kernels.h, mha_kernels_set_a_unpacked): the very bits of the packed path, C's padding untouched.
 * Shapes ragged in every way: rows not a multiple of MR (6 or 8), columns not a multiple of NR (16 or
 * 32), depth past one pass and not a multiple of KC (256), rows past one block (MC = 144);
 * accumulating or not, A's lines padded, B row-major or stored transposed, and through
 * mha_sgemm_packed (B packed once). */
static void check_sgemm_a_unpacked(const char *isa) {
    char name[256], why[256] = "";
    int ok = 1;
    const size_t shapes[][3] = {{1, 1, 1}, {5, 7, 3},     {7, 17, 300}, {13, 33, 257}, {29, 64, 520},
                                {151, 50, 600}, {301, 255, 129}, {6, 16, 256}, {145, 100, 70}, {64, 256, 513}};
    mha_kernels_set_dot_rows(false); /* a short A with Bᵀ would be dot products, not this path */
    for (size_t c = 0; ok && c < sizeof shapes / sizeof shapes[0]; c++) {
        const size_t M = shapes[c][0], N = shapes[c][1], K = shapes[c][2], ldc = N + 2;
        for (int variant = 0; ok && variant < 6; variant++) { /* B row-major; B transposed; B packed once;
                                                                 each with A's rows, then columns, contiguous */
            const bool trans = variant % 3 == 1, acc = (c + (size_t)variant) % 2 == 1, a_cols = variant >= 3;
            const size_t lda = a_cols ? M + 3 : K + 3;
            const ptrdiff_t a_rs = a_cols ? 1 : (ptrdiff_t)lda, a_cs = a_cols ? (ptrdiff_t)lda : 1;
            const size_t ldb = trans ? K + 1 : N + 1;
            const ptrdiff_t b_rs = trans ? 1 : (ptrdiff_t)ldb, b_cs = trans ? (ptrdiff_t)ldb : 1;
            float *a = random_floats((a_cols ? K : M) * lda), *b = random_floats((trans ? N : K) * ldb);
            float *c_in_place = random_floats(M * ldc), *c_packed = malloc(M * ldc * sizeof(float));
            float *packed_b = malloc(mha_sgemm_packed_b_size(N, K) * sizeof(float));
            memcpy(c_packed, c_in_place, M * ldc * sizeof(float));
            mha_sgemm_pack_b(packed_b, b, b_rs, b_cs, N, K);
            mha_status s1, s2;
            for (int packed = 0; packed < 2; packed++) {
                float *c_out = packed ? c_packed : c_in_place;
                mha_kernels_set_a_unpacked(packed == 0);
                mha_status s = variant % 3 == 2 ? mha_sgemm_packed(c_out, ldc, a, a_rs, a_cs, packed_b, M, N, K, acc)
                                                : mha_sgemm(c_out, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, acc);
                *(packed ? &s2 : &s1) = s;
            }
            mha_kernels_set_a_unpacked(true);
            ok = s1 == MHA_OK && s2 == MHA_OK && memcmp(c_in_place, c_packed, M * ldc * sizeof(float)) == 0;
            if (!ok) snprintf(why, sizeof why, "M=%zu N=%zu K=%zu, A's %s contiguous, %s, %s: A in place and A packed "
                              "differ", M, N, K, a_cols ? "columns" : "rows",
                              variant % 3 == 0 ? "B row-major" : variant % 3 == 1 ? "B transposed" : "B packed once",
                              acc ? "accumulating" : "overwriting");
            free(a); free(b); free(c_in_place); free(c_packed); free(packed_b);
        }
    }
    mha_kernels_set_dot_rows(true);
    snprintf(name, sizeof name, "sgemm[%s]: a narrow product reading A in place gives the bits of packing A (A's rows "
             "or columns contiguous; ragged rows, columns and depth; B row-major, transposed, packed once)", isa);
    CHECK(name, ok, "%s", why);
}

/* mha_sgemm_tri: the bits of mha_sgemm, for each triangle (C_LOWER: where j <= i + off, and 0 or
 * the product past it; A_LOWER, A_UPPER: A zero past its line, all of C and its padding), offsets
 * below, on and past the diagonal, A's rows or columns contiguous (the two paths that skip), a
 * product too wide to skip (N past 16 tiles: all computed), depth past one pass (KC = 256),
 * accumulating or not, with an inf in B (whose NaNs must come out as mha_sgemm's). */
static void check_sgemm_tri(const char *isa) {
    char name[256], why[256] = "";
    int ok = 1;
    const size_t shapes[][3] = {{1, 1, 1}, {64, 64, 32}, {64, 32, 64}, {13, 33, 7}, {70, 45, 300}, {150, 20, 270},
                                {40, 600, 16}};
    const ptrdiff_t offs[] = {-5, 0, 3, 40};
    const char *tris[] = {"", "C_LOWER", "A_LOWER", "A_UPPER"};
    for (size_t c = 0; ok && c < sizeof shapes / sizeof shapes[0]; c++)
        for (int tri = MHA_TRI_C_LOWER; ok && tri <= MHA_TRI_A_UPPER; tri++)
            for (size_t o = 0; ok && o < sizeof offs / sizeof offs[0]; o++)
                for (int variant = 0; ok && variant < 8; variant++) {
                    const size_t M = shapes[c][0], N = shapes[c][1], K = shapes[c][2], ldc = N + 2;
                    const bool a_cols = variant & 1, acc = variant & 2;
                    const ptrdiff_t off = offs[o], a_rs = a_cols ? 1 : (ptrdiff_t)K, a_cs = a_cols ? (ptrdiff_t)M : 1;
                    float *a = random_floats(M * K), *b = random_floats(K * N), *want = random_floats(M * ldc);
                    float *got = malloc(M * ldc * sizeof *got), *init = malloc(M * ldc * sizeof *init);
                    for (size_t i = 0; i < M; i++)
                        for (size_t p = 0; p < K; p++) {
                            const ptrdiff_t ip = (ptrdiff_t)i, pp = (ptrdiff_t)p;
                            if ((tri == MHA_TRI_A_LOWER && pp > ip + off) || (tri == MHA_TRI_A_UPPER && pp < ip - off))
                                a[i * (size_t)a_rs + p * (size_t)a_cs] = 0.0f;
                        }
                    if (variant & 4) b[K / 2 * N] = INFINITY; /* 0·inf is NaN: nothing of that block skipped */
                    memcpy(got, want, M * ldc * sizeof *got);
                    memcpy(init, want, M * ldc * sizeof *init);
                    mha_status s1 = mha_sgemm(want, ldc, a, a_rs, a_cs, b, (ptrdiff_t)N, 1, M, N, K, acc);
                    mha_status s2 = mha_sgemm_tri(got, ldc, a, a_rs, a_cs, b, (ptrdiff_t)N, 1, M, N, K, acc, (mha_tri)tri, off);
                    ok = s1 == MHA_OK && s2 == MHA_OK;
                    for (size_t i = 0; ok && i < M; i++)
                        for (size_t j = 0; ok && j < ldc; j++) {
                            const float w = want[i * ldc + j], g = got[i * ldc + j];
                            const bool past = tri == MHA_TRI_C_LOWER && j < N && (ptrdiff_t)j > (ptrdiff_t)i + off;
                            const float skipped = acc ? init[i * ldc + j] : 0.0f;   /* a tile not computed */
                            ok = memcmp(&w, &g, sizeof w) == 0 || (past && memcmp(&g, &skipped, sizeof g) == 0);
                            if (!ok)
                                snprintf(why, sizeof why, "%s off %td, M=%zu N=%zu K=%zu, A's %s contiguous, %s%s: C[%zu,%zu] "
                                         "%.9g, mha_sgemm's %.9g", tris[tri], off, M, N, K, a_cols ? "columns" : "rows",
                                         acc ? "accumulating" : "overwriting", variant & 4 ? ", an inf in B" : "", i, j,
                                         (double)g, (double)w);
                        }
                    free(a), free(b), free(want), free(got), free(init);
                }
    snprintf(name, sizeof name, "sgemm_tri[%s]: a causal slice's triangle skipped gives mha_sgemm's bits (C_LOWER, "
             "A_LOWER, A_UPPER; offsets -5, 0, 3, 40; A's rows or columns contiguous; ragged; past KC)", isa);
    CHECK(name, ok, "%s", why);
}

/* k->tile_part (a ragged last panel of A rows on a third or two thirds of the tile) against the
 * whole tile on the zero-padded panel: the very bits, on the packed path (A packed, A's columns
 * read in place with a ragged panel packed) for every row count a panel can be left with, and in
 * the fused attention, whose key tiles (256 = 21·12 + 4) and value dims (Dv = 64 = 5·12 + 4)
 * leave ragged panels. */
static void check_tile_part(const char *isa) {
    char why[256] = "";
    int ok = 1;
    mha_kernels_set_dot_rows(false);
    for (size_t M = 1; ok && M <= 25; M++)
        for (int a_cols = 0; ok && a_cols < 2; a_cols++) {
            const size_t N = 70, K = 300, lda = a_cols ? M + 1 : K + 1;
            float *a = random_floats((a_cols ? K : M) * lda), *b = random_floats(K * N);
            float *c[2] = {random_floats(M * N), malloc(M * N * sizeof(float))};
            memcpy(c[1], c[0], M * N * sizeof(float));
            mha_kernels_set_a_unpacked(a_cols == 1);   /* rows: packed; columns: read in place */
            for (int part = 0; part < 2; part++) {
                mha_kernels_set_tile_part(part == 1);
                if (mha_sgemm(c[part], N, a, a_cols ? 1 : (ptrdiff_t)lda, a_cols ? (ptrdiff_t)lda : 1, b, (ptrdiff_t)N,
                              1, M, N, K, M % 2 == 1) != MHA_OK) ok = 0;
            }
            if (ok && memcmp(c[0], c[1], M * N * sizeof(float)) != 0) ok = 0;
            if (!ok) snprintf(why, sizeof why, "sgemm M=%zu, A's %s: the two differ", M, a_cols ? "columns" : "rows");
            free(a); free(b); free(c[0]); free(c[1]);
        }
    mha_kernels_set_a_unpacked(true);
    mha_kernels_set_dot_rows(true);
    const size_t shapes[][4] = {{300, 600, 64, 64}, {100, 257, 33, 17}, {65, 100, 7, 5}};   /* L, S, D, Dv */
    for (size_t c = 0; ok && c < sizeof shapes / sizeof shapes[0]; c++) {
        const size_t L = shapes[c][0], S = shapes[c][1], D = shapes[c][2], Dv = shapes[c][3];
        float *q = random_floats(L * D), *k = random_floats(S * D), *v = random_floats(S * Dv);
        float *out[2] = {malloc(L * Dv * sizeof(float)), malloc(L * Dv * sizeof(float))};
        for (int part = 0; part < 2; part++) {
            mha_kernels_set_tile_part(part == 1);
            mha_attn_args args = {.out = out[part], .ld_out = Dv, .q = q, .ld_q = D, .k = k, .ld_k = D, .v = v,
                                  .ld_v = Dv, .causal = c == 1, .scale = 0.125f, .L = L, .S = S, .D = D, .Dv = Dv};
            if (mha_attention_fused(&args) != MHA_OK) ok = 0;
        }
        if (ok && memcmp(out[0], out[1], L * Dv * sizeof(float)) != 0) ok = 0;
        if (!ok) snprintf(why, sizeof why, "attention_fused L=%zu S=%zu D=%zu Dv=%zu: the two differ", L, S, D, Dv);
        free(q); free(k); free(v); free(out[0]); free(out[1]);
    }
    mha_kernels_set_tile_part(true);
    char name[256];
    snprintf(name, sizeof name, "tile_part[%s]: a ragged panel on part of the tile gives the whole tile's bits "
             "(sgemm, A packed or read by columns, 1-25 rows; fused attention)", isa);
    CHECK(name, ok, "%s", why);
}

static void check_sgemm(const char *isa) {
    check_tile_part(isa);
    check_sgemm_tri(isa);
    check_sgemm_transposed_exact(isa);
    check_sgemm_a_unpacked(isa);
    check_sgemm_packed_b(isa);
    check_sgemm_dot_rows(isa);
    const layout full = {"A·B row-major, every size in {1,3,7,17,33,65,129,257}^3", false, false, 0, 1, false};
    check_sgemm_layout(isa, &full, true);
    const layout others[] = {
        {"Aᵀ stored (A transposed)", true, false, 0, 1, false},
        {"Bᵀ stored (x·Wᵀ)", false, true, 0, 1, false},
        {"both transposed, padded rows", true, true, 5, 1, false},
        {"every other column (stride 2), padded rows", false, false, 3, 2, false},
        {"accumulate into C", false, false, 2, 1, true},
        {"Bᵀ, stride 3, accumulate", false, true, 1, 3, true},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) check_sgemm_layout(isa, &others[i], false);

    /* past one packed slice of B (NC = 2048 columns) and one depth pass (KC = 256) */
    char name[192], why[256] = "";
    const layout wide = {"", false, true, 0, 1, true};
    snprintf(name, sizeof name, "sgemm[%s] == reference, (5,300) @ (300,2100)", isa);
    CHECK(name, sgemm_case(why, sizeof why, &wide, 5, 2100, 300), "%s", why);
}

/* ---- attention ---- */

/* The formula in double, written independently of core/kernels/kernels.c:
 * out[i] = sum_j w_ij v_j,  w_ij = exp(s_ij - max_j s_ij) / sum_j exp(...),
 * s_ij = scale·q_i·k_j + mask_ij, -inf where causal and j > i; a row of all -inf is NaN. */
static void attention_double(double *out /* (L,Dv) */, const mha_attn_args *x) {
    double *s = malloc((x->S ? x->S : 1) * sizeof *s);
    for (size_t i = 0; i < x->L; i++) {
        double max = -INFINITY;
        for (size_t j = 0; j < x->S; j++) {
            double dot = 0;
            for (size_t d = 0; d < x->D; d++) dot += (double)x->q[i * x->ld_q + d] * x->k[j * x->ld_k + d];
            s[j] = dot * x->scale;
            if (x->mask) s[j] += x->mask[(ptrdiff_t)i * x->mask_rs + (ptrdiff_t)j * x->mask_cs];
            if (x->causal && j > i) s[j] = -INFINITY;
            if (s[j] > max) max = s[j];
        }
        double sum = 0;
        for (size_t j = 0; j < x->S; j++) sum += (s[j] = exp(s[j] - max));
        for (size_t d = 0; d < x->Dv; d++) {
            double o = 0;
            for (size_t j = 0; j < x->S; j++) o += s[j] / sum * x->v[j * x->ld_v + d];
            out[i * x->Dv + d] = max == -INFINITY ? NAN : o;
        }
    }
    free(s);
}

typedef enum { NO_MASK, FULL_MASK, ROW_MASK, TRANSPOSED_MASK } mask_kind;

typedef struct attn_case {
    const char *name;
    size_t L, S, D, Dv;
    mask_kind mask;
    bool causal;
    float scale;          /* 0: 1/sqrt(D) */
    size_t masked_rows;   /* this many rows (every 3rd) fully masked, so NaN */
    bool eighths;         /* q, k in multiples of 1/8: with D <= 64 and a power-of-2 scale the scores
                           * are exact in float, so large scores test exp, not the rounding of q·k */
} attn_case;

/* Compares out (L,Dv) with row stride ld to want (L,Dv); NaN rows must be NaN exactly there. */
static int compare_out(char *why, size_t whylen, const float *out, size_t ld, const double *want, size_t L, size_t Dv) {
    for (size_t i = 0; i < L; i++)
        for (size_t d = 0; d < Dv; d++)
            if (!check_close_value(out[i * ld + d], want[i * Dv + d], RTOL, ATTN_ATOL)) {
                snprintf(why, whylen, "out[%zu,%zu] = %.9g, want %.9g", i, d, (double)out[i * ld + d], want[i * Dv + d]);
                return 0;
            }
    return 1;
}

static void check_attention_case(const char *isa, const attn_case *c) {
    const size_t L = c->L, S = c->S, D = c->D, Dv = c->Dv;
    /* rows padded, so the kernels must honour every leading dimension */
    size_t ld_q = D + 3, ld_k = D + 1, ld_v = Dv + 2, ld_out = Dv + 4;
    float *q = random_floats(L * ld_q), *k = random_floats(S * ld_k), *v = random_floats(S * ld_v);
    if (c->eighths) {
        for (size_t i = 0; i < L * ld_q; i++) q[i] = roundf(q[i] * 8) / 8;
        for (size_t i = 0; i < S * ld_k; i++) k[i] = roundf(k[i] * 8) / 8;
    }
    float *mask = NULL;
    ptrdiff_t mask_rs = 0, mask_cs = 0;
    if (c->mask == FULL_MASK || c->mask == TRANSPOSED_MASK) {
        mask = malloc(L * S * sizeof *mask);
        for (size_t i = 0; i < L * S; i++) mask[i] = uniform(0.0f, 1.0f) < 0.2f ? -INFINITY : uniform(-2.0f, 2.0f);
        /* stored (S,L) when transposed: the kernel reads it through its strides */
        mask_rs = c->mask == FULL_MASK ? (ptrdiff_t)S : 1;
        mask_cs = c->mask == FULL_MASK ? 1 : (ptrdiff_t)L;
        for (size_t r = 0; r < c->masked_rows; r++)
            for (size_t j = 0; j < S; j++) mask[(ptrdiff_t)(3 * r) * mask_rs + (ptrdiff_t)j * mask_cs] = -INFINITY;
    } else if (c->mask == ROW_MASK) { /* a key padding mask: the last third of the keys hidden */
        mask = malloc(S * sizeof *mask);
        for (size_t j = 0; j < S; j++) mask[j] = j >= S - S / 3 ? -INFINITY : 0.0f;
        mask_rs = 0;
        mask_cs = 1;
    }
    float *out_fused = malloc(L * ld_out * sizeof(float));
    double *want = malloc(L * Dv * sizeof(double));
    for (size_t i = 0; i < L * ld_out; i++) out_fused[i] = 7.0f; /* padding must stay 7 */

    mha_attn_args args = {
        .out = out_fused, .ld_out = ld_out, .q = q, .ld_q = ld_q, .k = k, .ld_k = ld_k, .v = v, .ld_v = ld_v,
        .mask = mask, .mask_rs = mask_rs, .mask_cs = mask_cs, .causal = c->causal,
        .scale = c->scale ? c->scale : 1.0f / sqrtf((float)D), .L = L, .S = S, .D = D, .Dv = Dv};
    attention_double(want, &args);
    mha_status fused_status = mha_attention_fused(&args);

    char name[160], why[256] = "";
    snprintf(name, sizeof name, "attention_fused[%s] == formula: %s (L=%zu S=%zu D=%zu Dv=%zu)", isa, c->name, L, S, D, Dv);
    int ok = fused_status == MHA_OK;
    if (!ok) snprintf(why, sizeof why, "status %d: %s", (int)fused_status, mha_errmsg());
    ok = ok && compare_out(why, sizeof why, out_fused, ld_out, want, L, Dv);
    for (size_t i = 0; ok && i < L; i++)
        for (size_t d = Dv; ok && d < ld_out; d++)
            if (out_fused[i * ld_out + d] != 7.0f) { ok = 0; snprintf(why, sizeof why, "wrote past Dv in row %zu", i); }
    CHECK(name, ok, "%s", why);

    free(q); free(k); free(v); free(mask); free(out_fused); free(want);
}

static void check_attention(const char *isa) {
    const attn_case cases[] = {
        {"no mask", 33, 65, 16, 16, NO_MASK, false, 0, 0, false},
        {"one query, one key", 1, 1, 7, 3, NO_MASK, false, 0, 0, false},
        {"L != S, D != Dv", 17, 129, 7, 33, NO_MASK, false, 0, 0, false},
        {"additive (L,S) mask with -inf", 65, 33, 17, 65, FULL_MASK, false, 0, 0, false},
        {"mask stored transposed (strides)", 33, 17, 8, 8, TRANSPOSED_MASK, false, 0, 0, false},
        {"key padding mask (broadcast row)", 129, 257, 64, 64, ROW_MASK, false, 0, 0, false},
        {"causal", 257, 257, 64, 64, NO_MASK, true, 0, 0, false},
        {"causal, L > S", 65, 17, 3, 7, NO_MASK, true, 0, 0, false},
        {"causal, L < S", 17, 300, 33, 1, NO_MASK, true, 0, 0, false},
        {"causal and key padding", 129, 129, 32, 16, ROW_MASK, true, 0, 0, false},
        {"fully masked rows come out NaN", 33, 65, 16, 16, FULL_MASK, false, 0, 5, false},
        {"fully masked rows, causal, across tiles", 300, 520, 64, 64, FULL_MASK, true, 0, 40, false},
        {"several query and key tiles", 300, 600, 64, 64, NO_MASK, false, 0, 0, false},
        {"large exact scores (scale 16): exp far from 0", 65, 129, 64, 64, NO_MASK, false, 16.0f, 0, true},
        /* more than one query tile (512): split over threads when there are two */
        {"three query tiles, causal and key padding", 1100, 700, 64, 33, ROW_MASK, true, 0, 0, false},
        {"three query tiles, (L,S) mask, masked rows", 1030, 257, 17, 65, FULL_MASK, false, 0, 40, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_attention_case(isa, &cases[i]);
}

/* ---- softmax rows ---- */

/* mha_softmax_rows against the formula in double, rows of every awkward length (the vector body and
 * the ragged end), with -inf entries, a row of all -inf (NaN) and large values (exp far from 0). */
static void check_softmax_rows(const char *isa) {
    char name[192], why[256] = "";
    int ok = 1;
    for (size_t a = 0; ok && a < NAWK; a++) {
        const size_t n = AWKWARD[a], rows = 4, ld = n + 5;
        float *x = random_floats(rows * ld);
        for (size_t j = 0; j < n; j++) {
            x[1 * ld + j] = -INFINITY;           /* row 1: every key masked */
            x[2 * ld + j] *= 40.0f;              /* row 2: large scores */
            if (j % 3 == 1) x[3 * ld + j] = -INFINITY; /* row 3: some masked */
        }
        double *want = malloc(rows * n * sizeof *want);
        for (size_t i = 0; i < rows; i++) {
            double max = -INFINITY, sum = 0;
            for (size_t j = 0; j < n; j++) max = x[i * ld + j] > max ? x[i * ld + j] : max;
            for (size_t j = 0; j < n; j++) sum += exp(x[i * ld + j] - max);
            for (size_t j = 0; j < n; j++) want[i * n + j] = max == -INFINITY ? NAN : exp(x[i * ld + j] - max) / sum;
        }
        float pad = x[ld - 1];
        mha_softmax_rows(x, ld, rows, n);
        for (size_t i = 0; ok && i < rows; i++)
            for (size_t j = 0; ok && j < n; j++)
                if (!check_close_value(x[i * ld + j], want[i * n + j], RTOL, 1e-7)) {
                    ok = 0;
                    snprintf(why, sizeof why, "n=%zu: row %zu, x[%zu] = %.9g, want %.9g", n, i, j,
                             (double)x[i * ld + j], want[i * n + j]);
                }
        if (ok && x[ld - 1] != pad) { ok = 0; snprintf(why, sizeof why, "n=%zu: wrote past the row", n); }
        free(x);
        free(want);
    }
    snprintf(name, sizeof name, "softmax_rows[%s] == formula (lengths 1..257, -inf, all -inf -> NaN, large)", isa);
    CHECK(name, ok, "%s", why);
}

/* mha_softmax_rows_sum: the weights the very bits of mha_softmax_rows, and each added into the running sum
 * as it is written (sum + w, in float, a NaN row giving NaN); the reference likewise against its own
 * softmax. Sums start from awkward values, rows of every awkward length. */
static void check_softmax_rows_sum(const char *isa) {
    char name[256], why[256] = "";
    int ok = 1;
    for (size_t a = 0; ok && a < NAWK; a++) {
        const size_t n = AWKWARD[a], rows = 3, ld = n + 3, ld_sum = n + 2;
        float *x = random_floats(rows * ld), *plain = malloc(rows * ld * sizeof(float));
        float *sum = random_floats(rows * ld_sum), *before = malloc(rows * ld_sum * sizeof(float));
        for (size_t j = 0; j < n; j++) x[1 * ld + j] = -INFINITY; /* row 1: every key masked */
        memcpy(plain, x, rows * ld * sizeof(float));
        memcpy(before, sum, rows * ld_sum * sizeof(float));
        mha_softmax_rows(plain, ld, rows, n);
        mha_softmax_rows_sum(x, ld, rows, n, sum, ld_sum);
        for (size_t i = 0; ok && i < rows; i++)
            for (size_t j = 0; ok && j < ld_sum; j++) {
                float want = j < n ? before[i * ld_sum + j] + plain[i * ld + j] : before[i * ld_sum + j];
                bool same = j >= n || memcmp(&x[i * ld + j], &plain[i * ld + j], sizeof(float)) == 0;
                bool summed = isnan(want) ? isnan(sum[i * ld_sum + j]) : sum[i * ld_sum + j] == want;
                if (!same || !summed) {
                    ok = 0;
                    snprintf(why, sizeof why, "n=%zu: row %zu, column %zu: weight %.9g (softmax_rows %.9g), sum %.9g, want %.9g",
                             n, i, j, (double)x[i * ld + j], (double)plain[i * ld + j], (double)sum[i * ld_sum + j],
                             (double)want);
                }
            }
        /* the reference: its own softmax, then the same adds */
        memcpy(x, plain, rows * ld * sizeof(float));
        for (size_t e = 0; e < rows * ld; e++) x[e] = uniform(-3.0f, 3.0f);
        memcpy(plain, x, rows * ld * sizeof(float));
        memcpy(sum, before, rows * ld_sum * sizeof(float));
        mha_softmax_rows_ref(plain, ld, rows, n);
        mha_softmax_rows_sum_ref(x, ld, rows, n, sum, ld_sum);
        for (size_t i = 0; ok && i < rows; i++)
            for (size_t j = 0; ok && j < n; j++)
                if (sum[i * ld_sum + j] != before[i * ld_sum + j] + plain[i * ld + j]) {
                    ok = 0;
                    snprintf(why, sizeof why, "reference, n=%zu: row %zu, column %zu: sum %.9g, want %.9g", n, i, j,
                             (double)sum[i * ld_sum + j], (double)(before[i * ld_sum + j] + plain[i * ld + j]));
                }
        free(x); free(plain); free(sum); free(before);
    }
    snprintf(name, sizeof name, "softmax_rows_sum[%s]: the weights of softmax_rows, added into the sum as written "
             "(lengths 1..257, all -inf -> NaN); the reference likewise", isa);
    CHECK(name, ok, "%s", why);
}

/* ---- exact small cases, edge sizes, interrupts ---- */

static void check_exact(void) {
    /* [1 2 3; 4 5 6] · [1 0; 0 1; 1 1] = [4 5; 10 11], computed by hand */
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1, 1, 1}, want[] = {4, 5, 10, 11};
    float c_ref[4] = {0}, c_fast[4] = {0};
    mha_sgemm_ref(c_ref, 2, a, 3, 1, b, 2, 1, 2, 2, 3, false);
    mha_status status = mha_sgemm(c_fast, 2, a, 3, 1, b, 2, 1, 2, 2, 3, false);
    check_close_array("sgemm_ref: hand-computed 2x3 @ 3x2", c_ref, want, 4, 0, 0);
    CHECK("sgemm: hand-computed 2x3 @ 3x2", status == MHA_OK && memcmp(c_fast, want, sizeof want) == 0,
          "got %g %g %g %g", (double)c_fast[0], (double)c_fast[1], (double)c_fast[2], (double)c_fast[3]);

    /* K = 0: C = 0, or C unchanged when accumulating */
    float c0[4] = {1, 2, 3, 4};
    mha_sgemm(c0, 2, a, 0, 1, b, 2, 1, 2, 2, 0, true);
    int kept = c0[0] == 1 && c0[3] == 4;
    mha_sgemm(c0, 2, a, 0, 1, b, 2, 1, 2, 2, 0, false);
    CHECK("sgemm: K = 0 keeps C when accumulating, else zeroes it", kept && c0[0] == 0 && c0[3] == 0,
          "got %g %g", (double)c0[0], (double)c0[3]);

    /* S = 0: an empty weighted sum is 0 (the plain path: tests/core/test_attention.c) */
    float q[2] = {1, 1}, out[4] = {9, 9, 9, 9};
    mha_attn_args args = {.out = out, .ld_out = 2, .q = q, .ld_q = 1, .k = q, .ld_k = 1, .v = q, .ld_v = 2,
                          .scale = 1, .L = 2, .S = 0, .D = 1, .Dv = 2};
    mha_status s1 = mha_attention_fused(&args);
    CHECK("attention_fused: no keys (S = 0) gives zeros", s1 == MHA_OK && out[0] == 0 && out[3] == 0, "got %g",
          (double)out[0]);
}

/* An interrupt raised before a call: every kernel stops at its first poll, with its message, and frees
 * its scratch (with threads: every part's). L = 1100 is three query tiles, split when threads > 1. */
static void check_interrupt(const char *label) {
    char name[160];
    size_t n = 300, L = 1100;
    float *a = random_floats(L * n), *c = malloc(L * n * sizeof(float));
    size_t live = mha_live_bytes();
    mha_interrupt();
    mha_status s = mha_sgemm(c, n, a, (ptrdiff_t)n, 1, a, (ptrdiff_t)n, 1, n, n, n, false);
    snprintf(name, sizeof name, "sgemm[%s]: interrupted -> MHA_E_INTERRUPTED, message, scratch freed", label);
    CHECK(name, s == MHA_E_INTERRUPTED && strstr(mha_errmsg(), "sgemm: (300,300) @ (300,300): interrupted") &&
          mha_live_bytes() == live, "status %d, message \"%s\", live bytes %zu -> %zu", (int)s, mha_errmsg(), live,
          mha_live_bytes());
    mha_attn_args args = {.out = c, .ld_out = n, .q = a, .ld_q = n, .k = a, .ld_k = n, .v = a, .ld_v = n,
                          .scale = 0.1f, .L = L, .S = L, .D = 64, .Dv = 64};
    s = mha_attention_fused(&args);
    snprintf(name, sizeof name, "attention_fused[%s]: interrupted -> MHA_E_INTERRUPTED, scratch freed", label);
    CHECK(name, s == MHA_E_INTERRUPTED && strstr(mha_errmsg(), "attention: q (1100,64), k (1100,64): interrupted") &&
          mha_live_bytes() == live, "status %d, message \"%s\", live bytes %zu -> %zu", (int)s, mha_errmsg(), live,
          mha_live_bytes());
    mha_interrupt_clear();
    s = mha_sgemm(c, n, a, (ptrdiff_t)n, 1, a, (ptrdiff_t)n, 1, n, n, n, false);
    snprintf(name, sizeof name, "sgemm[%s]: runs again once the interrupt is cleared", label);
    CHECK(name, s == MHA_OK, "status %d", (int)s);
    free(a); free(c);
}

/* An interrupt raised from another thread 2 ms into a large product (16 GFLOP: 50 ms or more even
 * on two idle cores): the call stops early, every part having polled the flag, and frees everything. */
static void *interrupt_soon(void *arg) {
    nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
    mha_interrupt();
    return arg;
}

static void check_interrupt_while_running(const char *label) {
    const size_t n = 2000;
    float *a = random_floats(n * n), *c = malloc(n * n * sizeof(float));
    size_t live = mha_live_bytes();
    pthread_t helper;
    pthread_create(&helper, NULL, interrupt_soon, NULL);
    mha_status s = mha_sgemm(c, n, a, (ptrdiff_t)n, 1, a, 1, (ptrdiff_t)n, n, n, n, false);
    pthread_join(helper, NULL);
    mha_interrupt_clear();
    char name[160];
    snprintf(name, sizeof name, "sgemm[%s]: interrupted while running -> MHA_E_INTERRUPTED, scratch freed", label);
    CHECK(name, s == MHA_E_INTERRUPTED && strstr(mha_errmsg(), "sgemm: (2000,2000) @ (2000,2000): interrupted") &&
          mha_live_bytes() == live, "status %d, message \"%s\", live bytes %zu -> %zu", (int)s, mha_errmsg(), live,
          mha_live_bytes());
    free(a); free(c);
}

/* ---- threads ---- */

/* Split calls give the very bits of one thread: sgemm split by rows (M > N) and by columns, over
 * 2 and 3 threads, plain and Bᵀ layouts, accumulating; the fused attention split by query tiles
 * (L = 1100: three tiles) with a mask and causal. Every size here is above the split threshold
 * (64 MFLOP), so this holds with the threshold left as it is. */
static void check_threads_identical(const char *isa) {
    static const size_t shapes[][3] = {{700, 257, 300}, {129, 1000, 300}, {33, 2100, 600}, {1000, 129, 257}, {65, 1025, 600}};
    char name[160], why[256] = "";
    int ok = 1;
    for (size_t x = 0; ok && x < sizeof shapes / sizeof shapes[0]; x++) {
        const size_t M = shapes[x][0], N = shapes[x][1], K = shapes[x][2];
        float *a = random_floats(M * K), *b = random_floats(K * N), *c1 = random_floats(M * N);
        float *cn = malloc(M * N * sizeof(float));
        for (int trans = 0; ok && trans < 2; trans++) {
            ptrdiff_t b_rs = trans ? 1 : (ptrdiff_t)N, b_cs = trans ? (ptrdiff_t)K : 1;
            for (size_t threads = 2; ok && threads <= 3; threads++) {
                memcpy(cn, c1, M * N * sizeof(float));
                mha_kernels_set_threads(threads);
                mha_status s = mha_sgemm(cn, N, a, (ptrdiff_t)K, 1, b, b_rs, b_cs, M, N, K, true);
                mha_kernels_set_threads(1);
                float *c_one = malloc(M * N * sizeof(float));
                memcpy(c_one, c1, M * N * sizeof(float));
                mha_status s1 = mha_sgemm(c_one, N, a, (ptrdiff_t)K, 1, b, b_rs, b_cs, M, N, K, true);
                ok = s == MHA_OK && s1 == MHA_OK && memcmp(cn, c_one, M * N * sizeof(float)) == 0;
                if (!ok) snprintf(why, sizeof why, "(%zu,%zu)@(%zu,%zu)%s, %zu threads differ", M, K, K, N,
                                  trans ? " Bᵀ" : "", threads);
                free(c_one);
            }
        }
        free(a); free(b); free(c1); free(cn);
    }
    snprintf(name, sizeof name, "sgemm[%s]: 2 and 3 threads give the very bits of 1 (rows and columns split)", isa);
    CHECK(name, ok, "%s", why);

    const size_t L = 1100, S = 700, D = 64, Dv = 33;
    float *q = random_floats(L * D), *k = random_floats(S * D), *v = random_floats(S * Dv), *mask = random_floats(L * S);
    float *out1 = malloc(L * Dv * sizeof(float)), *outn = malloc(L * Dv * sizeof(float));
    for (size_t i = 0; i < L * S; i++) if (mask[i] > 0.8f) mask[i] = -INFINITY;
    ok = 1;
    for (int causal = 0; ok && causal < 2; causal++) {
        mha_attn_args args = {.out = out1, .ld_out = Dv, .q = q, .ld_q = D, .k = k, .ld_k = D, .v = v, .ld_v = Dv,
                              .mask = mask, .mask_rs = (ptrdiff_t)S, .mask_cs = 1, .causal = causal,
                              .scale = 0.125f, .L = L, .S = S, .D = D, .Dv = Dv};
        mha_status s1 = mha_attention_fused(&args);
        args.out = outn;
        mha_kernels_set_threads(2);
        mha_status s2 = mha_attention_fused(&args);
        mha_kernels_set_threads(1);
        ok = s1 == MHA_OK && s2 == MHA_OK && memcmp(out1, outn, L * Dv * sizeof(float)) == 0;
        if (!ok) snprintf(why, sizeof why, "%s: differs", causal ? "causal" : "mask");
    }
    snprintf(name, sizeof name, "attention_fused[%s]: 2 threads give the very bits of 1 (L=1100 S=700, mask, causal)", isa);
    CHECK(name, ok, "%s", why);
    free(q); free(k); free(v); free(mask); free(out1); free(outn);
}

/* The attention layer (core/attention/sdpa.c, core/attention/multihead.c) shares its (batch, head) slices out over threads: the
 * outputs and weights must be the very bits of one thread, on each path - fused (no weights, a key
 * padding mask, causal), plain keeping the weights (a bool attn_mask per head), plain without
 * weights (bias_kv and zero_attn, one scores slice per part), the trace, and sdpa over broadcast
 * batches with and without weights. */
static bool same_bits(const mha_tensor *x, const mha_tensor *y) {
    return x->storage && y->storage && mha_same_shape(x, y) &&
           memcmp(mha_f32(x), mha_f32(y), mha_numel(x) * sizeof(float)) == 0;
}

static void check_layer_threads(const char *isa) {
    const size_t N = 2, L = 300, E = 64, H = 4;
    mha_seed(11);
    mha_multihead plain = {0}, appended = {0};
    mha_tensor x = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY, am = MHA_TENSOR_EMPTY;
    mha_status st = mha_multihead_init(&plain, &(mha_multihead_options){.embed_dim = E, .num_heads = H, .bias = true});
    if (st == MHA_OK)
        st = mha_multihead_init(&appended, &(mha_multihead_options){.embed_dim = E, .num_heads = H, .bias = true,
                                                                    .add_bias_kv = true, .add_zero_attn = true});
    if (st == MHA_OK) st = mha_randn(&x, 3, (size_t[]){N, L, E});
    if (st == MHA_OK) st = mha_zeros(&kpm, MHA_BOOL, 2, (size_t[]){N, L});
    if (st == MHA_OK) st = mha_zeros(&am, MHA_BOOL, 3, (size_t[]){N * H, L, L});
    if (st != MHA_OK) {
        check_report(0, "attention layer, 2 threads: setup", "%s", mha_errmsg());
        return;
    }
    for (size_t j = L / 2; j < L; j += 3) mha_bool(&kpm)[L + j] = true;
    for (size_t i = 0; i < N * H * L * L; i += 7) mha_bool(&am)[i] = true;

    const struct { const char *name; const mha_multihead *m; mha_forward_options opt; bool trace; } cases[] = {
        {"fused, key padding, causal", &plain, {.key_padding_mask = &kpm, .is_causal = true}, false},
        {"plain, weights per head, bool attn_mask (N·H,L,S)", &plain, {.attn_mask = &am, .need_weights = true}, false},
        {"head mean by blocks of rows, bool attn_mask (N·H,L,S), key padding, causal", &plain,
         {.attn_mask = &am, .key_padding_mask = &kpm, .is_causal = true, .need_weights = true,
          .average_attn_weights = true}, false},
        {"plain without weights, bias_kv and zero_attn, attn_mask", &appended, {.attn_mask = &am}, false},
        {"trace (scores, scaled, masked, weights)", &plain, {.key_padding_mask = &kpm, .need_weights = true}, true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mha_tensor out[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY}, w[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
        mha_trace trace[2] = {{0}, {0}};
        mha_status status[2];
        for (size_t t = 0; t < 2; t++) {
            mha_kernels_set_threads(t + 1);
            mha_kernels_set_split_min(t ? 0 : 64e6); /* 2 threads: split whatever the size */
            status[t] = mha_multihead_forward(&out[t], &w[t], cases[c].m, &x, &x, &x, &cases[c].opt,
                                              cases[c].trace ? &trace[t] : NULL);
        }
        mha_kernels_set_threads(1);
        mha_kernels_set_split_min(64e6);
        bool ok = status[0] == MHA_OK && status[1] == MHA_OK && same_bits(&out[0], &out[1]) &&
                  (!cases[c].opt.need_weights || same_bits(&w[0], &w[1]));
        for (size_t i = 0; ok && cases[c].trace && i < trace[0].count; i++)
            ok = trace[1].count == trace[0].count && same_bits(&trace[0].tensors[i], &trace[1].tensors[i]);
        char name[192];
        snprintf(name, sizeof name, "MultiheadAttention[%s], 2 threads: the very bits of 1 (%s)", isa, cases[c].name);
        CHECK(name, ok, "status %d %d: %s", (int)status[0], (int)status[1], mha_errmsg());
        for (size_t t = 0; t < 2; t++) {
            mha_release(&out[t]);
            mha_release(&w[t]);
            mha_trace_release(&trace[t]);
        }
    }

    /* sdpa: q (2,3,L,16) against k, v (3,L,16) broadcast over the first dim: 6 slices */
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY;
    st = mha_randn(&q, 4, (size_t[]){2, 3, L, 16});
    if (st == MHA_OK) st = mha_randn(&k, 3, (size_t[]){3, L, 16});
    if (st == MHA_OK) st = mha_randn(&v, 3, (size_t[]){3, L, 16});
    for (int with_weights = 0; st == MHA_OK && with_weights < 2; with_weights++) {
        mha_tensor out[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY}, w[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
        mha_status status[2];
        for (size_t t = 0; t < 2; t++) {
            mha_kernels_set_threads(t + 1);
            mha_kernels_set_split_min(t ? 0 : 64e6); /* 2 threads: split whatever the size */
            status[t] = mha_sdpa(&out[t], with_weights ? &w[t] : NULL, &q, &k, &v, &(mha_sdpa_options){.is_causal = true});
        }
        mha_kernels_set_threads(1);
        mha_kernels_set_split_min(64e6);
        bool ok = status[0] == MHA_OK && status[1] == MHA_OK && same_bits(&out[0], &out[1]) &&
                  (!with_weights || same_bits(&w[0], &w[1]));
        char name[192];
        snprintf(name, sizeof name, "sdpa[%s], 2 threads: the very bits of 1 (broadcast batches, causal, %s)", isa,
                 with_weights ? "weights" : "fused");
        CHECK(name, ok, "status %d %d: %s", (int)status[0], (int)status[1], mha_errmsg());
        for (size_t t = 0; t < 2; t++) {
            mha_release(&out[t]);
            mha_release(&w[t]);
        }
    }
    if (st != MHA_OK) check_report(0, "sdpa, 2 threads: setup", "%s", mha_errmsg());
    mha_tensor *all[] = {&x, &kpm, &am, &q, &k, &v};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) mha_release(all[i]);
    mha_multihead_release(&plain);
    mha_multihead_release(&appended);
}

/* ---- self-attention: one (N,L,3E) in-projection (core/attention/multihead.c) ---- */

/* query = key = value one tensor against three equal copies (three (N,L,E) projections): the very
 * bits, on every instruction set, 1 and 2 threads, batched or not, with and without bias, weights
 * and appended keys, at lengths on both sides of the dot-rows path (M·K·4 <= 256 KB). */
/* Where exp underflows, softmax writes 0 on every set, never a subnormal that one set would write and
 * another not: rows whose entries spread over 110 below their max, and -inf. Entries 88 or more below
 * the max are exactly 0, and those less than 87 below are not. */
static void check_softmax_underflow(void) {
    const char *best = mha_kernels_isa(), *isas[] = {"avx512", "avx2", "portable"};
    enum { ROWS = 64, N = 77 };
    static float x[ROWS * N], w[ROWS * N];
    for (size_t i = 0; i < ROWS * N; i++) x[i] = i % 29 == 5 ? -INFINITY : -110.0f * (float)((i * 7919) % 1000) / 999.0f;
    int ok = 1;
    char why[160] = "";
    for (size_t v = 0; v < 3; v++) {
        if (!mha_kernels_use_isa(isas[v])) continue;
        memcpy(w, x, sizeof x);
        mha_softmax_rows(w, N, ROWS, N);
        for (size_t r = 0; ok && r < ROWS; r++) {
            float max = -INFINITY;
            for (size_t j = 0; j < N; j++) max = x[r * N + j] > max ? x[r * N + j] : max;
            for (size_t j = 0; ok && j < N; j++) {
                const float xi = x[r * N + j], wi = w[r * N + j];
                ok = xi - max <= -88.0f ? wi == 0.0f : xi - max <= -87.0f || wi > 0.0f;
                if (!ok) snprintf(why, sizeof why, "%s: row %zu, x %.9g (max %.9g): weight %.9g", isas[v], r,
                                  (double)xi, (double)max, (double)wi);
            }
        }
    }
    mha_kernels_use_isa(best);
    CHECK("softmax_rows: 0 where exp underflows, on every set", ok, "%s", why);
}

static void check_self_attention_bits(void) {
    const char *best = mha_kernels_isa(), *isas[] = {"avx512", "avx2", "portable"};
    const struct { size_t N, L, E, H; bool bias, weights, kv, batched; } cases[] = {
        {1, 64, 512, 8, true, false, false, true},  {2, 5, 64, 4, false, true, false, true},
        {1, 130, 512, 8, true, true, false, false}, {2, 300, 96, 3, true, false, true, true},
        {1, 1, 512, 8, true, true, true, false},    {3, 17, 40, 5, false, false, false, true},
    };
    int bad = 0, ran = 0;
    char first_bad[160] = "";
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mha_seed(100 + c);
        mha_multihead m = {0};
        mha_tensor x = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY;
        size_t shape[3] = {cases[c].N, cases[c].L, cases[c].E};
        const size_t nd = cases[c].batched ? 3 : 2;
        const size_t *sh = cases[c].batched ? shape : shape + 1;
        mha_status st = mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = cases[c].E,
            .num_heads = cases[c].H, .bias = cases[c].bias, .add_bias_kv = cases[c].kv, .add_zero_attn = cases[c].kv});
        if (st == MHA_OK) st = mha_randn(&x, nd, sh);
        if (st == MHA_OK) st = mha_empty(&k, MHA_FLOAT32, nd, sh);
        if (st == MHA_OK) st = mha_empty(&v, MHA_FLOAT32, nd, sh);
        if (st != MHA_OK) {
            check_report(0, "self-attention: setup", "%s", mha_errmsg());
            return;
        }
        memcpy(mha_f32(&k), mha_f32(&x), mha_numel(&x) * sizeof(float));
        memcpy(mha_f32(&v), mha_f32(&x), mha_numel(&x) * sizeof(float));
        mha_forward_options opt = {.need_weights = cases[c].weights, .average_attn_weights = true};
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!mha_kernels_use_isa(isas[i])) continue;
            for (size_t threads = 1; threads <= 2; threads++) {
                mha_kernels_set_threads(threads);
                mha_kernels_set_split_min(threads == 1 ? 8e6 : 0);
                mha_tensor out[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY}, w[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
                mha_status s0 = mha_multihead_forward(&out[0], &w[0], &m, &x, &x, &x, &opt, NULL);
                mha_status s1 = mha_multihead_forward(&out[1], &w[1], &m, &x, &k, &v, &opt, NULL);
                bool ok = s0 == MHA_OK && s1 == MHA_OK && same_bits(&out[0], &out[1]) &&
                          (!cases[c].weights || same_bits(&w[0], &w[1]));
                ran++;
                if (!ok && bad++ == 0)
                    snprintf(first_bad, sizeof first_bad, "case %zu (N=%zu L=%zu E=%zu H=%zu) on %s, %zu thread(s)", c,
                             cases[c].N, cases[c].L, cases[c].E, cases[c].H, isas[i], threads);
                for (int t = 0; t < 2; t++) mha_release(&out[t]), mha_release(&w[t]);
            }
        }
        mha_release(&x), mha_release(&k), mha_release(&v);
        mha_multihead_release(&m);
    }
    mha_kernels_use_isa(best);
    mha_kernels_set_threads(1);
    mha_kernels_set_split_min(8e6);
    CHECK("MultiheadAttention: self-attention's one (N,L,3E) projection gives the bits of three, every ISA, "
          "1 and 2 threads", bad == 0 && ran > 0, "%d of %d runs differ, first %s", bad, ran, first_bad);
}

/* mha_gelu and mha_gelu_grad: bit for bit their references on a sweep of x over [-16, 16] (past
 * |x| = 14, where the far path stops growing |x|), at the near path's ends, zeros, infinities, NaN,
 * subnormals and huge values, each g from a mix of signs, scales and zeros; lengths that leave a
 * ragged tail, so vectors mix near and far lanes. */
static void check_gelu(const char *label) {
    enum { N = 200003 };
    float *x = malloc(N * sizeof *x), *g = malloc(N * sizeof *g), *y = malloc(N * sizeof *y);
    if (!x || !g || !y) {
        check_report(0, "gelu: setup", "%s", "out of memory");
        free(x), free(g), free(y);
        return;
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 1e-30f, -1e-30f, -1.5f,
                             -1.5000001f, 3.0f, 3.0000002f, 14.0f, -14.0f, 13.999999f, -14.000001f, 3e38f, -3e38f,
                             -0.7517916f, -0.75179166f, -0.7517917f};
    const size_t ns = sizeof special / sizeof *special;
    uint32_t seed = 12345;
    for (size_t i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        /* every other value on a ramp over [-16, 16], the rest in [-2, 2], so that vectors mix
         * near and far lanes in every proportion (the far ones gathered or done in place) */
        const float ramp = -16.0f + 32.0f * (float)i / (float)N, mixed = (float)(seed >> 8) / 4194304.0f - 2.0f;
        x[i] = i < ns ? special[i] : i % 2 ? ramp : mixed;
        float scale = (seed >> 28) == 0 ? 0.0f : (float)ldexp(1.0, (int)(seed >> 24 & 31) - 16);
        g[i] = ((seed >> 8 & 0xffff) / 65536.0f - 0.5f) * scale;
    }
    g[3] = INFINITY, g[4] = 1.0f, g[5] = -0.0f;
    size_t bad = 0, first = N;
    for (size_t len = N; len + 3 > N; len--) {   /* three lengths: ragged tails */
        mha_gelu(y, x, len);
        for (size_t i = 0; i < len; i++) {
            float r = mha_gelu_ref(x[i]);
            if (memcmp(&r, &y[i], sizeof r) != 0 && bad++ == 0) first = i;
        }
        mha_gelu_grad(y, g, x, len);
        for (size_t i = 0; i < len; i++) {
            float r = mha_gelu_grad_ref(g[i], x[i]);
            if (memcmp(&r, &y[i], sizeof r) != 0 && bad++ == 0) first = i;
        }
    }
    for (size_t i = 0; i < N; i++) y[i] = x[i];   /* in place: y = gelu(y), then y = g·gelu'(y) */
    mha_gelu(y, y, N);
    for (size_t i = 0; i < N; i++) {
        float r = mha_gelu_ref(x[i]);
        if (memcmp(&r, &y[i], sizeof r) != 0 && bad++ == 0) first = i;
    }
    for (size_t i = 0; i < N; i++) y[i] = g[i];
    mha_gelu_grad(y, y, x, N);
    for (size_t i = 0; i < N; i++) {
        float r = mha_gelu_grad_ref(g[i], x[i]);
        if (memcmp(&r, &y[i], sizeof r) != 0 && bad++ == 0) first = i;
    }
    char name[160];
    snprintf(name, sizeof name, "gelu and its gradient[%s]: the references' bits on %d values, in place too", label,
             (int)N);
    CHECK(name, bad == 0, "%zu differ, the first at x = %.9g", bad, first < N ? (double)x[first] : 0.0);
    free(x), free(g), free(y);
}

/* The GELU references against float64's libm, which tests/fixtures/gen/gen_erf.py's fits were made
 * to meet: gelu within 1e-6 of its value (relative; within 2^-122 where it is smaller, x < -13.1,
 * as Phi's product nears the subnormals and the far path's exp stops at normal floats),
 * gelu' within 3e-7 (absolute), on 2,000,001 points of [-16, 16]; and gelu(inf) = inf, gelu(-inf)
 * and gelu(NaN) NaN, as 0.5·x·erfc(-x/√2) gives them. */
static void check_gelu_accuracy(void) {
    enum { N = 2000001 };
    double worst_rel = 0.0, worst_abs = 0.0, at_rel = 0.0, at_abs = 0.0;
    for (int i = 0; i < N; i++) {
        const float x = -16.0f + 32.0f * (float)i / (float)(N - 1);
        const double xd = x, want = 0.5 * xd * erfc(-xd * M_SQRT1_2);
        const double want_d = 0.5 * erfc(-xd * M_SQRT1_2) + xd * exp(-0.5 * xd * xd) / sqrt(2.0 * M_PI);
        const double err = fabs(mha_gelu_ref(x) - want);
        const double rel = fabs(want) >= 0x1p-122 ? err / fabs(want) : (err > 0x1p-122 ? INFINITY : 0.0);
        if (rel > worst_rel) worst_rel = rel, at_rel = x;
        const double err_d = fabs(mha_gelu_grad_ref(1.0f, x) - want_d);
        if (err_d > worst_abs) worst_abs = err_d, at_abs = x;
    }
    CHECK("gelu reference: within 1e-6 of float64 (relative) on [-16, 16]", worst_rel <= 1e-6,
          "%.3g at x = %.9g", worst_rel, at_rel);
    CHECK("gelu' reference: within 3e-7 of float64 (absolute) on [-16, 16]", worst_abs <= 3e-7,
          "%.3g at x = %.9g", worst_abs, at_abs);
    CHECK("gelu reference: inf, -inf and NaN give inf, NaN and NaN",
          mha_gelu_ref(INFINITY) == INFINITY && isnan(mha_gelu_ref(-INFINITY)) && isnan(mha_gelu_ref(NAN)),
          "%g %g %g", (double)mha_gelu_ref(INFINITY), (double)mha_gelu_ref(-INFINITY), (double)mha_gelu_ref(NAN));
}

/* mha_layer_norm_rows, _rows_backward (its mean and rstd computed, or given) and _columns: bit for
 * bit their references, for row lengths around the lane count and the vector widths (ragged ends of
 * every size), with and without w and b, on rows offset from their mean by up to 1e4 (where the
 * variance's sum cancels most). */
static void check_layer_norm_rows(const char *label) {
    enum { ROWS = 7, MAXN = 300 };
    static float x[ROWS * MAXN], dy[ROWS * MAXN], w[MAXN], b[MAXN], y[ROWS * MAXN], yr[ROWS * MAXN];
    static double mean[ROWS], rstd[ROWS], mean_r[ROWS], rstd_r[ROWS], aw[MAXN], ab[MAXN], aw_r[MAXN], ab_r[MAXN];
    const size_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 100, 128, 255, 300};
    uint32_t seed = 777;
    size_t bad = 0, cases = 0, first_n = 0;
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        const size_t n = lengths[li];
        for (size_t i = 0; i < ROWS * n; i++) {
            seed = seed * 1664525u + 1013904223u;
            const float offset = (float)((i / n) % 3) * 5e3f;
            x[i] = offset + ((seed >> 8) / 16777216.0f - 0.5f) * (float)(1 + i % 5);
            seed = seed * 1664525u + 1013904223u;
            dy[i] = (seed >> 8) / 16777216.0f - 0.5f;
        }
        for (size_t i = 0; i < n; i++) w[i] = 0.5f + (float)i / (float)n, b[i] = (float)i / 7.0f - 3.0f;
        for (int with = 0; with < 2; with++) {
            const float *wp = with ? w : NULL, *bp = with ? b : NULL;
            bool same = true;
            mha_layer_norm_rows(y, mean, rstd, x, wp, bp, ROWS, n, 1e-5f);
            mha_layer_norm_rows_ref(yr, mean_r, rstd_r, x, wp, bp, ROWS, n, 1e-5f);
            same = same && memcmp(y, yr, ROWS * n * sizeof *y) == 0 && memcmp(mean, mean_r, sizeof mean) == 0 &&
                   memcmp(rstd, rstd_r, sizeof rstd) == 0;
            mha_layer_norm_rows_backward(y, mean, rstd, false, dy, x, wp, ROWS, n, 1e-5f);
            mha_layer_norm_rows_backward_ref(yr, mean_r, rstd_r, false, dy, x, wp, ROWS, n, 1e-5f);
            same = same && memcmp(y, yr, ROWS * n * sizeof *y) == 0 && memcmp(mean, mean_r, sizeof mean) == 0 &&
                   memcmp(rstd, rstd_r, sizeof rstd) == 0;
            /* the forward's mean and rstd given (the graph node's way): the same dx */
            mha_layer_norm_rows_backward(y, mean, rstd, true, dy, x, wp, ROWS, n, 1e-5f);
            same = same && memcmp(y, yr, ROWS * n * sizeof *y) == 0;
            mha_layer_norm_rows_backward_ref(y, mean_r, rstd_r, true, dy, x, wp, ROWS, n, 1e-5f);
            same = same && memcmp(y, yr, ROWS * n * sizeof *y) == 0;
            mha_layer_norm_columns(aw, ab, dy, x, n, mean, rstd, ROWS, n);
            mha_layer_norm_columns_ref(aw_r, ab_r, dy, x, n, mean, rstd, ROWS, n);
            same = same && memcmp(aw, aw_r, n * sizeof *aw) == 0 && memcmp(ab, ab_r, n * sizeof *ab) == 0;
            cases++;
            if (!same && bad++ == 0) first_n = n;
        }
    }
    char name[128];
    snprintf(name, sizeof name, "layer norm's rows, backward and columns[%s]: the references' bits", label);
    CHECK(name, bad == 0, "%zu of %zu cases differ, the first at n = %zu", bad, cases, first_n);
}

/* mha_sgemm_bias: the bits of the bias written into C's rows first and accumulated onto
 * (mha_sgemm with accumulate), on every path: dot products of rows (a short A times a Bᵀ), A read
 * in place by rows and by columns, packed, ragged edges, a K past one block (KC), and B as it lies
 * or transposed. */
static void check_sgemm_bias(const char *label) {
    static const size_t shapes[][3] = {{3, 70, 200},   {20, 37, 130},  {50, 300, 64}, {97, 45, 600},
                                       {130, 700, 96}, {13, 17, 5},    {64, 512, 384}, {1, 1, 1}};
    size_t bad = 0, cases = 0;
    char first[64] = "";
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const size_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        float *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b), *bias = malloc(N * sizeof *bias);
        float *c = malloc(M * N * sizeof *c), *r = malloc(M * N * sizeof *r);
        if (!a || !b || !bias || !c || !r) {
            check_report(0, "sgemm_bias: setup", "%s", "out of memory");
            free(a), free(b), free(bias), free(c), free(r);
            return;
        }
        uint32_t seed = (uint32_t)(17 + si);
        for (size_t i = 0; i < M * K; i++) a[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (size_t i = 0; i < K * N; i++) b[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (size_t j = 0; j < N; j++) bias[j] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 1677721.6f - 5.0f;
        for (int form = 0; form < 3; form++) {
            /* 0: A (M,K) rows, B (K,N) rows; 1: B as Wᵀ of a W (N,K); 2: A read by columns, as Xᵀ of an X (K,M) */
            const ptrdiff_t a_rs = form == 2 ? 1 : (ptrdiff_t)K, a_cs = form == 2 ? (ptrdiff_t)M : 1;
            const ptrdiff_t b_rs = form == 1 ? 1 : (ptrdiff_t)N, b_cs = form == 1 ? (ptrdiff_t)K : 1;
            for (size_t i = 0; i < M; i++) memcpy(r + i * N, bias, N * sizeof *r);
            mha_status s1 = mha_sgemm(r, N, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, true);
            for (size_t i = 0; i < M * N; i++) c[i] = NAN;
            mha_status s2 = mha_sgemm_bias(c, N, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, bias);
            cases++;
            if ((s1 != MHA_OK || s2 != MHA_OK || memcmp(c, r, M * N * sizeof *c) != 0) && bad++ == 0)
                snprintf(first, sizeof first, "(%zu,%zu,%zu) form %d", M, K, N, form);
        }
        free(a), free(b), free(bias), free(c), free(r);
    }
    char name[128];
    snprintf(name, sizeof name, "sgemm_bias[%s]: the bits of the bias written first, every path", label);
    CHECK(name, bad == 0, "%zu of %zu cases differ, the first %s", bad, cases, first);
}

/* mha_column_sums: bit for bit its reference, for column counts around the vector widths (ragged
 * ends), a row stride past the columns, values of many scales. */
static void check_column_sums(const char *label) {
    enum { ROWS = 37, LD = 70 };
    static float g[ROWS * LD];
    static double acc[LD], ref[LD];
    uint32_t seed = 99;
    for (size_t i = 0; i < ROWS * LD; i++) {
        seed = seed * 1664525u + 1013904223u;
        g[i] = ((seed >> 8) / 16777216.0f - 0.5f) * (float)ldexp(1.0, (int)(seed >> 2 & 63) - 32);   /* sums that round */
    }
    size_t bad = 0, first = 0;
    for (size_t cols = 0; cols <= LD; cols++) {
        mha_column_sums(acc, g, LD, ROWS, cols);
        mha_column_sums_ref(ref, g, LD, ROWS, cols);
        if (memcmp(acc, ref, cols * sizeof *acc) != 0 && bad++ == 0) first = cols;
    }
    char name[160];
    snprintf(name, sizeof name, "column_sums[%s]: the reference's bits, 0 to %d columns", label, (int)LD);
    CHECK(name, bad == 0, "%zu column counts differ, the first %zu", bad, first);
}

/* mha_row_dots against its reference, bit for bit: every row count to 19 (whole blocks of rows
 * and the rest) and every length to 41 (whole blocks of keys and the rest), strided rows, values
 * of every exponent so that the double sums round, an inf and a NaN among them. */
static void check_row_dots(const char *label) {
    enum { ROWS = 19, N = 41, LDA = 45, LDB = 43 };
    static float a[ROWS * LDA], b[ROWS * LDB];
    float dot[ROWS], ref[ROWS];
    uint32_t seed = 7;
    for (size_t i = 0; i < ROWS * LDA; i++) {
        seed = seed * 1664525u + 1013904223u;
        a[i] = ((seed >> 8) / 16777216.0f - 0.5f) * (float)ldexp(1.0, (int)(seed >> 2 & 31) - 16);
    }
    for (size_t i = 0; i < ROWS * LDB; i++) {
        seed = seed * 1664525u + 1013904223u;
        b[i] = ((seed >> 8) / 16777216.0f - 0.5f) * (float)ldexp(1.0, (int)(seed >> 2 & 31) - 16);
    }
    a[3 * LDA + 5] = INFINITY, b[11 * LDB + 30] = NAN;
    size_t bad = 0, first_rows = 0, first_n = 0;
    for (size_t rows = 0; rows <= ROWS; rows++)
        for (size_t n = 0; n <= N; n++) {
            mha_row_dots(dot, a, LDA, b, LDB, rows, n);
            mha_row_dots_ref(ref, a, LDA, b, LDB, rows, n);
            if (memcmp(dot, ref, rows * sizeof *dot) != 0 && bad++ == 0) first_rows = rows, first_n = n;
        }
    char name[160];
    snprintf(name, sizeof name, "row_dots[%s]: the reference's bits, 0 to %d rows of 0 to %d", label, (int)ROWS,
             (int)N);
    CHECK(name, bad == 0, "%zu shapes differ, the first %zu rows of %zu", bad, first_rows, first_n);
}

/* mha_exp_sum against its reference, bit for bit: every length to 70 (whole blocks of lanes and the
 * rest), rows of logits of every spread, a -inf among them, a NaN, and a row all -inf (max -inf:
 * NaN). */
static void check_exp_sum(const char *label) {
    enum { N = 70 };
    static float x[N];
    uint32_t seed = 11;
    size_t bad = 0, first_n = 0;
    for (int kind = 0; kind < 4; kind++)
        for (size_t n = 0; n <= N; n++) {
            float max = -INFINITY;
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1664525u + 1013904223u;
                x[i] = ((seed >> 8) / 16777216.0f - 0.5f) * (float)ldexp(1.0, (int)(seed >> 2 & 15));
                if (kind == 1 && i == n / 2) x[i] = -INFINITY;
                if (kind == 2 && i == n / 3) x[i] = NAN;
                if (kind == 3) x[i] = -INFINITY;
                max = x[i] > max || isnan(x[i]) ? x[i] : max;
            }
            const double got = mha_exp_sum(x, n, max), want = mha_exp_sum_ref(x, n, max);
            if (memcmp(&got, &want, sizeof got) != 0 && bad++ == 0) first_n = n;
        }
    char name[160];
    snprintf(name, sizeof name, "exp_sum[%s]: the reference's bits, 0 to %d logits, -inf and NaN among them", label,
             (int)N);
    CHECK(name, bad == 0, "%zu rows differ, the first of %zu", bad, first_n);
}

/* mha_exp_double_ref against libm's exp in long double: within 2 ulp over [-708.3, 0] (every
 * binade of |d| down to 2^-60), 0 past EXPD_MIN, NaN kept. */
static void check_exp_double(void) {
    double worst = 0.0, at = 0.0;
    for (int e = -60; e <= 9; e++)
        for (int k = 0; k < 2000; k++) {
            const double d = -ldexp(1.0 + k / 2000.0, e);
            if (d < -708.3) continue;
            const long double want = expl((long double)d);
            const double got = mha_exp_double_ref(d), ulp = ldexp(1.0, ilogb((double)want) - 52);
            const double err = (double)fabsl((long double)got - want) / ulp;
            if (err > worst) worst = err, at = d;
        }
    CHECK("mha_exp_double_ref: within 2 ulp of exp on [-708.3, 0]", worst <= 2.0, "%.2f ulp at %.17g", worst, at);
    CHECK("mha_exp_double_ref: 0 below -708.39, NaN kept, exp(0) = 1",
          mha_exp_double_ref(-709.0) == 0.0 && mha_exp_double_ref(-INFINITY) == 0.0 &&
              isnan(mha_exp_double_ref(NAN)) && mha_exp_double_ref(0.0) == 1.0,
          "%g %g", mha_exp_double_ref(-709.0), mha_exp_double_ref(0.0));
}

/* mha_fetch: the cursor walks the rows added, matrix by matrix, and stops at the end; a NULL
 * matrix, an empty one and one past MHA_FETCH_MATS are not added. (What a fetch does to the
 * caches is timed by the benchmark, not here.) */
static void check_fetch(void) {
    static float a[3 * 40], b[5 * 7];
    mha_fetch f = {0};
    mha_fetch_add(&f, a, 3, 40, 33);
    mha_fetch_add(&f, NULL, 9, 1, 1);
    mha_fetch_add(&f, b, 0, 7, 7);
    mha_fetch_add(&f, b, 5, 7, 7);
    CHECK("mha_fetch_add: two matrices of 3 + 5 rows", f.n == 2 && f.total == 8, "n %zu, total %zu", f.n, f.total);
    mha_fetch_rows(&f, 4);
    CHECK("mha_fetch_rows: 4 rows end on the second matrix's second row", f.at == 1 && f.row == 1, "at %zu, row %zu",
          f.at, f.row);
    mha_fetch_rows(&f, 100);
    mha_fetch_rows(&f, 1);
    CHECK("mha_fetch_rows: past the end it stops", f.at == 2 && f.row == 0, "at %zu, row %zu", f.at, f.row);
    mha_fetch w = {0};
    mha_fetch_add(&w, a, 3, 40, 33);
    mha_fetch_add_out(&w, b, 5, 7, 7);
    mha_fetch_rows(&w, w.total);
    CHECK("mha_fetch_add_out: a matrix to be written, after one read", w.n == 2 && !w.m[0].write && w.m[1].write &&
          w.at == 2, "n %zu, at %zu", w.n, w.at);
    mha_fetch g = {0};
    for (int i = 0; i < MHA_FETCH_MATS + 2; i++) mha_fetch_add(&g, a, 1, 1, 1);
    CHECK("mha_fetch_add: at most MHA_FETCH_MATS matrices", g.n == MHA_FETCH_MATS && g.total == MHA_FETCH_MATS,
          "n %zu", g.n);
}

/* mha_abs_max_bits against its reference (a plain loop): every length to 70 at every alignment,
 * with one special value (inf, -inf, NaN, -NaN, the largest float, -0) at each position in turn
 * among values of every sign and exponent. */
static void check_abs_max_bits(const char *label) {
    enum { N = 70, ALIGN = 4 };
    static float x[N + ALIGN];
    const float special[] = {INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -0.0f};
    uint32_t seed = 5;
    size_t bad = 0, first_n = 0;
    for (size_t s = 0; s < sizeof special / sizeof *special; s++)
        for (size_t at = 0; at < N; at++)
            for (size_t off = 0; off < ALIGN; off++)
                for (size_t n = 0; n <= N; n += 1 + (n >= 20) * 6) {
                    for (size_t i = 0; i < N + ALIGN; i++) {
                        seed = seed * 1664525u + 1013904223u;
                        x[i] = ((seed >> 8) / 16777216.0f - 0.5f) * (float)ldexp(1.0, (int)(seed >> 2 & 63) - 32);
                    }
                    x[off + at] = special[s];
                    if (mha_abs_max_bits(x + off, n) != mha_abs_max_bits_ref(x + off, n) && bad++ == 0) first_n = n;
                }
    char name[160];
    snprintf(name, sizeof name, "abs_max_bits[%s]: the reference's answer, 0 to 70 floats, inf and NaN anywhere",
             label);
    CHECK(name, bad == 0, "%zu cases differ, the first of %zu floats", bad, first_n);
}

/* Every kernel check runs on every instruction set, on one thread and split over two with the split
 * threshold at 0, so that every call of two register tiles or query tiles or more is split, at the
 * awkward sizes too (the test sets both itself: MHA_THREADS in the environment changes nothing here). */
int main(void) {
    const char *best = mha_kernels_isa();
    mha_kernels_set_threads(1);
    check_exact();
    check_softmax_underflow();
    check_self_attention_bits();
    check_gelu_accuracy();
    check_exp_double();
    const char *isas[] = {"avx512", "avx2", "portable"};
    for (size_t threads = 1; threads <= 2; threads++) {
        mha_kernels_set_threads(threads);
        mha_kernels_set_split_min(threads == 1 ? 64e6 : 0);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!mha_kernels_use_isa(isas[i])) {
                if (threads == 1) printf("# this CPU cannot run %s: its kernels are not tested here\n", isas[i]);
                continue;
            }
            char label[64];
            snprintf(label, sizeof label, threads == 1 ? "%s" : "%s, 2 threads", isas[i]);
            check_sgemm(label);
            check_sgemm_bias(label);
            check_softmax_rows(label);
            check_softmax_rows_sum(label);
            if (threads == 1) check_gelu(label);
            if (threads == 1) check_layer_norm_rows(label);
            if (threads == 1) check_column_sums(label);
            if (threads == 1) check_row_dots(label);
            if (threads == 1) check_abs_max_bits(label);
            if (threads == 1) check_exp_sum(label);
            check_attention(label);
            check_interrupt(label);
            if (threads == 1) {
                check_threads_identical(isas[i]);
                check_layer_threads(isas[i]);
            }
        }
        mha_kernels_use_isa(best);
        check_interrupt_while_running(threads == 1 ? best : "2 threads");
    }
    mha_kernels_set_threads(1);
    mha_kernels_set_split_min(64e6);
    check_fetch();
    CHECK("mha_kernels_use_isa: an unknown name is refused", !mha_kernels_use_isa("sse9"), "%s", "accepted");
    mha_kernels_use_isa(best);
    CHECK_DONE();
}
