/* tests/core/test_decode.c - holds the one-query attention of a decoding step (kernel_isa.attend_one,
 * K and V read in place) bit for bit equal to the fused path's tiles, on every instruction set. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "kernels/kernels_testing.h"

#define SPLITMIX_SEED 0x6465636f64652d31ULL
#include "splitmix.h"

enum mask_kind { NO_MASK, RANDOM_MASK, FIRST_TILE_HIDDEN, ALL_HIDDEN };

typedef struct one_case {
    const char *name;
    size_t S, D, Dv;
    enum mask_kind mask;
    bool causal, lse;
    float spread;   /* q, k and v uniform in [-spread, spread]: large ones push exp to 0 */
    float scale;    /* 0: 1/sqrt(D) */
} one_case;

/* The query's out (Dv) and lse through mha_attention_fused with one_query on or off; K and V with
 * rows padded past D and Dv (strides as a cache's storage gives them), the mask read along its
 * column stride 3. */
static void run_case(const one_case *c, bool one_query, const float *q, const float *k, const float *v,
                     const float *mask, float *out, float *lse) {
    mha_attn_args args = {.out = out, .ld_out = c->Dv, .q = q, .ld_q = c->D, .k = k, .ld_k = c->D + 3,
                          .v = v, .ld_v = c->Dv + 5, .mask = mask, .mask_rs = 0, .mask_cs = 3,
                          .causal = c->causal, .scale = c->scale ? c->scale : 1.0f / sqrtf((float)c->D),
                          .lse = c->lse ? lse : NULL, .L = 1, .S = c->S, .D = c->D, .Dv = c->Dv};
    mha_kernels_set_one_query(one_query);
    mha_status st = mha_attention_fused(&args);
    mha_kernels_set_one_query(true);
    if (st != MHA_OK) out[0] = -12345.0f;
}

/* out of the plain formula in double, for one query: softmax(q·kᵀ·scale + mask)·v. */
static void formula(double *want, const one_case *c, const float *q, const float *k, const float *v,
                    const float *mask) {
    const size_t S = c->causal && c->S > 1 ? 1 : c->S;
    const double scale = c->scale ? c->scale : 1.0 / sqrt((double)c->D);
    double *s = malloc(S * sizeof *s), max = -INFINITY, sum = 0.0;
    for (size_t j = 0; j < S; j++) {
        double dot = 0.0;
        for (size_t d = 0; d < c->D; d++) dot += (double)q[d] * k[j * (c->D + 3) + d];
        s[j] = dot * scale + (mask ? mask[j * 3] : 0.0);
        if (s[j] > max) max = s[j];
    }
    for (size_t j = 0; j < S; j++) sum += s[j] = max == -INFINITY ? 0.0 : exp(s[j] - max);
    for (size_t d = 0; d < c->Dv; d++) {
        double o = 0.0;
        for (size_t j = 0; j < S; j++) o += s[j] * v[j * (c->Dv + 5) + d];
        want[d] = o / sum;
    }
    free(s);
}

