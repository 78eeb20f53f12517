/* core/kernels/kernels.c - the compute kernels under the tensor ops: the matrix multiply and the
 * softmax of rows over raw float pointers (the fused attention on them: attention_fused.c), each
 * plain reference kept beside the fast kernel that tests hold equal to it, and the set's choice. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_testing.h"
#include "kernels/kernels_isa.h"

/* ---------------------------------------------------------------------------------------------
 * Reference kernels: the formulas written as loops, nothing clever.
 * ------------------------------------------------------------------------------------------- */

/* C[i,j] (+)= sum_p A[i,p]·B[p,j], summed in double so the reference is the accurate one. */
void mha_sgemm_ref(float *c, size_t ldc,
                   const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                   const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs,
                   size_t M, size_t N, size_t K, bool accumulate) {
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++) {
            double sum = accumulate ? c[i * ldc + j] : 0.0;
            for (size_t p = 0; p < K; p++)
                sum += (double)a[(ptrdiff_t)i * a_rs + (ptrdiff_t)p * a_cs] *
                       (double)b[(ptrdiff_t)p * b_rs + (ptrdiff_t)j * b_cs];
            c[i * ldc + j] = (float)sum;
        }
    }
}

/* softmax of each row in place: w_j = exp(x_j - max x) / sum_k exp(x_k - max x), summed in double;
 * then sum[i,j] += w_ij in float when sum is not NULL. A row whose entries are all -inf (every key
 * masked) becomes NaN, as in PyTorch and NumPy. */
void mha_softmax_rows_sum_ref(float *x, size_t ld, size_t rows, size_t n, float *sum, size_t ld_sum) {
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * ld;
        float max = -INFINITY;
        for (size_t j = 0; j < n; j++)
            if (row[j] > max) max = row[j];
        if (max == -INFINITY) {
            for (size_t j = 0; j < n; j++) row[j] = NAN;
        } else {
            double total = 0.0;
            for (size_t j = 0; j < n; j++) total += exp((double)row[j] - max);
            for (size_t j = 0; j < n; j++) row[j] = (float)(exp((double)row[j] - max) / total);
        }
        for (size_t j = 0; sum && j < n; j++) sum[i * ld_sum + j] += row[j];
    }
}

void mha_softmax_rows_ref(float *x, size_t ld, size_t rows, size_t n) { mha_softmax_rows_sum_ref(x, ld, rows, n, NULL, 0); }

/* ---------------------------------------------------------------------------------------------
 * Instruction sets. The fast kernels are written once (core/kernels/kernels_simd.c, rows_simd.c)
 * and compiled for AVX-512, AVX2 and portable C; the best the CPU has is chosen at the first call.
 * ------------------------------------------------------------------------------------------- */

static const kernel_isa *const isa_all[] = {
#ifdef MHA_KERNELS_X86
    &mha_kernels_avx512, &mha_kernels_avx2,
#endif
    &mha_kernels_portable, NULL};

