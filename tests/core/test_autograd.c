/* tests/core/test_autograd.c - the autograd engine from C: a small graph's gradients against hand-derived values,
 * no memory left behind, the fused sdpa backward equal to the plain one, its O(L·D) extra memory, MultiheadAttention
 * gradients bit-identical on 1 and 2 threads, and the error messages. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "autograd/autograd_ops.h"
#include "attention/sdpa_testing.h"
#include "nn/nn.h"
#include "attention/attention.h"
#include "check.h"
#include "kernels/kernels.h"
#include "kernels/kernels_testing.h"
#include "optim/optim.h"
#include "attention/multihead_grad.h"
#include "attention/sdpa.h"

static float max_abs_diff(const mha_tensor *a, const mha_tensor *b) {
    mha_tensor ca = MHA_TENSOR_EMPTY, cb = MHA_TENSOR_EMPTY;
    mha_contiguous(&ca, a);
    mha_contiguous(&cb, b);
    float worst = 0.0f;
    for (size_t i = 0, n = mha_numel(a); i < n; i++) {
        float d = fabsf(mha_f32(&ca)[i] - mha_f32(&cb)[i]);
        if (!(d <= worst)) worst = d; /* NaN wins */
    }
    mha_release(&ca), mha_release(&cb);
    return worst;
}

/* y = sum((a·b + a)²) by hand: dy/da = 2(ab + a)(b + 1), dy/db = 2(ab + a)a; a used twice (accumulation). */
static void test_small_graph(void) {
    size_t before = mha_live_bytes();
    size_t shape[1] = {3};
    mha_tensor a = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY, ab = MHA_TENSOR_EMPTY, s = MHA_TENSOR_EMPTY,
               sq = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY, ga = MHA_TENSOR_EMPTY, gb = MHA_TENSOR_EMPTY;
    mha_arange(&a, 1, 4, 1);        /* 1 2 3 */
    mha_full(&b, 1, shape, 0.5f);
    CHECK("requires_grad on a leaf", mha_requires_grad(&a, true) == MHA_OK && mha_requires_grad(&b, true) == MHA_OK, "%s", mha_errmsg());
    mha_ag_binary(&ab, MHA_MUL, &a, &b);
    mha_ag_binary(&s, MHA_ADD, &ab, &a);
    mha_ag_binary(&sq, MHA_MUL, &s, &s);
    mha_ag_reduce(&y, MHA_SUM, &sq, MHA_ALL_DIMS, false);
    CHECK("the result records its op", mha_ag_fn_name(&y) && strcmp(mha_ag_fn_name(&y), "sum") == 0, "grad_fn %s",
          mha_ag_fn_name(&y) ? mha_ag_fn_name(&y) : "none");
    CHECK("backward of a scalar", mha_backward(&y, NULL) == MHA_OK, "%s", mha_errmsg());
    mha_grad(&ga, &a);
    mha_grad(&gb, &b);
    bool ok = ga.storage && gb.storage;
    for (int i = 0; ok && i < 3; i++) {
        double av = i + 1, bv = 0.5, s_ = av * bv + av;
        ok = fabs(mha_f32(&ga)[i] - 2 * s_ * (bv + 1)) < 1e-5 && fabs(mha_f32(&gb)[i] - 2 * s_ * av) < 1e-5;
    }
    CHECK("gradients of a·b + a squared, summed", ok, "da %g %g %g", ga.storage ? (double)mha_f32(&ga)[0] : 0.0,
          ga.storage ? (double)mha_f32(&ga)[1] : 0.0, ga.storage ? (double)mha_f32(&ga)[2] : 0.0);
    CHECK("a second backward through the freed graph is refused",
          mha_backward(&y, NULL) != MHA_OK && strstr(mha_errmsg(), "already used by an earlier backward"), "%s", mha_errmsg());
    mha_release(&ga), mha_release(&gb);
    mha_release(&ab), mha_release(&s), mha_release(&sq), mha_release(&y), mha_release(&a), mha_release(&b);
    CHECK("graph, gradients and tensors all freed", mha_live_bytes() == before, "%zu bytes left",
          mha_live_bytes() - before);
}

