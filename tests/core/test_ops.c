/* tests/core/test_ops.c - core/tensor/ops.c against NumPy: elementwise ops with broadcasting and strided
 * views, NaN/inf, comparisons and logic, where/masked_fill, reductions, cat/stack, matmul, errors.
 *
 * The references are the .npy files in tests/fixtures/ops/, written by tests/fixtures/gen/gen_ops_fixtures.py (run it with
 * /usr/bin/python3 to regenerate); they are computed in float64 from the float32 inputs and rounded.
 * Tolerances (|got - want| <= atol + rtol·|want|, NaN matches NaN, inf matches the same inf):
 *   elementwise + - * / max min, comparisons, where, cat/stack: exact (rtol 0, atol 0): each result
 *     is one correctly rounded float operation, or a copy.
 *   pow and unary functions (libm, about 1 ulp): rtol 1e-5, atol 1e-37 (values below FLT_MIN, the
 *     subnormals of sigmoid(-100), count as zero).
 *   reductions: rtol 1e-5, atol 1e-6 (sums accumulate in double; mean/var near 0 need the atol).
 *   matmul (K <= 65, inputs in [-1,1]): rtol 1e-5, atol 1e-5 (float32 kernels may sum in any order).
 * Run from the repository root (tests/run.sh does), so the fixture paths resolve. */
#include <stdlib.h>

#include "check.h"
#include "tensor/tensor.h"
#include "io/npy.h"

#define FIXTURES "tests/fixtures/ops/"

static double RTOL_FN = 1e-5, ATOL_FN = 1e-37;
static double RTOL_RD = 1e-5, ATOL_RD = 1e-6;
static double RTOL_MM = 1e-5, ATOL_MM = 1e-5;

/* Load fixture NAME.npy; a missing or bad file is one FAIL line and an empty tensor. */
static mha_tensor load(const char *name) {
    char path[256];
    snprintf(path, sizeof path, FIXTURES "%s.npy", name);
    mha_tensor t = MHA_TENSOR_EMPTY;
    if (mha_npy_load(&t, path) != MHA_OK) check_report(0, name, "cannot load fixture: %s", mha_errmsg());
    return t;
}

/* Check that st is MHA_OK and got equals fixture want_name (shape, dtype, values); releases got. */
static void expect(const char *name, mha_status st, mha_tensor *got, const char *want_name, double rtol, double atol) {
    mha_tensor want = load(want_name);
    char sg[200], sw[200];
    if (!want.storage) {
        mha_release(got);
        return;
    }
    if (st != MHA_OK) {
        check_report(0, name, "status %s: %s", mha_status_name(st), mha_errmsg());
    } else if (!mha_same_shape(got, &want)) {
        check_report(0, name, "shape %s, want %s", mha_shape_str(sg, sizeof sg, got), mha_shape_str(sw, sizeof sw, &want));
    } else if (got->dtype != want.dtype) {
        check_report(0, name, "dtype %d, want %d", (int)got->dtype, (int)want.dtype);
    } else if (!mha_is_contiguous(got)) {
        check_report(0, name, "the result is not contiguous");
    } else if (got->dtype == MHA_BOOL) {
        size_t n = mha_numel(got), i = 0;
        const bool *g = mha_bool(got), *w = mha_bool(&want);
        while (i < n && g[i] == w[i]) i++;
        if (i < n) check_report(0, name, "element %zu: got %d, want %d", i, g[i], w[i]);
        else check_report(1, name, "%s", "");
    } else {
        check_close_array(name, mha_f32(got), mha_f32(&want), mha_numel(got), rtol, atol);
    }
    mha_release(got);
    mha_release(&want);
}

/* Check that st is the error `want` with a message containing `text`, and out stayed empty. */
static void expect_error(const char *name, mha_status st, const mha_tensor *out, mha_status want, const char *text) {
    if (st != want)
        check_report(0, name, "status %s, want %s (message: %s)", mha_status_name(st), mha_status_name(want), mha_errmsg());
    else if (!strstr(mha_errmsg(), text))
        check_report(0, name, "message \"%s\" lacks \"%s\"", mha_errmsg(), text);
    else if (out && out->storage)
        check_report(0, name, "the output is not empty after a failure");
    else
        check_report(1, name, "%s", "");
}

