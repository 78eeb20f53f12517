/* core/kernels/kernels.h - the raw-pointer compute kernels under the tensor ops: matrix multiply
 * and fused attention, each a fast kernel beside the plain reference kernel that tests hold it
 * equal to. */
#ifndef MHA_KERNELS_H
#define MHA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "base/alloc.h"
#include "base/status.h"

/* C = A·B (+ C when accumulate).  A (M,K) with element (i,p) at a[i*a_rs + p*a_cs];
 * B (K,N) with (p,j) at b[p*b_rs + j*b_cs]; C (M,N) row-major with row stride ldc.
 * General strides let callers pass a transposed operand (linear's Wᵀ, attention's Kᵀ) without a
 * copy. */
void mha_sgemm_ref(float *c, size_t ldc,
                   const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                   size_t M, size_t N, size_t K, bool accumulate);
/* The fast kernel: packed, cache-blocked, register-tiled. MHA_E_NOMEM, MHA_E_INTERRUPTED. */
mha_status mha_sgemm(float *c, size_t ldc,
                     const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                     const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                     size_t M, size_t N, size_t K, bool accumulate);

/* The same with C = bias + A·B: bias (N) in every row of C, added in the tiles' store where it
 * was written into C first - the very bits of writing it first and accumulating. */
mha_status mha_sgemm_bias(float *c, size_t ldc,
                          const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                          const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                          size_t M, size_t N, size_t K, const float *bias);

/* A product of a causal attention slice (q·kᵀ, weights·v and their backward) that skips what
 * its triangle makes zero or unwanted, where it reads A in place (a narrow product, below):
 *   MHA_TRI_C_LOWER: only C[i,j] with j <= i + off is wanted; a register tile wholly past that is
 *     set to 0 (left as it is when accumulating) rather than computed;
 *   MHA_TRI_A_LOWER: A[i,p] = 0 for p > i + off; each tile's sum stops after its last row's last;
 *   MHA_TRI_A_UPPER: A[i,p] = 0 for p < i - off; each tile's sum starts at its first row's first.
 * A's zeros are skipped only against a block of B that is finite, so each term left out is ±0:
 * the bits of mha_sgemm (where C, when accumulating, holds no -0). Other paths compute all of C,
 * as mha_sgemm does. */
typedef enum mha_tri { MHA_TRI_NONE, MHA_TRI_C_LOWER, MHA_TRI_A_LOWER, MHA_TRI_A_UPPER } mha_tri;
mha_status mha_sgemm_tri(float *c, size_t ldc,
                         const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                         const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                         size_t M, size_t N, size_t K, bool accumulate, mha_tri tri, ptrdiff_t off);

/* B packed once, for many products against it (a head's K and V, which every block of queries of
 * MultiheadAttention's head mean multiplies): mha_sgemm_pack_b writes B (K,N) (element (p,j) at
 * b[p*b_rs + j*b_cs]) into `packed`, mha_sgemm_packed_b_size(N, K) floats, as mha_sgemm packs it;
 * then mha_sgemm_packed computes C (+)= A·B as mha_sgemm does - the very bits of mha_sgemm's packed
 * path - on the calling thread, packing only A. */
size_t mha_sgemm_packed_b_size(size_t N, size_t K);
void mha_sgemm_pack_b(float *packed, const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs, size_t N, size_t K);
mha_status mha_sgemm_packed(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *packed_b,
                            size_t M, size_t N, size_t K, bool accumulate);

/* A short A (at most 256 KiB) times a B stored transposed (x·Wᵀ), both with contiguous rows, at a
 * depth K of 128 or more, is computed as dot products of rows, without packing
 * (kernels_isa.h, dot_rows), on every instruction set. Its sums run in another order than the
 * packed path's, so its bits differ from those of the same product with other strides
 * (within the rounding the tests allow). A narrow product (N of at most 16 register tiles: 256
 * columns on AVX2, 512 on AVX-512) whose A has contiguous rows reads A in place instead of packing
 * it, on every instruction set: the same bits as the packed path. The tests switch either path off
 * (kernels/kernels_testing.h). */