static void test_errors(void) {
    size_t shape[2] = {2, 3};
    mha_tensor x = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY, g = MHA_TENSOR_EMPTY, m = MHA_TENSOR_EMPTY;
    mha_randn(&x, 2, shape);
    mha_randn(&w, 2, shape);
    CHECK("backward of a tensor outside the graph",
          mha_backward(&x, NULL) != MHA_OK && strstr(mha_errmsg(), "backward: this (2,3) tensor does not require grad"),
          "%s", mha_errmsg());
    mha_requires_grad(&x, true);
    mha_ag_binary(&y, MHA_MUL, &x, &w);
    CHECK("backward of (2,3) without a gradient",
          mha_backward(&y, NULL) != MHA_OK && strstr(mha_errmsg(), "backward: the tensor has shape (2,3)"), "%s", mha_errmsg());
    size_t wrong[1] = {3};
    mha_full(&g, 1, wrong, 1.0f);
    CHECK("backward with a gradient of the wrong shape",
          mha_backward(&y, &g) != MHA_OK && strstr(mha_errmsg(), "gradient (3) must be a float tensor of the output's shape (2,3)"),
          "%s", mha_errmsg());
    CHECK("requires_grad(false) on an op's result",
          mha_requires_grad(&y, false) != MHA_OK && strstr(mha_errmsg(), "made by mul"), "%s", mha_errmsg());
    mha_tensor zero = MHA_TENSOR_EMPTY;
    mha_full(&zero, 0, NULL, 0.0f);
    CHECK("a write into a leaf that requires grad",
          mha_copy_into_named(&x, &w, "copy_") != MHA_OK &&
              strstr(mha_errmsg(), "copy_: this (2,3) tensor requires grad"),
          "%s", mha_errmsg());
    mha_no_grad_enter();
    CHECK("... allowed in no-grad mode", mha_copy_into_named(&x, &w, "copy_") == MHA_OK, "%s", mha_errmsg());
    mha_no_grad_exit();
    /* w was saved by mul: changing it afterwards makes backward refuse, naming mul */
    CHECK("a write into a saved tensor is counted", mha_copy_into_named(&w, &zero, "fill_") == MHA_OK, "%s",
          mha_errmsg());
    mha_release(&zero);
    mha_release(&g);
    mha_full(&g, 2, shape, 1.0f);
    CHECK("backward after a saved tensor changed",
          mha_backward(&y, &g) != MHA_OK && strstr(mha_errmsg(), "that mul saved for its gradient was changed in place"),
          "%s", mha_errmsg());
    mha_tensor b = MHA_TENSOR_EMPTY;
    mha_compare_scalar(&b, MHA_GT, &w, 0.0f);
    CHECK("a bool tensor cannot require grad", mha_requires_grad(&b, true) == MHA_E_DTYPE, "%s", mha_errmsg());
    mha_no_grad_enter();
    mha_ag_binary(&m, MHA_ADD, &x, &w);
    mha_no_grad_exit();
    CHECK("no-grad mode records nothing", !mha_ag_requires(&m), "%s", "result requires grad");
    mha_release(&b), mha_release(&x), mha_release(&w), mha_release(&y), mha_release(&g), mha_release(&m);
}

/* The write rule lives in the core's writers (core/tensor/tensor.h), so a C caller gets it as Lua does: a write
 * into a leaf that requires grad is refused by every writer, a write into saved data makes backward refuse, and
 * writes in no-grad mode, through views and by an optimizer's step are counted in the storage's version. */
