/* tests/core/test_attention.c - the attention layer against its references: torch 1.13's MultiheadAttention
 * and float64 NumPy formulas (tests/fixtures/, written by tests/fixtures/gen/gen_fixtures.py), plus the fused kernel
 * against the plain per-head path on the reference kernels, the trace's consistency, init, mha_equal, the bytes a
 * forward needs, and the error messages (out of memory named by the function called).
 * Tolerance: |got - want| <= 1e-6 + 1e-5·|want| unless a test states its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "check.h"
#include "kernels/kernels.h"
#include "tensor/tensor.h"
#include "io/npy.h"

#define RTOL 1e-5
#define ATOL 1e-6

/* ---- fixtures: cases.txt lines of key=value, one directory of .npy files per case ---- */

#define MAX_OPTS 24
typedef struct fixture_case {
    char line[1024];
    size_t n;
    const char *key[MAX_OPTS], *value[MAX_OPTS];
    char dir[256];
} fixture_case;

static const char *opt_str(const fixture_case *c, const char *key) {
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->key[i], key) == 0) return c->value[i];
    return NULL;
}
static long opt_int(const fixture_case *c, const char *key) {
    const char *v = opt_str(c, key);
    return v ? strtol(v, NULL, 10) : 0;
}
static double opt_num(const fixture_case *c, const char *key) {
    const char *v = opt_str(c, key);
    return v ? strtod(v, NULL) : 0.0;
}
static bool opt_is(const fixture_case *c, const char *key, const char *want) {
    const char *v = opt_str(c, key);
    return v && strcmp(v, want) == 0;
}

/* Reads every case of tests/fixtures/<kind>/cases.txt into *cases (malloc'd); returns the count. */
static size_t read_cases(fixture_case **cases, const char *kind) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/%s/cases.txt", kind);
    FILE *f = fopen(path, "r");
    *cases = NULL;
    if (!f) {
        check_report(0, kind, "cannot open %s (run from the repository root)", path);
        return 0;
    }
    size_t n = 0, cap = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            *cases = realloc(*cases, cap * sizeof **cases);
        }
        fixture_case *c = &(*cases)[n++];
        memset(c, 0, sizeof *c);
        strcpy(c->line, line);
    }
    fclose(f);
    /* split once every case is in place: the pointers point into c->line, which realloc moves */
    for (size_t i = 0; i < n; i++) {
        fixture_case *c = &(*cases)[i];
        for (char *tok = strtok(c->line, " \n"); tok && c->n < MAX_OPTS; tok = strtok(NULL, " \n")) {
            char *eq = strchr(tok, '=');
            if (!eq) continue;
            *eq = '\0';
            c->key[c->n] = tok;
            c->value[c->n++] = eq + 1;
        }
        snprintf(c->dir, sizeof c->dir, "tests/fixtures/%s/%s", kind, opt_str(c, "name"));
    }
    return n;
}

/* Loads <case dir>/<file>.npy into out; false (with a FAIL line) when it cannot. */
static bool load(mha_tensor *out, const fixture_case *c, const char *file) {
    char path[320];
    snprintf(path, sizeof path, "%s/%s.npy", c->dir, file);
    if (mha_npy_load(out, path) != MHA_OK) {
        check_report(0, path, "load: %s", mha_errmsg());
        return false;
    }
    return true;
}
static bool has_file(const fixture_case *c, const char *file) {
    char path[320];
    snprintf(path, sizeof path, "%s/%s.npy", c->dir, file);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Compares got to want: same shape, then every element within the tolerance (NaN equals NaN). */
static int check_tensor(const char *name, const mha_tensor *got, const mha_tensor *want, double rtol, double atol) {
    char sg[96], sw[96];
    if (got->storage == NULL) return check_report(0, name, "no result"), 0;
    if (!mha_same_shape(got, want))
        return check_report(0, name, "shape %s, want %s", mha_shape_str(sg, sizeof sg, got),
                            mha_shape_str(sw, sizeof sw, want)), 0;
    mha_tensor g = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
    int ok = 0;
    if (mha_contiguous(&g, got) == MHA_OK && mha_contiguous(&w, want) == MHA_OK)
        ok = check_close_array(name, mha_f32(&g), mha_f32(&w), mha_numel(want), rtol, atol);
    else
        check_report(0, name, "contiguous: %s", mha_errmsg());
    mha_release(&g);
    mha_release(&w);
    return ok;
}

static void checkf(const char *fmt_name, const char *case_name, char *buf, size_t n) {
    snprintf(buf, n, fmt_name, case_name);
}

/* ---- the smaller functions ---- */

static void test_attn_fixtures(void) {
    fixture_case *cases;
    size_t n = read_cases(&cases, "attn");
    CHECK("attn fixtures: cases.txt read", n >= 20, "%zu cases", n);
    for (size_t i = 0; i < n; i++) {
        const fixture_case *c = &cases[i];
        const char *name = opt_str(c, "name");
        char label[160];
        mha_tensor x = MHA_TENSOR_EMPTY, want = MHA_TENSOR_EMPTY, got = MHA_TENSOR_EMPTY;
        mha_tensor W = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY, extra = MHA_TENSOR_EMPTY;
        mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, mask = MHA_TENSOR_EMPTY;
        mha_tensor wantw = MHA_TENSOR_EMPTY, gotw = MHA_TENSOR_EMPTY, fused = MHA_TENSOR_EMPTY;
        if (!load(&want, c, "out")) continue;
        checkf("%s: matches the reference", name, label, sizeof label);
        mha_status st = MHA_OK;
        if (opt_is(c, "fn", "softmax")) {
            if (load(&x, c, "x")) st = mha_softmax(&got, &x, (size_t)opt_int(c, "dim"));
        } else if (opt_is(c, "fn", "linear")) {
            if (load(&x, c, "x") && load(&W, c, "W") && (!opt_int(c, "bias") || load(&b, c, "b"))) {
                st = mha_linear(&got, &x, &W, opt_int(c, "bias") ? &b : NULL);
                /* the same W as a transposed view of its transpose: linear reads W through its strides */
                mha_tensor wt = MHA_TENSOR_EMPTY, wt_c = MHA_TENSOR_EMPTY, w_view = MHA_TENSOR_EMPTY;
                if (st == MHA_OK && mha_transpose(&wt, &W, 0, 1) == MHA_OK && mha_clone(&wt_c, &wt) == MHA_OK &&
                    mha_transpose(&w_view, &wt_c, 0, 1) == MHA_OK &&
                    mha_linear(&extra, &x, &w_view, opt_int(c, "bias") ? &b : NULL) == MHA_OK) {
                    checkf("%s: W as a non-contiguous view", name, label, sizeof label);
                    CHECK(label, !mha_is_contiguous(&w_view), "%s", "the view should be non-contiguous");
                    check_tensor(label, &extra, &want, RTOL, ATOL);
                }
                mha_release(&wt);
                mha_release(&wt_c);
                mha_release(&w_view);
                checkf("%s: matches the reference", name, label, sizeof label);
            }
        } else if (opt_is(c, "fn", "layer_norm")) {
            bool hw = opt_int(c, "weight"), hb = opt_int(c, "bias");
            if (load(&x, c, "x") && (!hw || load(&W, c, "weight")) && (!hb || load(&b, c, "bias")))
                st = mha_layer_norm(&got, &x, (size_t)opt_int(c, "norm_ndim"), hw ? &W : NULL, hb ? &b : NULL,
                                    (float)opt_num(c, "eps"));
        } else if (opt_is(c, "fn", "positional_encoding")) {
            st = mha_positional_encoding(&got, (size_t)opt_int(c, "L"), (size_t)opt_int(c, "E"));
        } else if (opt_is(c, "fn", "sdpa")) {
            bool hm = !opt_is(c, "attn_mask", "none");
            if (load(&q, c, "q") && load(&k, c, "k") && load(&v, c, "v") && load(&wantw, c, "weights") &&
                (!hm || load(&mask, c, "attn_mask"))) {
                mha_sdpa_options o = {.attn_mask = hm ? &mask : NULL, .is_causal = opt_int(c, "is_causal"),
                                      .scale = (float)opt_num(c, "scale")};
                st = mha_sdpa(&got, &gotw, &q, &k, &v, &o);
                if (st == MHA_OK) {
                    checkf("%s: weights match the reference", name, label, sizeof label);
                    check_tensor(label, &gotw, &wantw, RTOL, ATOL);
                    checkf("%s: fused path (no weights) matches the reference", name, label, sizeof label);
                    if (mha_sdpa(&fused, NULL, &q, &k, &v, &o) == MHA_OK) check_tensor(label, &fused, &want, RTOL, ATOL);
                    else check_report(0, label, "%s", mha_errmsg());
                }
                checkf("%s: matches the reference", name, label, sizeof label);
            }
        } else {
            check_report(0, name, "unknown fn %s", opt_str(c, "fn"));
        }
        if (st != MHA_OK) check_report(0, label, "%s", mha_errmsg());
        else if (got.storage) check_tensor(label, &got, &want, RTOL, ATOL);
        mha_tensor *all[] = {&x, &want, &got, &W, &b, &extra, &q, &k, &v, &mask, &wantw, &gotw, &fused};
        for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    }
    free(cases);
}

/* ---- MultiheadAttention against torch 1.13 ---- */

/* Builds the module of a fixture case with its parameters. */
static bool fixture_module(mha_multihead *m, const fixture_case *c) {
    mha_multihead_options o = {
        .embed_dim = (size_t)opt_int(c, "embed_dim"), .num_heads = (size_t)opt_int(c, "num_heads"),
        .kdim = (size_t)opt_int(c, "kdim"), .vdim = (size_t)opt_int(c, "vdim"), .bias = opt_int(c, "bias"),
        .add_bias_kv = opt_int(c, "add_bias_kv"), .add_zero_attn = opt_int(c, "add_zero_attn"),
    };
    memset(m, 0, sizeof *m);
    if (mha_multihead_init(m, &o) != MHA_OK) {
        check_report(0, opt_str(c, "name"), "init: %s", mha_errmsg());
        return false;
    }
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        const char *p = mha_multihead_param_names[i];
        mha_tensor *slot;
        bool present = mha_multihead_param(&slot, m, p) == MHA_OK;
        char label[160];
        snprintf(label, sizeof label, "%s: parameter %s present exactly when the fixture has it", opt_str(c, "name"), p);
        if (present != has_file(c, p)) {
            check_report(0, label, "module %s it, fixture %s it", present ? "has" : "lacks", has_file(c, p) ? "has" : "lacks");
            mha_multihead_release(m);
            return false;
        }
        if (!present) continue;
        mha_tensor value = MHA_TENSOR_EMPTY;
        if (!load(&value, c, p)) {
            mha_multihead_release(m);
            return false;
        }
        mha_status st = mha_multihead_set_param(m, p, &value);
        mha_release(&value);
        if (st != MHA_OK) {
            check_report(0, label, "set_param: %s", mha_errmsg());
            mha_multihead_release(m);
            return false;
        }
    }
    return true;
}

