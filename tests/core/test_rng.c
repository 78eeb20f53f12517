/* tests/core/test_rng.c - the seeded generator: its sequences equal an independent Python implementation
 * (tests/fixtures/gen/gen_npy_fixtures.py -> tests/fixtures/npy/rng_seed*.npy), its statistics over 10^6 samples
 * fall within 5 standard errors of the true values, Xavier bounds match PyTorch's, and bad calls fail
 * with messages naming the function and the shape. */

#include "check.h"
#include "tensor/tensor.h"
#include "io/npy.h"

#include <stdint.h>
#include <stdlib.h>

#define FIXTURES "tests/fixtures/npy/"
#define SEQ_LEN 55

/* The calls gen_npy_fixtures.py's rng_sequence() reproduces, in the same order; values into out[SEQ_LEN]. */
static int run_sequence(float *out) {
    size_t used = 0;
    int ok = 1;
    mha_tensor t = MHA_TENSOR_EMPTY;
#define TAKE() do { if (ok) { memcpy(out + used, mha_f32(&t), mha_numel(&t) * 4); used += mha_numel(&t); } mha_release(&t); } while (0)
    size_t s5[] = {5}, s7[] = {7}, s23[] = {2, 3}, s4[] = {4}, s34[] = {3, 4}, s232[] = {2, 3, 2}, s3[] = {3};
    ok = ok && mha_rand(&t, 1, s5) == MHA_OK; TAKE();
    ok = ok && mha_randn(&t, 1, s7) == MHA_OK; TAKE();
    ok = ok && mha_rand(&t, 2, s23) == MHA_OK; TAKE();
    ok = ok && mha_zeros(&t, MHA_FLOAT32, 1, s4) == MHA_OK && mha_uniform_(&t, -2.0f, 3.0f) == MHA_OK; TAKE();
    ok = ok && mha_zeros(&t, MHA_FLOAT32, 1, s5) == MHA_OK && mha_normal_(&t, 1.0f, 0.5f) == MHA_OK; TAKE();
    ok = ok && mha_zeros(&t, MHA_FLOAT32, 2, s34) == MHA_OK && mha_xavier_uniform_(&t, 1.0f) == MHA_OK; TAKE();
    ok = ok && mha_zeros(&t, MHA_FLOAT32, 3, s232) == MHA_OK && mha_xavier_normal_(&t, 2.0f) == MHA_OK; TAKE();
    ok = ok && mha_randn(&t, 0, s5) == MHA_OK; TAKE();
    ok = ok && mha_rand(&t, 1, s3) == MHA_OK; TAKE();
#undef TAKE
    return ok && used == SEQ_LEN;
}

/* Uniform draws are exact integer arithmetic: equal bit for bit. Normal draws go through log, cos and
 * sin, which libms may round differently in the last place: equal within rtol 1e-6. */
static void compare_sequence(const char *what, const float *got, const mha_tensor *want) {
    static const struct { size_t start, n; bool normal; const char *call; } parts[] = {
        {0, 5, false, "rand(5)"}, {5, 7, true, "randn(7)"}, {12, 6, false, "rand(2,3)"},
        {18, 4, false, "uniform_(-2,3)"}, {22, 5, true, "normal_(1,0.5)"}, {27, 12, false, "xavier_uniform_ (3,4)"},
        {39, 12, true, "xavier_normal_ (2,3,2) gain 2"}, {51, 1, true, "randn()"}, {52, 3, false, "rand(3)"},
    };
    if (want->storage == NULL || mha_numel(want) != SEQ_LEN) {
        CHECK(what, 0, "fixture missing or of the wrong size: %s", mha_errmsg());
        return;
    }
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s: %s equals the Python reference%s", what, parts[i].call,
                 parts[i].normal ? " (rtol 1e-6)" : " exactly");
        check_close_array(name, got + parts[i].start, mha_f32(want) + parts[i].start, parts[i].n,
                          parts[i].normal ? 1e-6 : 0.0, 0.0);
    }
    size_t inexact = 0;
    for (size_t i = 0; i < SEQ_LEN; i++) inexact += got[i] != mha_f32(want)[i];
    printf("# %s: %zu of %d values differ from Python's in any bit\n", what, inexact, SEQ_LEN);
}

