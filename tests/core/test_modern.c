/* tests/core/test_modern.c - the core's RoPE, ALiBi, sliding-window mask and sampling against
 * tests/fixtures/modern (gen_modern_fixtures.py: the exact formulas in float64, torch 1.13's model
 * code); sdpa's enable_gqa against K/V heads copied out, and its row log-sum-exp. */

#include "check.h"
#include "attention/positions.h"
#include "autograd/autograd.h"
#include "io/npy.h"
#include "kernels/kernels.h"
#include "nn/nn.h"
#include "attention/attention.h"
#include "nn/rope.h"
#include "nn/sample.h"

#include <stdlib.h>
#include <string.h>

#define FIX "tests/fixtures/modern/"

/* Loads FIX name.npy into out; a missing fixture is one failure. */
static int load(mha_tensor *out, const char *name) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s.npy", name);
    mha_status st = mha_npy_load(out, path);
    if (st != MHA_OK) check_report(0, name, "cannot load %s: %s", path, mha_errmsg());
    return st == MHA_OK;
}

/* Compares got with the fixture name (same element count) at rtol, atol. */
static void close_to(const char *what, const mha_tensor *got, const char *name, double rtol, double atol) {
    mha_tensor want = MHA_TENSOR_EMPTY;
    if (!load(&want, name)) return;
    if (mha_numel(got) != mha_numel(&want))
        check_report(0, what, "%zu elements, want %zu", mha_numel(got), mha_numel(&want));
    else if (want.dtype != got->dtype)
        check_report(0, what, "%s", "a bool result for a float reference, or the reverse");
    else if (want.dtype == MHA_BOOL) {
        size_t i = 0;
        while (i < mha_numel(got) && mha_bool(got)[i] == mha_bool(&want)[i]) i++;
        CHECK(what, i == mha_numel(got), "element %zu differs", i);
    } else {
        check_close_array(what, mha_f32(got), mha_f32(&want), mha_numel(got), rtol, atol);
    }
    mha_release(&want);
}

/* RoPE: the exact formula to 1e-6, torch's float32 model code to 1e-5, the backward to torch's
 * gradient. */