/* Sum over heads / H of per-head weights (N,H,L,S) or (H,L,S): what averaged weights must be. */
static bool average_heads(mha_tensor *out, const mha_tensor *w, bool batched) {
    size_t hd = batched ? 1 : 0;
    return mha_reduce(out, MHA_MEAN, w, hd, false) == MHA_OK;
}

static void test_mha_fixtures(void) {
    fixture_case *cases;
    size_t n = read_cases(&cases, "mha");
    CHECK("mha fixtures: cases.txt read", n >= 30, "%zu cases", n);
    for (size_t i = 0; i < n; i++) {
        const fixture_case *c = &cases[i];
        const char *name = opt_str(c, "name");
        char label[200];
        mha_multihead m;
        if (!fixture_module(&m, c)) continue;
        bool self = opt_int(c, "self_attn"), batched = opt_int(c, "batched");
        bool need = opt_int(c, "need_weights"), avg = opt_int(c, "average_attn_weights");
        mha_tensor query = MHA_TENSOR_EMPTY, key = MHA_TENSOR_EMPTY, value = MHA_TENSOR_EMPTY;
        mha_tensor am = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY, want = MHA_TENSOR_EMPTY, wantw = MHA_TENSOR_EMPTY;
        mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, out2 = MHA_TENSOR_EMPTY, w2 = MHA_TENSOR_EMPTY;
        mha_tensor out3 = MHA_TENSOR_EMPTY, mean = MHA_TENSOR_EMPTY;
        mha_trace trace = {0};
        bool ok = load(&query, c, "query") && load(&want, c, "out");
        if (ok && !self) ok = load(&key, c, "key") && load(&value, c, "value");
        if (ok && !opt_is(c, "attn_mask", "none")) ok = load(&am, c, "attn_mask");
        if (ok && !opt_is(c, "key_padding_mask", "none")) ok = load(&kpm, c, "key_padding_mask");
        if (ok && need) ok = load(&wantw, c, "weights");
        if (!ok) goto next;
        const mha_tensor *k = self ? &query : &key, *v = self ? &query : &value;
        mha_forward_options o = {
            .key_padding_mask = kpm.storage ? &kpm : NULL, .attn_mask = am.storage ? &am : NULL,
            .need_weights = need, .average_attn_weights = avg, .is_causal = opt_int(c, "is_causal"),
        };
        if (mha_multihead_forward(&out, &w, &m, &query, k, v, &o, NULL) != MHA_OK) {
            snprintf(label, sizeof label, "%s: forward", name);
            check_report(0, label, "%s", mha_errmsg());
            goto next;
        }
        snprintf(label, sizeof label, "%s: output matches torch 1.13", name);
        check_tensor(label, &out, &want, RTOL, ATOL);
        if (need) {
            snprintf(label, sizeof label, "%s: weights match torch 1.13", name);
            check_tensor(label, &w, &wantw, RTOL, ATOL);
        } else {
            snprintf(label, sizeof label, "%s: no weights when need_weights is false", name);
            CHECK(label, w.storage == NULL, "%s", "weights were filled");
        }

        /* the same forward traced: its output and weights are the returned ones, bit for bit */
        mha_forward_options ot = o;
        ot.need_weights = true;
        if (mha_multihead_forward(&out2, &w2, &m, &query, k, v, &ot, &trace) != MHA_OK) {
            snprintf(label, sizeof label, "%s: traced forward", name);
            check_report(0, label, "%s", mha_errmsg());
            goto next;
        }
        const mha_tensor *t_out = mha_trace_get(&trace, "output"), *t_w = mha_trace_get(&trace, "weights");
        snprintf(label, sizeof label, "%s: trace output == the traced forward's output", name);
        if (t_out) check_tensor(label, t_out, &out2, 0.0, 0.0);
        else check_report(0, label, "%s", "no 'output' in the trace");
        snprintf(label, sizeof label, "%s: traced forward matches torch 1.13", name);
        check_tensor(label, &out2, &want, RTOL, ATOL);
        if (t_w) {
            snprintf(label, sizeof label, "%s: returned weights == trace weights (mean over heads when averaged)", name);
            if (avg) {
                if (average_heads(&mean, t_w, batched)) check_tensor(label, &w2, &mean, 1e-6, 1e-7);
                else check_report(0, label, "mean: %s", mha_errmsg());
            } else {
                check_tensor(label, &w2, t_w, 0.0, 0.0);
            }
        } else {
            check_report(0, name, "%s", "no 'weights' in the trace");
        }
        /* and without weights or trace (the scratch path): the same numbers */
        mha_forward_options on = o;
        on.need_weights = false;
        snprintf(label, sizeof label, "%s: need_weights=false (fused where the masks allow) matches torch 1.13", name);
        if (mha_multihead_forward(&out3, NULL, &m, &query, k, v, &on, NULL) == MHA_OK)
            check_tensor(label, &out3, &want, RTOL, ATOL);
        else
            check_report(0, label, "%s", mha_errmsg());
    next:;
        mha_tensor *all[] = {&query, &key, &value, &am, &kpm, &want, &wantw, &out, &w, &out2, &w2, &out3, &mean};
        for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
        mha_trace_release(&trace);
        mha_multihead_release(&m);
    }
    free(cases);
}

/* ---- the trace: names, shapes, and each step following from the last ---- */

static void expect_shape(const char *label, const mha_tensor *t, size_t ndim, const size_t *shape) {
    char s[96];
    mha_tensor want = {.ndim = ndim};
    memcpy(want.shape, shape, ndim * sizeof *shape);
    if (t == NULL) { check_report(0, label, "%s", "missing"); return; }
    CHECK(label, mha_same_shape(t, &want), "shape %s", mha_shape_str(s, sizeof s, t));
}