static void test_sequences(void) {
    float got[SEQ_LEN];
    mha_tensor want = MHA_TENSOR_EMPTY;
    /* first: the process starts as if seeded with 42, before any mha_seed call */
    CHECK("the default seed is 42", mha_get_seed() == 42, "got %llu", (unsigned long long)mha_get_seed());
    int ok = run_sequence(got);
    CHECK("sequence without seeding runs", ok, "%s", mha_errmsg());
    mha_npy_load(&want, FIXTURES "rng_seed42.npy");
    compare_sequence("unseeded start", got, &want);
    mha_seed(42);
    CHECK("get_seed after seed(42)", mha_get_seed() == 42, "got %llu", (unsigned long long)mha_get_seed());
    float again[SEQ_LEN];
    ok = run_sequence(again) && memcmp(got, again, sizeof got) == 0;
    CHECK("seed(42) again replays the same numbers", ok, "%s", mha_errmsg());
    mha_release(&want);

    static const uint64_t seeds[] = {0, UINT64_MAX};
    for (size_t i = 0; i < 2; i++) {
        char path[128], what[64];
        snprintf(path, sizeof path, FIXTURES "rng_seed%llu.npy", (unsigned long long)seeds[i]);
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seeds[i]);
        mha_seed(seeds[i]);
        CHECK(what, mha_get_seed() == seeds[i] && run_sequence(got), "get_seed %llu; %s",
              (unsigned long long)mha_get_seed(), mha_errmsg());
        mha_npy_load(&want, path);
        compare_sequence(what, got, &want);
        mha_release(&want);
    }
}

/* ---- statistics of 10^6 draws; each tolerance is 5 standard errors of the estimate ---- */

#define N_STAT 1000000

static void moments(const float *x, size_t n, double *mean, double *var) {
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
    *var = ss / (double)(n - 1);
}