static const char *const BINOPS[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
static const char *const CMPOPS[] = {"eq", "ne", "lt", "le", "gt", "ge"};
static const char *const UNOPS[] = {"neg", "abs", "exp", "log", "sqrt", "tanh", "relu", "gelu", "sigmoid"};

/* pow goes through libm; the rest are single correctly rounded operations */
static double binop_rtol(int op) { return op == MHA_POW ? RTOL_FN : 0.0; }
static double unop_rtol(int op) { return op == MHA_NEG || op == MHA_ABS || op == MHA_RELU ? 0.0 : RTOL_FN; }

static void test_binary(void) {
    static const char *const layouts[] = {"same", "colrow", "rank", "scalar", "zero", "special"};
    char name[96], want[96];
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        snprintf(name, sizeof name, "bin_%s_a", layouts[l]);
        mha_tensor a = load(name);
        snprintf(name, sizeof name, "bin_%s_b", layouts[l]);
        mha_tensor b = load(name);
        for (int op = MHA_ADD; op <= MHA_MINIMUM && a.storage && b.storage; op++) {
            mha_tensor out = MHA_TENSOR_EMPTY;
            snprintf(name, sizeof name, "%s %s", BINOPS[op], layouts[l]);
            snprintf(want, sizeof want, "bin_%s_%s", layouts[l], BINOPS[op]);
            expect(name, mha_binary(&out, (mha_binop)op, &a, &b), &out, want, binop_rtol(op), 0.0);
        }
        mha_release(&a);
        mha_release(&b);
    }

    mha_tensor a = load("bin_same_a");
    for (int op = MHA_ADD; op <= MHA_MINIMUM && a.storage; op++) {
        mha_tensor out = MHA_TENSOR_EMPTY;
        snprintf(name, sizeof name, "%s tensor-number", BINOPS[op]);
        snprintf(want, sizeof want, "bsc_%s_r", BINOPS[op]);
        expect(name, mha_binary_scalar(&out, (mha_binop)op, &a, 1.5f, false), &out, want, binop_rtol(op), 0.0);
        snprintf(name, sizeof name, "%s number-tensor", BINOPS[op]);
        snprintf(want, sizeof want, "bsc_%s_l", BINOPS[op]);
        expect(name, mha_binary_scalar(&out, (mha_binop)op, &a, 2.5f, true), &out, want, binop_rtol(op), 0.0);
    }
    mha_release(&a);

    /* the broadcast shape itself, including a zero-size dim against 1 and the failure */
    mha_tensor x = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY;
    size_t sx[] = {3, 1, 0}, sy[] = {5, 1};
    size_t ndim = 0, shape[MHA_MAX_DIMS];
    mha_empty(&x, MHA_FLOAT32, 3, sx);
    mha_empty(&y, MHA_FLOAT32, 2, sy);
    mha_status st = mha_broadcast_shape(&ndim, shape, &x, &y, "add");
    CHECK("broadcast_shape (3,1,0) (5,1)", st == MHA_OK && ndim == 3 && shape[0] == 3 && shape[1] == 5 && shape[2] == 0,
          "status %d, ndim %zu", (int)st, ndim);
    mha_release(&x);
    mha_release(&y);
}

static void test_noncontiguous(void) {
    mha_tensor a = load("nc_a"), b = load("nc_b"), c = load("nc_c"), p = load("nc_p"), q = load("nc_q");
    mha_tensor at = MHA_TENSOR_EMPTY, rows = MHA_TENSOR_EMPTY, bn = MHA_TENSOR_EMPTY, ce = MHA_TENSOR_EMPTY,
               pp = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    if (!a.storage || !b.storage || !c.storage || !p.storage || !q.storage) goto done;
    size_t shape34[] = {3, 4}, perm[] = {2, 0, 1};
    mha_status st = mha_transpose(&at, &a, 0, 1);
    if (st == MHA_OK) st = mha_narrow(&rows, &b, 0, 1, 3);
    if (st == MHA_OK) st = mha_narrow(&bn, &rows, 1, 2, 4);
    if (st == MHA_OK) st = mha_expand(&ce, &c, 2, shape34);
    if (st == MHA_OK) st = mha_permute(&pp, &p, perm);
    if (st != MHA_OK) {
        check_report(0, "noncontiguous views", "%s", mha_errmsg());
        goto done;
    }
    CHECK("noncontiguous views are views", !mha_is_contiguous(&at) && !mha_is_contiguous(&bn) && ce.stride[0] == 0,
          "transpose/narrow/expand copied");
    char name[96], want[96];
    for (int op = MHA_ADD; op <= MHA_MINIMUM; op++) {
        snprintf(name, sizeof name, "%s transposed+narrowed", BINOPS[op]);
        snprintf(want, sizeof want, "nc_%s", BINOPS[op]);
        expect(name, mha_binary(&out, (mha_binop)op, &at, &bn), &out, want, binop_rtol(op), 0.0);
    }
    expect("add narrowed+expanded", mha_binary(&out, MHA_ADD, &bn, &ce), &out, "nc_expand_add", 0.0, 0.0);
    expect("mul expanded*narrowed", mha_binary(&out, MHA_MUL, &ce, &bn), &out, "nc_expand_mul", 0.0, 0.0);
    expect("add permuted+vector", mha_binary(&out, MHA_ADD, &pp, &q), &out, "nc_perm_add", 0.0, 0.0);
    for (int op = MHA_NEG; op <= MHA_SIGMOID; op++) {
        snprintf(name, sizeof name, "%s narrowed", UNOPS[op]);
        snprintf(want, sizeof want, "nc_un_%s", UNOPS[op]);
        expect(name, mha_unary(&out, (mha_unop)op, &bn), &out, want, unop_rtol(op), ATOL_FN);
    }
done:
    mha_release(&a); mha_release(&b); mha_release(&c); mha_release(&p); mha_release(&q);
    mha_release(&at); mha_release(&rows); mha_release(&bn); mha_release(&ce); mha_release(&pp);
}