static void test_trace(void) {
    mha_multihead m = {0};
    mha_multihead_options o = {.embed_dim = 6, .num_heads = 2, .kdim = 5, .vdim = 4, .bias = true,
                               .add_bias_kv = true, .add_zero_attn = true};
    mha_seed(11);
    if (mha_multihead_init(&m, &o) != MHA_OK) { check_report(0, "trace: init", "%s", mha_errmsg()); return; }
    const size_t N = 2, L = 3, S = 4, E = 6, H = 2, D = 3, S2 = S + 2;
    size_t qs[3] = {N, L, E}, ks[3] = {N, S, 5}, vs[3] = {N, S, 4}, kps[2] = {N, S};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY;
    mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, x = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY;
    mha_trace trace = {0};
    mha_randn(&q, 3, qs);
    mha_randn(&k, 3, ks);
    mha_randn(&v, 3, vs);
    mha_zeros(&kpm, MHA_BOOL, 2, kps);
    mha_bool(&kpm)[1] = true; /* batch 0 ignores key 1 */
    mha_forward_options fo = {.key_padding_mask = &kpm, .need_weights = true, .average_attn_weights = false,
                              .is_causal = true};
    if (mha_multihead_forward(&out, &w, &m, &q, &k, &v, &fo, &trace) != MHA_OK) {
        check_report(0, "trace: forward", "%s", mha_errmsg());
        goto done;
    }
    static const char *names[] = {"query", "key", "value", "Q", "K", "V", "Q_heads", "K_heads", "V_heads",
                                  "scores", "scaled_scores", "masked_scores", "weights", "head_outputs", "concat",
                                  "output"};
    bool in_order = trace.count == sizeof names / sizeof *names;
    for (size_t i = 0; in_order && i < trace.count; i++) in_order = strcmp(trace.names[i], names[i]) == 0;
    CHECK("trace: the 16 names in order", in_order, "count %zu", trace.count);
    expect_shape("trace: Q (N,L,E)", mha_trace_get(&trace, "Q"), 3, (size_t[]){N, L, E});
    expect_shape("trace: K (N,S,E) before bias_k", mha_trace_get(&trace, "K"), 3, (size_t[]){N, S, E});
    expect_shape("trace: Q_heads (N,H,L,D)", mha_trace_get(&trace, "Q_heads"), 4, (size_t[]){N, H, L, D});
    expect_shape("trace: K_heads (N,H,S+2,D)", mha_trace_get(&trace, "K_heads"), 4, (size_t[]){N, H, S2, D});
    expect_shape("trace: scores (N,H,L,S+2)", mha_trace_get(&trace, "scores"), 4, (size_t[]){N, H, L, S2});
    expect_shape("trace: head_outputs (N,H,L,D)", mha_trace_get(&trace, "head_outputs"), 4, (size_t[]){N, H, L, D});
    expect_shape("trace: concat (N,L,E)", mha_trace_get(&trace, "concat"), 3, (size_t[]){N, L, E});
    const mha_tensor *Qh = mha_trace_get(&trace, "Q_heads"), *Q = mha_trace_get(&trace, "Q");
    CHECK("trace: Q_heads is a view of Q (the head split copies nothing)", Qh && Q && Qh->storage == Q->storage,
          "%s", "separate storage");

    /* scaled = scores / √D; masked = scaled with -inf at masked keys; weights = softmax(masked) */
    const float *sc = mha_f32(mha_trace_get(&trace, "scores")), *ss = mha_f32(mha_trace_get(&trace, "scaled_scores"));
    const float *ms = mha_f32(mha_trace_get(&trace, "masked_scores")), *ws = mha_f32(mha_trace_get(&trace, "weights"));
    bool scaled_ok = true, masked_ok = true;
    for (size_t n = 0; n < N; n++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < L; i++)
                for (size_t j = 0; j < S2; j++) {
                    size_t at = ((n * H + h) * L + i) * S2 + j;
                    scaled_ok &= check_close_value(ss[at], sc[at] / sqrt((double)D), 1e-5, 1e-6);
                    bool hidden = (j < S && j > i) || (n == 0 && j == 1);
                    masked_ok &= hidden ? ms[at] == -INFINITY : ms[at] == ss[at];
                }
    CHECK("trace: scaled_scores = scores / sqrt(D)", scaled_ok, "%s", "differs");
    CHECK("trace: masked_scores = scaled_scores, -inf where causal or padded; bias_k and zero key visible", masked_ok,
          "%s", "differs");
    mha_tensor msv = MHA_TENSOR_EMPTY;
    mha_share(&msv, mha_trace_get(&trace, "masked_scores"));
    if (mha_softmax(&x, &msv, 3) == MHA_OK) check_tensor("trace: weights = softmax(masked_scores)", mha_trace_get(&trace, "weights"), &x, 1e-6, 1e-7);
    mha_release(&msv);
    mha_release(&x);
    if (mha_matmul(&x, mha_trace_get(&trace, "weights"), mha_trace_get(&trace, "V_heads")) == MHA_OK)
        check_tensor("trace: head_outputs = weights · V_heads", mha_trace_get(&trace, "head_outputs"), &x, 1e-5, 1e-6);
    else
        check_report(0, "trace: head_outputs = weights · V_heads", "matmul: %s", mha_errmsg());
    if (mha_linear(&y, mha_trace_get(&trace, "concat"), &m.out_proj_weight, &m.out_proj_bias) == MHA_OK)
        check_tensor("trace: output = linear(concat, out_proj)", mha_trace_get(&trace, "output"), &y, 0.0, 0.0);
    check_tensor("trace: weights == returned per-head weights", &w, mha_trace_get(&trace, "weights"), 0.0, 0.0);
    (void)ws;

    /* unbatched: every entry without N */
    mha_trace t2 = {0};
    mha_tensor q1 = MHA_TENSOR_EMPTY, k1 = MHA_TENSOR_EMPTY, v1 = MHA_TENSOR_EMPTY, o1 = MHA_TENSOR_EMPTY;
    mha_select(&q1, &q, 0, 1);
    mha_select(&k1, &k, 0, 1);
    mha_select(&v1, &v, 0, 1);
    if (mha_multihead_forward(&o1, NULL, &m, &q1, &k1, &v1, NULL, &t2) == MHA_OK) {
        expect_shape("trace unbatched: weights (H,L,S+2)", mha_trace_get(&t2, "weights"), 3, (size_t[]){H, L, S2});
        expect_shape("trace unbatched: concat (L,E)", mha_trace_get(&t2, "concat"), 2, (size_t[]){L, E});
        expect_shape("trace unbatched: output (L,E)", &o1, 2, (size_t[]){L, E});
    } else {
        check_report(0, "trace unbatched: forward", "%s", mha_errmsg());
    }
    mha_trace_release(&t2);
    mha_release(&q1); mha_release(&k1); mha_release(&v1); mha_release(&o1);
done:
    mha_trace_release(&trace);
    mha_tensor *all[] = {&q, &k, &v, &kpm, &out, &w, &x, &y};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    mha_multihead_release(&m);
}

/* ---- fused vs plain sdpa, every mask kind ---- */

static void test_fused_vs_plain(void) {
    const size_t N = 2, H = 3, L = 9, S = 37, D = 8;
    size_t qshape[4] = {N, H, L, D}, kshape[4] = {N, H, S, D};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY;
    mha_seed(5);
    mha_randn(&q, 4, qshape);
    mha_randn(&k, 4, kshape);
    mha_randn(&v, 4, kshape);
    struct { const char *name; size_t ndim; size_t shape[4]; bool is_bool, causal, full_row; } kinds[] = {
        {"no mask", 0, {0}, false, false, false},
        {"bool (L,S)", 2, {L, S}, true, false, false},
        {"float (L,S)", 2, {L, S}, false, false, false},
        {"bool (N,H,L,S)", 4, {N, H, L, S}, true, false, false},
        {"float (N,H,L,S)", 4, {N, H, L, S}, false, false, false},
        {"bool key padding (N,1,1,S)", 4, {N, 1, 1, S}, true, false, false},
        {"float key padding (N,1,1,S)", 4, {N, 1, 1, S}, false, false, false},
        {"causal", 0, {0}, false, true, false},
        {"causal + bool (L,S)", 2, {L, S}, true, true, false},
        {"fully masked row", 2, {L, S}, true, false, true},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        char label[160];
        mha_tensor mask = MHA_TENSOR_EMPTY, r = MHA_TENSOR_EMPTY, plain = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
        mha_tensor fused = MHA_TENSOR_EMPTY;
        if (kinds[i].ndim) {
            mha_rand(&r, kinds[i].ndim, kinds[i].shape);
            if (kinds[i].is_bool) {
                mha_empty(&mask, MHA_BOOL, kinds[i].ndim, kinds[i].shape);
                for (size_t e = 0; e < mha_numel(&r); e++) mha_bool(&mask)[e] = mha_f32(&r)[e] < 0.3f;
                for (size_t e = 0; e < mha_numel(&r); e += kinds[i].shape[kinds[i].ndim - 1]) mha_bool(&mask)[e] = false;
                if (kinds[i].full_row)
                    for (size_t j = 0; j < S; j++) mha_bool(&mask)[2 * S + j] = true;
            } else {
                mha_share(&mask, &r);
                for (size_t e = 0; e < mha_numel(&r); e++) mha_f32(&mask)[e] = 4.0f * mha_f32(&r)[e] - 2.0f;
            }
        }
        mha_sdpa_options o = {.attn_mask = kinds[i].ndim ? &mask : NULL, .is_causal = kinds[i].causal};
        snprintf(label, sizeof label, "sdpa fused == plain: %s", kinds[i].name);
        mha_status st = mha_sdpa(&fused, NULL, &q, &k, &v, &o);
        if (st == MHA_OK && mha_sdpa(&plain, &w, &q, &k, &v, &o) == MHA_OK) {
            check_tensor(label, &fused, &plain, RTOL, ATOL);
            if (kinds[i].full_row) {
                snprintf(label, sizeof label, "sdpa: a fully masked row is NaN on both paths");
                CHECK(label, isnan(mha_f32(&fused)[2 * D]) && isnan(mha_f32(&plain)[2 * D]) && isnan(mha_f32(&w)[2 * S]),
                      "fused %g plain %g", (double)mha_f32(&fused)[2 * D], (double)mha_f32(&plain)[2 * D]);
            }
        } else {
            check_report(0, label, "%s", mha_errmsg());
        }
        mha_tensor *all[] = {&mask, &r, &plain, &w, &fused};
        for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    }
    mha_release(&q);
    mha_release(&k);
    mha_release(&v);

    /* memory: without weights, a causal or key-padding mask costs no (L,S) buffer (here 4 MB) */
    const size_t Lb = 1024, Db = 16;
    size_t shape[3] = {1, Lb, Db}, row[3] = {1, 1, Lb};
    mha_tensor kpm = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    mha_randn(&q, 3, shape);
    mha_randn(&k, 3, shape);
    mha_randn(&v, 3, shape);
    mha_zeros(&kpm, MHA_BOOL, 3, row);
    mha_bool(&kpm)[7] = true;
    mha_tensor expanded = MHA_TENSOR_EMPTY;
    mha_expand(&expanded, &kpm, 3, (size_t[]){1, Lb, Lb});
    const mha_tensor *masks[2] = {&kpm, &expanded};
    const char *labels[2] = {"sdpa fused: causal + key padding row (1,1,1024) allocates under a quarter of an (L,S) buffer",
                             "sdpa fused: the row expanded to (1,1024,1024) (a view) stays one row"};
    for (int i = 0; i < 2; i++) {
        size_t before = mha_live_bytes();
        mha_reset_peak();
        mha_status st = mha_sdpa(&out, NULL, &q, &k, &v, &(mha_sdpa_options){.attn_mask = masks[i], .is_causal = true});
        size_t extra = mha_peak_bytes() - before, limit = Lb * Lb * sizeof(float) / 4;
        CHECK(labels[i], st == MHA_OK && extra < limit, "status %s, peak extra %zu bytes, limit %zu",
              mha_status_name(st), extra, limit);
        if (i == 1) { /* and it computes what the plain path computes from the row */
            mha_tensor plain = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
            if (st == MHA_OK && mha_sdpa(&plain, &w, &q, &k, &v, &(mha_sdpa_options){.attn_mask = &kpm, .is_causal = true}) == MHA_OK)
                check_tensor("sdpa fused with the expanded row == plain with the row", &out, &plain, RTOL, ATOL);
            else
                check_report(0, "sdpa fused with the expanded row == plain with the row", "%s", mha_errmsg());
            mha_release(&plain);
            mha_release(&w);
        }
        mha_release(&out);
    }
    mha_release(&expanded);
    mha_release(&out);
    mha_release(&kpm);
    mha_release(&q);
    mha_release(&k);
    mha_release(&v);
}