static void test_statistics(void) {
    size_t shape[1] = {N_STAT};
    mha_tensor u = MHA_TENSOR_EMPTY, z = MHA_TENSOR_EMPTY, w = MHA_TENSOR_EMPTY;
    mha_seed(7);
    if (mha_rand(&u, 1, shape) != MHA_OK || mha_randn(&z, 1, shape) != MHA_OK || mha_zeros(&w, MHA_FLOAT32, 1, shape) != MHA_OK) {
        CHECK("allocate 10^6 samples", 0, "%s", mha_errmsg());
        return;
    }
    const double n = N_STAT;
    double mean, var;

    /* U[0,1): mean 1/2, sd of the mean sqrt(1/12/n) = 2.9e-4; variance 1/12, sd of it sqrt((1/80 - 1/144)/n) = 7.5e-5 */
    const float *x = mha_f32(&u);
    moments(x, N_STAT, &mean, &var);
    CHECK("rand: mean of 10^6 within 5 s.e. (1.44e-3) of 0.5", fabs(mean - 0.5) < 5 * sqrt(1.0 / 12 / n), "mean %.6f", mean);
    CHECK("rand: variance within 5 s.e. (3.7e-4) of 1/12", fabs(var - 1.0 / 12) < 5 * sqrt((1.0 / 80 - 1.0 / 144) / n), "variance %.6f", var);
    float lo = x[0], hi = x[0];
    size_t bins[100] = {0};
    for (size_t i = 0; i < N_STAT; i++) {
        lo = fminf(lo, x[i]); hi = fmaxf(hi, x[i]);
        if (x[i] >= 0 && x[i] < 1) bins[(size_t)(x[i] * 100)]++;
    }
    CHECK("rand: every value in [0, 1)", lo >= 0 && hi < 1, "min %.9g max %.9g", lo, hi);
    double chi2 = 0;
    for (size_t b = 0; b < 100; b++) chi2 += (bins[b] - n / 100) * (bins[b] - n / 100) / (n / 100);
    /* chi-square with 99 degrees of freedom: mean 99, sd sqrt(198) = 14.1 */
    printf("# rand 10^6: mean %.6f variance %.6f min %.9g max %.9g chi2(99 dof) %.1f\n", mean, var, lo, hi, chi2);
    CHECK("rand: chi-square over 100 bins below 99 + 5 sd (169)", chi2 < 99 + 5 * sqrt(198.0), "chi2 %.2f", chi2);

    /* N(0,1): mean 0 (s.e. 1e-3), variance 1 (s.e. sqrt(2/n) = 1.41e-3), P(|z| < 1) = 0.682689 (s.e. 4.65e-4) */
    const float *y = mha_f32(&z);
    moments(y, N_STAT, &mean, &var);
    CHECK("randn: mean of 10^6 within 5 s.e. (5e-3) of 0", fabs(mean) < 5 * sqrt(1 / n), "mean %.6f", mean);
    CHECK("randn: variance within 5 s.e. (7.1e-3) of 1", fabs(var - 1) < 5 * sqrt(2 / n), "variance %.6f", var);
    size_t inside = 0, bad = 0;
    double lag1 = 0;
    for (size_t i = 0; i < N_STAT; i++) {
        inside += fabsf(y[i]) < 1;
        bad += !isfinite(y[i]);
        if (i + 1 < N_STAT) lag1 += (double)y[i] * y[i + 1];
    }
    double p1 = 0.682689492137;
    printf("# randn 10^6: mean %.6f variance %.6f P(|z|<1) %.6f lag-1 correlation %.6f\n", mean, var, inside / n, lag1 / (n - 1));
    CHECK("randn: fraction within 1 sd within 5 s.e. (2.3e-3) of 0.682689", fabs(inside / n - p1) < 5 * sqrt(p1 * (1 - p1) / n),
          "fraction %.6f", inside / n);
    CHECK("randn: every value finite", bad == 0, "%zu non-finite", bad);
    /* the cosine and sine halves of a Box-Muller pair are independent: lag-1 correlation ~ 0, s.e. 1e-3 */
    CHECK("randn: lag-1 correlation within 5 s.e. (5e-3) of 0", fabs(lag1 / (n - 1)) < 5 / sqrt(n), "correlation %.6f", lag1 / (n - 1));

    /* normal_(3, 2): mean 3 (s.e. 2e-3), sd 2 (variance 4, s.e. 4 sqrt(2/n) = 5.7e-3) */
    mha_normal_(&w, 3.0f, 2.0f);
    moments(mha_f32(&w), N_STAT, &mean, &var);
    CHECK("normal_(3,2): mean within 5 s.e. (0.01) of 3", fabs(mean - 3) < 5 * 2 / sqrt(n), "mean %.6f", mean);
    CHECK("normal_(3,2): variance within 5 s.e. (0.028) of 4", fabs(var - 4) < 5 * 4 * sqrt(2 / n), "variance %.6f", var);

    /* uniform_(-2, 3): mean 0.5 (s.e. 5 sqrt(1/12/n)), all in [-2, 3) */
    mha_uniform_(&w, -2.0f, 3.0f);
    moments(mha_f32(&w), N_STAT, &mean, &var);
    lo = hi = mha_f32(&w)[0];
    for (size_t i = 0; i < N_STAT; i++) { lo = fminf(lo, mha_f32(&w)[i]); hi = fmaxf(hi, mha_f32(&w)[i]); }
    CHECK("uniform_(-2,3): mean within 5 s.e. (7.2e-3) of 0.5, all in [-2, 3)",
          fabs(mean - 0.5) < 5 * 5 * sqrt(1.0 / 12 / n) && lo >= -2 && hi < 3, "mean %.6f min %.9g max %.9g", mean, lo, hi);
    mha_release(&u); mha_release(&z); mha_release(&w);
}

/* ---- edges of uniform_ ---- */