static void test_compare_logic(void) {
    mha_tensor a = load("cmp_a"), b = load("cmp_b"), out = MHA_TENSOR_EMPTY;
    char name[96], want[96];
    for (int op = MHA_EQ; op <= MHA_GE && a.storage && b.storage; op++) {
        snprintf(name, sizeof name, "%s (3,1) (1,4) with NaN", CMPOPS[op]);
        snprintf(want, sizeof want, "cmp_%s", CMPOPS[op]);
        expect(name, mha_compare(&out, (mha_cmpop)op, &a, &b), &out, want, 0.0, 0.0);
        snprintf(name, sizeof name, "%s tensor-number", CMPOPS[op]);
        snprintf(want, sizeof want, "cmpsc_%s", CMPOPS[op]);
        expect(name, mha_compare_scalar(&out, (mha_cmpop)op, &b, 0.0f), &out, want, 0.0, 0.0);
    }
    mha_release(&a);
    mha_release(&b);

    mha_tensor x = load("lg_a"), y = load("lg_b"), z = load("lg_c");
    if (x.storage && y.storage && z.storage) {
        expect("logical_and (3,4) (4)", mha_logical(&out, MHA_AND, &x, &y), &out, "lg_and", 0, 0);
        expect("logical_or (3,4) (4)", mha_logical(&out, MHA_OR, &x, &y), &out, "lg_or", 0, 0);
        expect("logical_xor (3,4) (4)", mha_logical(&out, MHA_XOR, &x, &y), &out, "lg_xor", 0, 0);
        expect("logical_not", mha_logical_not(&out, &x), &out, "lg_not", 0, 0);
        expect("where bool branches", mha_where(&out, &x, &y, &z), &out, "lg_where_bool", 0, 0);
        expect("sum of a bool mask counts", mha_reduce(&out, MHA_SUM, &x, 1, false), &out, "lg_sum_1", 0, 0);

        mha_tensor not_x = MHA_TENSOR_EMPTY;
        if (mha_logical_not(&not_x, &x) == MHA_OK) {
            const mha_tensor *pieces[] = {&x, &not_x};
            expect("stack bool pieces stays bool", mha_stack(&out, pieces, 2, 2), &out, "lg_stack", 0, 0);
        }
        mha_release(&not_x);

        /* a comparison of a bool with a float reads the bool as 0/1: x == float(x) everywhere */
        mha_tensor xf = MHA_TENSOR_EMPTY, all = MHA_TENSOR_EMPTY;
        mha_status st = mha_to_dtype(&xf, &x, MHA_FLOAT32);
        if (st == MHA_OK) st = mha_compare(&out, MHA_EQ, &x, &xf);
        if (st == MHA_OK) st = mha_reduce(&all, MHA_MIN, &out, MHA_ALL_DIMS, false);
        CHECK("eq bool with float reads 0/1", st == MHA_OK && mha_f32(&all)[0] == 1.0f, "status %d: %s", (int)st,
              mha_errmsg());
        mha_release(&out);
        mha_release(&all);

        /* bool with float promotes: mask + x = float(mask) + x */
        mha_tensor promoted = MHA_TENSOR_EMPTY, doubled = MHA_TENSOR_EMPTY;
        st = mha_binary(&promoted, MHA_ADD, &x, &xf);
        if (st == MHA_OK) st = mha_binary(&doubled, MHA_ADD, &xf, &xf);
        CHECK("add bool + float promotes to float", st == MHA_OK && promoted.dtype == MHA_FLOAT32 &&
              memcmp(mha_f32(&promoted), mha_f32(&doubled), 12 * sizeof(float)) == 0, "status %d: %s", (int)st,
              mha_errmsg());
        mha_release(&promoted);
        mha_release(&doubled);
        mha_release(&xf);
    }
    mha_release(&x);
    mha_release(&y);
    mha_release(&z);
}

static void test_unary(void) {
    mha_tensor x = load("un_x"), out = MHA_TENSOR_EMPTY;
    char name[96], want[96];
    for (int op = MHA_NEG; op <= MHA_SIGMOID && x.storage; op++) {
        snprintf(name, sizeof name, "%s with NaN/inf/extremes", UNOPS[op]);
        snprintf(want, sizeof want, "un_%s", UNOPS[op]);
        expect(name, mha_unary(&out, (mha_unop)op, &x), &out, want, unop_rtol(op), ATOL_FN);
    }
    mha_release(&x);
}

static void test_where(void) {
    mha_tensor c = load("wh_c"), a = load("wh_a"), b = load("wh_b"), out = MHA_TENSOR_EMPTY;
    if (c.storage && a.storage && b.storage)
        expect("where (3,1) (1,4) ()", mha_where(&out, &c, &a, &b), &out, "wh_out", 0, 0);
    mha_release(&c); mha_release(&a); mha_release(&b);

    mha_tensor c2 = load("wh_c2"), a2 = load("wh_a2"), b2 = load("wh_b2"), a2t = MHA_TENSOR_EMPTY;
    if (c2.storage && a2.storage && b2.storage && mha_transpose(&a2t, &a2, 0, 1) == MHA_OK)
        expect("where transposed a", mha_where(&out, &c2, &a2t, &b2), &out, "wh_out2", 0, 0);
    mha_release(&c2); mha_release(&a2); mha_release(&b2); mha_release(&a2t);

    mha_tensor t = load("mf_t"), mask = load("mf_mask");
    if (t.storage && mask.storage)
        expect("masked_fill -inf, mask (3,1) on (2,3,4)", mha_masked_fill(&out, &t, &mask, -INFINITY), &out, "mf_out", 0, 0);
    mha_release(&t); mha_release(&mask);

    mha_tensor t2 = load("mf_t2"), causal = load("mf_causal"), t2t = MHA_TENSOR_EMPTY;
    if (t2.storage && causal.storage && mha_transpose(&t2t, &t2, 0, 1) == MHA_OK)
        expect("masked_fill causal on transposed", mha_masked_fill(&out, &t2t, &causal, -1e9f), &out, "mf_out2", 0, 0);
    mha_release(&t2); mha_release(&causal); mha_release(&t2t);
}

static const char *const RDOPS[] = {"sum", "mean", "max", "min", "argmax", "argmin", "var1", "var0"};

/* op 0-5: mha_reduce; 6, 7: var with correction 1, 0 */
static mha_status run_reduce(mha_tensor *out, int op, const mha_tensor *t, size_t dim, bool keepdim) {
    if (op >= 6) return mha_var(out, t, dim, keepdim, op == 6 ? 1 : 0);
    return mha_reduce(out, (mha_reduceop)op, t, dim, keepdim);
}