/* The instruction set the fast kernels use: "avx512", "avx2" or "portable", the best this CPU has
 * unless the environment variable MHA_ISA names another it supports. mha_kernels_use_isa switches
 * (tests run every path on one machine); false, and no change, for a name this CPU cannot run.
 * Not to be called while a kernel runs on another thread. */
const char *mha_kernels_isa(void);
bool mha_kernels_use_isa(const char *name);
/* The instruction sets this CPU can run, fastest first, ending in "portable": names[0..n), n
 * returned (at most max). A test or a user compares them; the results of each differ only in
 * rounding. */
size_t mha_kernels_isa_list(const char **names, size_t max);
/* The matrix product's blocking: MC rows of A and NC columns of B per packed block, chosen from the
 * caches (L1d, L2, L3 in bytes as read, 0 when unknown); KC, the depth of one pass, is the same on
 * every CPU (it fixes the order of each sum, so every variant and CPU gives the same bits). */
void mha_kernels_blocking(size_t *mc, size_t *kc, size_t *nc, size_t caches[3]);

/* Threads. MHA_THREADS=N in the environment (read once, at the first call; default: every online
 * core, sysconf(_SC_NPROCESSORS_ONLN)) lets one kernel call split its work over N threads:
 * mha_sgemm by blocks of rows or columns of C, the fused attention by query tiles, the attention
 * layer (core/attention/sdpa.c, core/attention/multihead.c) by (batch, head) slices. Only
 * independent outputs are split, never a sum, so results are bit-identical to one thread on the
 * same instruction set. A call started on a thread that already runs a part stays on that thread
 * (no nesting). mha_kernels_threads: the threads a call made now may use (1 inside a part).
 * mha_kernels_set_threads: the setting, clamped to 1..64 (tests and the benchmark); not while a
 * kernel runs on another thread. */
size_t mha_kernels_threads(void);
void mha_kernels_set_threads(size_t n);

/* The parts to split a call into: min(mha_kernels_threads(), units) for `units` independent pieces
 * of work, or 1 when the whole call is under 8 MFLOP (too little to pay for handing a part to a
 * worker; the tests change that threshold, kernels/kernels_testing.h). */
size_t mha_kernels_parts(size_t units, double flops);

/* One part of a split call: does part `part` of `nparts` (its share of independent outputs). */
typedef mha_status (*mha_part_fn)(void *ctx, size_t part, size_t nparts);
/* Runs fn(ctx, part, nparts) for every part and waits for all of them (core/kernels/pool.c): part
 * 0 on the calling thread, the others claimed one at a time by whichever thread is free - the
 * caller or a worker of a pool started at the first split call (signals blocked there, so Ctrl-C
 * reaches the caller; joined at exit) - so a call never waits for a thread the scheduler has not
 * woken, and nparts may exceed the threads. Parts run one after another on the caller inside a
 * part, while another thread's call uses the pool, or when a worker cannot be started. Returns
 * MHA_OK, or the status and message of the lowest-numbered part that failed, after every part
 * ended: each part frees its own scratch and polls mha_interrupted() itself. */
mha_status mha_run_parts(mha_part_fn fn, void *ctx, size_t nparts);

/* softmax along each of `rows` rows of n contiguous floats (row stride ld), in place:
 * x_j <- exp(x_j - max x) / sum_k exp(x_k - max x), vectorised; a row of all -inf becomes NaN. */
void mha_softmax_rows(float *x, size_t ld, size_t rows, size_t n);
/* The same, as plain loops summing in double: the reference mha_softmax_rows is held equal to. */
void mha_softmax_rows_ref(float *x, size_t ld, size_t rows, size_t n);
/* softmax as above, and each probability added into sum (rows, n; row stride ld_sum) as it is
 * written: sum_ij += w_ij. One pass over the rows gives both the weights and their running sum over
 * heads (MultiheadAttention's head mean). sum NULL: plain softmax. */