static bool isa_supported(const kernel_isa *isa) {
#ifdef MHA_KERNELS_X86
    __builtin_cpu_init();
    if (isa == &mha_kernels_avx512) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    if (isa == &mha_kernels_avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return isa == &mha_kernels_portable;
}

static const kernel_isa *isa_current;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

/* The first instruction set of isa_all this CPU supports; MHA_ISA may name a lower one. */
static void blocking_choose(void);

static void isa_choose(void) {
    blocking_choose();
    for (size_t i = 0; isa_all[i]; i++) {
        if (isa_supported(isa_all[i])) { isa_current = isa_all[i]; break; }
    }
    const char *env = getenv("MHA_ISA");
    for (size_t i = 0; env && isa_all[i]; i++)
        if (strcmp(env, isa_all[i]->name) == 0 && isa_supported(isa_all[i])) isa_current = isa_all[i];
}

static const kernel_isa *isa(void) {
    pthread_once(&isa_once, isa_choose);
    return isa_current;
}

const char *mha_kernels_isa(void) { return isa()->name; }

const kernel_isa *mha_kernels_current(void) { return isa(); }

bool mha_kernels_use_isa(const char *name) {
    isa();
    for (size_t i = 0; isa_all[i]; i++) {
        if (strcmp(name, isa_all[i]->name) == 0 && isa_supported(isa_all[i])) {
            isa_current = isa_all[i];
            return true;
        }
    }
    return false;
}

size_t mha_kernels_isa_list(const char **names, size_t max) {
    size_t n = 0;
    for (size_t i = 0; isa_all[i] && n < max; i++)
        if (isa_supported(isa_all[i])) names[n++] = isa_all[i]->name;
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Scratch: one mha_alloc per call (so the memory accounting sees it), carved into buffers that
 * start on 64-byte cache lines.
 * ------------------------------------------------------------------------------------------- */

/* Floats needed for buffers of the given sizes, each rounded up to a cache line; 0 on overflow. */
static size_t scratch_floats(const size_t *sizes, size_t n) {
    size_t total = 16; /* room to align the start */
    for (size_t i = 0; i < n; i++) {
        size_t rounded = (sizes[i] + 15) / 16 * 16;
        if (rounded < sizes[i] || total + rounded < total) return 0;
        total += rounded;
    }
    return total <= SIZE_MAX / sizeof(float) ? total : 0;
}

/* Allocates the buffers; bufs[i] gets sizes[i] floats. false when out of memory. */
bool mha_scratch_alloc(mha_scratch *s, float **bufs, const size_t *sizes, size_t n) {
    size_t total = scratch_floats(sizes, n);
    s->nbytes = total * sizeof(float);
    s->base = total ? mha_alloc(s->nbytes) : NULL;
    if (s->base == NULL) return false;
    uintptr_t at = ((uintptr_t)s->base + 63) & ~(uintptr_t)63;
    for (size_t i = 0; i < n; i++) {
        bufs[i] = (float *)at;
        at += (sizes[i] + 15) / 16 * 16 * sizeof(float);
    }
    return true;
}

void mha_scratch_free(mha_scratch *s) { mha_free(s->base, s->nbytes); }

/* ---------------------------------------------------------------------------------------------
 * Packing: copy a block of A or B, whatever its strides, into the panel order the register tile
 * reads (kernels_isa.h), padding the last panel with zeros. A transposed operand costs nothing
 * more.
 * ------------------------------------------------------------------------------------------- */

/* A (mc,kc) with (i,p) at a[i*a_rs + p*a_cs]  ->  panels of mr rows:
 * dst[(i/mr)*mr*kc + p*mr + i%mr]. */
void mha_pack_a(const kernel_isa *k, float *dst, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, size_t mc,
                size_t kc, size_t mr) {
    if (a_rs == 1 && a_cs != 1 && mr == k->mr && k->pack_a_cols) { /* columns contiguous: the whole
                                                                      block */
        k->pack_a_cols(dst, a, a_cs, kc, mc);
        return;
    }
    for (size_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
        size_t rows = min_size(mr, mc - i0);
        if (a_cs == 1 && mr == k->mr && k->pack_a_rows) { /* rows contiguous: transposed in
                                                             registers */
            k->pack_a_rows(dst, a + (ptrdiff_t)i0 * a_rs, a_rs, kc, rows);
        } else if (a_rs == 1) { /* a column of the panel is contiguous in memory */
            for (size_t p = 0; p < kc; p++) {
                const float *src = a + (ptrdiff_t)i0 + (ptrdiff_t)p * a_cs;
                for (size_t i = 0; i < rows; i++) dst[p * mr + i] = src[i];
                for (size_t i = rows; i < mr; i++) dst[p * mr + i] = 0.0f;
            }
        } else {         /* walk each row of A along its own stride */
            for (size_t i = 0; i < rows; i++) {
                const float *src = a + (ptrdiff_t)(i0 + i) * a_rs;
                for (size_t p = 0; p < kc; p++) dst[p * mr + i] = src[(ptrdiff_t)p * a_cs];
            }
            for (size_t i = rows; i < mr; i++)
                for (size_t p = 0; p < kc; p++) dst[p * mr + i] = 0.0f;
        }
    }
}

/* B (kc,nc) with (p,j) at b[p*b_rs + j*b_cs], times scale  ->  panels of k->nr columns:
 * dst[(j/nr)*nr*kc + p*nr + j%nr]. */

void mha_pack_b(const kernel_isa *k, float *dst, const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs, size_t kc,
                size_t nc, float scale) {
    const size_t nr = k->nr;
    if (b_cs == 1 && nc >= nr) {
        /* rows contiguous: the whole panels row by row, so that B is read in one sweep (panel by
         * panel, each row's few lines would be fetched kc rows apart), in the set's vectors */
        const size_t whole = nc / nr * nr;
        k->pack_b_rows(dst, b, b_rs, kc, whole / nr, scale);
        if (whole == nc) return;
        dst += whole * kc, b += whole, nc -= whole;   /* the ragged last panel, below */
    }
    for (size_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
        size_t cols = min_size(nr, nc - j0);
        if (b_cs == 1) { /* rows contiguous: the ragged last panel (fewer than nr columns) */
            for (size_t p = 0; p < kc; p++) {
                const float *src = b + (ptrdiff_t)p * b_rs + (ptrdiff_t)j0;
                for (size_t j = 0; j < cols; j++) dst[p * nr + j] = src[j] * scale;
                for (size_t j = cols; j < nr; j++) dst[p * nr + j] = 0.0f;
            }
        } else if (b_rs == 1 && k->pack_b_trans) { /* columns contiguous (Wᵀ, Kᵀ): transposed in
                                                      registers */
            k->pack_b_trans(dst, b + (ptrdiff_t)j0 * b_cs, b_cs, kc, cols, scale);
        } else {         /* walk each column of B along its own stride */
            for (size_t j = 0; j < cols; j++) {
                const float *src = b + (ptrdiff_t)(j0 + j) * b_cs;
                for (size_t p = 0; p < kc; p++) dst[p * nr + j] = src[(ptrdiff_t)p * b_rs] * scale;
            }
            for (size_t j = cols; j < nr; j++)
                for (size_t p = 0; p < kc; p++) dst[p * nr + j] = 0.0f;
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * The fast matrix multiply, in the loop order of Goto and van de Geijn (BLIS): a KC-deep slice of B
 * is packed once and is read from L3 (it is reused by every block of A); an MC-row block of A is
 * packed and stays in L2; the register tile then sweeps the block, one NR-wide panel of B (in L1)
 * against every MR-row panel of A, streamed from L2. Where a B panel would fill L1
 * (b_panels_stream: the 12x32 tile on a 48 KB L1d) the sweep goes the other way, one A panel in L1
 * against every B panel, and on Intel the B slice is cut to half of L2 (NC_L2, 1024 columns on a
 * 2 MB L2) to be held there; AMD's L3 keeps up without (blocking_choose).
 *
 * KC is fixed on every CPU: it sets where the sum over K is cut, so the bits of every product (and
 * every golden transcript) depend on it. MC and NC only cut C into blocks, so they follow the CPU's
 * caches, read once (blocking_choose): a packed block of A (MC x KC) takes a quarter of L2 (120
 * rows on Zen's 512 KB, 504 on a 2 MB L2); a packed slice of B (KC x NC) half of L3, at most 2048
 * columns (1 KB x 2048 = 2 MB: a wider slice is scratch memory the fused attention backward's
 * budget has no room for). Unknown sizes keep BLIS's for Zen: MC 144, NC 2048.
 * ------------------------------------------------------------------------------------------- */

enum {
    KC = 256,  /* depth of one pass: a 6x16 tile reads 6 KB of A and a 16 KB panel of B, half of
                  L1; a 12x32 tile 12 KB and 32 KB */
    MC_UNIT = 24,  /* MC is a multiple of every MR: 4, 6, 8, 12 */
    NC_UNIT = 64,  /* NC is a multiple of every NR: 8, 16, 32 */
    MAX_TILE = 16 * 64
};

static size_t MC = 144, NC = 2048; /* set once by blocking_choose, with the instruction set */
static size_t NC_L2 = 2048;         /* NC when the B slice is held in L2 (b_panels_stream) */
static size_t cache_bytes[3];               /* L1d, L2, L3 as read; 0 unknown */

/* One cache's size in bytes: sysconf, else /sys's cpu0 index<i>/size ("48K"); 0 when neither
 * says. */
static size_t cache_size(int level) {
    long v = -1;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
#endif
    if (v > 0) return (size_t)v;
    const int index = level == 1 ? 0 : level;   /* index0 L1d, index1 L1i, index2 L2, index3 L3 */
    char path[80], text[32] = "";
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = 0;
    char unit = 0;
    if (fgets(text, sizeof text, f) && sscanf(text, "%zu%c", &n, &unit) >= 1)
        n *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
    fclose(f);
    return n;
}

static void blocking_choose(void) {
    for (int level = 1; level <= 3; level++) cache_bytes[level - 1] = cache_size(level);
    const size_t l2 = cache_bytes[1], l3 = cache_bytes[2], row = KC * sizeof(float);
    if (l2 >= 4 * row * 2 * MC_UNIT) {
        MC = l2 / 4 / row / MC_UNIT * MC_UNIT;
        if (MC > 40 * MC_UNIT) MC = 40 * MC_UNIT;
    }
    if (l3 >= 2 * row * 8 * NC_UNIT) {
        NC = l3 / 2 / row / NC_UNIT * NC_UNIT;
        if (NC > 32 * NC_UNIT) NC = 32 * NC_UNIT;
    }
    NC_L2 = NC;
    if (l2 >= 2 * row * 4 * NC_UNIT) NC_L2 = min_size(NC, l2 / 2 / row / NC_UNIT * NC_UNIT);
#ifdef MHA_KERNELS_X86
    /* An AMD core's L3 feeds the streaming B panels as fast as the tile eats them (a 32 KiB panel
     * per 6k cycles): cutting the slice to L2 there only packs A once more per slice
     * ((2048,512)·(512,1536)ᵀ on Zen 4: 86-87% of peak with 512 columns, 92-93% with 2048) */
    __builtin_cpu_init();
    if (__builtin_cpu_is("amd")) NC_L2 = NC;
#endif
}

/* Whether multiply_block streams B's panels past one panel of A rather than A's past one of B:
 * when a packed B panel (KC x NR) takes more than half of L1d, which the A panels streaming through
 * would then evict (the 12x32 tile's 32 KiB of a 48 KiB L1d; the 6x16 tile's 16 KiB keeps BLIS's
 * order, on Zen's 32 KiB too). The B slice (KC x NC_L2) then stays in L2 (on Intel). */
static bool b_panels_stream(const kernel_isa *k) {
    return cache_bytes[0] && k->nr * KC * sizeof(float) > cache_bytes[0] / 2;
}

/* Columns of C per block for the instruction set k. */
static size_t nc_for(const kernel_isa *k) { return b_panels_stream(k) ? NC_L2 : NC; }

void mha_kernels_blocking(size_t *mc, size_t *kc, size_t *nc, size_t caches[3]) {
    isa();
    *mc = MC, *kc = KC, *nc = nc_for(isa());
    for (int i = 0; i < 3; i++) caches[i] = cache_bytes[i];
}

/* The part inside C of a tile computed into a buffer: c (m,n) row stride ldc = (add ? c : bias ?
 * bias : 0) + edge (m,n) row stride nr, bias (n) added to every row as the tiles add it. */
static void store_edge(float *c, size_t ldc, const float *edge, size_t nr, size_t m, size_t n, bool add,
                       const float *bias) {
    /* four floats: one SSE2 or NEON register, which every build has */
    typedef float v4 __attribute__((vector_size(4 * sizeof(float))));
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        const float *ei = edge + i * nr, *from = add ? ci : bias;   /* NULL: 0 */
        size_t j = 0;
        for (; j + 4 <= n; j += 4) {
            v4 e, f = {0.0f, 0.0f, 0.0f, 0.0f};
            memcpy(&e, ei + j, sizeof e);
            if (from) memcpy(&f, from + j, sizeof f);
            f += e;
            memcpy(ci + j, &f, sizeof f);
        }
        for (; j < n; j++) ci[j] = (from ? from[j] : 0.0f) + ei[j];
    }
}

/* A block's bias from column jr on, or NULL. */
static const float *bias_at(const float *bias, size_t jr) { return bias ? bias + jr : NULL; }

static bool tile_part_on = true;

void mha_kernels_set_tile_part(bool on) { tile_part_on = on; }

/* k->tile on the first `rows` rows of the A panel a (c has room for MR rows): where they are
 * fewer than MR, the tile's loop on only as many as it needs (k->tile_part), the same bits. */
void mha_tile_rows(const kernel_isa *k, size_t rows, size_t kc, const float *a, const float *b, float *c,
                   size_t ldc, bool add, const float *col_scale, const float *bias) {
    if (rows < k->mr && tile_part_on) k->tile_part(rows, kc, a, b, c, ldc, add, col_scale, bias);
    else k->tile(kc, a, b, c, ldc, add, col_scale, bias);
}

/* The tile of C at (ir, jr) in a block (mc,nc): A panel ir against B panel jr. A tile that sticks
 * out of C is computed into edge and the part inside is copied. bias: the block's (nc), or NULL. */
static void tile_at(const kernel_isa *k, float *c, size_t ldc, const float *pa, const float *pb, size_t ir, size_t jr,
                    size_t mc, size_t nc, size_t kc, bool add, const float *bias, float *edge) {
    const size_t m = min_size(k->mr, mc - ir), n = min_size(k->nr, nc - jr);
    float *ct = c + ir * ldc + jr;
    if (m == k->mr && n == k->nr) {
        k->tile(kc, pa + ir * kc, pb + jr * kc, ct, ldc, add, NULL, bias_at(bias, jr));
        return;
    }
    mha_tile_rows(k, m, kc, pa + ir * kc, pb + jr * kc, edge, k->nr, false, NULL, NULL);
    store_edge(ct, ldc, edge, k->nr, m, n, add, bias_at(bias, jr));
}

/* C block (mc,nc) (+)= packed A block (mc,kc) · packed B slice (kc,nc), tile by tile: one B panel
 * in L1 against every A panel streamed from L2, or, where b_panels_stream says, one A panel in L1
 * against every B panel streamed from L2 (C then swept along its rows). Each tile is the same sum
 * either way. */
static void multiply_block(const kernel_isa *k, float *c, size_t ldc, const float *pa, const float *pb,
                           size_t mc, size_t nc, size_t kc, bool add, const float *bias) {
    _Alignas(64) float edge[MAX_TILE];
    if (b_panels_stream(k)) {
        for (size_t ir = 0; ir < mc; ir += k->mr)
            for (size_t jr = 0; jr < nc; jr += k->nr) tile_at(k, c, ldc, pa, pb, ir, jr, mc, nc, kc, add, bias, edge);
        return;
    }
    for (size_t jr = 0; jr < nc; jr += k->nr)
        for (size_t ir = 0; ir < mc; ir += k->mr) tile_at(k, c, ldc, pa, pb, ir, jr, mc, nc, kc, add, bias, edge);
}

static void fetch_add(mha_fetch *f, const float *p, size_t rows, ptrdiff_t rs, size_t cols, bool write) {
    if (!p || !rows || !cols || f->n == MHA_FETCH_MATS) return;
    f->m[f->n].p = p, f->m[f->n].rs = rs, f->m[f->n].rows = rows, f->m[f->n].cols = cols;
    f->m[f->n].write = write;
    f->n++, f->total += rows;
}

void mha_fetch_add(mha_fetch *f, const float *p, size_t rows, ptrdiff_t rs, size_t cols) {
    fetch_add(f, p, rows, rs, cols, false);
}

void mha_fetch_add_out(mha_fetch *f, float *p, size_t rows, ptrdiff_t rs, size_t cols) {
    fetch_add(f, p, rows, rs, cols, true);
}

/* Each row's lines into L2 (locality 2: the work reads them from there soon, not at once); a
 * matrix to be written is fetched for writing, owned by this core before its stores come. */
void mha_fetch_rows(mha_fetch *f, size_t rows) {
    for (; rows && f->at < f->n; rows--) {
        const char *r = (const char *)(f->m[f->at].p + (ptrdiff_t)f->row * f->m[f->at].rs);
        const size_t bytes = f->m[f->at].cols * sizeof(float);
        if (f->m[f->at].write) {
            for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(r + b, 1, 2);
            __builtin_prefetch(r + bytes - 1, 1, 2);
        } else {
            for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(r + b, 0, 2);
            __builtin_prefetch(r + bytes - 1, 0, 2);
        }
        if (++f->row == f->m[f->at].rows) f->row = 0, f->at++;
    }
}

/* Whether the n floats at x are all finite (no inf, no NaN). */
static bool finite_floats(const float *x, size_t n) { return mha_abs_max_bits(x, n) < 0x7f800000u; }

/* Where a block of a causal slice's product lies against its triangle (mha_sgemm_tri): the
 * block's first row, column and depth in the whole product. */
typedef struct tri_at {
    mha_tri tri;
    ptrdiff_t off;
    size_t row0, col0, p0;
} tri_at;

/* The depths [*from, *to) of a block's kc that the tile of rows ir..ir+m-1 at column jr needs:
 * all of them without a triangle; none for a C_LOWER tile wholly past the line; A_LOWER's sum
 * stops after its last row's last nonzero, A_UPPER's starts at its first row's first. */
static inline __attribute__((always_inline))
void tri_depths(const tri_at *t, size_t ir, size_t m, size_t jr, size_t kc, size_t *from, size_t *to) {
    *from = 0, *to = kc;
    if (!t) return;
    const ptrdiff_t first = (ptrdiff_t)(t->row0 + ir), last = first + (ptrdiff_t)m - 1, p0 = (ptrdiff_t)t->p0;
    if (t->tri == MHA_TRI_C_LOWER && (ptrdiff_t)(t->col0 + jr) > last + t->off) *to = 0;
    if (t->tri == MHA_TRI_A_LOWER) {
        const ptrdiff_t end = last + t->off + 1 - p0;
        *to = end <= 0 ? 0 : min_size((size_t)end, kc);
    }
    if (t->tri == MHA_TRI_A_UPPER) {
        const ptrdiff_t start = first - t->off - p0;
        *from = start <= 0 ? 0 : min_size((size_t)start, kc);
    }
}

/* A tile with nothing left to sum: C (m,n) = 0, or left as it is when adding. */
static void tile_skipped(float *c, size_t ldc, size_t m, size_t n, bool add) {
    for (size_t i = 0; i < m && !add; i++) memset(c + i * ldc, 0, n * sizeof(float));
}

/* The same block with A read in place (a_cs = 1) by the tile_a_rows tile instead of packed: A block
 * (mc,kc) with (i,p) at a[i*a_rs + p]. Each MR rows of A are swept against every panel of B while
 * they are in L1. The same sums as pack_a then multiply_block, so the same bits. */
static void multiply_block_a_rows(const kernel_isa *k, float *c, size_t ldc, const float *a, ptrdiff_t a_rs,
                                  const float *pb, size_t mc, size_t nc, size_t kc, bool add, const float *bias,
                                  const tri_at *t) {
    _Alignas(64) float edge[MAX_TILE];
    for (size_t ir = 0; ir < mc; ir += k->mr) {
        size_t m = min_size(k->mr, mc - ir);
        for (size_t jr = 0; jr < nc; jr += k->nr) {
            size_t n = min_size(k->nr, nc - jr), from, to;
            float *ct = c + ir * ldc + jr;
            tri_depths(t, ir, m, jr, kc, &from, &to);
            if (from == to) {
                tile_skipped(ct, ldc, m, n, add);
                continue;
            }
            const float *ar = a + (ptrdiff_t)ir * a_rs + (ptrdiff_t)from, *bp = pb + jr * kc + from * k->nr;
            if (m == k->mr && n == k->nr) {
                k->tile_a_rows(ct, ldc, ar, a_rs, m, bp, to - from, add, bias_at(bias, jr));
                continue;
            }
            k->tile_a_rows(edge, k->nr, ar, a_rs, m, bp, to - from, false, NULL);
            store_edge(ct, ldc, edge, k->nr, m, n, add, bias_at(bias, jr));
        }
    }
}

/* The same block with A read in place where its columns are contiguous (a_rs = 1) by the
 * tile_a_cols tile: A block (mc,kc) with (i,p) at a[p*a_cs + i]. Each MR rows of A are swept
 * against every panel of B while they are in L1; a ragged last panel of rows is packed into
 * panel (MR x kc floats), as tile_a_cols reads all MR rows - when its turn comes, so that its
 * columns are read from the lines the whole panels brought in, not from memory one column at a
 * time (Pᵀ of a 64-key head: 5·12 + 4 rows). The same sums as pack_a then multiply_block, so the
 * same bits. */
static void multiply_block_a_cols(const kernel_isa *k, float *c, size_t ldc, const float *a, ptrdiff_t a_cs,
                                  const float *pb, size_t mc, size_t nc, size_t kc, bool add, const float *bias,
                                  float *panel, const tri_at *t) {
    _Alignas(64) float edge[MAX_TILE];
    const size_t whole = mc / k->mr * k->mr;
    for (size_t ir = 0; ir < mc; ir += k->mr) {
        const size_t m = min_size(k->mr, mc - ir);
        if (ir == whole) mha_pack_a(k, panel, a + whole, 1, a_cs, mc - whole, kc, k->mr);
        for (size_t jr = 0; jr < nc; jr += k->nr) {
            const size_t n = min_size(k->nr, nc - jr);
            float *ct = c + ir * ldc + jr, *out = m == k->mr && n == k->nr ? ct : edge;
            size_t from, to;
            tri_depths(t, ir, m, jr, kc, &from, &to);
            if (from == to) {
                tile_skipped(ct, ldc, m, n, add);
                continue;
            }
            const size_t ld_out = out == ct ? ldc : k->nr;
            const bool add_out = out == ct && add;
            const float *bias_out = out == ct ? bias_at(bias, jr) : NULL, *bp = pb + jr * kc + from * k->nr;
            if (m == k->mr) k->tile_a_cols(out, ld_out, a + ir + (ptrdiff_t)from * a_cs, a_cs, bp, to - from, add_out, bias_out);
            else mha_tile_rows(k, m, to - from, panel + from * k->mr, bp, out, ld_out, add_out, NULL, bias_out);
            if (out == edge) store_edge(ct, ldc, edge, k->nr, m, n, add, bias_at(bias, jr));
        }
    }
}

void mha_softmax_rows_sum(float *x, size_t ld, size_t rows, size_t n, float *sum, size_t ld_sum) {
    const kernel_isa *k = isa();
    for (size_t i = 0; i < rows; i++) k->softmax_row(x + i * ld, n, sum ? sum + i * ld_sum : NULL);
}

void mha_softmax_rows(float *x, size_t ld, size_t rows, size_t n) { mha_softmax_rows_sum(x, ld, rows, n, NULL, 0); }

/* One call's operands, as mha_sgemm got them. */
typedef struct sgemm_job {
    float *c; size_t ldc;
    const float *a; ptrdiff_t a_rs, a_cs;
    const float *b; ptrdiff_t b_rs, b_cs;
    size_t M, N, K;
    bool accumulate;
    const float *bias;   /* NULL, or (N): C = bias + A·B, bias added in the tiles' store */
    bool split_rows; /* when split: parts take rows of C (else columns), in whole register tiles */
    const float *packed_b; /* NULL, or all of B packed by mha_sgemm_pack_b (then b is not read) */
    mha_tri tri;           /* mha_sgemm_tri's triangle, MHA_TRI_NONE for none, and its offset */
    ptrdiff_t off;
} sgemm_job;

/* A few rows of A against a B stored transposed (x·Wᵀ for a short x), both with contiguous rows:
 * dot products of rows, no packing. Packing would read all of W to write it out again, for a few
 * tiles each: at (64,512)·(512,1536) that is a quarter of the time. "A few": A fits in half of L2
 * (it is read once per DOT_NR rows of W), M <= 128 whole rows at K = 512. And deep enough: each
 * element ends in a sum across the 8 lanes, about 6 instructions, which K/8 FMAs must outweigh - at
 * a head's q·kᵀ (K = 64) the packed path is twice as fast (DOT_MIN_K). Decided on the whole call's
 * M, never a part's, so that a split over threads cannot change the path and the bits. */
enum { DOT_MIN_K = 128 };

static bool dot_rows_on = true;

void mha_kernels_set_dot_rows(bool on) { dot_rows_on = on; }

/* A narrow product - C at most A_UNPACKED_PANELS panels of NR wide, as P·V and dS·K of a head at D
 * = 64
 * - reads A in place when its rows are contiguous (tile_a_rows) rather than packing it: packing
 * reads and writes all of A to be reused by that few panels of B only. BLIS and OpenBLAS do the
 * same for skinny shapes. The bits are those of the packed path. */
enum { A_UNPACKED_PANELS = 16 };

static bool a_unpacked_on = true;

void mha_kernels_set_a_unpacked(bool on) { a_unpacked_on = on; }

static bool a_unpacked_fit(const kernel_isa *k, const sgemm_job *job) {
    return a_unpacked_on && k->tile_a_rows && job->a_cs == 1 && job->N <= A_UNPACKED_PANELS * k->nr;
}

/* The same for an A with contiguous columns (a_rs = 1: dYᵀ of dW = dYᵀ·X, Pᵀ of dV = Pᵀ·dO): read
 * in place by tile_a_cols. */
static bool a_cols_unpacked_fit(const kernel_isa *k, const sgemm_job *job) {
    return a_unpacked_on && k->tile_a_cols && job->a_rs == 1 && job->a_cs != 1 &&
           job->N <= A_UNPACKED_PANELS * k->nr;
}

static bool dot_rows_fit(const kernel_isa *k, const sgemm_job *job) {
    return dot_rows_on && k->dot_rows && !job->packed_b && job->a_cs == 1 && job->b_rs == 1 && job->a_rs > 0 && job->b_cs > 0 &&
           job->K >= DOT_MIN_K && (double)job->M * (double)job->K * sizeof(float) <= 256.0 * 1024;
}

/* C[m0:m1, n0:n1] (+)= A[m0:m1, :]·B[:, n0:n1], with its own packing buffers. Every element of C is
 * the same sum in the same order whichever block computes it, so blocks may run on any thread. */
static mha_status sgemm_block(const sgemm_job *job, size_t m0, size_t m1, size_t n0, size_t n1) {
    const size_t M = m1 - m0, N = n1 - n0, K = job->K;
    const ptrdiff_t a_rs = job->a_rs, a_cs = job->a_cs, b_rs = job->b_rs, b_cs = job->b_cs;
    const float *a = job->a + (ptrdiff_t)m0 * a_rs, *b = job->b + (ptrdiff_t)n0 * b_cs;
    float *c = job->c + m0 * job->ldc + n0;
    const float *bias = bias_at(job->bias, n0);
    const kernel_isa *k = isa();
    if (dot_rows_fit(k, job)) {
        k->dot_rows(c, job->ldc, a, (size_t)a_rs, b, (size_t)b_cs, M, N, K, job->accumulate, bias);
        return MHA_OK;
    }
    const bool a_unpacked = a_unpacked_fit(k, job), a_cols = !a_unpacked && a_cols_unpacked_fit(k, job);
    size_t kc_max = min_size(K, KC);
    size_t mc_max = a_unpacked ? 0 : a_cols ? (M % k->mr ? k->mr : 0) : min_size(round_up(M, k->mr), MC);
    const size_t NCB = nc_for(k);
    size_t nc_max = job->packed_b ? 0 : min_size(round_up(N, k->nr), NCB);
    float *bufs[2];
    size_t sizes[2] = {mc_max * kc_max, kc_max * nc_max};
    mha_scratch s;
    if (!mha_scratch_alloc(&s, bufs, sizes, 2))
        return mha_fail(MHA_E_NOMEM, "sgemm: (%zu,%zu) @ (%zu,%zu): out of memory for packing", job->M, K, K, job->N);
    float *packed_a = bufs[0], *packed_b = bufs[1];
    mha_status status = MHA_OK;

    for (size_t jc = 0; jc < N; jc += NCB) {
        size_t nc = min_size(NCB, N - jc);
        for (size_t pc = 0; pc < K; pc += KC) {
            size_t kc = min_size(KC, K - pc);
            const float *bias_block = pc == 0 ? bias_at(bias, jc) : NULL;   /* the sum's start */
            if (job->packed_b) /* slice (jc, pc) of mha_sgemm_pack_b's layout (n0 = 0: never
                                  split) */
                packed_b = (float *)job->packed_b + jc * K + pc * round_up(nc, k->nr);
            else
                mha_pack_b(k, packed_b, b + (ptrdiff_t)pc * b_rs + (ptrdiff_t)jc * b_cs, b_rs, b_cs, kc, nc, 1.0f);
            /* A's zeros are skipped only against a finite B, whose 0·B[p,j] are all ±0 (0·inf is
             * NaN); checked on the slice just packed, in cache */
            const bool skip_zeros = job->tri == MHA_TRI_A_LOWER || job->tri == MHA_TRI_A_UPPER;
            const bool tri = job->tri && (!skip_zeros || finite_floats(packed_b, kc * round_up(nc, k->nr)));
            for (size_t ic = 0; ic < M; ic += MC) {
                if (mha_interrupted()) {
                    status = mha_fail(MHA_E_INTERRUPTED, "sgemm: (%zu,%zu) @ (%zu,%zu): interrupted", job->M, K, K,
                                      job->N);
                    goto done;
                }
                size_t mc = min_size(MC, M - ic);
                const float *a_block = a + (ptrdiff_t)ic * a_rs + (ptrdiff_t)pc * a_cs;
                const tri_at at = {job->tri, job->off, m0 + ic, n0 + jc, pc}, *t = tri ? &at : NULL;
                if (a_unpacked) {
                    multiply_block_a_rows(k, c + ic * job->ldc + jc, job->ldc, a_block, a_rs, packed_b, mc, nc, kc,
                                          job->accumulate || pc > 0, bias_block, t);
                    continue;
                }
                if (a_cols) {
                    multiply_block_a_cols(k, c + ic * job->ldc + jc, job->ldc, a_block, a_cs, packed_b, mc, nc, kc,
                                          job->accumulate || pc > 0, bias_block, packed_a, t);
                    continue;
                }
                mha_pack_a(k, packed_a, a_block, a_rs, a_cs, mc, kc, k->mr);
                multiply_block(k, c + ic * job->ldc + jc, job->ldc, packed_a, packed_b, mc, nc, kc,
                               job->accumulate || pc > 0, bias_block);
            }
        }
    }
done:
    mha_scratch_free(&s);
    return status;
}

/* Part `part` of nparts: an even share of C's rows (or columns) in whole register tiles. */
static mha_status sgemm_part(void *ctx, size_t part, size_t nparts) {
    const sgemm_job *job = ctx;
    const size_t unit = job->split_rows ? isa()->mr : isa()->nr, size = job->split_rows ? job->M : job->N;
    const size_t units = (size + unit - 1) / unit;
    const size_t from = min_size(units * part / nparts * unit, size);
    const size_t to = min_size(units * (part + 1) / nparts * unit, size);
    if (from == to) return MHA_OK;
    return job->split_rows ? sgemm_block(job, from, to, 0, job->N) : sgemm_block(job, 0, job->M, from, to);
}

/* A split product: PARTS_PER_THREAD parts a thread, claimed by whichever thread is free (pool.c),
 * so a worker woken late still takes a share; each part at least PART_MIN_FLOPS (about 20 us of
 * one core), and B packed once for all parts when the parts take rows of C and B packed is at most
 * PREPACK_MAX_FLOATS (parts that take rows would each pack all of B). */
enum { PARTS_PER_THREAD = 4, PREPACK_MAX_FLOATS = 4 * 1024 * 1024 };
static const double PART_MIN_FLOPS = 2e6;

static size_t sgemm_parts(size_t units, size_t threads_parts, double flops) {
    if (threads_parts <= 1) return 1;
    size_t parts = threads_parts * PARTS_PER_THREAD;
    if ((double)parts * PART_MIN_FLOPS > flops) parts = (size_t)(flops / PART_MIN_FLOPS);
    if (parts < threads_parts) parts = threads_parts;
    return parts < units ? parts : units;
}

/* mha_sgemm and mha_sgemm_bias: C = (accumulate ? C : bias ? bias : 0) + A·B */
static mha_status sgemm_run(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                            ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate,
                            const float *bias, mha_tri tri, ptrdiff_t off) {
    if (M == 0 || N == 0) return MHA_OK;
    if (K == 0) { /* an empty sum */
        for (size_t i = 0; i < M && !accumulate; i++) {
            if (bias) memcpy(c + i * ldc, bias, N * sizeof(float));
            else memset(c + i * ldc, 0, N * sizeof(float));
        }
        return MHA_OK;
    }
    const kernel_isa *k = isa();
    const double flops = 2.0 * (double)M * (double)N * (double)K;
    const size_t row_units = (M + k->mr - 1) / k->mr, col_units = (N + k->nr - 1) / k->nr;
    /* split rows of C where there are enough (each part then packs only its own rows of A, and B
     * once), else the longer side, so each part packs a share of the operand larger to pack */
    const size_t threads = mha_kernels_parts(row_units > col_units ? row_units : col_units, flops);
    sgemm_job job = {c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, accumulate, accumulate ? NULL : bias,
                     M > N || (row_units >= col_units && row_units >= 2 * threads), NULL, tri, off};
    const size_t nparts = sgemm_parts(job.split_rows ? row_units : col_units, threads, flops);
    if (nparts == 1) return sgemm_block(&job, 0, M, 0, N);
    mha_scratch s = {NULL, 0};
    float *packed = NULL;
    if (job.split_rows && !dot_rows_fit(k, &job) && mha_sgemm_packed_b_size(N, K) <= PREPACK_MAX_FLOATS) {
        size_t size = mha_sgemm_packed_b_size(N, K);
        if (!mha_scratch_alloc(&s, &packed, &size, 1))
            return mha_fail(MHA_E_NOMEM, "sgemm: (%zu,%zu) @ (%zu,%zu): out of memory for packing", M, K, K, N);
        mha_sgemm_pack_b(packed, b, b_rs, b_cs, N, K);
        job.packed_b = packed;
    }
    mha_status st = mha_run_parts(sgemm_part, &job, nparts);
    if (packed) mha_scratch_free(&s);
    return st;
}

mha_status mha_sgemm(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b, ptrdiff_t b_rs,
                     ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate) {
    return sgemm_run(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, accumulate, NULL, MHA_TRI_NONE, 0);
}

mha_status mha_sgemm_tri(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                         ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, bool accumulate, mha_tri tri,
                         ptrdiff_t off) {
    return sgemm_run(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, accumulate, NULL, tri, off);
}

mha_status mha_sgemm_bias(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                          ptrdiff_t b_rs, ptrdiff_t b_cs, size_t M, size_t N, size_t K, const float *bias) {
    return sgemm_run(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, false, bias, MHA_TRI_NONE, 0);
}

/* B packed once for many products (a head's K and V, which every block of queries multiplies): the
 * panels sgemm_block would pack, slice (jc, pc) after slice, each kc x round_up(nc, NR), so that
 * slice (jc, pc) starts at jc·K + pc·round_up(nc, NR) and the whole takes round_up(N, NR)·K
 * floats. */
size_t mha_sgemm_packed_b_size(size_t N, size_t K) { return round_up(N, isa()->nr) * K; }

void mha_sgemm_pack_b(float *packed, const float *b, ptrdiff_t b_rs, ptrdiff_t b_cs, size_t N, size_t K) {
    const kernel_isa *k = isa();
    const size_t NCB = nc_for(k);
    for (size_t jc = 0; jc < N; jc += NCB) {
        size_t nc = min_size(NCB, N - jc);
        for (size_t pc = 0; pc < K; pc += KC) {
            size_t kc = min_size(KC, K - pc);
            mha_pack_b(k, packed + jc * K + pc * round_up(nc, k->nr), b + (ptrdiff_t)pc * b_rs + (ptrdiff_t)jc * b_cs, b_rs,
                   b_cs, kc, nc, 1.0f);
        }
    }
}

mha_status mha_sgemm_packed(float *c, size_t ldc, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *packed_b,
                            size_t M, size_t N, size_t K, bool accumulate) {
    if (M == 0 || N == 0) return MHA_OK;
    if (K == 0) {
        if (!accumulate)
            for (size_t i = 0; i < M; i++) memset(c + i * ldc, 0, N * sizeof(float));
        return MHA_OK;
    }
    /* b unread */
    sgemm_job job = {c, ldc, a, a_rs, a_cs, packed_b, 0, 0, M, N, K, accumulate, NULL, true, packed_b, MHA_TRI_NONE, 0};
    return sgemm_block(&job, 0, M, 0, N);
}