static void check_case(const char *isa, const one_case *c) {
    const size_t S = c->S, D = c->D, Dv = c->Dv;
    float *q = malloc(D * sizeof *q), *k = malloc(S * (D + 3) * sizeof *k), *v = malloc(S * (Dv + 5) * sizeof *v);
    float *mask = c->mask == NO_MASK ? NULL : malloc(S * 3 * sizeof *mask);
    for (size_t d = 0; d < D; d++) q[d] = uniform(-c->spread, c->spread);
    for (size_t n = 0; n < S * (D + 3); n++) k[n] = uniform(-c->spread, c->spread);
    for (size_t n = 0; n < S * (Dv + 5); n++) v[n] = uniform(-c->spread, c->spread);
    for (size_t n = 0; mask && n < S * 3; n++) {
        float r = uniform(0.0f, 1.0f);
        mask[n] = c->mask == ALL_HIDDEN || (c->mask == FIRST_TILE_HIDDEN && n / 3 < 256) || r < 0.2f
                      ? -INFINITY : uniform(-2.0f, 2.0f);
    }
    float *fused = malloc(Dv * sizeof *fused), *one = malloc(Dv * sizeof *one), lse_fused = 7, lse_one = 7;
    run_case(c, false, q, k, v, mask, fused, &lse_fused);
    run_case(c, true, q, k, v, mask, one, &lse_one);

    char name[200], why[200] = "";
    snprintf(name, sizeof name, "attend_one[%s] == fused path bit for bit: %s (S=%zu D=%zu Dv=%zu)", isa, c->name, S,
             D, Dv);
    int ok = memcmp(fused, one, Dv * sizeof *one) == 0 && memcmp(&lse_fused, &lse_one, sizeof lse_one) == 0;
    for (size_t d = 0; !ok && d < Dv; d++)
        if (memcmp(&fused[d], &one[d], sizeof one[d]) != 0) {
            snprintf(why, sizeof why, "out[%zu]: fused %.9g, one query %.9g", d, (double)fused[d], (double)one[d]);
            break;
        }
    if (!ok && !why[0]) snprintf(why, sizeof why, "lse: fused %.9g, one query %.9g", (double)lse_fused, (double)lse_one);
    CHECK(name, ok, "%s", why);

    /* and both near the formula: rtol 1e-5, atol 2e-6·spread (averages of values within spread) */
    double *want = malloc(Dv * sizeof *want);
    formula(want, c, q, k, v, mask);
    snprintf(name, sizeof name, "attend_one[%s] == formula: %s (S=%zu D=%zu Dv=%zu)", isa, c->name, S, D, Dv);
    ok = 1;
    for (size_t d = 0; ok && d < Dv; d++)
        if (!check_close_value(one[d], c->mask == ALL_HIDDEN ? NAN : want[d], 1e-5, 2e-6 * c->spread)) {
            ok = 0;
            snprintf(why, sizeof why, "out[%zu] = %.9g, want %.9g", d, (double)one[d], want[d]);
        }
    CHECK(name, ok, "%s", why);
    free(q), free(k), free(v), free(mask), free(fused), free(one), free(want);
}

int main(void) {
    const char *best = mha_kernels_isa();
    mha_kernels_set_threads(1);
    const one_case cases[] = {
        {"one key", 1, 32, 32, NO_MASK, false, false, 1, 0},
        {"a decoding step", 100, 32, 32, NO_MASK, false, false, 1, 0},
        {"awkward D and Dv, lse", 17, 7, 5, NO_MASK, false, true, 1, 0},
        {"a tile of keys at MR = 6", 252, 32, 32, NO_MASK, false, true, 1, 0},
        {"one past it", 253, 64, 64, NO_MASK, false, false, 1, 0},
        {"a whole tile", 256, 32, 33, NO_MASK, false, true, 1, 0},
        {"two tiles, ragged", 257, 17, 65, NO_MASK, false, true, 1, 0},
        {"three tiles", 600, 64, 128, NO_MASK, false, true, 1, 0},
        {"additive mask with -inf", 300, 32, 32, RANDOM_MASK, false, true, 1, 0},
        {"first tile all -inf", 520, 32, 32, FIRST_TILE_HIDDEN, false, true, 1, 0},
        {"every key -inf (NaN out)", 40, 32, 32, ALL_HIDDEN, false, true, 1, 0},
        {"causal: key 0 only", 50, 32, 32, NO_MASK, true, true, 1, 0},
        {"large scores (exp underflows)", 300, 32, 32, NO_MASK, false, true, 30, 1},
        {"scale 1, D 128", 129, 128, 128, RANDOM_MASK, false, false, 1, 1},
        {"Dv past the stack buffer (fused path)", 30, 16, 300, NO_MASK, false, true, 1, 0},
        {"D past the stack buffer (fused path)", 30, 300, 16, NO_MASK, false, true, 1, 0},
        {"D and Dv of whole vectors and a ragged one", 70, 80, 88, RANDOM_MASK, false, true, 1, 0},
    };
    const char *isas[] = {"avx512", "avx2", "portable"};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!mha_kernels_use_isa(isas[i])) {
            printf("# this CPU cannot run %s: its kernels are not tested here\n", isas[i]);
            continue;
        }
        for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) check_case(isas[i], &cases[n]);
    }
    mha_kernels_use_isa(best);
    CHECK_DONE();
}