static void test_rope(void) {
    static const struct { const char *layout; size_t offset; double base; } cases[] = {
        {"half", 0, 10000}, {"half", 7, 10000}, {"half", 100, 500000},
        {"interleaved", 0, 10000}, {"interleaved", 7, 10000}, {"interleaved", 100, 500000},
    };
    mha_tensor x = MHA_TENSOR_EMPTY, gout = MHA_TENSOR_EMPTY;
    if (!load(&x, "rope_x") || !load(&gout, "rope_gout")) return;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mha_rope_options opt = {cases[c].base, strcmp(cases[c].layout, "half") ? MHA_ROPE_INTERLEAVED : MHA_ROPE_HALF,
                                cases[c].offset};
        char name[96], what[160];
        snprintf(name, sizeof name, "rope_%s_o%zu_b%.0f", cases[c].layout, cases[c].offset, cases[c].base);
        mha_tensor out = MHA_TENSOR_EMPTY, dx = MHA_TENSOR_EMPTY, back = MHA_TENSOR_EMPTY;
        CHECK("rope runs", mha_rope(&out, &x, &opt) == MHA_OK, "%s", mha_errmsg());
        char want[128];
        snprintf(what, sizeof what, "%s: the exact formula (atol 1e-6)", name);
        snprintf(want, sizeof want, "%s_exact", name);
        close_to(what, &out, want, 0, 1e-6);
        snprintf(what, sizeof what, "%s: torch 1.13's float32 model code (atol 1e-5)", name);
        snprintf(want, sizeof want, "%s_torch", name);
        close_to(what, &out, want, 0, 1e-5);
        CHECK("rope_backward runs", mha_rope_backward(&dx, &gout, &opt) == MHA_OK, "%s", mha_errmsg());
        snprintf(what, sizeof what, "%s: backward equals torch's gradient (atol 1e-5)", name);
        snprintf(want, sizeof want, "%s_grad", name);
        close_to(what, &dx, want, 0, 1e-5);
        CHECK("rope_backward undoes rope", mha_rope_backward(&back, &out, &opt) == MHA_OK, "%s", mha_errmsg());
        snprintf(what, sizeof what, "%s: rope_backward(rope(x)) = x (atol 1e-5)", name);
        check_close_array(what, mha_f32(&back), mha_f32(&x), mha_numel(&x), 0, 1e-5);
        mha_release(&out);
        mha_release(&dx);
        mha_release(&back);
    }
    /* autograd: d(sum(rope(x) * gout))/dx through the graph node */
    mha_rope_options opt = {10000, MHA_ROPE_INTERLEAVED, 7};
    mha_tensor leaf = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY, grad = MHA_TENSOR_EMPTY;
    mha_clone(&leaf, &x);
    mha_requires_grad(&leaf, true);
    CHECK("rope records a node", mha_ag_rope(&out, &leaf, &opt) == MHA_OK && mha_ag_fn_name(&out) &&
          strcmp(mha_ag_fn_name(&out), "rope") == 0, "%s", mha_errmsg());
    CHECK("backward through rope", mha_backward(&out, &gout) == MHA_OK, "%s", mha_errmsg());
    mha_grad(&grad, &leaf);
    close_to("rope's graph node gives torch's gradient (atol 1e-5)", &grad, "rope_interleaved_o7_b10000_grad", 0, 1e-5);
    mha_release(&grad);
    mha_release(&out);
    mha_release(&leaf);
    /* a strided x gives what its contiguous copy gives */
    mha_tensor xt = MHA_TENSOR_EMPTY, xc = MHA_TENSOR_EMPTY, a = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY;
    mha_transpose(&xt, &x, 0, 1);
    mha_contiguous(&xc, &xt);
    mha_rope(&a, &xt, &opt);
    mha_rope(&b, &xc, &opt);
    bool equal = false;
    mha_equal(&equal, &a, &b);
    CHECK("rope of a transposed view equals rope of its copy", equal, "%s", "they differ");
    mha_release(&xt), mha_release(&xc), mha_release(&a), mha_release(&b);
    /* the errors name the argument and the shape */
    mha_tensor odd = MHA_TENSOR_EMPTY, bad = MHA_TENSOR_EMPTY;
    size_t shape[2] = {3, 5};
    mha_zeros(&odd, MHA_FLOAT32, 2, shape);
    CHECK("rope: D odd", mha_rope(&bad, &odd, &opt) == MHA_E_SHAPE && !bad.storage &&
          strcmp(mha_errmsg(), "rope: the last dim D of x (3,5) is odd (5); RoPE turns pairs of features, so D must "
                 "be even") == 0, "got \"%s\"", mha_errmsg());
    mha_release(&odd);
    mha_release(&x);
    mha_release(&gout);
}

static void test_alibi(void) {
    for (size_t H = 1; H <= 12; H++) {
        mha_tensor slopes = MHA_TENSOR_EMPTY;
        char name[64], what[96];
        snprintf(name, sizeof name, "alibi_slopes_%zu", H);
        snprintf(what, sizeof what, "alibi slopes of H = %zu equal get_slopes' (exact)", H);
        CHECK("alibi_slopes runs", mha_alibi_slopes(&slopes, H) == MHA_OK, "%s", mha_errmsg());
        close_to(what, &slopes, name, 0, 0);
        mha_release(&slopes);
    }
    mha_tensor bias = MHA_TENSOR_EMPTY;
    mha_alibi_bias(&bias, 6, 3, 5);
    close_to("alibi bias (6,3,5), queries the last 3 of 5 (rtol 1e-7)", &bias, "alibi_bias_6_3_5", 1e-7, 0);
    mha_release(&bias);
    mha_alibi_bias(&bias, 12, 4, 4);
    close_to("alibi bias (12,4,4) (rtol 1e-7)", &bias, "alibi_bias_12_4_4", 1e-7, 0);
    mha_release(&bias);
    CHECK("alibi_bias: L > S", mha_alibi_bias(&bias, 2, 5, 3) == MHA_E_ARG &&
          strstr(mha_errmsg(), "alibi_bias: L = 5 queries exceed S = 3 positions"), "got \"%s\"", mha_errmsg());
}