/* ---- MultiheadAttention without weights: no (L,S) buffer per head, and the same numbers ---- */

static void test_mha_memory(void) {
    const size_t L = 768, E = 16;
    mha_multihead m = {0};
    mha_seed(3);
    if (mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = E, .num_heads = 2, .bias = true}) != MHA_OK) {
        check_report(0, "mha memory: init", "%s", mha_errmsg());
        return;
    }
    mha_tensor x = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY, fast = MHA_TENSOR_EMPTY, slow = MHA_TENSOR_EMPTY;
    mha_tensor w = MHA_TENSOR_EMPTY;
    mha_randn(&x, 3, (size_t[]){1, L, E});
    mha_zeros(&kpm, MHA_BOOL, 2, (size_t[]){1, L});
    for (size_t j = L / 2; j < L; j += 3) mha_bool(&kpm)[j] = true;
    mha_forward_options o = {.key_padding_mask = &kpm, .is_causal = true};
    size_t before = mha_live_bytes();
    mha_reset_peak();
    mha_status st = mha_multihead_forward(&fast, NULL, &m, &x, &x, &x, &o, NULL);
    size_t extra = mha_peak_bytes() - before, ls = L * L * sizeof(float);
    CHECK("mha need_weights=false, causal + key padding (768 keys): peak extra below one (L,S) slice",
          st == MHA_OK && extra < ls, "status %s, peak extra %zu bytes, (L,S) is %zu", mha_status_name(st), extra, ls);
    o.need_weights = true;
    if (st == MHA_OK && mha_multihead_forward(&slow, &w, &m, &x, &x, &x, &o, NULL) == MHA_OK)
        check_tensor("mha fused (no weights) == plain (weights) at 768 keys", &fast, &slow, RTOL, ATOL);
    else
        check_report(0, "mha fused (no weights) == plain (weights) at 768 keys", "%s", mha_errmsg());
    mha_tensor *all[] = {&x, &kpm, &fast, &slow, &w};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    mha_multihead_release(&m);
}

/* ---- edge sizes: no keys, no queries ---- */

static void test_edges(void) {
    mha_multihead m = {0};
    mha_seed(4);
    mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = 4, .num_heads = 2, .bias = true});
    mha_tensor q = MHA_TENSOR_EMPTY, k0 = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
    mha_randn(&q, 3, (size_t[]){2, 3, 4});
    mha_zeros(&k0, MHA_FLOAT32, 3, (size_t[]){2, 0, 4});
    mha_f32(&m.out_proj_bias)[1] = 0.5f;
    /* no keys: the weighted sum is empty (0), so the output is out_proj_bias, as in torch */
    mha_status st = mha_multihead_forward(&out, &w, &m, &q, &k0, &k0, NULL, NULL);
    bool bias_rows = st == MHA_OK && out.ndim == 3 && out.shape[1] == 3 && w.shape[2] == 0;
    for (size_t i = 0; bias_rows && i < 2 * 3; i++)
        bias_rows = mha_f32(&out)[i * 4] == 0.0f && mha_f32(&out)[i * 4 + 1] == 0.5f;
    CHECK("mha edge: S = 0 gives out_proj_bias in every row and (N,L,0) weights", bias_rows, "status %s: %s",
          mha_status_name(st), st == MHA_OK ? "values" : mha_errmsg());
    mha_release(&out);
    mha_release(&w);
    mha_tensor q0 = MHA_TENSOR_EMPTY;
    mha_zeros(&q0, MHA_FLOAT32, 3, (size_t[]){2, 0, 4});
    st = mha_multihead_forward(&out, &w, &m, &q0, &q, &q, NULL, NULL);
    CHECK("mha edge: L = 0 gives (N,0,E)", st == MHA_OK && out.shape[1] == 0 && out.shape[2] == 4, "%s",
          st == MHA_OK ? "shape" : mha_errmsg());
    mha_tensor *all[] = {&q, &k0, &q0, &out, &w};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    mha_multihead_release(&m);
}

/* ---- init as PyTorch's _reset_parameters ---- */

static void test_init(void) {
    mha_multihead m = {0};
    mha_multihead_options o = {.embed_dim = 16, .num_heads = 4, .bias = true, .add_bias_kv = true};
    mha_seed(1);
    if (mha_multihead_init(&m, &o) != MHA_OK) { check_report(0, "init", "%s", mha_errmsg()); return; }
    expect_shape("init: in_proj_weight (3E,E)", &m.in_proj_weight, 2, (size_t[]){48, 16});
    expect_shape("init: bias_k (1,1,E)", &m.bias_k, 3, (size_t[]){1, 1, 16});
    CHECK("init: q/k/v_proj_weight absent when kdim = vdim = E", m.q_proj_weight.storage == NULL, "%s", "present");
    double a = sqrt(6.0 / (16 + 48)), amax = 0, bmax = 0, bias_abs = 0, ss = 0;
    for (size_t i = 0; i < 48 * 16; i++) amax = fmax(amax, fabs(mha_f32(&m.in_proj_weight)[i]));
    for (size_t i = 0; i < 16 * 16; i++) bmax = fmax(bmax, fabs(mha_f32(&m.out_proj_weight)[i]));
    for (size_t i = 0; i < 48; i++) bias_abs += fabs(mha_f32(&m.in_proj_bias)[i]);
    for (size_t i = 0; i < 16; i++) bias_abs += fabs(mha_f32(&m.out_proj_bias)[i]);
    for (size_t i = 0; i < 16; i++) ss += mha_f32(&m.bias_k)[i] * mha_f32(&m.bias_k)[i];
    CHECK("init: in_proj_weight xavier_uniform within ±sqrt(6/(E+3E)), reaching near it", amax <= a && amax > 0.8 * a,
          "max |w| %g, bound %g", amax, a);
    CHECK("init: out_proj_weight within ±1/sqrt(E)", bmax <= 0.25 && bmax > 0.2, "max |w| %g", bmax);
    CHECK("init: biases zero", bias_abs == 0.0, "sum |b| %g", bias_abs);
    CHECK("init: bias_k xavier_normal (std 1/sqrt(E) = 0.25), rms plausible", sqrt(ss / 16) > 0.1 && sqrt(ss / 16) < 0.45,
          "rms %g", sqrt(ss / 16));
    mha_multihead_release(&m);

    mha_multihead m2 = {0};
    mha_multihead_options o2 = {.embed_dim = 8, .num_heads = 2, .kdim = 3, .vdim = 5};
    if (mha_multihead_init(&m2, &o2) == MHA_OK) {
        expect_shape("init kdim/vdim: k_proj_weight (E,kdim)", &m2.k_proj_weight, 2, (size_t[]){8, 3});
        expect_shape("init kdim/vdim: v_proj_weight (E,vdim)", &m2.v_proj_weight, 2, (size_t[]){8, 5});
        CHECK("init kdim/vdim: no in_proj_weight, no biases", !m2.in_proj_weight.storage && !m2.in_proj_bias.storage &&
              !m2.out_proj_bias.storage, "%s", "present");
    }
    mha_multihead_release(&m2);
}

/* ---- error messages, by text, and nothing leaked ---- */

static void expect_error(const char *label, mha_status st, mha_status want, const char *text, size_t live_before) {
    bool ok = st == want && strstr(mha_errmsg(), text) != NULL;
    check_report(ok, label, "status %s, message \"%s\", want %s containing \"%s\"", mha_status_name(st), mha_errmsg(),
                 mha_status_name(want), text);
    char leak[200];
    snprintf(leak, sizeof leak, "%s: nothing leaked", label);
    CHECK(leak, mha_live_bytes() == live_before, "%zu bytes still allocated", mha_live_bytes() - live_before);
}