void mha_softmax_rows_sum(float *x, size_t ld, size_t rows, size_t n, float *sum, size_t ld_sum);
void mha_softmax_rows_sum_ref(float *x, size_t ld, size_t rows, size_t n, float *sum, size_t ld_sum);

/* y = gelu(x) = x·Phi(x) for n contiguous floats, and dx = g·gelu'(x) = g·(Phi(x) + x·phi(x)):
 * vectorised, each element the very float of the references below (the same float operations
 * over W lanes; the tests hold every variant to them). */
void mha_gelu(float *y, const float *x, size_t n);
void mha_gelu_grad(float *dx, const float *g, const float *x, size_t n);
/* The references, one element each, in float: for -1.5 <= x <= 3 polynomials in x², elsewhere
 * erfc(|x|/√2) as exp(-x²/2) times a polynomial, so that the small tail of a negative x, where
 * 1 + erf cancels, keeps its relative accuracy. gelu is within 1e-6 of float64's erfc formula
 * (relative, while |gelu| >= 2^-122) and gelu' within 3e-7 (absolute); test_kernels checks. */
float mha_gelu_ref(float x);
float mha_gelu_grad_ref(float g, float x);

/* Layer norm's rows, for core/nn/layer_norm.c (which splits them over threads), in double:
 *   forward, x and y (rows, n):  mean, rstd = 1/sqrt(biased variance + eps) of each row, then
 *       y = ((x - mean)·rstd)·w + b, rounded to float once (w, b (n) or NULL: no scale, no shift);
 *       mean and rstd (rows each) written unless NULL;
 *   backward, dy, x and dx (rows, n):  x̂ = (x - mean)·rstd, ĝ = dy∘w (dy when w is NULL),
 *       dx = (ĝ - mean(ĝ) - x̂·mean(ĝ∘x̂))·rstd; mean and rstd (rows each) the forward's when
 *       given (read: the same bits as computed again), else computed and written;
 *   columns, dy and x (rows, cols) row stride ld:  acc_w = Σ_rows dy∘x̂, acc_b = Σ_rows dy (cols
 *       each, overwritten), over the rows in order, with the mean and rstd the backward wrote.
 * A row's sums run over MHA_LN_LANES lanes (element i of its whole blocks of MHA_LN_LANES into lane
 * i mod MHA_LN_LANES), the lanes halved (lane j + lane j + h, h = 8, 4, 2, 1), then the ragged end
 * added one by one: the same order on every instruction set, so every set gives the bits of the
 * references below, which say it as plain loops. */
enum { MHA_LN_LANES = 16 };
void mha_layer_norm_rows(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                         size_t rows, size_t n, float eps);
void mha_layer_norm_rows_backward(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                  const float *x, const float *w, size_t rows, size_t n, float eps);
void mha_layer_norm_columns(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                            const double *mean, const double *rstd, size_t rows, size_t cols);
void mha_layer_norm_rows_ref(float *y, double *mean, double *rstd, const float *x, const float *w, const float *b,
                             size_t rows, size_t n, float eps);
void mha_layer_norm_rows_backward_ref(float *dx, double *mean, double *rstd, bool given, const float *dy,
                                      const float *x, const float *w, size_t rows, size_t n, float eps);
void mha_layer_norm_columns_ref(double *acc_w, double *acc_b, const float *dy, const float *x, size_t ld,
                                const double *mean, const double *rstd, size_t rows, size_t cols);

/* acc (cols) = Σ_rows g of g (rows, cols) row stride ld, each column summed in double over the
 * rows in order from 0 (a plain loop's bits on every set): the bias gradient of a linear layer. */
void mha_column_sums(double *acc, const float *g, size_t ld, size_t rows, size_t cols);
void mha_column_sums_ref(double *acc, const float *g, size_t ld, size_t rows, size_t cols);