static void test_uniform_edges(void) {
    size_t shape[1] = {10000};
    mha_tensor t = MHA_TENSOR_EMPTY;
    mha_zeros(&t, MHA_FLOAT32, 1, shape);
    float hi = nextafterf(1.0f, 2.0f);  /* [1, 1 + 2^-23): every draw rounds to 1 or to hi; hi is excluded */
    int ok = mha_uniform_(&t, 1.0f, hi) == MHA_OK;
    for (size_t i = 0; ok && i < shape[0]; i++) ok = mha_f32(&t)[i] == 1.0f;
    CHECK("uniform_ on a one-float range never returns hi", ok, "%s", mha_errmsg());
    ok = mha_uniform_(&t, 0.25f, 0.25f) == MHA_OK;
    for (size_t i = 0; ok && i < shape[0]; i++) ok = mha_f32(&t)[i] == 0.25f;
    CHECK("uniform_(a, a) fills a", ok, "%s", mha_errmsg());
    mha_release(&t);
    size_t none[2] = {0, 3};
    ok = mha_zeros(&t, MHA_FLOAT32, 2, none) == MHA_OK && mha_uniform_(&t, 0, 1) == MHA_OK &&
         mha_xavier_uniform_(&t, 1) == MHA_OK && mha_xavier_normal_(&t, 1) == MHA_OK;
    CHECK("fills of a (0,3) tensor succeed and touch nothing", ok, "%s", mha_errmsg());
    mha_release(&t);
}

/* ---- Xavier: bound and std as PyTorch computes them (tests/fixtures/npy/xavier.npy) ---- */

static void test_xavier(void) {
    static const size_t shapes[][4] = {{300, 200}, {16, 8, 3, 3}, {5, 40, 7}};
    static const size_t ndims[] = {2, 4, 3};
    const float gain = 1.5f;
    mha_tensor table = MHA_TENSOR_EMPTY;
    if (mha_npy_load(&table, FIXTURES "xavier.npy") != MHA_OK || mha_numel(&table) != 6) {
        CHECK("load xavier.npy", 0, "%s", mha_errmsg());
        return;
    }
    for (size_t k = 0; k < 3; k++) {
        double bound = mha_f32(&table)[2 * k], std = mha_f32(&table)[2 * k + 1];
        mha_tensor t = MHA_TENSOR_EMPTY;
        char shape[64], name[160];
        mha_seed(11 + k);
        if (mha_zeros(&t, MHA_FLOAT32, ndims[k], shapes[k]) != MHA_OK) continue;
        mha_shape_str(shape, sizeof shape, &t);
        size_t n = mha_numel(&t);
        /* uniform: |x| <= bound (PyTorch's, to float rounding), the largest near it, variance bound^2/3
         * within 5 s.e. (relative s.e. of a uniform's variance: sqrt(0.8/n)) */
        mha_xavier_uniform_(&t, gain);
        double peak = 0, mean, var;
        for (size_t i = 0; i < n; i++) peak = fmax(peak, fabs(mha_f32(&t)[i]));
        moments(mha_f32(&t), n, &mean, &var);
        snprintf(name, sizeof name, "xavier_uniform_ %s gain 1.5: |x| <= %.6f (PyTorch's bound), max > 0.99 bound", shape, bound);
        CHECK(name, peak <= bound * (1 + 1e-6) && peak > 0.99 * bound, "max |x| %.7f", peak);
        snprintf(name, sizeof name, "xavier_uniform_ %s: variance within 5 s.e. of bound^2/3", shape);
        CHECK(name, fabs(var / (bound * bound / 3) - 1) < 5 * sqrt(0.8 / n), "variance %.7f, want %.7f", var, bound * bound / 3);
        /* normal: variance std^2 within 5 s.e. (relative s.e. sqrt(2/n)) */
        mha_xavier_normal_(&t, gain);
        moments(mha_f32(&t), n, &mean, &var);
        snprintf(name, sizeof name, "xavier_normal_ %s gain 1.5: variance within 5 s.e. of PyTorch's std^2 (std %.6f)", shape, std);
        CHECK(name, fabs(var / (std * std) - 1) < 5 * sqrt(2.0 / n), "variance %.7f, want %.7f", var, std * std);
        mha_release(&t);
    }
    mha_release(&table);
}

/* ---- errors: named, with the shape, and the tensor left as it was ---- */

static void expect_error(const char *name, mha_status got, mha_status want, const char *text) {
    CHECK(name, got == want && strstr(mha_errmsg(), text) != NULL, "status %d (want %d), message \"%s\", want \"%s\"",
          got, want, mha_errmsg(), text);
}