static void test_errors(void) {
    size_t live = mha_live_bytes();
    mha_multihead m = {0};
    mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
    mha_status st = mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = 10, .num_heads = 3});
    expect_error("error: embed_dim not divisible", st, MHA_E_ARG,
                 "MultiheadAttention: embed_dim 10 is not divisible by num_heads 3", live);

    mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = 8, .num_heads = 4, .kdim = 3, .vdim = 4, .bias = true});
    live = mha_live_bytes();
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, v2 = MHA_TENSOR_EMPTY;
    mha_tensor am = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY, q2 = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY;
    mha_zeros(&q, MHA_FLOAT32, 3, (size_t[]){2, 4, 8});
    mha_zeros(&k, MHA_FLOAT32, 3, (size_t[]){2, 5, 3});
    mha_zeros(&v, MHA_FLOAT32, 3, (size_t[]){2, 6, 4});
    mha_zeros(&v2, MHA_FLOAT32, 3, (size_t[]){2, 5, 4});
    mha_zeros(&am, MHA_BOOL, 2, (size_t[]){4, 5});
    mha_zeros(&kpm, MHA_BOOL, 2, (size_t[]){2, 4});
    mha_zeros(&q2, MHA_FLOAT32, 2, (size_t[]){4, 8});
    mha_zeros(&b, MHA_BOOL, 2, (size_t[]){8, 8});
    live = mha_live_bytes();
    mha_trace trace = {0};
    st = mha_multihead_forward(&out, &w, &m, &q, &k, &v, NULL, &trace);
    expect_error("error: key and value lengths", st, MHA_E_SHAPE,
                 "MultiheadAttention.forward: key (2,5,3) and value (2,6,4): batch or length differ", live);
    mha_release(&v);
    mha_zeros(&v, MHA_FLOAT32, 3, (size_t[]){2, 6, 4});
    mha_release(&k);
    mha_zeros(&k, MHA_FLOAT32, 3, (size_t[]){2, 6, 3});
    live = mha_live_bytes();
    st = mha_multihead_forward(&out, &w, &m, &q, &k, &v, &(mha_forward_options){.attn_mask = &am}, NULL);
    expect_error("error: attn_mask shape", st, MHA_E_SHAPE,
                 "MultiheadAttention.forward: attn_mask: expected (4,6) or (8,4,6), got (4,5)", live);
    st = mha_multihead_forward(&out, &w, &m, &q, &k, &v, &(mha_forward_options){.key_padding_mask = &kpm}, NULL);
    expect_error("error: key_padding_mask shape", st, MHA_E_SHAPE,
                 "MultiheadAttention.forward: key_padding_mask: expected (2,6), got (2,4)", live);
    st = mha_multihead_forward(&out, &w, &m, &q2, &k, &v, NULL, NULL);
    expect_error("error: unbatched query, batched key", st, MHA_E_SHAPE,
                 "query (4,8) is unbatched, so key and value must be 2-D, got key (2,6,3) and value (2,6,4)", live);
    st = mha_multihead_forward(&out, &w, &m, &k, &k, &v, NULL, NULL);
    expect_error("error: query embed dim", st, MHA_E_SHAPE, "query (2,6,3): last size 3 is not embed_dim 8", live);
    st = mha_multihead_forward(&out, &w, &m, &q, &v, &v, NULL, NULL);
    expect_error("error: key dim vs kdim", st, MHA_E_SHAPE, "key (2,6,4): last size 4 is not kdim 3", live);
    st = mha_multihead_forward(&out, &w, &m, &am, &k, &v, NULL, NULL);
    expect_error("error: bool query", st, MHA_E_DTYPE, "MultiheadAttention.forward: query (4,5) is bool, expected float32",
                 live);

    mha_tensor *slot;
    st = mha_multihead_param(&slot, &m, "in_proj_weights");
    expect_error("error: unknown parameter lists the real ones", st, MHA_E_ARG,
                 "no parameter named 'in_proj_weights'; this module has in_proj_bias, q_proj_weight, k_proj_weight, "
                 "v_proj_weight, out_proj_weight, out_proj_bias", live);
    st = mha_multihead_param(&slot, &m, "in_proj_weight");
    expect_error("error: absent parameter", st, MHA_E_ARG, "this module has no in_proj_weight", live);
    st = mha_multihead_set_param(&m, "k_proj_weight", &q2);
    expect_error("error: set_param shape", st, MHA_E_SHAPE, "MultiheadAttention: k_proj_weight: expected (8,3), got (4,8)",
                 live);
    st = mha_multihead_set_param(&m, "out_proj_weight", &b);
    expect_error("error: set_param dtype", st, MHA_E_DTYPE, "out_proj_weight must be float32, got a bool tensor (8,8)", live);

    st = mha_softmax(&out, &q, 3);
    expect_error("error: softmax dim", st, MHA_E_ARG, "softmax: dim 3 out of range for x (2,4,8)", live);
    st = mha_linear(&out, &q, &k, NULL);
    expect_error("error: linear W rank", st, MHA_E_SHAPE, "linear: W (2,6,3) must be 2-D (out, in)", live);
    mha_tensor W = MHA_TENSOR_EMPTY;
    mha_zeros(&W, MHA_FLOAT32, 2, (size_t[]){5, 4});
    live = mha_live_bytes();
    st = mha_linear(&out, &q, &W, NULL);
    expect_error("error: linear inner sizes", st, MHA_E_SHAPE,
                 "linear: x (2,4,8) and W (5,4): x's last size 8 is not W's in_features 4", live);
    st = mha_layer_norm(&out, &q, 1, &W, NULL, 1e-5f);
    expect_error("error: layer_norm weight", st, MHA_E_SHAPE,
                 "layer_norm: weight (5,4) does not match the normalized shape (8) of x (2,4,8)", live);
    st = mha_sdpa(&out, &w, &q, &k, &v, NULL);
    expect_error("error: sdpa head dims", st, MHA_E_SHAPE, "sdpa: q (2,4,8) and k (2,6,3): head dims 8 and 3 differ", live);
    st = mha_sdpa(&out, NULL, &q, &q, &q, &(mha_sdpa_options){.attn_mask = &am});
    expect_error("error: sdpa mask", st, MHA_E_SHAPE, "sdpa: attn_mask (4,5) does not broadcast to the scores (2,4,4)", live);
    st = mha_sdpa(&out, NULL, &q, &q2, &q2, &(mha_sdpa_options){.scale = NAN});
    expect_error("error: sdpa scale", st, MHA_E_ARG, "sdpa: scale nan is not a finite number", live);

    /* an interrupt stops the forward, frees everything, empties the trace */
    mha_release(&v);
    mha_zeros(&v, MHA_FLOAT32, 3, (size_t[]){2, 6, 4});
    live = mha_live_bytes();
    mha_interrupt();
    st = mha_multihead_forward(&out, &w, &m, &q, &k, &v, NULL, &trace);
    mha_interrupt_clear();
    expect_error("error: interrupted forward", st, MHA_E_INTERRUPTED, "interrupted", live);
    CHECK("error: interrupted forward leaves the trace empty and out empty", trace.count == 0 && out.storage == NULL &&
          w.storage == NULL, "trace count %zu", trace.count);
    mha_interrupt();
    st = mha_sdpa(&out, &w, &q, &q, &q, NULL);
    mha_interrupt_clear();
    expect_error("error: interrupted sdpa", st, MHA_E_INTERRUPTED, "interrupted", live);

    mha_tensor *all[] = {&q, &k, &v, &v2, &am, &kpm, &q2, &b, &W, &out, &w};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    mha_multihead_release(&m);
}

/* ---- the plain per-head path, on the reference kernels, is the reference of the fused kernel ---- */

/* Tolerance of fused against plain: |fused - plain| <= 2e-6 + 1e-5·|plain| (test_kernels' for the fused
 * kernel against the formula in double; the plain path on mha_attn_ref sums in double too). */
#define FUSED_ATOL 2e-6

/* One head on mha_attn_ref by hand: q = [1], k = [0; ln 3], v = [4; 8], scale 1: the weights are
 * softmax([0, ln 3]) = [1/4, 3/4] and out = 4/4 + 8·3/4 = 7. */
static void test_plain_by_hand(void) {
    const float q[1] = {1.0f}, k[2] = {0.0f, logf(3.0f)}, v[2] = {4.0f, 8.0f};
    float out[1] = {0}, weights[2] = {0};
    mha_head_args h = {.out = out, .ld_out = 1, .q = q, .ld_q = 1, .k = k, .ld_k = 1, .v = v, .ld_v = 1,
                       .mask_cols = 2, .scale = 1.0f, .L = 1, .S = 2, .D = 1, .Dv = 1};
    mha_status st = mha_attention_plain(&h, &mha_attn_ref, weights, NULL, NULL);
    CHECK("attention_plain[ref]: by hand, softmax([0, ln 3]) = [1/4, 3/4], out = 7",
          st == MHA_OK && fabsf(weights[0] - 0.25f) < 1e-7f && fabsf(weights[1] - 0.75f) < 1e-7f &&
              fabsf(out[0] - 7.0f) < 1e-6f, "weights %.9g %.9g, out %.9g", (double)weights[0], (double)weights[1],
          (double)out[0]);
    /* the same head with the second key masked (bool) and causal from the first: only key 0 is seen */
    const bool pad[2] = {false, true};
    h.pad = (mha_mask_src){.b = pad, .rs = 0, .cs = 1};
    st = mha_attention_plain(&h, &mha_attn_ref, weights, NULL, NULL);
    CHECK("attention_plain[ref]: a bool key padding row hides key 1: weights [1, 0], out = v[0]",
          st == MHA_OK && weights[0] == 1.0f && weights[1] == 0.0f && out[0] == 4.0f, "weights %g %g, out %g",
          (double)weights[0], (double)weights[1], (double)out[0]);
}

typedef struct ref_case {
    const char *name;
    size_t L, S, D, Dv;
    int mask;          /* 0 none, 1 float (L,S) with -inf, 2 the same stored transposed, 3 key padding row */
    bool causal;
    size_t masked_rows; /* this many rows (every 3rd) fully masked: NaN on both paths */
    float scale;        /* 0: 1/sqrt(D) */
} ref_case;