static void test_core_writers_follow_the_rule(void) {
    size_t before = mha_live_bytes();
    size_t shape[2] = {2, 3}, at[2] = {1, 2};
    mha_tensor x = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY, g = MHA_TENSOR_EMPTY,
               zero = MHA_TENSOR_EMPTY, row = MHA_TENSOR_EMPTY, gx = MHA_TENSOR_EMPTY;
    mha_randn(&x, 2, shape);
    mha_randn(&w, 2, shape);
    mha_full(&g, 2, shape, 1.0f);
    mha_full(&zero, 0, NULL, 0.0f);
    mha_requires_grad(&x, true);
    float x00 = mha_f32(&x)[0];
    const char *leaf = "this (2,3) tensor requires grad (a leaf";
    CHECK("set into a leaf that requires grad is refused, from C",
          mha_set(&x, at, 1.0) != MHA_OK && strstr(mha_errmsg(), "set: ") && strstr(mha_errmsg(), leaf), "%s",
          mha_errmsg());
    CHECK("copy_into likewise, named copy",
          mha_copy_into(&x, &zero) != MHA_OK && strstr(mha_errmsg(), "copy: this (2,3)"), "%s", mha_errmsg());
    CHECK("a slice write (t[i] = v) asks about the tensor, not its slice",
          mha_copy_into_slice(&x, 0, 0, &zero, "newindex") != MHA_OK && strstr(mha_errmsg(), "newindex: this (2,3)"),
          "%s", mha_errmsg());
    CHECK("uniform_ likewise", mha_uniform_(&x, 0, 1) != MHA_OK && strstr(mha_errmsg(), "uniform_: ") &&
          strstr(mha_errmsg(), leaf), "%s", mha_errmsg());
    CHECK("xavier_normal_ likewise", mha_xavier_normal_(&x, 1) != MHA_OK && strstr(mha_errmsg(), "xavier_normal_: "),
          "%s", mha_errmsg());
    CHECK("the refused writes wrote nothing", mha_f32(&x)[0] == x00, "x[0] %g, was %g", (double)mha_f32(&x)[0],
          (double)x00);

    /* zero_ and fill_ in no-grad mode: allowed, each counted */
    size_t v0 = x.storage->version;
    mha_no_grad_enter();
    mha_status st1 = mha_copy_into_named(&x, &zero, "zero_");
    size_t v1 = x.storage->version;
    mha_status st2 = mha_copy_into_named(&x, &g, "fill_");
    mha_no_grad_exit();
    CHECK("zero_ and fill_ in no-grad mode write and bump the version each",
          st1 == MHA_OK && st2 == MHA_OK && v1 == v0 + 1 && x.storage->version == v0 + 2 && mha_f32(&x)[5] == 1.0f,
          "status %d %d, versions %zu %zu %zu", (int)st1, (int)st2, v0, v1, x.storage->version);

    /* a C caller writes into data mul saved, through an untracked view: backward refuses, naming mul */
    mha_ag_binary(&y, MHA_MUL, &x, &w);
    mha_select(&row, &w, 0, 1);
    size_t first[1] = {0};
    CHECK("a write through a view of saved data is allowed", mha_set(&row, first, 5.0) == MHA_OK, "%s",
          mha_errmsg());
    CHECK("... and backward then refuses, naming mul",
          mha_backward(&y, &g) != MHA_OK && strstr(mha_errmsg(), "that mul saved for its gradient was changed in place"),
          "%s", mha_errmsg());
    mha_release(&y);

    /* an optimizer's step writes a parameter that requires grad, as torch's under no_grad: counted, not refused */
    mha_ag_binary(&y, MHA_MUL, &x, &x);
    mha_sgd_options sgd = {.lr = 0.1};
    mha_full(&gx, 2, shape, 1.0f);
    v0 = x.storage->version;
    CHECK("an SGD step on a leaf that requires grad is allowed, in grad mode",
          mha_sgd_step_tensor(&x, NULL, &gx, &sgd, true) == MHA_OK && fabsf(mha_f32(&x)[5] - 0.9f) < 1e-6f, "%s",
          mha_errmsg());
    CHECK("... and counted, so the graph that saved the parameter refuses to backward",
          x.storage->version == v0 + 1 && mha_backward(&y, &g) != MHA_OK && strstr(mha_errmsg(), "that mul saved"),
          "version %zu after %zu: %s", x.storage->version, v0, mha_errmsg());
    v0 = gx.storage->version;
    CHECK("scaling a gradient in place is counted",
          mha_scale_tensor(&gx, 0.5f) == MHA_OK && gx.storage->version == v0 + 1 && mha_f32(&gx)[0] == 0.5f, "%s",
          mha_errmsg());
    mha_release(&x), mha_release(&w), mha_release(&y), mha_release(&g), mha_release(&zero), mha_release(&row),
        mha_release(&gx);
    CHECK("every tensor and graph of the write checks freed", mha_live_bytes() == before, "%zu bytes left",
          mha_live_bytes() - before);
}