/* sum = Σ_j exp((double)x[j] - max) of n floats, in double: the normaliser of a row of logits
 * (log_softmax, cross_entropy; max their largest, so no term passes 1). Each exponential is
 * MHA_EXP_DOUBLE's (below), the terms summed as layer norm's sums, in MHA_LN_LANES lanes: the same
 * operations on every set, so the reference's bits. A NaN max (or x) gives NaN, as exp would. */
double mha_exp_sum(const float *x, size_t n, double max);
double mha_exp_sum_ref(const float *x, size_t n, double max);
/* exp(d) for d <= 0 (or NaN), within 2 ulp of a double: d = n·ln 2 + r with |r| <= ln2/2 (ln 2 in
 * two parts, n·LN2_HI exact), exp(r) by its Taylor series to r¹³/13!, times 2^n; 0 where 2^n would
 * leave the normal doubles (d < -708.39). */
double mha_exp_double_ref(double d);

/* The largest |x| of n floats as the bits of a float: 0x7f800000 when the largest is inf, above it
 * when one is NaN (so below it: all finite). */
uint32_t mha_abs_max_bits(const float *x, size_t n);
uint32_t mha_abs_max_bits_ref(const float *x, size_t n);

/* The operands of the next piece of work (an attention slice's q, k, v, ...) fetched into the
 * caches while this one is computed, a few rows at each call of mha_fetch_rows, so that a burst of
 * misses never stalls the work in between. A matrix is (rows, cols) floats, row stride rs. */
enum { MHA_FETCH_MATS = 8 };
typedef struct mha_fetch {
    struct { const float *p; ptrdiff_t rs; size_t rows, cols; bool write; } m[MHA_FETCH_MATS];
    size_t n;          /* matrices added */
    size_t at, row;    /* the next row to fetch: row `row` of matrix `at` */
    size_t total;      /* rows added in all */
} mha_fetch;
/* A matrix to be read (none for a NULL p, or past MHA_FETCH_MATS) */
void mha_fetch_add(mha_fetch *f, const float *p, size_t rows, ptrdiff_t rs, size_t cols);
/* A matrix to be written: fetched for writing */
void mha_fetch_add_out(mha_fetch *f, float *p, size_t rows, ptrdiff_t rs, size_t cols);
/* The next `rows` rows, or those left */
void mha_fetch_rows(mha_fetch *f, size_t rows);

/* dot (rows) = Σ_j a[r,j]·b[r,j] of a and b (rows, n), row strides lda and ldb: each row's sum in
 * double over j in order from 0 (each product exact), then rounded to float: the softmax
 * backward's rowsum(P∘dP). */
void mha_row_dots(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n);
void mha_row_dots_ref(float *dot, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t n);

/* One head of attention: out = softmax(q·kᵀ·scale + mask)·v.
 *   out (L,Dv) row stride ld_out; q (L,D) row stride ld_q; k (S,D) ld_k; v (S,Dv) ld_v
 *   (unit column stride)
 *   mask: NULL, or an additive float mask (L,S) with row stride mask_rs and column stride mask_cs;
 *         mask_rs = 0 broadcasts one row (a key padding mask) over every query.
 *   causal: also mask j > i.
 *   lse: NULL, or (L): each row's log-sum-exp of the masked scores, m + log l of the online softmax
 *        (-inf for a row with every key masked).
 * A row with every key masked comes out NaN (mha_softmax's policy). */
typedef struct mha_attn_args {
    float *out; size_t ld_out;
    const float *q; size_t ld_q;
    const float *k; size_t ld_k;
    const float *v; size_t ld_v;
    const float *mask; ptrdiff_t mask_rs, mask_cs;
    bool causal;
    float scale;
    float *lse;
    size_t L, S, D, Dv;
} mha_attn_args;

/* The reference of the fused kernel is the plain per-head path students run: mha_attention_plain
 * (core/attention/sdpa.h) on the reference kernels mha_sgemm_ref and mha_softmax_rows_ref. */
/* Fused: online softmax over key tiles, never forms the (L,S) matrix; extra memory
 * O(tile·(D+Dv)). */
mha_status mha_attention_fused(const mha_attn_args *args);

#endif