static float *uniform_floats(size_t n, float lo, float hi) {
    mha_tensor t = MHA_TENSOR_EMPTY;
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (n && mha_rand(&t, 1, &n) == MHA_OK)
        for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * mha_f32(&t)[i];
    mha_release(&t);
    return x;
}

/* fused == plain on mha_attn_ref for one case, padded rows so every leading dimension is honoured; the
 * plain path on the fast kernels (what sdpa and MultiheadAttention run) is held to it too. */
static void check_ref_case(const char *isa, const ref_case *c) {
    const size_t L = c->L, S = c->S, D = c->D, Dv = c->Dv, ld_q = D + 3, ld_k = D + 1, ld_v = Dv + 2;
    float *q = uniform_floats(L * ld_q, -1, 1), *k = uniform_floats(S * ld_k, -1, 1);
    float *v = uniform_floats(S * ld_v, -1, 1), *mask = NULL;
    ptrdiff_t rs = 0, cs = 1;
    if (c->mask == 1 || c->mask == 2) {
        mask = uniform_floats(L * S, -2, 2);
        for (size_t i = 0; i < L * S; i += 5) mask[i] = -INFINITY;
        rs = c->mask == 1 ? (ptrdiff_t)S : 1, cs = c->mask == 1 ? 1 : (ptrdiff_t)L;
        for (size_t r = 0; r < c->masked_rows; r++)
            for (size_t j = 0; j < S; j++) mask[(ptrdiff_t)(3 * r) * rs + (ptrdiff_t)j * cs] = -INFINITY;
    } else if (c->mask == 3) {
        mask = calloc(S, sizeof *mask);
        for (size_t j = S - S / 3; j < S; j++) mask[j] = -INFINITY;
    }
    float *fused = malloc(L * Dv * sizeof(float)), *plain = malloc(L * Dv * sizeof(float));
    float *fast = malloc(L * Dv * sizeof(float)), *w_ref = malloc(L * S * sizeof(float));
    float *w_fast = malloc(L * S * sizeof(float));
    const float scale = c->scale ? c->scale : 1.0f / sqrtf((float)D);
    mha_attn_args args = {.out = fused, .ld_out = Dv, .q = q, .ld_q = ld_q, .k = k, .ld_k = ld_k, .v = v, .ld_v = ld_v,
                          .mask = mask, .mask_rs = rs, .mask_cs = cs, .causal = c->causal, .scale = scale,
                          .L = L, .S = S, .D = D, .Dv = Dv};
    mha_head_args head = {.out = plain, .ld_out = Dv, .q = q, .ld_q = ld_q, .k = k, .ld_k = ld_k, .v = v, .ld_v = ld_v,
                          .attn = {.f = mask, .rs = rs, .cs = cs}, .mask_cols = S, .causal = c->causal,
                          .scale = scale, .L = L, .S = S, .D = D, .Dv = Dv};
    mha_status s1 = mha_attention_fused(&args);
    mha_status s2 = mha_attention_plain(&head, &mha_attn_ref, w_ref, NULL, NULL);
    head.out = fast;
    mha_status s3 = mha_attention_plain(&head, &mha_attn_fast, w_fast, NULL, NULL);
    char name[200];
    snprintf(name, sizeof name, "attention_fused[%s] == attention_plain[ref]: %s (L=%zu S=%zu D=%zu Dv=%zu)", isa,
             c->name, L, S, D, Dv);
    if (s1 != MHA_OK || s2 != MHA_OK || s3 != MHA_OK) check_report(0, name, "status %d %d %d: %s", s1, s2, s3, mha_errmsg());
    else check_close_array(name, fused, plain, L * Dv, RTOL, FUSED_ATOL);
    snprintf(name, sizeof name, "attention_plain[fast, %s] == attention_plain[ref]: %s, out and weights", isa, c->name);
    if (s1 == MHA_OK && s2 == MHA_OK && s3 == MHA_OK) {
        int ok = 1;
        for (size_t i = 0; ok && i < L * Dv; i++) ok = check_close_value(fast[i], plain[i], RTOL, FUSED_ATOL);
        for (size_t i = 0; ok && i < L * S; i++) ok = check_close_value(w_fast[i], w_ref[i], RTOL, 1e-7);
        double worst = 0; /* each weights row sums to 1, or is NaN where every key is masked */
        for (size_t i = 0; ok && i < L; i++) {
            double sum = 0;
            for (size_t j = 0; j < S; j++) sum += w_ref[i * S + j];
            if (S > 0 && !isnan(sum) && fabs(sum - 1.0) > worst) worst = fabs(sum - 1.0); /* no keys: no weights */
            if (isnan(sum) != isnan(plain[i * Dv])) ok = 0;
        }
        CHECK(name, ok && worst < 1e-6, "differ (or a weights row sum is off by %g)", worst);
    }
    free(q); free(k); free(v); free(mask); free(fused); free(plain); free(fast); free(w_ref); free(w_fast);
}

static void test_plain_reference(void) {
    const ref_case cases[] = {
        {"no mask", 33, 65, 16, 16, 0, false, 0, 0},
        {"one query, one key", 1, 1, 7, 3, 0, false, 0, 0},
        {"no keys: zeros", 3, 0, 4, 5, 0, false, 0, 0},
        {"L != S, D != Dv", 17, 129, 7, 33, 0, false, 0, 0},
        {"float (L,S) mask with -inf", 65, 33, 17, 65, 1, false, 0, 0},
        {"mask stored transposed (strides)", 33, 17, 8, 8, 2, false, 0, 0},
        {"key padding row", 129, 257, 64, 64, 3, false, 0, 0},
        {"causal, L > S", 65, 17, 3, 7, 0, true, 0, 0},
        {"causal and key padding", 129, 129, 32, 16, 3, true, 0, 0},
        {"fully masked rows come out NaN", 33, 65, 16, 16, 1, false, 5, 0},
        {"several query and key tiles, causal", 600, 700, 64, 33, 3, true, 0, 0},
        {"scale 0.5", 40, 50, 8, 8, 1, false, 0, 0.5f},
    };
    const char *isas[] = {"avx512", "avx2", "portable"};
    const char *best = mha_kernels_isa();
    for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
        if (!mha_kernels_use_isa(isas[i])) continue; /* this CPU cannot run it: test_kernels says so */
        mha_seed(21);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) check_ref_case(isas[i], &cases[c]);
    }
    mha_kernels_use_isa(best);
}

/* ---- mha_equal: torch.equal ---- */

static void test_equal(void) {
    mha_tensor a = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY, row = MHA_TENSOR_EMPTY, t = MHA_TENSOR_EMPTY;
    mha_tensor bools = MHA_TENSOR_EMPTY, e0 = MHA_TENSOR_EMPTY, e1 = MHA_TENSOR_EMPTY, released = MHA_TENSOR_EMPTY;
    mha_arange(&a, 0, 6, 1);
    mha_tensor a23 = MHA_TENSOR_EMPTY, a32 = MHA_TENSOR_EMPTY, at = MHA_TENSOR_EMPTY;
    mha_view(&a23, &a, 2, (ptrdiff_t[]){2, 3});
    mha_clone(&b, &a23);
    bool eq = false;
    mha_status st = mha_equal(&eq, &a23, &b);
    CHECK("equal: a tensor and its copy", st == MHA_OK && eq, "status %d eq %d", st, eq);
    mha_f32(&b)[4] = 4.5f;
    st = mha_equal(&eq, &a23, &b);
    CHECK("equal: one element differs", st == MHA_OK && !eq, "status %d eq %d", st, eq);
    mha_full(&row, 2, (size_t[]){1, 3}, 1.0f);
    mha_full(&t, 2, (size_t[]){2, 3}, 1.0f);
    st = mha_equal(&eq, &row, &t);
    CHECK("equal: (1,3) and (2,3) of ones are not equal (no broadcasting, as torch.equal)", st == MHA_OK && !eq,
          "status %d eq %d", st, eq);
    mha_tensor expanded = MHA_TENSOR_EMPTY;
    mha_expand(&expanded, &row, 2, (size_t[]){2, 3});
    st = mha_equal(&eq, &expanded, &t);
    CHECK("equal: an expanded (stride 0) view equals the tensor it looks like", st == MHA_OK && eq, "status %d eq %d",
          st, eq);
    mha_release(&expanded);
    /* a transposed (non-contiguous) view against its contiguous copy */
    mha_transpose(&at, &a23, 0, 1);
    mha_clone(&a32, &at);
    st = mha_equal(&eq, &at, &a32);
    CHECK("equal: a transposed view and its contiguous copy", st == MHA_OK && eq, "status %d eq %d", st, eq);
    st = mha_equal(&eq, &at, &a23);
    CHECK("equal: (3,2) and (2,3) differ", st == MHA_OK && !eq, "status %d eq %d", st, eq);
    mha_compare_scalar(&bools, MHA_GT, &t, 0.0f);
    st = mha_equal(&eq, &bools, &t);
    CHECK("equal: bool and float of the same values differ (dtype)", st == MHA_OK && !eq, "status %d eq %d", st, eq);
    mha_tensor bools2 = MHA_TENSOR_EMPTY;
    mha_compare_scalar(&bools2, MHA_GE, &t, 1.0f);
    st = mha_equal(&eq, &bools, &bools2);
    CHECK("equal: two bool tensors of the same values", st == MHA_OK && eq, "status %d eq %d", st, eq);
    mha_release(&bools2);
    mha_f32(&t)[2] = NAN;
    st = mha_equal(&eq, &t, &t);
    CHECK("equal: NaN is not equal to itself, so neither is a tensor holding one", st == MHA_OK && !eq,
          "status %d eq %d", st, eq);
    mha_f32(&t)[2] = -0.0f;
    mha_release(&row);
    mha_clone(&row, &t);
    mha_f32(&row)[2] = 0.0f;
    st = mha_equal(&eq, &t, &row);
    CHECK("equal: -0 equals 0", st == MHA_OK && eq, "status %d eq %d", st, eq);
    mha_zeros(&e0, MHA_FLOAT32, 2, (size_t[]){0, 3});
    mha_zeros(&e1, MHA_FLOAT32, 2, (size_t[]){0, 3});
    st = mha_equal(&eq, &e0, &e1);
    CHECK("equal: two (0,3) tensors", st == MHA_OK && eq, "status %d eq %d", st, eq);
    size_t live = mha_live_bytes();
    st = mha_equal(&eq, &e0, &released);
    expect_error("equal: a released tensor is an error naming it", st, MHA_E_ARG, "equal: b is empty (released", live);
    mha_tensor *all[] = {&a, &b, &row, &t, &bools, &e0, &e1, &a23, &a32, &at};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
}

