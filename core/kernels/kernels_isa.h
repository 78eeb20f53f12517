/* core/kernels/kernels_isa.h - private to the kernels: the pieces each instruction set has its own
 * compiled copy of (the register tile of the matrix multiply, the online-softmax step, packing)
 * that core/kernels/kernels.c drives. */
#ifndef MHA_KERNELS_ISA_H
#define MHA_KERNELS_ISA_H

#include <stdbool.h>
#include <stddef.h>

struct mha_attn_args; /* kernels.h */

/* the blocking's arithmetic, for kernels.c and rows.c alike */
static inline size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static inline size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Packed layouts (the packing routines in kernels.c write them):
 *   an A panel holds MR rows of A over kc columns, column after column: A(i,p) at a[p*MR + i];
 *   a B panel holds NR columns of B over kc rows, row after row:        B(p,j) at b[p*NR + j].
 * The tile broadcasts one A value and multiplies it by NR/lanes vectors of B. */
typedef struct kernel_isa {
    const char *name;   /* "avx512", "avx2", "portable" */
    size_t mr, nr;      /* the register tile: MR rows by NR columns */
    /* c (MR,NR) with row stride ldc  =  (add ? c : bias ? bias : 0) + a·b  over kc, a and b packed
     * panels, bias (NR floats, or NULL) added to every row (a linear layer's bias, in the tile's
     * store: the same sum as bias written into c first and added); with col_scale (NR floats) not
     * NULL, c is first scaled column by column: c·diag(col_scale) + a·b (the fused attention's
     * rescaling of what it accumulated, at no extra pass). The tiles below take add and bias
     * alike. */
    void (*tile)(size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add, const float *col_scale,
                 const float *bias);
    /* tile on the first `rows` (< MR) rows of the A panel: the tile's loop on a third or two
     * thirds of its rows where rows fit, so a ragged last panel (Dv = 64 = 5·12 + 4) does not
     * multiply its zero padding. Each row's sum is tile's, bit for bit; rows up to the third
     * taken are written (those past `rows` from the panel's zeros): c has room for them. */
    void (*tile_part)(size_t rows, size_t kc, const float *a, const float *b, float *c, size_t ldc, bool add,
                      const float *col_scale, const float *bias);
    /* One key tile of online softmax for NR queries side by side. scores (nk,NR): row p holds key
     * p's score for each query. With m, l the running max and sum per query (NR each):
     *   m' = max(m, max_p scores[p]);  scores[p] <- exp(scores[p] - m');
     *   alpha = exp(m - m');  l <- l·alpha + sum_p scores[p];  m <- m'
     * alpha (NR) is written: the factor that rescales what was accumulated before this tile.
     * A query whose scores are all -inf so far keeps m = -inf, l = 0 and gets exp(...) = 0. */
    void (*softmax_step)(float *scores, size_t nk, float *m, float *l, float *alpha);
    /* softmax of one contiguous row in place: x_j <- exp(x_j - max) / sum; all -inf -> all NaN.
     * sum, when not NULL (n floats), gets each probability added as it is written: sum_j += x_j
     * (the head mean of MultiheadAttention's weights, with no second pass over the row) */
    void (*softmax_row)(float *x, size_t n, float *sum);
    /* One B panel from a B stored transposed (b_rs = 1: each column of B contiguous, columns b_cs
     * apart, as Wᵀ and Kᵀ are read): dst[p*NR + j] = b[j*b_cs + p]·scale for p < kc, j < cols <=
     * NR, and 0 for cols <= j < NR. A transposition, done in registers; NULL: kernels.c's plain
     * loop does it. */
    void (*pack_b_trans)(float *dst, const float *b, ptrdiff_t b_cs, size_t kc, size_t cols, float scale);
    /* Whole B panels from a B with contiguous rows (b_cs = 1: W of dX = dY·W, X of dW = dYᵀ·X),
     * row by row so that B is read in one sweep: dst[(q*kc + p)*NR + j] = b[p*b_rs + q*NR + j]
     * times scale for p < kc, q < panels, j < NR. In the set's vectors (every set has one). */
    void (*pack_b_rows)(float *dst, const float *b, ptrdiff_t b_rs, size_t kc, size_t panels, float scale);
    /* C (M,N) row stride ldc  =  (add ? C : bias ? bias : 0) + A·Bᵀ  for A (M,K) and Bt (N,K),
     * both with contiguous rows (lda, ldb apart): each C[i,j] the dot product of two contiguous
     * rows, without packing, for an A of a few rows (mha_sgemm says when). Each element is summed
     * in the same order wherever it lies in a tile, so any split of C over threads gives the same
     * bits. NULL: not written for this set. */
    void (*dot_rows)(float *c, size_t ldc, const float *a, size_t lda, const float *bt, size_t ldb, size_t M,
                     size_t N, size_t K, bool add, const float *bias);
    /* One A panel from an A with contiguous rows (a_cs = 1: x, the weights of a block of queries):
     * dst[p*MR + i] = a[i*a_rs + p] for p < kc, i < rows <= MR, and 0 for rows <= i < MR. A
     * transposition in registers; NULL: kernels.c's plain loop does it. */
    void (*pack_a_rows)(float *dst, const float *a, ptrdiff_t a_rs, size_t kc, size_t rows);
    /* A whole block of A panels from an A with contiguous columns
     * (a_rs = 1: dYᵀ of dW = dYᵀ·X, Pᵀ of dV = Pᵀ·dO, the attention's Vᵀ), rows (any number) by kc:
     * row i goes to panel i/MR, as dst[(i/MR)*MR*kc + p*MR + i%MR] = a[p*a_cs + i], the last panel
     * padded with zeros. Copies of MR floats, in vectors; NULL: kernels.c's plain loop does it
     * panel by panel. */
    void (*pack_a_cols)(float *dst, const float *a, ptrdiff_t a_cs, size_t kc, size_t rows);
    /* The tile with A read where it lies, unpacked, for an A with contiguous rows (a_cs = 1): c
     * (MR,NR) row stride ldc = (add ? c : 0) + A·b over kc, A(i,p) at a[i*a_rs + p], b a packed
     * panel. The same FMAs in the same order as tile on the panel pack_a_rows makes of the same
     * rows, so the same bits. rows <= MR: rows at and past `rows` read row rows-1 again
     * (never memory past A) or are not computed at all; the caller keeps only the first `rows`
     * rows of c, the others may be left as they were. For products too
     * narrow for packing A to pay (mha_sgemm says when); NULL: not written for this set. */
    void (*tile_a_rows)(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, size_t rows, const float *b, size_t kc,
                        bool add, const float *bias);
    /* The tile with A read where it lies, unpacked, for an A with contiguous columns (a_rs = 1):
     * c (MR,NR) row stride ldc = (add ? c : 0) + A·b over kc, A(i,p) at a[p*a_cs + i] for all MR
     * rows (the caller packs a ragged last panel instead), b a packed panel. The same FMAs in the
     * same order as tile on the panel pack_a_cols makes of the same rows, so the same bits. For
     * products too narrow for packing A to pay (dW = dYᵀ·X, dV = Pᵀ·dO; mha_sgemm says when). */
    void (*tile_a_cols)(float *c, size_t ldc, const float *a, ptrdiff_t a_cs, const float *b, size_t kc, bool add,
                        const float *bias);
    /* y = gelu(x) and dx = g·gelu'(x) for n contiguous floats, bit for bit mha_gelu_ref and
     * mha_gelu_grad_ref (kernels.h) element by element: the same float operations over W lanes. */
    void (*gelu)(float *y, const float *x, size_t n);
    void (*gelu_grad)(float *dx, const float *g, const float *x, size_t n);
    /* Layer norm's rows, forward and backward, and its backward's column sums: mha_layer_norm_rows,
     * mha_layer_norm_rows_backward and mha_layer_norm_columns of kernels.h, bit for bit their
     * references (each operation rounded as written, the sums over MHA_LN_LANES lanes on every
     * set). */
    void (*layer_norm_rows)(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                            size_t rows, size_t n, float eps);
    void (*layer_norm_rows_backward)(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                     const float *x, const float *w, size_t rows, size_t n, float eps);
    void (*layer_norm_columns)(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                               const double *mean, const double *rstd, size_t rows, size_t cols);
    /* mha_column_sums of kernels.h, bit for bit its reference. */
    void (*column_sums)(double *acc, const float *g, size_t ld, size_t rows, size_t cols);
    /* mha_row_dots of kernels.h, bit for bit its reference. */
    void (*row_dots)(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n);
    /* The fused attention for one query (args->L = 1, a decoding step), with K and V read where
     * they lie instead of packed: keys by tiles of key_tile (the fused path's cut, at most
     * MHA_ONE_QUERY_KEYS; D and Dv at most MHA_ONE_QUERY_DIM), each score, exponential, sum and
     * rescaling the very operation the fused path does for that query's lane, so the same bits.
     * NULL: not written for this set. */
    void (*attend_one)(const struct mha_attn_args *args, size_t key_tile);
    /* mha_abs_max_bits of kernels.h: its reference's answer (a maximum: any order gives it). */
    uint32_t (*abs_max_bits)(const float *x, size_t n);
    /* mha_exp_sum of kernels.h, bit for bit its reference. */
    double (*exp_sum)(const float *x, size_t n, double max);
} kernel_isa;