static double reduce_rtol(int op) { return op == MHA_ARGMAX || op == MHA_ARGMIN ? 0.0 : RTOL_RD; }
static double reduce_atol(int op) { return op == MHA_ARGMAX || op == MHA_ARGMIN ? 0.0 : ATOL_RD; }

/* every op along every dim and all dims of x, each checked again with keepdim */
static void check_reductions(const char *prefix, const mha_tensor *x) {
    char name[96], want[96], sh[200];
    for (int op = 0; op < 8; op++) {
        for (size_t d = 0; d <= x->ndim; d++) {
            size_t dim = d == x->ndim ? MHA_ALL_DIMS : d;
            mha_tensor out = MHA_TENSOR_EMPTY;
            if (dim == MHA_ALL_DIMS) {
                snprintf(name, sizeof name, "%s %s all dims", prefix, RDOPS[op]);
                snprintf(want, sizeof want, "%s_%s_all", prefix, RDOPS[op]);
            } else {
                snprintf(name, sizeof name, "%s %s dim %zu", prefix, RDOPS[op], d);
                snprintf(want, sizeof want, "%s_%s_%zu", prefix, RDOPS[op], d);
            }
            expect(name, run_reduce(&out, op, x, dim, false), &out, want, reduce_rtol(op), reduce_atol(op));

            /* keepdim: the reduced dims stay as 1, values as without */
            mha_tensor kept = MHA_TENSOR_EMPTY, flat = MHA_TENSOR_EMPTY;
            mha_status st = run_reduce(&kept, op, x, dim, true);
            bool shape_ok = st == MHA_OK && kept.ndim == x->ndim;
            for (size_t i = 0; shape_ok && i < x->ndim; i++)
                shape_ok = kept.shape[i] == (dim == MHA_ALL_DIMS || i == dim ? 1 : x->shape[i]);
            if (st == MHA_OK) st = run_reduce(&flat, op, x, dim, false);
            CHECK(strcat(name, " keepdim"), shape_ok && st == MHA_OK &&
                  memcmp(mha_f32(&kept), mha_f32(&flat), mha_numel(&flat) * sizeof(float)) == 0,
                  "shape %s, status %d", kept.storage ? mha_shape_str(sh, sizeof sh, &kept) : "-", (int)st);
            mha_release(&kept);
            mha_release(&flat);
        }
    }
}