/* ---- the head mean made by blocks of rows ---- */

/* With the weights averaged over heads (torch's default) the forward never forms the per-head weights:
 * blocks of queries run through every head, softmax adding into the mean as it writes (core/attention/multihead.c,
 * mean_part). Its mean must be the very bits of the per-head weights (average_attn_weights=false) summed
 * head after head in float and divided by H, and its output the very bits of that forward's: over
 * ragged blocks (L = 100 rows, blocks of 48), with a bool attn_mask per head, key padding, causal and
 * bias_kv + zero_attn (appended keys never masked). */
static void test_head_mean_blocks(void) {
    const size_t N = 2, L = 100, S = 70, E = 32, H = 4, S2 = S + 2;
    mha_multihead m = {0};
    mha_tensor q = MHA_TENSOR_EMPTY, kv = MHA_TENSOR_EMPTY, am = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY;
    mha_tensor out_mean = MHA_TENSOR_EMPTY, mean = MHA_TENSOR_EMPTY, out_heads = MHA_TENSOR_EMPTY, heads = MHA_TENSOR_EMPTY;
    mha_seed(21);
    mha_status st = mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = E, .num_heads = H, .bias = true,
                                                                     .add_bias_kv = true, .add_zero_attn = true});
    if (st == MHA_OK) st = mha_randn(&q, 3, (size_t[]){N, L, E});
    if (st == MHA_OK) st = mha_randn(&kv, 3, (size_t[]){N, S, E});
    if (st == MHA_OK) st = mha_zeros(&am, MHA_BOOL, 3, (size_t[]){N * H, L, S});
    if (st == MHA_OK) st = mha_zeros(&kpm, MHA_BOOL, 2, (size_t[]){N, S});
    if (st != MHA_OK) {
        check_report(0, "head mean by blocks: setup", "%s", mha_errmsg());
        goto done;
    }
    for (size_t i = 0; i < N * H * L * S; i += 5) mha_bool(&am)[i] = true;
    for (size_t j = 0; j < S; j += 4) mha_bool(&kpm)[S + j] = true;
    mha_forward_options o = {.attn_mask = &am, .key_padding_mask = &kpm, .is_causal = true, .need_weights = true,
                             .average_attn_weights = true};
    st = mha_multihead_forward(&out_mean, &mean, &m, &q, &kv, &kv, &o, NULL);
    o.average_attn_weights = false;
    if (st == MHA_OK) st = mha_multihead_forward(&out_heads, &heads, &m, &q, &kv, &kv, &o, NULL);
    if (st != MHA_OK) {
        check_report(0, "head mean by blocks: forward", "%s", mha_errmsg());
        goto done;
    }
    expect_shape("head mean by blocks: weights (N,L,S+2)", &mean, 3, (size_t[]){N, L, S2});
    bool same = mha_numel(&mean) == N * L * S2;
    size_t bad = 0;
    const float *w = mha_f32(&heads), *got = mha_f32(&mean);
    for (size_t n = 0; same && n < N; n++)
        for (size_t x = 0; same && x < L * S2; x++) {
            float sum = 0.0f;
            for (size_t h = 0; h < H; h++) sum += w[(n * H + h) * L * S2 + x];
            float want = sum / (float)H;
            same = memcmp(&want, &got[n * L * S2 + x], sizeof want) == 0;
            bad = n * L * S2 + x;
        }
    CHECK("head mean by blocks of rows == the per-head weights summed head after head / H, bit for bit "
          "(attn_mask per head, key padding, causal, bias_kv, zero_attn)", same, "element %zu: %.9g", bad,
          (double)got[bad]);
    CHECK("head mean by blocks of rows: the output is the per-head path's, bit for bit",
          mha_same_shape(&out_mean, &out_heads) &&
              memcmp(mha_f32(&out_mean), mha_f32(&out_heads), mha_numel(&out_mean) * sizeof(float)) == 0,
          "%s", "outputs differ");
done:;
    mha_tensor *all[] = {&q, &kv, &am, &kpm, &out_mean, &mean, &out_heads, &heads};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    mha_multihead_release(&m);
}

/* sdpa on a head split's permuted views (N,H,L,D) of (N,L,E), as the recording MultiheadAttention calls it: the
 * views are read in place, the kept weights are made by blocks of rows (L = 300 > 288, the block at S = 200), and
 * the output is laid out as q, so merging the heads back is a view. Each slice, output and weights, must be what
 * one whole-slice mha_attention_plain gives on contiguous copies, bit for bit. */
static void test_sdpa_head_views(void) {
    const size_t N = 2, L = 300, S = 200, H = 3, D = 16, E = H * D;
    mha_tensor x = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY, split[2] = {MHA_TENSOR_EMPTY, MHA_TENSOR_EMPTY};
    mha_tensor q = MHA_TENSOR_EMPTY, kv = MHA_TENSOR_EMPTY, cq = MHA_TENSOR_EMPTY, ckv = MHA_TENSOR_EMPTY;
    mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY, merged = MHA_TENSOR_EMPTY;
    static const size_t perm[4] = {0, 2, 1, 3};
    mha_seed(33);
    mha_status st = mha_randn(&x, 3, (size_t[]){N, L, E});
    if (st == MHA_OK) st = mha_randn(&y, 3, (size_t[]){N, S, E});
    if (st == MHA_OK) st = mha_view(&split[0], &x, 4, (ptrdiff_t[]){(ptrdiff_t)N, (ptrdiff_t)L, (ptrdiff_t)H, (ptrdiff_t)D});
    if (st == MHA_OK) st = mha_view(&split[1], &y, 4, (ptrdiff_t[]){(ptrdiff_t)N, (ptrdiff_t)S, (ptrdiff_t)H, (ptrdiff_t)D});
    if (st == MHA_OK) st = mha_permute(&q, &split[0], perm);
    if (st == MHA_OK) st = mha_permute(&kv, &split[1], perm);
    if (st == MHA_OK) st = mha_contiguous(&cq, &q);
    if (st == MHA_OK) st = mha_contiguous(&ckv, &kv);
    const mha_sdpa_options opt = {.is_causal = true};
    if (st == MHA_OK) st = mha_sdpa(&out, &w, &q, &kv, &kv, &opt);
    if (st != MHA_OK) {
        check_report(0, "sdpa on head views: setup", "%s", mha_errmsg());
        goto done;
    }
    CHECK("sdpa on head views: the output (N,H,L,D) is laid out as q (heads side by side)",
          out.stride[0] == q.stride[0] && out.stride[1] == q.stride[1] && out.stride[2] == q.stride[2] && out.stride[3] == 1,
          "strides (%td,%td,%td,%td), q's (%td,%td,%td,%td)", out.stride[0], out.stride[1], out.stride[2], out.stride[3],
          q.stride[0], q.stride[1], q.stride[2], q.stride[3]);
    st = mha_permute(&merged, &out, perm);
    CHECK("sdpa on head views: the heads merged back (N,L,H,D) are a contiguous view", st == MHA_OK && mha_is_contiguous(&merged),
          "%s", "not contiguous");
    float *want_out = malloc(L * D * sizeof *want_out), *want_w = malloc(L * S * sizeof *want_w);
    size_t bad_slice = 0;
    bool same = want_out && want_w;
    for (size_t n = 0; same && n < N * H; n++) {
        mha_head_args head = {.out = want_out, .ld_out = D, .q = mha_f32(&cq) + n * L * D, .ld_q = D,
                              .k = mha_f32(&ckv) + n * S * D, .ld_k = D, .v = mha_f32(&ckv) + n * S * D, .ld_v = D,
                              .mask_cols = S, .causal = true, .scale = 1.0f / sqrtf((float)D), .L = L, .S = S, .D = D, .Dv = D};
        same = mha_attention_plain(&head, &mha_attn_fast, want_w, NULL, NULL) == MHA_OK &&
               memcmp(want_w, mha_f32(&w) + n * L * S, L * S * sizeof *want_w) == 0;
        const float *got = mha_f32(&out) + (n / H) * L * E + (n % H) * D;
        for (size_t i = 0; same && i < L; i++) same = memcmp(want_out + i * D, got + i * E, D * sizeof *got) == 0;
        bad_slice = n;
    }
    CHECK("sdpa on head views, weights kept by blocks of rows: output and weights are one whole-slice plain pass's, "
          "bit for bit", same, "slice %zu differs", bad_slice);
    free(want_out), free(want_w);
done:;
    mha_tensor *all[] = {&x, &y, &split[0], &split[1], &q, &kv, &cq, &ckv, &out, &w, &merged};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
}