/* The float exp of the softmax (kernels_simd.c's vexp) and of GELU (rows.c, rows_simd.c):
 * exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x - n·ln 2 in [-ln2/2, ln2/2]; ln 2 is split in a
 * high part exact in float and a low part, so n·EXP_LN2_HI has no rounding error. exp(r) is
 * Cephes' degree-7 minimax polynomial, EXP_P highest first then r²·p + (r + 1) (relative error
 * about 1e-7, the float ulp). Below EXP_MIN, where n = -126 would no longer make 2^n a normal
 * float, every set returns 0. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO (-2.12194440e-4f)
#define EXP_MIN (-87.3f)
static const float EXP_P[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/* exp in double of mha_exp_sum (rows.c's mha_exp_double_ref, rows_simd.c's lanes): n rounded by
 * adding and taking away 1.5·2^52, ln 2 = EXPD_LN2_HI + EXPD_LN2_LO (fdlibm's split: n·EXPD_LN2_HI
 * exact for |n| < 2^11), EXPD_TAYLOR[i] = 1/(EXPD_DEG - i)! highest power first. */
#define EXPD_LOG2E 1.4426950408889634
#define EXPD_ROUND 6755399441055744.0
#define EXPD_LN2_HI 6.93147180369123816490e-01
#define EXPD_LN2_LO 1.90821492927058770002e-10
#define EXPD_MIN (-708.39)
enum { EXPD_DEG = 13 };
static const double EXPD_TAYLOR[EXPD_DEG + 1] = {
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
    1.0 / 40320.0,      1.0 / 5040.0,      1.0 / 720.0,      1.0 / 120.0,     1.0 / 24.0,
    1.0 / 6.0,          0.5,               1.0,              1.0,
};