static void test_window(void) {
    static const size_t cases[][4] = {{6, 3, 0, 6}, {6, 3, 2, 6}, {4, 2, 1, 9}, {1, 4, 2, 10},
                                      {5, 1, 0, 5}, {5, 5, 0, 5}, {5, 9, 3, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mha_tensor mask = MHA_TENSOR_EMPTY;
        char name[64], what[128];
        snprintf(name, sizeof name, "window_L%zu_W%zu_s%zu_S%zu", cases[c][0], cases[c][1], cases[c][2], cases[c][3]);
        snprintf(what, sizeof what, "sliding window mask %s equals NumPy's", name);
        CHECK("sliding_window_mask runs", mha_sliding_window_mask(&mask, cases[c][0], cases[c][1], cases[c][2],
              cases[c][3]) == MHA_OK, "%s", mha_errmsg());
        close_to(what, &mask, name, 0, 0);
        mha_release(&mask);
    }
    mha_tensor window = MHA_TENSOR_EMPTY, causal = MHA_TENSOR_EMPTY;
    bool equal = false;
    mha_sliding_window_mask(&window, 7, 7, 0, 7);
    mha_causal_mask(&causal, 7, 7);
    mha_equal(&equal, &window, &causal);
    CHECK("a window W >= S is the causal mask", equal, "%s", "they differ");
    mha_release(&window), mha_release(&causal);
    CHECK("sliding_window_mask: W = 0", mha_sliding_window_mask(&window, 3, 0, 0, 3) == MHA_E_ARG &&
          strstr(mha_errmsg(), "W must be at least 1"), "got \"%s\"", mha_errmsg());
}

/* Draws n tokens from logits (V) expanded to (n, V); counts[j] += how often j came. */
static void draw(size_t *counts, const mha_tensor *logits, size_t n, const mha_sample_options *opt) {
    mha_tensor rows = MHA_TENSOR_EMPTY, index = MHA_TENSOR_EMPTY;
    size_t shape[2] = {n, logits->shape[0]};
    mha_expand(&rows, logits, 2, shape);
    if (mha_sample(&index, &rows, opt) != MHA_OK) check_report(0, "sample runs", "%s", mha_errmsg());
    for (size_t r = 0; index.storage && r < n; r++) counts[(size_t)mha_f32(&index)[r]]++;
    mha_release(&rows), mha_release(&index);
}

static void test_sample(void) {
    mha_tensor logits = MHA_TENSOR_EMPTY;
    if (!load(&logits, "sample_logits")) return;
    size_t counts[8] = {0};
    mha_sample_options greedy = {0, 0, 1, false, 0}, top1 = {1, 1, 1, false, 0};
    draw(counts, &logits, 50, &greedy);
    draw(counts, &logits, 50, &top1);
    CHECK("temperature 0 and top_k 1 take the argmax (index 3)", counts[3] == 100, "got %zu of 100", counts[3]);
    /* the same seed gives the same tokens */
    mha_sample_options seeded = {1, 0, 1, true, 7};
    mha_tensor rows = MHA_TENSOR_EMPTY, a = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY;
    size_t shape[2] = {64, 8};
    mha_expand(&rows, &logits, 2, shape);
    mha_sample(&a, &rows, &seeded);
    mha_sample(&b, &rows, &seeded);
    bool equal = false;
    mha_equal(&equal, &a, &b);
    CHECK("a seed gives the same 64 tokens twice", equal, "%s", "they differ");
    mha_release(&rows), mha_release(&a), mha_release(&b);
    /* first max on ties, and the errors */
    mha_tensor tie = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    size_t four[1] = {4};
    mha_full(&tie, 1, four, 2.0f);
    mha_sample(&out, &tie, &greedy);
    CHECK("argmax takes the first of equal logits", out.storage && mha_f32(&out)[0] == 0, "%s", mha_errmsg());
    mha_release(&out);
    mha_release(&tie);
    mha_full(&tie, 1, four, -INFINITY);
    CHECK("sample: a row of -inf", mha_sample(&out, &tie, &top1) == MHA_E_ARG &&
          strcmp(mha_errmsg(), "sample: row 1 of logits is all -inf: no token can be drawn") == 0,
          "got \"%s\"", mha_errmsg());
    mha_release(&tie);
    mha_sample_options bad = {-1, 0, 1, false, 0};
    CHECK("sample: a negative temperature", mha_sample(&out, &logits, &bad) == MHA_E_ARG &&
          strstr(mha_errmsg(), "temperature must be a number >= 0"), "got \"%s\"", mha_errmsg());
    mha_release(&logits);
}

/* ---- grouped-query attention: the same bits as K/V heads copied out (torch's repeat_interleave) ---- */

/* t (N,H_kv,S,E) with each head repeated group times in place: (N,H_kv·group,S,E). */
static mha_status repeat_heads(mha_tensor *out, const mha_tensor *t, size_t group) {
    const size_t N = t->shape[0], H_kv = t->shape[1], SE = t->shape[2] * t->shape[3];
    const size_t shape[4] = {N, H_kv * group, t->shape[2], t->shape[3]};
    mha_status st = mha_empty(out, MHA_FLOAT32, 4, shape);
    for (size_t n = 0; st == MHA_OK && n < N; n++)
        for (size_t h = 0; h < H_kv * group; h++)
            memcpy(mha_f32(out) + (n * H_kv * group + h) * SE, mha_f32(t) + (n * H_kv + h / group) * SE,
                   SE * sizeof(float));
    return st;
}

/* d (N,H,S,E) summed over each group of heads, in double: (N,H/group,S,E) into sum (caller's memory). */
static void sum_groups(float *sum, const mha_tensor *d, size_t group) {
    const size_t N = d->shape[0], H_kv = d->shape[1] / group, SE = d->shape[2] * d->shape[3];
    for (size_t n = 0; n < N; n++)
        for (size_t h = 0; h < H_kv; h++)
            for (size_t x = 0; x < SE; x++) {
                double acc = 0.0;
                for (size_t g = 0; g < group; g++) acc += mha_f32(d)[((n * H_kv + h) * group + g) * SE + x];
                sum[(n * H_kv + h) * SE + x] = (float)acc;
            }
}

static int same_bits(const mha_tensor *a, const mha_tensor *b) {
    return mha_numel(a) == mha_numel(b) && memcmp(mha_f32(a), mha_f32(b), mha_numel(a) * sizeof(float)) == 0;
}

static void release_all(mha_tensor *t, size_t n) {
    for (size_t i = 0; i < n; i++) mha_release(&t[i]);
}

/* One case: the forward (fused and plain, with lse) and the backward (fused and plain) of q, k, v with
 * enable_gqa against the same on k and v repeated; what ran is in got[] (out, lse, dq, dk, dv of the fused
 * paths) for the threads check. */
static void gqa_case(mha_tensor got[5], const mha_tensor in[5], size_t group, bool causal, const char *label) {
    const mha_tensor *q = &in[0], *k = &in[1], *v = &in[2], *mask = &in[3], *dout = &in[4];
    mha_tensor kr = MHA_TENSOR_EMPTY, vr = MHA_TENSOR_EMPTY, r[10], w = MHA_TENSOR_EMPTY;
    for (size_t i = 0; i < 10; i++) r[i] = MHA_TENSOR_EMPTY;
    mha_sdpa_options gqa = {.attn_mask = mask, .is_causal = causal, .enable_gqa = true};
    mha_sdpa_options plain = {.attn_mask = mask, .is_causal = causal};
    char what[160];
    mha_status st = repeat_heads(&kr, k, group);
    if (st == MHA_OK) st = repeat_heads(&vr, v, group);
    if (st == MHA_OK) st = mha_sdpa_lse(&got[0], NULL, &got[1], q, k, v, &gqa);
    if (st == MHA_OK) st = mha_sdpa_lse(&r[0], NULL, &r[1], q, &kr, &vr, &plain);
    if (st == MHA_OK) st = mha_sdpa_lse(&r[2], &w, &r[3], q, k, v, &gqa);
    if (st == MHA_OK) st = mha_sdpa_lse(&r[4], &r[5], &r[6], q, &kr, &vr, &plain);
    if (st == MHA_OK) st = mha_sdpa_backward(&got[2], &got[3], &got[4], NULL, dout, NULL, q, k, v, NULL, &got[0], &gqa);
    if (st == MHA_OK) st = mha_sdpa_backward(&r[7], &r[8], &r[9], NULL, dout, NULL, q, &kr, &vr, NULL, &r[0], &plain);
    snprintf(what, sizeof what, "sdpa enable_gqa %s: forward and backward run", label);
    CHECK(what, st == MHA_OK, "%s", mha_errmsg());
    if (st == MHA_OK) {
        snprintf(what, sizeof what, "sdpa enable_gqa %s: fused out and lse = K/V heads copied out (same bits)", label);
        CHECK(what, same_bits(&got[0], &r[0]) && same_bits(&got[1], &r[1]), "%s", "bits differ");
        snprintf(what, sizeof what, "sdpa enable_gqa %s: plain out, weights, lse = K/V copied out (same bits)", label);
        CHECK(what, same_bits(&r[2], &r[4]) && same_bits(&w, &r[5]) && same_bits(&r[3], &r[6]), "%s", "bits differ");
        snprintf(what, sizeof what, "sdpa return_lse %s: fused = plain (atol 1e-6)", label);
        check_close_array(what, mha_f32(&got[1]), mha_f32(&r[3]), mha_numel(&got[1]), 0, 1e-6);
        snprintf(what, sizeof what, "sdpa_backward enable_gqa %s: dq = K/V copied out's (same bits)", label);
        CHECK(what, same_bits(&got[2], &r[7]), "%s", "bits differ");
        float *sum = malloc(mha_numel(k) * sizeof *sum);
        for (int i = 0; sum && i < 2; i++) {
            sum_groups(sum, &r[8 + i], group);
            snprintf(what, sizeof what, "sdpa_backward enable_gqa %s: %s = the group's sum of the copies' (1e-5)",
                     label, i ? "dv" : "dk");
            check_close_array(what, mha_f32(&got[3 + i]), sum, mha_numel(k), 1e-5, 1e-5);
        }
        free(sum);
    }
    mha_release(&kr), mha_release(&vr), mha_release(&w);
    release_all(r, 10);
}

static void test_gqa(void) {
    static const size_t heads[][2] = {{8, 2}, {8, 1}, {4, 4}};
    const size_t N = 2, L = 70, S = 90, E = 16;
    for (size_t c = 0; c < 3; c++) {
        const size_t H = heads[c][0], H_kv = heads[c][1];
        const size_t sq[4] = {N, H, L, E}, skv[4] = {N, H_kv, S, E}, sm[4] = {N, 1, L, S};
        mha_tensor in[5];
        for (size_t i = 0; i < 5; i++) in[i] = MHA_TENSOR_EMPTY;
        mha_seed(21 + c);
        mha_status st = mha_randn(&in[0], 4, sq);
        if (st == MHA_OK) st = mha_randn(&in[1], 4, skv);
        if (st == MHA_OK) st = mha_randn(&in[2], 4, skv);
        if (st == MHA_OK) st = mha_randn(&in[3], 4, sm);
        if (st == MHA_OK) st = mha_randn(&in[4], 4, sq);
        CHECK("sdpa enable_gqa: inputs", st == MHA_OK, "%s", mha_errmsg());
        for (int causal = 0; st == MHA_OK && causal < 2; causal++) {
            char label[64], what[160];
            mha_tensor one[5], two[5];
            for (size_t i = 0; i < 5; i++) one[i] = two[i] = MHA_TENSOR_EMPTY;
            snprintf(label, sizeof label, "H=%zu H_kv=%zu%s", H, H_kv, causal ? " causal" : "");
            const size_t threads = mha_kernels_threads();
            char label_n[80];
            mha_kernels_set_threads(1);
            snprintf(label_n, sizeof label_n, "%s, 1 thread", label);
            gqa_case(one, in, H / H_kv, causal, label_n);
            mha_kernels_set_threads(2);
            snprintf(label_n, sizeof label_n, "%s, 2 threads", label);
            gqa_case(two, in, H / H_kv, causal, label_n);
            mha_kernels_set_threads(threads);
            int same = 1;
            for (size_t i = 0; i < 5; i++) same = same && same_bits(&one[i], &two[i]);
            snprintf(what, sizeof what, "sdpa enable_gqa %s: 1 and 2 threads give the same bits", label);
            CHECK(what, same, "%s", "bits differ");
            release_all(one, 5), release_all(two, 5);
        }
        release_all(in, 5);
    }
}

int main(void) {
    test_rope();
    test_alibi();
    test_window();
    test_sample();
    test_gqa();
    CHECK_DONE();
}