/* ---- the bytes a forward needs, against what it allocates ---- */

/* The forward's peak extra memory is what mha_multihead_forward_bytes said, plus at most the kernels'
 * packing buffers (sgemm packs at most a 256x2048 slice of B and a 144x256 block of A: 2.25 MB) and the
 * storage headers (a few hundred bytes). */
#define PACKING_BYTES ((256.0 * 2048 + 144 * 256) * sizeof(float) + 4096)

static void test_forward_bytes(void) {
    const size_t N = 2, L = 300, S = 200, E = 32, H = 4;
    struct {
        const char *name;
        bool bias_kv, zero_attn, weights, average, trace, kpm, causal;
    } cases[] = {
        {"averaged weights", false, false, true, true, false, false, false},
        {"per-head weights", false, false, true, false, false, false, false},
        {"no weights: fused, key padding, causal", false, false, false, false, false, true, true},
        {"no weights, bias_kv and zero_attn: one scores slice", true, true, false, false, false, false, true},
        {"trace", true, false, false, false, true, true, false},
    };
    mha_tensor q = MHA_TENSOR_EMPTY, kv = MHA_TENSOR_EMPTY, kpm = MHA_TENSOR_EMPTY;
    mha_seed(8);
    mha_randn(&q, 3, (size_t[]){N, L, E});
    mha_randn(&kv, 3, (size_t[]){N, S, E});
    mha_zeros(&kpm, MHA_BOOL, 2, (size_t[]){N, S});
    mha_bool(&kpm)[3] = true;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mha_multihead m = {0};
        mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = E, .num_heads = H, .bias = true,
                                                         .add_bias_kv = cases[i].bias_kv,
                                                         .add_zero_attn = cases[i].zero_attn});
        mha_forward_options o = {.need_weights = cases[i].weights, .average_attn_weights = cases[i].average,
                                 .key_padding_mask = cases[i].kpm ? &kpm : NULL, .is_causal = cases[i].causal};
        mha_forward_bytes need = {0};
        mha_status st = mha_multihead_forward_bytes(&need, &m, &q, &kv, &kv, &o, cases[i].weights, cases[i].trace);
        mha_tensor out = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
        mha_trace trace = {0};
        size_t before = mha_live_bytes();
        mha_reset_peak();
        if (st == MHA_OK)
            st = mha_multihead_forward(&out, cases[i].weights ? &w : NULL, &m, &q, &kv, &kv, &o,
                                       cases[i].trace ? &trace : NULL);
        double extra = (double)(mha_peak_bytes() - before);
        char name[200];
        snprintf(name, sizeof name, "forward_bytes: %s: total <= the forward's peak extra <= total + packing", cases[i].name);
        CHECK(name, st == MHA_OK && need.total <= extra && extra <= need.total + PACKING_BYTES,
              "status %s (%s), total %.0f, peak extra %.0f", mha_status_name(st), mha_errmsg(), need.total, extra);
        const size_t S2 = S + cases[i].bias_kv + cases[i].zero_attn;
        double per_head = (double)(N * H * L * S2 * sizeof(float));
        bool kept = (cases[i].weights && !cases[i].average) || cases[i].trace, mean = cases[i].weights && !kept;
        double want = kept ? per_head : mean ? per_head / (double)H : 0.0;
        snprintf(name, sizeof name, "forward_bytes: %s: weights are %s", cases[i].name,
                 kept ? "the (N,H,L,S') per-head weights" : mean ? "their head mean (N,L,S') only" : "0 (never formed)");
        CHECK(name, need.weights == want, "weights %.0f, want %.0f", need.weights, want);
        if (cases[i].weights && !cases[i].average && st == MHA_OK)
            CHECK("forward_bytes: the per-head weights returned are that many bytes",
                  (double)(mha_numel(&w) * sizeof(float)) == need.weights, "%zu elements", mha_numel(&w));
        mha_release(&out);
        mha_release(&w);
        mha_trace_release(&trace);
        mha_multihead_release(&m);
    }
    mha_release(&q);
    mha_release(&kv);
    mha_release(&kpm);
}

/* ---- out of memory: each allocation names the function the caller called, never "empty" ---- */

/* Sizes far past any address space (2^47 bytes), so the allocation always fails; the tensors that
 * would be copied are expanded views of one element, which cost nothing. */
static void test_out_of_memory(void) {
    const size_t big = 6000000;
    mha_tensor one = MHA_TENSOR_EMPTY, wide = MHA_TENSOR_EMPTY, tall = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    mha_tensor w = MHA_TENSOR_EMPTY, small = MHA_TENSOR_EMPTY;
    mha_zeros(&one, MHA_FLOAT32, 3, (size_t[]){1, 1, 1});
    mha_expand(&wide, &one, 3, (size_t[]){1, big, big});
    mha_expand(&tall, &one, 3, (size_t[]){1, big, 1});
    mha_zeros(&small, MHA_FLOAT32, 3, (size_t[]){1, 1, 1});
    size_t live = mha_live_bytes();
    const char *copy = "out of memory allocating 144000000000000 bytes for shape (1,6000000,6000000)";
    char want[200];
    mha_status st = mha_softmax(&out, &wide, 2);
    snprintf(want, sizeof want, "softmax: %s", copy);
    expect_error("out of memory: softmax names itself", st, MHA_E_NOMEM, want, live);
    st = mha_layer_norm(&out, &wide, 1, NULL, NULL, 1e-5f);
    snprintf(want, sizeof want, "layer_norm: %s", copy);
    expect_error("out of memory: layer_norm names itself", st, MHA_E_NOMEM, want, live);
    st = mha_linear(&out, &wide, &wide, NULL);
    expect_error("out of memory: linear's W must be 2-D first (checks before allocations)", st, MHA_E_SHAPE,
                 "linear: W (1,6000000,6000000) must be 2-D", live);
    st = mha_causal_mask(&out, big, big);
    expect_error("out of memory: causal_mask names itself", st, MHA_E_NOMEM,
                 "causal_mask: out of memory allocating 36000000000000 bytes for shape (6000000,6000000)", live);
    st = mha_positional_encoding(&out, big, big);
    expect_error("out of memory: positional_encoding names itself", st, MHA_E_NOMEM,
                 "positional_encoding: out of memory allocating 144000000000000 bytes", live);
    st = mha_sdpa(&out, NULL, &wide, &wide, &wide, NULL);
    expect_error("out of memory: sdpa names itself (copying a strided input)", st, MHA_E_NOMEM,
                 "sdpa: out of memory allocating 144000000000000 bytes", live);

    mha_multihead m = {0};
    st = mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = 1000000000, .num_heads = 1});
    expect_error("out of memory: the MultiheadAttention constructor names itself", st, MHA_E_NOMEM,
                 "MultiheadAttention: out of memory allocating 12000000000000000000 bytes for shape (3000000000,1000000000)",
                 live);
    mha_multihead_init(&m, &(mha_multihead_options){.embed_dim = 1, .num_heads = 1});
    live = mha_live_bytes();
    mha_forward_bytes need = {0};
    st = mha_multihead_forward_bytes(&need, &m, &tall, &tall, &tall, NULL, true, false);
    CHECK("forward_bytes: (1,6e6,1) self-attention with weights needs 144 TB of weights",
          st == MHA_OK && need.weights == 144e12 && need.total > need.weights, "weights %.0f total %.0f",
          need.weights, need.total);
    st = mha_multihead_forward(&out, &w, &m, &tall, &tall, &tall, NULL, NULL);
    expect_error("out of memory: the forward says what its weights need and how to do without", st, MHA_E_NOMEM,
                 "MultiheadAttention.forward: out of memory: the (1,1,6000000,6000000) attention weights need 144.0 TB; "
                 "pass need_weights=false to use the fused path, which never forms them", live);
    /* the trace's and sdpa's messages for (L,S) weights that do not fit: tests/lua/test_errors.lua */
    mha_tensor huge = MHA_TENSOR_EMPTY;
    mha_expand(&huge, &one, 3, (size_t[]){1, 10000000000000, 1});
    live = mha_live_bytes();
    st = mha_multihead_forward(&out, NULL, &m, &huge, &small, &small, &(mha_forward_options){0}, NULL);
    expect_error("out of memory: the forward names itself, then linear, where memory ran out", st, MHA_E_NOMEM,
                 "MultiheadAttention.forward: linear: out of memory allocating 40000000000000 bytes for shape "
                 "(1,10000000000000,1)", live);
    mha_tensor *all[] = {&one, &wide, &tall, &small, &huge};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) mha_release(all[j]);
    mha_multihead_release(&m);
}

int main(void) {
    test_attn_fixtures();
    test_mha_fixtures();
    test_trace();
    test_fused_vs_plain();
    test_mha_memory();
    test_edges();
    test_init();
    test_errors();
    test_plain_by_hand();
    test_plain_reference();
    test_equal();
    test_head_mean_blocks();
    test_sdpa_head_views();
    test_forward_bytes();
    test_out_of_memory();
    CHECK_DONE();
}