static void test_reductions(void) {
    mha_tensor x = load("rd_x"), xp = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    size_t perm[] = {2, 0, 1};
    if (x.storage) {
        check_reductions("rd", &x);
        if (mha_permute(&xp, &x, perm) == MHA_OK) check_reductions("rdp", &xp);
    }
    mha_release(&x);
    mha_release(&xp);

    mha_tensor y = load("rdn_x");
    static const char *const nan_ops[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
    char name[96], want[96];
    for (int op = 0; op < 6 && y.storage; op++) {
        for (size_t d = 0; d < 2; d++) {
            snprintf(name, sizeof name, "%s dim %zu with NaN/-inf/ties", nan_ops[op], d);
            snprintf(want, sizeof want, "rdn_%s_%zu", nan_ops[op], d);
            expect(name, mha_reduce(&out, (mha_reduceop)op, &y, d, false), &out, want, reduce_rtol(op), reduce_atol(op));
        }
    }
    mha_release(&y);

    /* an empty dim */
    size_t shape20[] = {2, 0};
    mha_tensor e = MHA_TENSOR_EMPTY;
    if (mha_empty(&e, MHA_FLOAT32, 2, shape20) == MHA_OK) {
        expect("sum over an empty dim is 0", mha_reduce(&out, MHA_SUM, &e, 1, false), &out, "rde_sum_1", 0, 0);
        expect("mean over an empty dim is NaN", mha_reduce(&out, MHA_MEAN, &e, 1, false), &out, "rde_mean_1", 0, 0);
        expect("var over an empty dim is NaN", mha_var(&out, &e, 1, false, 1), &out, "rde_var1_1", 0, 0);
        mha_status st = mha_reduce(&out, MHA_SUM, &e, 0, false);
        CHECK("sum along a size-2 dim of (2,0) gives (0)", st == MHA_OK && out.ndim == 1 && out.shape[0] == 0,
              "status %d", (int)st);
        mha_release(&out);
    }
    mha_release(&e);

    mha_tensor one = load("rd1_x");
    if (one.storage) {
        expect("var of one element, correction 1, is NaN", mha_var(&out, &one, 1, false, 1), &out, "rd1_var1_1", 0, 0);
        expect("var of one element, correction 0, is 0", mha_var(&out, &one, 1, false, 0), &out, "rd1_var0_1", 0, 0);
    }
    mha_release(&one);

    mha_tensor big = load("rdb_x");
    if (big.storage) {
        expect("sum of 70001 elements", mha_reduce(&out, MHA_SUM, &big, MHA_ALL_DIMS, false), &out, "rdb_sum", RTOL_RD, 0);
        expect("mean of 70001 elements", mha_reduce(&out, MHA_MEAN, &big, 0, false), &out, "rdb_mean", RTOL_RD, 0);
        expect("var of 70001 elements", mha_var(&out, &big, 0, false, 1), &out, "rdb_var1", RTOL_RD, 0);
        expect("max of 70001 elements", mha_reduce(&out, MHA_MAX, &big, 0, false), &out, "rdb_max", 0, 0);
        expect("argmax of 70001 elements", mha_reduce(&out, MHA_ARGMAX, &big, 0, false), &out, "rdb_argmax", 0, 0);
        expect("argmin of 70001 elements", mha_reduce(&out, MHA_ARGMIN, &big, 0, false), &out, "rdb_argmin", 0, 0);
        expect("mul of 70001 elements by 3", mha_binary_scalar(&out, MHA_MUL, &big, 3.0f, false), &out, "rdb_mul3", 0, 0);
        expect("exp of 70001 elements", mha_unary(&out, MHA_EXP, &big), &out, "rdb_exp", RTOL_FN, ATOL_FN);
    }
    mha_release(&big);

    /* a rank-0 tensor reduces to itself */
    mha_tensor s = MHA_TENSOR_EMPTY;
    size_t no_dims[1] = {0};   /* a rank-0 shape: never read */
    if (mha_full(&s, 0, no_dims, 3.5f) == MHA_OK) {
        mha_status st = mha_reduce(&out, MHA_MAX, &s, 0, false);
        CHECK("max of a scalar", st == MHA_OK && out.ndim == 0 && mha_f32(&out)[0] == 3.5f, "status %d", (int)st);
        mha_release(&out);
    }
    mha_release(&s);
}

static void test_join(void) {
    mha_tensor p0 = load("cat_p0"), p1 = load("cat_p1"), p2 = load("cat_p2"), q0 = load("cat_q0"), t = load("cat_t");
    mha_tensor tt = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    if (p0.storage && p1.storage && p2.storage && q0.storage && t.storage && mha_transpose(&tt, &t, 0, 1) == MHA_OK) {
        const mha_tensor *d1[] = {&p0, &p1, &p2}, *d0[] = {&q0, &p0, &tt};
        expect("cat dim 1 (2,3) (2,1) (2,4)", mha_cat(&out, d1, 3, 1), &out, "cat_d1", 0, 0);
        expect("cat dim 0 with a transposed piece", mha_cat(&out, d0, 3, 0), &out, "cat_d0", 0, 0);
    }
    mha_release(&p0); mha_release(&p1); mha_release(&p2); mha_release(&q0); mha_release(&t); mha_release(&tt);

    mha_tensor a3 = load("cat3_a"), b3 = load("cat3_b");
    if (a3.storage && b3.storage) {
        const mha_tensor *pieces[] = {&a3, &b3, &a3};
        expect("cat middle dim (2,3,4) (2,1,4) (2,3,4)", mha_cat(&out, pieces, 3, 1), &out, "cat3_d1", 0, 0);
    }
    mha_release(&a3); mha_release(&b3);

    mha_tensor s0 = load("stk_0"), s1 = load("stk_1"), s2 = load("stk_2"), s2t = MHA_TENSOR_EMPTY;
    if (s0.storage && s1.storage && s2.storage && mha_transpose(&s2t, &s2, 0, 1) == MHA_OK) {
        const mha_tensor *pieces[] = {&s0, &s1, &s2t};
        char name[64], want[64];
        for (size_t d = 0; d < 3; d++) {
            snprintf(name, sizeof name, "stack dim %zu", d);
            snprintf(want, sizeof want, "stk_d%zu", d);
            expect(name, mha_stack(&out, pieces, 3, d), &out, want, 0, 0);
        }
    }
    mha_release(&s0); mha_release(&s1); mha_release(&s2); mha_release(&s2t);

    /* bool and float pieces: promoted to float. The float piece is the last row of lg_cat_float. */
    mha_tensor mask = load("lg_a"), mixed = load("lg_cat_float"), last = MHA_TENSOR_EMPTY;
    if (mask.storage && mixed.storage && mha_narrow(&last, &mixed, 0, 3, 1) == MHA_OK) {
        const mha_tensor *pieces[] = {&mask, &last};
        expect("cat bool with float promotes", mha_cat(&out, pieces, 2, 0), &out, "lg_cat_float", 0, 0);
    }
    mha_release(&mask); mha_release(&mixed); mha_release(&last);
}

/* One matmul fixture: a and b loaded, turned into views by make_views (may be NULL). */
typedef mha_status make_views_fn(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b);

static mha_status views_as_they_are(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    mha_status st = mha_share(va, a);
    return st ? st : mha_share(vb, b);
}

static void check_matmul(const char *name, make_views_fn *make_views) {
    char fa[96], fb[96], fw[96], title[128];
    snprintf(fa, sizeof fa, "mm_%s_a", name);
    snprintf(fb, sizeof fb, "mm_%s_b", name);
    snprintf(fw, sizeof fw, "mm_%s_want", name);
    mha_tensor a = load(fa), b = load(fb), va = MHA_TENSOR_EMPTY, vb = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    char sa[200], sb[200];
    if (a.storage && b.storage) {
        mha_status st = (make_views ? make_views : views_as_they_are)(&va, &vb, &a, &b);
        if (st != MHA_OK) {
            check_report(0, name, "views: %s", mha_errmsg());
        } else {
            snprintf(title, sizeof title, "matmul %s %s @ %s", name, mha_shape_str(sa, sizeof sa, &va),
                     mha_shape_str(sb, sizeof sb, &vb));
            expect(title, mha_matmul(&out, &va, &vb), &out, fw, RTOL_MM, ATOL_MM);
        }
    }
    mha_release(&a); mha_release(&b); mha_release(&va); mha_release(&vb);
}

static mha_status views_tt(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    mha_status st = mha_transpose(va, a, 0, 1);
    return st ? st : mha_transpose(vb, b, 0, 1);
}
static mha_status views_btt(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    mha_status st = mha_transpose(va, a, 1, 2);
    return st ? st : mha_transpose(vb, b, 1, 2);
}
static mha_status views_nofold(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    mha_status st = mha_transpose(va, a, 0, 1);
    return st ? st : mha_share(vb, b);
}
static mha_status views_nounit(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    mha_status st = mha_select(va, a, 2, 1);
    return st ? st : mha_share(vb, b);
}
static mha_status views_expand(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    size_t shape[] = {17, 33};
    mha_status st = mha_share(va, a);
    return st ? st : mha_expand(vb, b, 2, shape);
}
static mha_status views_colvec(mha_tensor *va, mha_tensor *vb, const mha_tensor *a, const mha_tensor *b) {
    mha_status st = mha_select(va, a, 0, 2);
    return st ? st : mha_select(vb, b, 1, 1);
}

static void test_matmul(void) {
    static const char *const plain[] = {"dot", "vecmat", "matvec", "mm", "mm_n1", "mm_m1", "mm_11", "mm_sq",
                                        "bmm", "bcast", "fold", "mat_bmm", "vec_bmm", "bmm_vec"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) check_matmul(plain[i], NULL);
    check_matmul("tt", views_tt);
    check_matmul("btt", views_btt);
    check_matmul("nofold", views_nofold);
    check_matmul("nounit", views_nounit);
    check_matmul("expand", views_expand);
    check_matmul("colvec", views_colvec);

    /* K = 0: every element is an empty sum */
    size_t s30[] = {3, 0}, s04[] = {0, 4};
    mha_tensor a = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    if (mha_empty(&a, MHA_FLOAT32, 2, s30) == MHA_OK && mha_empty(&b, MHA_FLOAT32, 2, s04) == MHA_OK)
        expect("matmul (3,0) @ (0,4) is zeros", mha_matmul(&out, &a, &b), &out, "mm_k0_want", 0, 0);
    mha_release(&a);
    mha_release(&b);
}

static void test_errors(void) {
    mha_tensor f23 = MHA_TENSOR_EMPTY, f43 = MHA_TENSOR_EMPTY, f34 = MHA_TENSOR_EMPTY, f52 = MHA_TENSOR_EMPTY,
               f234 = MHA_TENSOR_EMPTY, f542 = MHA_TENSOR_EMPTY, f3 = MHA_TENSOR_EMPTY, f24 = MHA_TENSOR_EMPTY,
               scalar = MHA_TENSOR_EMPTY, b34 = MHA_TENSOR_EMPTY, f20 = MHA_TENSOR_EMPTY, released = MHA_TENSOR_EMPTY,
               out = MHA_TENSOR_EMPTY;
    size_t s23[] = {2, 3}, s43[] = {4, 3}, s34[] = {3, 4}, s52[] = {5, 2}, s234[] = {2, 3, 4}, s542[] = {5, 4, 2},
           s3[] = {3}, s24[] = {2, 4}, s20[] = {2, 0};
    mha_status st = MHA_OK;
    st |= mha_zeros(&f23, MHA_FLOAT32, 2, s23);
    st |= mha_zeros(&f43, MHA_FLOAT32, 2, s43);
    st |= mha_zeros(&f34, MHA_FLOAT32, 2, s34);
    st |= mha_zeros(&f52, MHA_FLOAT32, 2, s52);
    st |= mha_zeros(&f234, MHA_FLOAT32, 3, s234);
    st |= mha_zeros(&f542, MHA_FLOAT32, 3, s542);
    st |= mha_zeros(&f3, MHA_FLOAT32, 1, s3);
    st |= mha_zeros(&f24, MHA_FLOAT32, 2, s24);
    st |= mha_zeros(&scalar, MHA_FLOAT32, 0, s3);   /* rank 0: the shape is not read */
    st |= mha_zeros(&b34, MHA_BOOL, 2, s34);
    st |= mha_zeros(&f20, MHA_FLOAT32, 2, s20);
    if (st != MHA_OK) {
        check_report(0, "errors setup", "%s", mha_errmsg());
        goto done;
    }

    expect_error("error add broadcast", mha_binary(&out, MHA_ADD, &f23, &f43), &out, MHA_E_SHAPE,
                 "add: shapes (2,3) and (4,3) cannot broadcast: dim -2 has 2 and 4");
    expect_error("error maximum broadcast, rank mismatch", mha_binary(&out, MHA_MAXIMUM, &f234, &f3), &out, MHA_E_SHAPE,
                 "maximum: shapes (2,3,4) and (3) cannot broadcast: dim -1 has 4 and 3");
    expect_error("error ge broadcast", mha_compare(&out, MHA_GE, &f34, &f43), &out, MHA_E_SHAPE,
                 "ge: shapes (3,4) and (4,3) cannot broadcast: dim -2 has 3 and 4");
    expect_error("error broadcast zero-size with 2", mha_binary(&out, MHA_MUL, &f20, &f23), &out, MHA_E_SHAPE,
                 "mul: shapes (2,0) and (2,3) cannot broadcast: dim -1 has 0 and 3");
    expect_error("error matmul inner sizes", mha_matmul(&out, &f34, &f52), &out, MHA_E_SHAPE,
                 "matmul: (3,4) @ (5,2): inner sizes 4 and 5 differ");
    expect_error("error matmul vector inner sizes", mha_matmul(&out, &f3, &f43), &out, MHA_E_SHAPE,
                 "matmul: (3) @ (4,3): inner sizes 3 and 4 differ");
    expect_error("error matmul batch", mha_matmul(&out, &f234, &f542), &out, MHA_E_SHAPE,
                 "matmul: (2,3,4) @ (5,4,2): batch dims cannot broadcast: dim -3 has 2 and 5");
    expect_error("error matmul scalar", mha_matmul(&out, &scalar, &f3), &out, MHA_E_SHAPE,
                 "matmul: () @ (3): both arguments need at least one dim");
    expect_error("error matmul bool", mha_matmul(&out, &b34, &f43), &out, MHA_E_DTYPE,
                 "matmul: (3,4) @ (4,3): argument a is bool");
    expect_error("error where float cond", mha_where(&out, &f23, &f23, &f23), &out, MHA_E_DTYPE,
                 "where: cond (2,3) is float32; it must be a bool tensor");
    expect_error("error where broadcast", mha_where(&out, &b34, &f43, &scalar), &out, MHA_E_SHAPE,
                 "where: shapes cond (3,4), a (4,3) and b () cannot broadcast: dim -2 has 3 and 4");
    expect_error("error masked_fill float mask", mha_masked_fill(&out, &f34, &f34, 0.0f), &out, MHA_E_DTYPE,
                 "masked_fill: mask (3,4) is float32");
    mha_tensor b234 = MHA_TENSOR_EMPTY;
    if (mha_zeros(&b234, MHA_BOOL, 3, s234) == MHA_OK)
        expect_error("error masked_fill mask larger than t", mha_masked_fill(&out, &f34, &b234, 0.0f), &out, MHA_E_SHAPE,
                     "masked_fill: mask (2,3,4) cannot broadcast to the tensor's shape (3,4)");
    mha_release(&b234);
    expect_error("error logical_and on float", mha_logical(&out, MHA_AND, &f34, &b34), &out, MHA_E_DTYPE,
                 "logical_and: argument a is a float32 tensor (3,4); logical ops need bool tensors");
    expect_error("error logical_not on float", mha_logical_not(&out, &f34), &out, MHA_E_DTYPE,
                 "logical_not: argument a is a float32 tensor (3,4)");
    expect_error("error neg of bool", mha_unary(&out, MHA_NEG, &b34), &out, MHA_E_DTYPE,
                 "neg: the tensor (3,4) is bool: negating a bool tensor is not supported (to invert a mask use logical_not)");
    expect_error("error relu of bool", mha_unary(&out, MHA_RELU, &b34), &out, MHA_E_DTYPE,
                 "relu: the tensor (3,4) is bool; relu needs float32");
    expect_error("error sub of bool", mha_binary(&out, MHA_SUB, &f34, &b34), &out, MHA_E_DTYPE,
                 "sub: argument b is a bool tensor (3,4): subtracting bools is not supported");
    expect_error("error number - bool", mha_binary_scalar(&out, MHA_SUB, &b34, 1.0f, true), &out, MHA_E_DTYPE,
                 "sub: argument a is a bool tensor (3,4)");
    expect_error("error add of two bools", mha_binary(&out, MHA_ADD, &b34, &b34), &out, MHA_E_DTYPE,
                 "add: both arguments are bool tensors, (3,4) and (3,4): use logical_and/logical_or");
    expect_error("error sum dim out of range", mha_reduce(&out, MHA_SUM, &f234, 3, false), &out, MHA_E_ARG,
                 "sum: dim 3 is out of range for the 3-dim tensor (2,3,4)");
    expect_error("error max over an empty dim", mha_reduce(&out, MHA_MAX, &f20, 1, false), &out, MHA_E_SHAPE,
                 "max: dim -1 of the tensor (2,0) has size 0");
    expect_error("error argmin of an empty tensor", mha_reduce(&out, MHA_ARGMIN, &f20, MHA_ALL_DIMS, false), &out,
                 MHA_E_SHAPE, "argmin: the tensor (2,0) is empty");
    expect_error("error var dim out of range", mha_var(&out, &f3, 1, false, 1), &out, MHA_E_ARG,
                 "var: dim 1 is out of range for the 1-dim tensor (3)");
    const mha_tensor *cat_bad[] = {&f23, &f34}, *cat_rank[] = {&f23, &f3}, *stack_bad[] = {&f23, &f24},
                     *cat_scalar[] = {&scalar};
    expect_error("error cat sizes", mha_cat(&out, cat_bad, 2, 1), &out, MHA_E_SHAPE,
                 "cat: the 2nd tensor (3,4) and the 1st (2,3) differ in dim -2 (3 and 2); only the joined dim -1 may differ");
    expect_error("error cat ranks", mha_cat(&out, cat_rank, 2, 0), &out, MHA_E_SHAPE,
                 "cat: the 2nd tensor (3) has 1 dims but the 1st (2,3) has 2");
    expect_error("error cat dim", mha_cat(&out, cat_bad, 2, 2), &out, MHA_E_ARG,
                 "cat: dim 2 is out of range for the 2-dim tensors");
    expect_error("error cat of scalars", mha_cat(&out, cat_scalar, 1, 0), &out, MHA_E_SHAPE,
                 "cat: the 1st tensor is a scalar ()");
    expect_error("error cat of nothing", mha_cat(&out, cat_bad, 0, 0), &out, MHA_E_ARG,
                 "cat: expected at least one tensor, got none");
    {   /* two (2^62, 0) tensors would join into a dim of 2^63, which no tensor may have */
        mha_tensor half = MHA_TENSOR_EMPTY;
        size_t half_shape[2] = {(size_t)1 << 62, 0};
        mha_zeros(&half, MHA_FLOAT32, 2, half_shape);
        const mha_tensor *halves[] = {&half, &half, &half};
        expect_error("error cat past 2^63-1", mha_cat(&out, halves, 2, 0), &out, MHA_E_SHAPE,
                     "cat: joining the 2nd tensor (4611686018427387904,0) makes dim -2 longer than 2^63-1 "
                     "(4611686018427387904 + 4611686018427387904), the largest size a dim may have");
        expect_error("error cat of three halves", mha_cat(&out, halves, 3, 0), &out,
                     MHA_E_SHAPE, "joining the 2nd tensor");
        mha_status one_st = mha_cat(&out, halves, 1, 0);
        check_report(one_st == MHA_OK && out.shape[0] == (size_t)1 << 62, "cat of one (2^62,0) is made", "%s", mha_errmsg());
        mha_release(&out);
        mha_release(&half);
    }
    expect_error("error stack shapes", mha_stack(&out, stack_bad, 2, 0), &out, MHA_E_SHAPE,
                 "stack: the 2nd tensor (2,4) and the 1st (2,3) differ; stack needs equal shapes");
    expect_error("error stack dim", mha_stack(&out, stack_bad, 2, 3), &out, MHA_E_ARG,
                 "stack: dim 3 is out of range for stacking 2-dim tensors (0 to 2)");
    expect_error("error released input", mha_binary(&out, MHA_DIV, &f23, &released), &out, MHA_E_ARG,
                 "div: argument b is an empty (released) tensor");
    /* a filled output is refused (it could alias an input); it is left as it was */
    st = mha_unary(&f23, MHA_EXP, &f23);
    CHECK("error output not empty", st == MHA_E_ARG && strstr(mha_errmsg(), "exp: the output tensor must be empty") &&
          f23.storage != NULL, "status %d: %s", (int)st, mha_errmsg());
done:
    mha_release(&f23); mha_release(&f43); mha_release(&f34); mha_release(&f52); mha_release(&f234);
    mha_release(&f542); mha_release(&f3); mha_release(&f24); mha_release(&scalar); mha_release(&b34);
    mha_release(&f20);
}

/* Shapes whose byte count overflows size_t, made from expanded (stride 0, storage-free) views: the
 * failure is MHA_E_NOMEM naming the op, the output stays empty and nothing leaks. */
static void test_too_large(void) {
    size_t one[] = {1, 1}, tall[] = {(size_t)1 << 31, 1}, wide[] = {1, (size_t)1 << 31};
    mha_tensor base = MHA_TENSOR_EMPTY, col = MHA_TENSOR_EMPTY, row = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    if (mha_zeros(&base, MHA_FLOAT32, 2, one) != MHA_OK || mha_expand(&col, &base, 2, tall) != MHA_OK ||
        mha_expand(&row, &base, 2, wide) != MHA_OK) {
        check_report(0, "too large setup", "%s", mha_errmsg());
    } else {
        size_t live = mha_live_bytes();
        expect_error("too large matmul (2^31,1) @ (1,2^31)", mha_matmul(&out, &col, &row), &out, MHA_E_NOMEM,
                     "matmul: shape (2147483648,2147483648) has too many elements");
        expect_error("too large add (2^31,1) + (1,2^31)", mha_binary(&out, MHA_ADD, &col, &row), &out, MHA_E_NOMEM,
                     "add: shape (2147483648,2147483648) has too many elements");
        expect_error("error where with a released cond", mha_where(&out, &(mha_tensor){0}, &col, &row), &out, MHA_E_ARG,
                     "where: argument cond is an empty (released) tensor");
        CHECK("too large leaks nothing", mha_live_bytes() == live, "live bytes %zu, were %zu", mha_live_bytes(), live);
    }
    mha_release(&base); mha_release(&col); mha_release(&row);
}

/* A pending interrupt stops every long loop; the output is freed and nothing leaks. */
static void test_interrupt(void) {
    size_t shape[] = {300, 1000}, shape_t[] = {1000, 300};
    mha_tensor x = MHA_TENSOR_EMPTY, y = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY;
    if (mha_zeros(&x, MHA_FLOAT32, 2, shape) != MHA_OK || mha_zeros(&y, MHA_FLOAT32, 2, shape_t) != MHA_OK) {
        check_report(0, "interrupt setup", "%s", mha_errmsg());
        mha_release(&x);
        return;
    }
    size_t live = mha_live_bytes();
    const mha_tensor *pieces[] = {&x, &x};
    mha_interrupt();
    expect_error("interrupt add", mha_binary(&out, MHA_ADD, &x, &x), &out, MHA_E_INTERRUPTED, "add: interrupted");
    expect_error("interrupt exp", mha_unary(&out, MHA_EXP, &x), &out, MHA_E_INTERRUPTED, "exp: interrupted");
    expect_error("interrupt sum", mha_reduce(&out, MHA_SUM, &x, 0, false), &out, MHA_E_INTERRUPTED, "sum: interrupted");
    expect_error("interrupt var", mha_var(&out, &x, MHA_ALL_DIMS, false, 1), &out, MHA_E_INTERRUPTED, "var: interrupted");
    expect_error("interrupt cat", mha_cat(&out, pieces, 2, 1), &out, MHA_E_INTERRUPTED, "cat: interrupted");
    expect_error("interrupt matmul", mha_matmul(&out, &x, &y), &out, MHA_E_INTERRUPTED, "matmul: interrupted");
    mha_interrupt_clear();
    CHECK("interrupt frees what it allocated", mha_live_bytes() == live, "live bytes %zu, were %zu", mha_live_bytes(), live);
    mha_status st = mha_binary(&out, MHA_ADD, &x, &x);
    CHECK("add runs again after interrupt_clear", st == MHA_OK, "%s", mha_errmsg());
    mha_release(&out);
    mha_release(&x);
    mha_release(&y);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);   /* keep every line if a sanitizer stops the run */
    size_t live = mha_live_bytes();
    test_binary();
    test_noncontiguous();
    test_compare_logic();
    test_unary();
    test_where();
    test_reductions();
    test_join();
    test_matmul();
    test_errors();
    test_too_large();
    test_interrupt();
    CHECK("no tensor memory leaked", mha_live_bytes() == live, "live bytes %zu, were %zu", mha_live_bytes(), live);
    CHECK_DONE();
}