/* q, k, v random (B,H,L,D) with a float mask (L,S); returns the plain and fused gradients' largest difference. */
static void test_fused_equals_plain(void) {
    size_t qs[4] = {2, 2, 70, 8}, ks[4] = {2, 2, 150, 8}, ms[2] = {70, 150};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, mask = MHA_TENSOR_EMPTY;
    mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, dout = MHA_TENSOR_EMPTY;
    mha_tensor g1[3] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_tensor g2[3] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_seed(5);
    mha_randn(&q, 4, qs), mha_randn(&k, 4, ks), mha_randn(&v, 4, ks), mha_randn(&mask, 2, ms);
    mha_sdpa_options opt = {.attn_mask = &mask, .is_causal = true};
    mha_sdpa(&out, &w, &q, &k, &v, &opt);
    mha_randn(&dout, 4, out.shape);
    mha_status s1 = mha_sdpa_backward(&g1[0], &g1[1], &g1[2], NULL, &dout, NULL, &q, &k, &v, &w, NULL, &opt);
    mha_status s2 = mha_sdpa_backward(&g2[0], &g2[1], &g2[2], NULL, &dout, NULL, &q, &k, &v, NULL, &out, &opt);
    float worst = 0.0f;
    if (s1 == MHA_OK && s2 == MHA_OK)
        for (int i = 0; i < 3; i++) {
            float d = max_abs_diff(&g1[i], &g2[i]);
            if (!(d <= worst)) worst = d;
        }
    CHECK("fused sdpa backward equals the plain one (2x2 heads, 70x150, causal + float mask)",
          s1 == MHA_OK && s2 == MHA_OK && worst < 2e-5, "largest difference %g (%s)", (double)worst, mha_errmsg());
    for (int i = 0; i < 3; i++) mha_release(&g1[i]), mha_release(&g2[i]);
    mha_release(&q), mha_release(&k), mha_release(&v), mha_release(&mask), mha_release(&out), mha_release(&w),
        mha_release(&dout);
}

/* The plain backward takes rowsum(P∘dP) as rowsum(dO∘out) when it is given the forward's output: the
 * same gradients to float rounding; a wrong out shows it is read; with the weights' own gradient
 * (dP is no longer dO·vᵀ) out is not used, bit for bit. */
static void test_plain_delta_from_out(void) {
    size_t qs[4] = {2, 2, 70, 8}, ks[4] = {2, 2, 150, 8}, ms[2] = {70, 150};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, mask = MHA_TENSOR_EMPTY;
    mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, dout = MHA_TENSOR_EMPTY, dw = MHA_TENSOR_EMPTY;
    mha_tensor zero = MHA_TENSOR_EMPTY, g[5][3];
    for (int c = 0; c < 5; c++)
        for (int i = 0; i < 3; i++) g[c][i] = MHA_TENSOR_EMPTY;
    mha_seed(7);
    mha_randn(&q, 4, qs), mha_randn(&k, 4, ks), mha_randn(&v, 4, ks), mha_randn(&mask, 2, ms);
    mha_sdpa_options opt = {.attn_mask = &mask, .is_causal = true};
    mha_sdpa(&out, &w, &q, &k, &v, &opt);
    mha_randn(&dout, 4, out.shape), mha_randn(&dw, 4, w.shape), mha_zeros(&zero, MHA_FLOAT32, 4, out.shape);
    const mha_tensor *outs[5] = {NULL, &out, &zero, NULL, &out}, *dws[5] = {NULL, NULL, NULL, &dw, &dw};
    bool ok = true;
    for (int c = 0; c < 5; c++)
        ok = ok && mha_sdpa_backward(&g[c][0], &g[c][1], &g[c][2], NULL, &dout, dws[c], &q, &k, &v, &w, outs[c], &opt) ==
                       MHA_OK;
    float same = 0.0f, wrong = INFINITY;   /* wrong: the smaller change of dQ and dK */
    bool ignored = ok;
    for (int i = 0; ok && i < 3; i++) {
        float d = max_abs_diff(&g[0][i], &g[1][i]), e = max_abs_diff(&g[0][i], &g[2][i]);
        if (!(d <= same)) same = d;
        if (i < 2 && !(e >= wrong)) wrong = e;   /* dV does not depend on delta */
        ignored = ignored && memcmp(mha_f32(&g[3][i]), mha_f32(&g[4][i]), g[3][i].storage->nbytes) == 0;
    }
    CHECK("plain sdpa backward with out: the gradients without it, to float rounding", ok && same < 2e-5,
          "largest difference %g (%s)", (double)same, mha_errmsg());
    CHECK("... and it reads out: a zero out changes dQ and dK", ok && wrong > 1e-3, "largest difference %g",
          (double)wrong);
    CHECK("... but not with the weights' own gradient: the same bits as without out", ignored, "%s", mha_errmsg());
    for (int c = 0; c < 5; c++)
        for (int i = 0; i < 3; i++) mha_release(&g[c][i]);
    mha_release(&q), mha_release(&k), mha_release(&v), mha_release(&mask), mha_release(&out), mha_release(&w),
        mha_release(&dout), mha_release(&dw), mha_release(&zero);
}