/* GELU in float, for the references (rows.c, which holds the coefficients) and rows_simd.c alike:
 * near (GELU_NEAR_LO <= x <= GELU_NEAR_HI) polynomials in t = x²·GELU_NEAR_SCALE - 1; far from
 * erfc(z) = exp(-z²)·erfcx(z), z = min(|x|, GELU_A_MAX)/√2, erfcx a polynomial in (z - 2)/(z + 2),
 * exp(-x²/2) from x's top GELU_SPLIT_MASK bits squared (exact) and the rest, with the exp above
 * (0 past -EXP_MIN). */
enum { GELU_NEAR_DEG = 10, GELU_FAR_DEG = 12 };
extern const float mha_gelu_near_phi[GELU_NEAR_DEG + 1];  /* 2·Phi(x) = 1 + x·P(t) */
extern const float mha_gelu_near_grad[GELU_NEAR_DEG + 1]; /* gelu'(x) = 0.5 + x·R(t) */
extern const float mha_gelu_far_erfcx[GELU_FAR_DEG + 1];  /* exp(z²)·erfc(z) */
#define GELU_NEAR_LO (-1.5f)
#define GELU_NEAR_HI 3.0f
#define GELU_NEAR_SCALE (2.0f / 9.0f)
#define GELU_A_MAX 14.0f
#define GELU_SPLIT_MASK 0xFFFFF000u
#define GELU_INV_SQRT2 0.70710678118654752440f
#define GELU_INV_SQRT_2PI 0.39894228040143267794f
#define GELU_ROUND 12582912.0f /* 1.5·2^23: adding and removing it rounds to an integer */

/* attend_one's largest key tile, and the largest D and Dv it takes (its scores, q·scale and sums on
 * the stack) */
enum { MHA_ONE_QUERY_KEYS = 256, MHA_ONE_QUERY_DIM = 256 };

/* The set kernels.c chose for this CPU (or MHA_ISA, or mha_kernels_use_isa): for rows.c and
 * attention_fused.c. */
const kernel_isa *mha_kernels_current(void);

/* kernels.c's pieces the fused attention (attention_fused.c) builds on. Scratch: one mha_alloc
 * carved into n buffers of sizes[i] floats, each on a cache line (false: out of memory). */
typedef struct mha_scratch {
    void *base;
    size_t nbytes;
} mha_scratch;
bool mha_scratch_alloc(mha_scratch *s, float **bufs, const size_t *sizes, size_t n);
void mha_scratch_free(mha_scratch *s);
/* A (mc,kc), (i,p) at a[i*a_rs + p*a_cs], into panels of mr rows (the last padded with zeros) */
void mha_pack_a(const kernel_isa *k, float *dst, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, size_t mc,
                size_t kc, size_t mr);
/* B (kc,nc), (p,j) at b[p*b_rs + j*b_cs], times scale, into panels of k->nr columns */
void mha_pack_b(const kernel_isa *k, float *dst, const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs, size_t kc,
                size_t nc, float scale);
/* k->tile on the first `rows` rows of an A panel (k->tile_part where they are fewer than MR) */
void mha_tile_rows(const kernel_isa *k, size_t rows, size_t kc, const float *a, const float *b, float *c,
                   size_t ldc, bool add, const float *col_scale, const float *bias);

/* Two sources, core/kernels/kernels_simd.c and rows_simd.c, compiled once per set (Makefile). */
extern const kernel_isa mha_kernels_portable; /* 4x8 tile, 4-lane vectors of plain C */
#if defined(__x86_64__) && defined(__GNUC__)
#define MHA_KERNELS_X86 1
extern const kernel_isa mha_kernels_avx512;   /* 12x32 tile, 16 lanes */
extern const kernel_isa mha_kernels_avx2;     /* 6x16 tile, 8 lanes */
#endif

#endif