static void test_errors(void) {
    size_t s5[1] = {5}, s22[2] = {2, 2}, s23[2] = {2, 3}, s13[2] = {1, 3}, s43[2] = {4, 3};
    mha_tensor v = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY, m = MHA_TENSOR_EMPTY, mt = MHA_TENSOR_EMPTY;
    mha_tensor row = MHA_TENSOR_EMPTY, wide = MHA_TENSOR_EMPTY, scalar = MHA_TENSOR_EMPTY, released = MHA_TENSOR_EMPTY;
    mha_zeros(&v, MHA_FLOAT32, 1, s5);
    mha_zeros(&b, MHA_BOOL, 2, s22);
    mha_full(&m, 2, s23, 7.0f);
    mha_transpose(&mt, &m, 0, 1);
    mha_zeros(&row, MHA_FLOAT32, 2, s13);
    mha_expand(&wide, &row, 2, s43);
    mha_zeros(&scalar, MHA_FLOAT32, 0, s5);

    expect_error("xavier_uniform_ of a vector", mha_xavier_uniform_(&v, 1), MHA_E_SHAPE,
                 "xavier_uniform_: tensor (5) has 1 dimension; fan_in and fan_out need at least 2");
    expect_error("xavier_normal_ of a scalar", mha_xavier_normal_(&scalar, 1), MHA_E_SHAPE,
                 "xavier_normal_: tensor () has 0 dimensions; fan_in and fan_out need at least 2");
    expect_error("uniform_ of a bool tensor", mha_uniform_(&b, 0, 1), MHA_E_DTYPE,
                 "uniform_: tensor (2,2) is bool; random fills need a float32 tensor");
    expect_error("xavier_uniform_ of a bool tensor", mha_xavier_uniform_(&b, 1), MHA_E_DTYPE, "xavier_uniform_: tensor (2,2) is bool");
    expect_error("normal_ of a transposed view", mha_normal_(&mt, 0, 1), MHA_E_ARG,
                 "normal_: tensor (3,2) is not contiguous (a transposed, narrowed or expanded view)");
    int unchanged = 1;
    for (size_t i = 0; i < 6; i++) unchanged = unchanged && mha_f32(&m)[i] == 7.0f;
    CHECK("a refused fill leaves the tensor as it was", unchanged, "%s", "values changed");
    expect_error("uniform_ of an expanded view", mha_uniform_(&wide, 0, 1), MHA_E_ARG, "uniform_: tensor (4,3) is not contiguous");
    expect_error("uniform_ with lo > hi", mha_uniform_(&v, 3, 1), MHA_E_ARG, "uniform_: the range [3, 1) is not a finite range with lo <= hi");
    expect_error("uniform_ with an infinite bound", mha_uniform_(&v, 0, INFINITY), MHA_E_ARG, "uniform_: the range [0, inf)");
    expect_error("normal_ with std < 0", mha_normal_(&v, 0, -1), MHA_E_ARG, "normal_: mean 0 and std -1 must be finite, with std >= 0");
    expect_error("normal_ with a NaN mean", mha_normal_(&v, NAN, 1), MHA_E_ARG, "normal_: mean nan");
    expect_error("xavier_normal_ with gain < 0", mha_xavier_normal_(&m, -2), MHA_E_ARG, "xavier_normal_: gain -2 must be finite and >= 0");
    expect_error("uniform_ of a released tensor", mha_uniform_(&released, 0, 1), MHA_E_ARG, "uniform_: the tensor is empty (released)");
    size_t huge[3] = {SIZE_MAX / 2, 4, 4};
    mha_tensor out = MHA_TENSOR_EMPTY;
    expect_error("rand of an overflowing shape", mha_rand(&out, 3, huge), MHA_E_NOMEM, "rand: shape (");
    CHECK("rand of an overflowing shape leaves out empty", out.storage == NULL, "%s", "out was filled");
    size_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    expect_error("randn of 9 dimensions", mha_randn(&out, 9, nine), MHA_E_ARG, "randn: 9 dimensions requested");
    mha_release(&v); mha_release(&b); mha_release(&m); mha_release(&mt);
    mha_release(&row); mha_release(&wide); mha_release(&scalar);
}

int main(void) {
    size_t live = mha_live_bytes();
    test_sequences();  /* first: it checks the state the process starts in */
    test_statistics();
    test_uniform_edges();
    test_xavier();
    test_errors();
    CHECK("no core memory left allocated", mha_live_bytes() == live, "%zu bytes still live (was %zu)", mha_live_bytes(), live);
    CHECK_DONE();
}