/* Beyond 4096 keys the fused backward finds each row's log-sum-exp first (pass 1), summing each tile's exps with
 * the forward's vectorised softmax kernel; the plain reference loop (double exps) must give the same gradients to
 * float rounding. A key padding row masks a whole key tile for one query (tile skipped) and keys at the end. */
static void test_pass1_equals_reference(void) {
    size_t qs[3] = {1, 70, 8}, ks[3] = {1, 4500, 8}, ms[2] = {70, 4500};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, mask = MHA_TENSOR_EMPTY;
    mha_tensor out = MHA_TENSOR_EMPTY, dout = MHA_TENSOR_EMPTY;
    mha_tensor g1[3] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_tensor g2[3] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_seed(6);
    mha_randn(&q, 3, qs), mha_randn(&k, 3, ks), mha_randn(&v, 3, ks), mha_zeros(&mask, MHA_FLOAT32, 2, ms);
    float *f = mha_f32(&mask);
    for (size_t j = 0; j < 1024; j++) f[3 * 4500 + j] = -INFINITY;  /* query 3: its first two key tiles masked */
    for (size_t j = 4000; j < 4500; j++) f[9 * 4500 + j] = -INFINITY; /* query 9: the last tile's keys masked */
    for (size_t i = 0, n = mha_numel(&q); i < n; i++) mha_f32(&q)[i] *= 3.0f; /* peaked rows: exps far apart */
    mha_sdpa_options opt = {.attn_mask = &mask};
    mha_sdpa(&out, NULL, &q, &k, &v, &opt);
    mha_randn(&dout, 3, out.shape);
    mha_sdpa_backward_plain_lse(true);
    mha_status s1 = mha_sdpa_backward(&g1[0], &g1[1], &g1[2], NULL, &dout, NULL, &q, &k, &v, NULL, &out, &opt);
    mha_sdpa_backward_plain_lse(false);
    mha_status s2 = mha_sdpa_backward(&g2[0], &g2[1], &g2[2], NULL, &dout, NULL, &q, &k, &v, NULL, &out, &opt);
    float worst = 0.0f;
    if (s1 == MHA_OK && s2 == MHA_OK)
        for (int i = 0; i < 3; i++) {
            float d = max_abs_diff(&g1[i], &g2[i]);
            if (!(d <= worst)) worst = d;
        }
    CHECK("fused sdpa backward over 4096 keys: pass 1 by the softmax kernel equals the plain reference (70x4500)",
          s1 == MHA_OK && s2 == MHA_OK && worst < 1e-5, "largest difference %g (%s)", (double)worst, mha_errmsg());
    for (int i = 0; i < 3; i++) mha_release(&g1[i]), mha_release(&g2[i]);
    mha_release(&q), mha_release(&k), mha_release(&v), mha_release(&mask), mha_release(&out), mha_release(&dout);
}

/* Autograd's sdpa keeps the weights for its backward when they fit the budget (4 products), else runs fused
 * (5 products, memory O(L·D)): both give the same gradients (budget 0 forces fused), a float mask's included. */
static void sdpa_autograd_grads(mha_tensor *grads, size_t budget) {
    size_t qs[4] = {2, 3, 40, 8}, ks[4] = {2, 1, 90, 8}, ms[4] = {2, 1, 40, 90};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, mask = MHA_TENSOR_EMPTY,
               out = MHA_TENSOR_EMPTY, sq = MHA_TENSOR_EMPTY, loss = MHA_TENSOR_EMPTY;
    mha_seed(7);
    mha_randn(&q, 4, qs), mha_randn(&k, 4, ks), mha_randn(&v, 4, ks), mha_randn(&mask, 4, ms);
    mha_requires_grad(&q, true), mha_requires_grad(&k, true), mha_requires_grad(&v, true);
    mha_requires_grad(&mask, true);
    size_t was = mha_ag_sdpa_keep_budget(budget);
    mha_sdpa_options opt = {.is_causal = true, .attn_mask = &mask};
    mha_ag_sdpa(&out, NULL, &q, &k, &v, &opt);
    mha_ag_sdpa_keep_budget(was);
    mha_ag_binary(&sq, MHA_MUL, &out, &out);
    mha_ag_reduce(&loss, MHA_SUM, &sq, MHA_ALL_DIMS, false);
    mha_backward(&loss, NULL);
    mha_grad(&grads[0], &q), mha_grad(&grads[1], &k), mha_grad(&grads[2], &v), mha_grad(&grads[3], &mask);
    mha_release(&q), mha_release(&k), mha_release(&v), mha_release(&mask), mha_release(&out), mha_release(&sq);
    mha_release(&loss);
}

static void test_kept_equals_fused(void) {
    mha_tensor kept[4] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_tensor fused[4] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    size_t before = mha_live_bytes();
    sdpa_autograd_grads(kept, (size_t)1 << 30);
    sdpa_autograd_grads(fused, 0);
    float worst = 0.0f;
    bool all = true;
    for (int i = 0; i < 4; i++) {
        all = all && kept[i].storage && fused[i].storage;
        float d = all ? max_abs_diff(&kept[i], &fused[i]) : NAN;
        if (!(d <= worst)) worst = d;
        mha_release(&kept[i]), mha_release(&fused[i]);
    }
    CHECK("autograd sdpa: the backward from kept weights equals the fused one (q (2,3,40,8), k, v (2,1,90,8), causal, "
          "a (2,1,40,90) float mask's gradient too)",
          all && worst < 2e-5, "largest difference %g", (double)worst);
    CHECK("autograd sdpa: kept weights freed with the graph", mha_live_bytes() == before, "%zu bytes left",
          mha_live_bytes() - before);
}

/* The fused backward's extra memory beyond its inputs and its three gradients: two (64, S) tiles (2 MiB here) and
 * small change, never the (L,S) matrix. At L = S = 4096, D = 64, one (L,S) float matrix is 64 MiB; the gradients
 * are 3 MiB. The small change is up to 1 MiB a thread: each thread of a split product packs its own panels. */
static void test_fused_memory(void) {
    const size_t L = 4096, D = 64;
    size_t shape[3] = {1, L, D};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY, dout = MHA_TENSOR_EMPTY;
    mha_tensor dq = MHA_TENSOR_EMPTY, dk = MHA_TENSOR_EMPTY, dv = MHA_TENSOR_EMPTY;
    mha_randn(&q, 3, shape), mha_randn(&k, 3, shape), mha_randn(&v, 3, shape), mha_randn(&dout, 3, shape);
    mha_sdpa(&out, NULL, &q, &k, &v, NULL);
    size_t live = mha_live_bytes();
    mha_reset_peak();
    mha_status st = mha_sdpa_backward(&dq, &dk, &dv, NULL, &dout, NULL, &q, &k, &v, NULL, &out, NULL);
    size_t extra = mha_peak_bytes() - live, grads = 3 * L * D * sizeof(float), matrix = L * L * sizeof(float);
    size_t tiles = 2 * 64 * L * sizeof(float), threads = mha_kernels_threads();
    CHECK("fused sdpa backward at L=S=4096, D=64: extra memory is the gradients and two (64,S) tiles plus under 1 MiB "
          "a thread (one (L,S) matrix is 64 MiB)",
          st == MHA_OK && extra < grads + tiles + threads * (1u << 20), "extra %zu bytes, gradients %zu, (L,S) matrix %zu (%s)", extra, grads,
          matrix, mha_errmsg());
    mha_release(&q), mha_release(&k), mha_release(&v), mha_release(&out), mha_release(&dout);
    mha_release(&dq), mha_release(&dk), mha_release(&dv);
}

/* MultiheadAttention forward + backward (with masks and add_bias_kv) on 1 and on 2 threads: bit-identical. */
static void mha_grads(mha_tensor *grads, size_t threads) {
    mha_kernels_set_threads(threads);
    mha_kernels_set_split_min(0.0); /* split even small calls, so 2 threads really share the work */
    mha_seed(9);
    mha_multihead m;
    memset(&m, 0, sizeof m);
    mha_multihead_options o = {.embed_dim = 16, .num_heads = 4, .bias = true, .add_bias_kv = true};
    mha_multihead_init(&m, &o);
    mha_multihead_requires_grad(&m, true);
    size_t xs[3] = {3, 33, 16}, kp[2] = {3, 33};
    mha_tensor x = MHA_TENSOR_EMPTY, pad = MHA_TENSOR_EMPTY, noise = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY,
               w = MHA_TENSOR_EMPTY, loss = MHA_TENSOR_EMPTY, prod = MHA_TENSOR_EMPTY, lw = MHA_TENSOR_EMPTY,
               total = MHA_TENSOR_EMPTY;
    mha_randn(&x, 3, xs);
    mha_rand(&noise, 2, kp);
    mha_compare_scalar(&pad, MHA_GT, &noise, 0.8f);
    mha_requires_grad(&x, true);
    for (int fused = 0; fused < 2; fused++) { /* once with weights (plain), once without (fused) */
        mha_forward_options fo = {.key_padding_mask = &pad, .need_weights = !fused, .average_attn_weights = true,
                                  .is_causal = true};
        mha_ag_multihead_forward(&out, fused ? NULL : &w, &m, &x, &x, &x, &fo);
        mha_ag_binary(&prod, MHA_MUL, &out, &out);
        mha_ag_reduce(&loss, MHA_MEAN, &prod, MHA_ALL_DIMS, false);
        if (!fused) {
            mha_ag_reduce(&lw, MHA_SUM, &w, MHA_ALL_DIMS, false);
            mha_ag_binary(&total, MHA_ADD, &loss, &lw);
        } else {
            mha_ag_alias(&total, &loss);
        }
        mha_backward(&total, NULL);
        mha_release(&out), mha_release(&w), mha_release(&prod), mha_release(&loss), mha_release(&lw), mha_release(&total);
    }
    mha_grad(&grads[0], &x);
    mha_grad(&grads[1], &m.in_proj_weight);
    mha_grad(&grads[2], &m.bias_k);
    mha_grad(&grads[3], &m.out_proj_weight);
    mha_release(&x), mha_release(&pad), mha_release(&noise);
    mha_multihead_release(&m);
    mha_kernels_set_threads(1);
}

static void test_threads_bit_identical(void) {
    mha_tensor one[4] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_tensor two[4] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_grads(one, 1);
    mha_grads(two, 2);
    const char *names[4] = {"x", "in_proj_weight", "bias_k", "out_proj_weight"};
    for (int i = 0; i < 4; i++) {
        char name[128];
        snprintf(name, sizeof name, "MultiheadAttention gradient of %s bit-identical on 1 and 2 threads", names[i]);
        bool same = one[i].storage && two[i].storage && mha_same_shape(&one[i], &two[i]) &&
                    memcmp(mha_f32(&one[i]), mha_f32(&two[i]), mha_numel(&one[i]) * sizeof(float)) == 0;
        CHECK(name, same, "largest difference %g", one[i].storage && two[i].storage ? (double)max_abs_diff(&one[i], &two[i]) : -1.0);
        mha_release(&one[i]), mha_release(&two[i]);
    }
}

int main(void) {
    test_small_graph();
    test_errors();
    test_core_writers_follow_the_rule();
    test_fused_equals_plain();
    test_plain_delta_from_out();
    test_pass1_equals_reference();
    test_kept_equals_fused();
    test_fused_memory();
    test_threads_bit_identical();
    CHECK_DONE();
}
