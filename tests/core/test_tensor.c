/* tests/core/test_tensor.c - the tensor's life cycle and views: storage sharing, strides against
 * PyTorch's (tests/fixtures/views.txt), the explained view failure, errors and memory accounting. */
#include "check.h"
#include "tensor/tensor.h"

#include <stdlib.h>

/* Parse "2,3,4" (or "-") into xs; returns the count. */
static size_t parse_list(long *xs, const char *s) {
    size_t n = 0;
    if (*s == '-') return 0;
    while (*s) {
        char *end;
        xs[n++] = strtol(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (*end != ',') break;
    }
    return n;
}

/* Build the view named by kind ("contig", "t01", "n1", "perm") of an arange of shape. */
static mha_status make_source(mha_tensor *out, const size_t *shape, size_t ndim, const char *kind) {
    mha_tensor base = MHA_TENSOR_EMPTY;
    mha_status st = mha_empty(&base, MHA_FLOAT32, ndim, shape);
    if (st != MHA_OK) return st;
    for (size_t i = 0, n = mha_numel(&base); i < n; i++) mha_f32(&base)[i] = (float)i;
    if (kind[0] == 't') st = mha_transpose(out, &base, (size_t)(kind[1] - '0'), (size_t)(kind[2] - '0'));
    else if (kind[0] == 'n') st = mha_narrow(out, &base, (size_t)(kind[1] - '0'), 1, shape[kind[1] - '0'] - 1);
    else if (kind[0] == 'p') {
        size_t perm[MHA_MAX_DIMS];
        for (size_t d = 0; d < ndim; d++) perm[d] = ndim - 1 - d;
        st = mha_permute(out, &base, perm);
    } else st = mha_share(out, &base);
    mha_release(&base);
    return st;
}

static void test_views_against_torch(void) {
    FILE *f = fopen("tests/fixtures/views.txt", "r");
    if (!f) { CHECK("views fixture", 0, "cannot open tests/fixtures/views.txt (run from the top directory)"); return; }
    char line[512];
    int cases = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char src_s[64], kind[16], tgt_s[64], base_s[64], res[16], res_strides[64] = "";
        if (sscanf(line, "%63s %15s %63s | %63s | %15s %63s", src_s, kind, tgt_s, base_s, res, res_strides) < 5) continue;
        long src[MHA_MAX_DIMS], tgt[MHA_MAX_DIMS], bst[MHA_MAX_DIMS], want[MHA_MAX_DIMS];
        size_t sn = parse_list(src, src_s), tn = parse_list(tgt, tgt_s), bn = parse_list(bst, base_s);
        size_t shape[MHA_MAX_DIMS];
        ptrdiff_t target[MHA_MAX_DIMS];
        for (size_t d = 0; d < sn; d++) shape[d] = (size_t)src[d];
        for (size_t d = 0; d < tn; d++) target[d] = tgt[d];
        mha_tensor s = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY;
        if (make_source(&s, shape, sn, kind) != MHA_OK) { bad++; continue; }
        /* the source's own strides must be torch's too */
        for (size_t d = 0; d < bn; d++)
            if (s.stride[d] != bst[d]) bad++;
        mha_status st = mha_view(&v, &s, tn, target);
        cases++;
        if (strcmp(res, "ok") == 0) {
            size_t wn = parse_list(want, res_strides);
            int ok = st == MHA_OK && v.ndim == tn;
            for (size_t d = 0; ok && d < wn; d++) ok = v.stride[d] == want[d] || v.shape[d] == 1;
            if (!ok) {
                bad++;
                printf("# view %s %s -> %s: want strides %s, got status %d %s\n", src_s, kind, tgt_s, res_strides, st,
                       st ? mha_errmsg() : "");
            }
        } else if (st != MHA_E_SHAPE) {
            bad++;
            printf("# view %s %s -> %s should fail as in torch\n", src_s, kind, tgt_s);
        }
        mha_release(&v);
        mha_release(&s);
    }
    fclose(f);
    CHECK("view strides and failures agree with torch", cases > 60 && bad == 0, "%d of %d cases differ", bad, cases);
}

static void test_sharing(void) {
    size_t shape[2] = {2, 3};
    mha_tensor a = MHA_TENSOR_EMPTY, t = MHA_TENSOR_EMPTY, r = MHA_TENSOR_EMPTY;
    mha_zeros(&a, MHA_FLOAT32, 2, shape);
    mha_transpose(&t, &a, 0, 1);
    CHECK("transpose shares storage", t.storage == a.storage && a.storage->refcount == 2, "refcount %zu",
          a.storage->refcount);
    size_t idx[2] = {2, 1};
    mha_set(&t, idx, 7.0);                       /* t[2][1] is a[1][2] */
    double got = 0;
    size_t aidx[2] = {1, 2};
    mha_get(&got, &a, aidx);
    CHECK("a write through a view is seen by the base", got == 7.0, "a[1][2] = %g", got);
    mha_release(&a);
    CHECK("a view outlives its base", t.storage && t.storage->refcount == 1 && mha_f32(&t)[5] == 7.0f, "storage lost");
    CHECK("transpose is not contiguous", !mha_is_contiguous(&t), "claims contiguous");
    ptrdiff_t flat[1] = {-1};
    mha_status st = mha_view(&r, &t, 1, flat);
    CHECK("view of a transposed tensor fails", st == MHA_E_SHAPE, "status %d", st);
    CHECK("the failure explains and points to contiguous()/reshape()",
          strstr(mha_errmsg(), "view: cannot view a tensor of shape (3,2) and strides (1,3) as (6)") &&
              strstr(mha_errmsg(), "contiguous()") && strstr(mha_errmsg(), "reshape()"),
          "message: %s", mha_errmsg());
    st = mha_reshape(&r, &t, 1, flat);
    CHECK("reshape copies when it must", st == MHA_OK && r.storage != t.storage && r.shape[0] == 6 &&
                                             mha_f32(&r)[4] == 0.0f && mha_f32(&r)[5] == 7.0f,
          "status %d", st);
    mha_tensor c = MHA_TENSOR_EMPTY, c2 = MHA_TENSOR_EMPTY;
    mha_contiguous(&c, &t);
    mha_contiguous(&c2, &r);
    CHECK("contiguous copies a transposed view, shares a contiguous one", c.storage != t.storage && c2.storage == r.storage,
          "sharing wrong");
    mha_release(&c); mha_release(&c2); mha_release(&r); mha_release(&t);
    CHECK("everything released returns every byte", mha_live_bytes() == 0, "%zu bytes still live", mha_live_bytes());
}

static void test_narrow_select_expand(void) {
    size_t shape[3] = {2, 3, 4};
    mha_tensor a = MHA_TENSOR_EMPTY, n = MHA_TENSOR_EMPTY, s = MHA_TENSOR_EMPTY, e = MHA_TENSOR_EMPTY;
    mha_empty(&a, MHA_FLOAT32, 3, shape);
    for (size_t i = 0; i < 24; i++) mha_f32(&a)[i] = (float)i;
    mha_narrow(&n, &a, 2, 1, 2);                 /* a[:, :, 1:3] */
    CHECK("narrow moves the offset", n.offset == 1 && n.shape[2] == 2 && n.stride[1] == 4, "offset %zu", n.offset);
    mha_select(&s, &n, 1, 2);                    /* a[:, 2, 1:3] */
    double v = 0;
    size_t idx[2] = {1, 1};
    mha_get(&v, &s, idx);
    CHECK("select of a narrow reads the right element", v == 22.0 && s.ndim == 2 && s.offset == 9, "got %g offset %zu",
          v, s.offset);
    size_t row_shape[1] = {4}, big[3] = {5, 3, 4};
    mha_tensor row = MHA_TENSOR_EMPTY;
    mha_select(&row, &a, 0, 1);
    mha_tensor row1 = MHA_TENSOR_EMPTY;
    mha_select(&row1, &row, 0, 0);               /* a[1,0,:] = 12..15 */
    mha_status st = mha_expand(&e, &row1, 3, big);
    CHECK("expand gives stride 0 on new and size-1 dims", st == MHA_OK && e.stride[0] == 0 && e.stride[1] == 0 &&
                                                               e.stride[2] == 1 && row1.shape[0] == row_shape[0],
          "status %d", st);
    mha_tensor bad = MHA_TENSOR_EMPTY;
    size_t wrong[2] = {3, 5};
    st = mha_expand(&bad, &row1, 2, wrong);
    CHECK("expand refuses a size that is neither equal nor 1",
          st == MHA_E_SHAPE && strstr(mha_errmsg(), "expand: cannot expand (4) to (3,5): dim -1 has size 4, not 1 or 5"), "message: %s", mha_errmsg());
    size_t huge[3] = {(size_t)1 << 62, 4, 4};
    st = mha_expand(&bad, &row1, 3, huge);
    CHECK("expand refuses a shape whose element count overflows (it would wrap to 0)",
          st == MHA_E_SHAPE && bad.storage == NULL && strstr(mha_errmsg(), "expand: shape (4611686018427387904,4,4) has too many elements"),
          "status %d: %s", st, mha_errmsg());
    st = mha_narrow(&bad, &a, 1, 2, 2);
    CHECK("narrow past the end is an error naming the sizes",
          st == MHA_E_ARG && strstr(mha_errmsg(), "start 2 + length 2 exceeds size 3 of dim 1 (tensor (2,3,4))"),
          "message: %s", mha_errmsg());
    CHECK("a failed call leaves its output empty", bad.storage == NULL, "output filled");
    mha_tensor u = MHA_TENSOR_EMPTY, q = MHA_TENSOR_EMPTY;
    mha_unsqueeze(&u, &a, 1);
    CHECK("unsqueeze inserts a size-1 dim with torch's stride", u.ndim == 4 && u.shape[1] == 1 && u.stride[1] == 12,
          "stride %td", u.stride[1]);
    mha_squeeze(&q, &u, MHA_ALL_DIMS);
    CHECK("squeeze removes it again", q.ndim == 3 && mha_same_shape(&q, &a), "ndim %zu", q.ndim);
    mha_tensor pieces[4];
    size_t np = 0;
    memset(pieces, 0, sizeof pieces);
    st = mha_chunk(pieces, 4, &np, &a, 3, 2);    /* torch.chunk(4, 3) -> sizes 2, 2 */
    CHECK("chunk follows torch.chunk", st == MHA_OK && np == 2 && pieces[1].shape[2] == 2 && pieces[1].offset == 2,
          "n %zu", np);
    for (size_t i = 0; i < np; i++) mha_release(&pieces[i]);
    st = mha_split(pieces, 4, &np, &a, 1, 1);
    CHECK("split into size-1 pieces", st == MHA_OK && np == 3 && pieces[2].offset == 8, "n %zu", np);
    for (size_t i = 0; i < np; i++) mha_release(&pieces[i]);
    mha_release(&u); mha_release(&q); mha_release(&row); mha_release(&row1); mha_release(&e);
    mha_release(&s); mha_release(&n); mha_release(&a);
}

static void test_copy_into_and_dtype(void) {
    size_t shape[2] = {2, 2};
    mha_tensor a = MHA_TENSOR_EMPTY, t = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY, f = MHA_TENSOR_EMPTY;
    mha_empty(&a, MHA_FLOAT32, 2, shape);
    float init[4] = {1, 2, 3, 4};
    memcpy(mha_f32(&a), init, sizeof init);
    mha_transpose(&t, &a, 0, 1);
    mha_status st = mha_copy_into(&a, &t);       /* a = a.T, overlapping */
    float *p = mha_f32(&a);
    CHECK("copy_into reads an overlapping source before writing", st == MHA_OK && p[0] == 1 && p[1] == 3 && p[2] == 2 &&
                                                                        p[3] == 4,
          "got %g %g %g %g", p[0], p[1], p[2], p[3]);
    mha_to_dtype(&b, &a, MHA_BOOL);
    mha_bool(&b)[0] = false;
    mha_to_dtype(&f, &b, MHA_FLOAT32);
    CHECK("bool <-> float conversion gives 1/0", mha_f32(&f)[0] == 0 && mha_f32(&f)[3] == 1, "conversion wrong");
    st = mha_copy_into(&a, &b);
    CHECK("copy_into refuses mixed dtypes", st == MHA_E_DTYPE && strstr(mha_errmsg(), "float32") &&
                                                strstr(mha_errmsg(), "bool"),
          "message: %s", mha_errmsg());
    size_t idx[2] = {2, 0};
    double v;
    st = mha_get(&v, &a, idx);
    CHECK("get out of range names index, dim and shape",
          st == MHA_E_ARG && strstr(mha_errmsg(), "get: index 2 out of range for dim 0 of size 2 (tensor (2,2))"),
          "message: %s", mha_errmsg());
    mha_release(&a); mha_release(&t); mha_release(&b); mha_release(&f);
}

static void test_limits(void) {
    size_t huge[3] = {(size_t)1 << 40, (size_t)1 << 30, 16};
    mha_tensor t = MHA_TENSOR_EMPTY;
    mha_status st = mha_empty(&t, MHA_FLOAT32, 3, huge);
    CHECK("an element count that overflows is an error, not a wrap", st == MHA_E_NOMEM && t.storage == NULL &&
                                                                          strstr(mha_errmsg(), "too many elements"),
          "status %d: %s", st, mha_errmsg());
    size_t big[1] = {(size_t)1 << 60};
    st = mha_empty(&t, MHA_FLOAT32, 1, big);
    CHECK("an allocation that fails is MHA_E_NOMEM", st == MHA_E_NOMEM && t.storage == NULL, "status %d", st);
    size_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    st = mha_empty(&t, MHA_FLOAT32, 9, nine);
    CHECK("more than MHA_MAX_DIMS dims is refused", st == MHA_E_ARG, "status %d", st);
    mha_tensor a = MHA_TENSOR_EMPTY;
    st = mha_full(&a, 0, NULL, 2.5f);
    CHECK("a scalar may be made with a NULL shape", st == MHA_OK && a.ndim == 0 && mha_numel(&a) == 1 &&
                                                        mha_f32(&a)[0] == 2.5f, "status %d", st);
    mha_release(&a);
    size_t zero_mid[3] = {2, 0, 3};
    mha_zeros(&a, MHA_FLOAT32, 3, zero_mid);
    CHECK("a tensor with a size-0 dim is contiguous (as torch)", mha_is_contiguous(&a), "claims not contiguous");
    mha_release(&a);
    st = mha_arange(&a, 0, 1, 0);
    CHECK("arange with step 0 is refused", st == MHA_E_ARG && strstr(mha_errmsg(), "arange: step must not be 0"), "%s", mha_errmsg());
    st = mha_arange(&a, 0, NAN, 1);
    CHECK("arange names the argument that is NaN", st == MHA_E_ARG && strstr(mha_errmsg(), "arange: stop is NaN"),
          "%s", mha_errmsg());
    st = mha_arange(&a, 0, INFINITY, 1);
    CHECK("arange towards infinity is refused", st == MHA_E_ARG && strstr(mha_errmsg(), "would never end"), "%s",
          mha_errmsg());
    st = mha_arange(&a, 1, 2, 0.25);
    CHECK("arange counts like numpy", st == MHA_OK && a.shape[0] == 4 && mha_f32(&a)[3] == 1.75f, "n %zu", a.shape[0]);
    mha_release(&a);
    mha_reset_peak();
    size_t s2[2] = {100, 100};
    mha_zeros(&a, MHA_FLOAT32, 2, s2);
    CHECK("memory accounting sees a 40000-byte storage", mha_peak_bytes() >= 40000 && mha_live_bytes() >= 40000,
          "peak %zu", mha_peak_bytes());
    mha_release(&a);
    mha_interrupt();
    CHECK("interrupt flag set", mha_interrupted(), "not set");
    mha_interrupt_clear();
    CHECK("interrupt flag cleared", !mha_interrupted(), "still set");
}

/* Shapes with no element whose other sizes multiply past 2^63: their strides cannot be held in a
 * ptrdiff_t, so they are refused with a clear error instead of wrapping (undefined behaviour). A size 0
 * after huge sizes holds nothing and is fine. */
static void test_stride_overflow(void) {
    const size_t G = (size_t)1 << 62;
    mha_tensor t = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY;
    size_t wide[3] = {0, G, 4};
    mha_status st = mha_zeros(&t, MHA_FLOAT32, 3, wide);
    CHECK("zeros (0,2^62,4): strides overflow, refused", st == MHA_E_ARG && t.storage == NULL &&
          strcmp(mha_errmsg(), "zeros: shape (0,4611686018427387904,4): its strides overflow (sizes multiply past 2^63)") == 0,
          "status %d: %s", st, mha_errmsg());
    size_t npy_like[3] = {0, G, G};
    st = mha_empty(&t, MHA_FLOAT32, 3, npy_like);
    CHECK("empty (0,2^62,2^62) refused", st == MHA_E_ARG && strstr(mha_errmsg(), "its strides overflow"), "status %d: %s",
          st, mha_errmsg());
    size_t fits[3] = {0, G / 4, 2};   /* stride 2^61 * 2 = 2^62: representable */
    st = mha_zeros(&t, MHA_FLOAT32, 3, fits);
    CHECK("zeros (0,2^60,2) made", st == MHA_OK && t.stride[0] == (ptrdiff_t)(G / 2) && t.stride[1] == 2 && t.stride[2] == 1,
          "status %d: %s", st, mha_errmsg());
    mha_release(&t);
    size_t zero_last[3] = {G, 4, 0};
    st = mha_zeros(&t, MHA_FLOAT32, 3, zero_last);
    CHECK("zeros (2^62,4,0) holds nothing and is made", st == MHA_OK && mha_numel(&t) == 0 && t.stride[0] == 4,
          "status %d: %s", st, mha_errmsg());
    st = mha_unsqueeze(&v, &t, 0);
    CHECK("its unsqueeze(0) does not overflow a stride", st == MHA_OK && v.shape[0] == 1 && v.stride[0] == 1,
          "status %d stride %td", st, v.stride[0]);
    mha_release(&v);
    mha_release(&t);
    size_t one[1] = {0};
    mha_zeros(&t, MHA_FLOAT32, 1, one);
    ptrdiff_t view_shape[3] = {0, (ptrdiff_t)G, 4};
    st = mha_view(&v, &t, 3, view_shape);
    CHECK("view (0) as (0,2^62,4) refused", st == MHA_E_ARG && v.storage == NULL &&
          strcmp(mha_errmsg(), "view: shape (0,4611686018427387904,4): its strides overflow (sizes multiply past 2^63)") == 0,
          "status %d: %s", st, mha_errmsg());
    st = mha_reshape(&v, &t, 3, view_shape);
    CHECK("reshape likewise", st == MHA_E_ARG && strstr(mha_errmsg(), "reshape: shape (0,4611686018427387904,4): its strides overflow"),
          "status %d: %s", st, mha_errmsg());
    ptrdiff_t ok_shape[3] = {(ptrdiff_t)G, 0, 2};
    st = mha_view(&v, &t, 3, ok_shape);
    CHECK("view (0) as (2^62,0,2) made", st == MHA_OK && v.stride[0] == 2 && v.stride[1] == 2 && v.stride[2] == 1,
          "status %d: %s", st, mha_errmsg());
    mha_release(&v);
    mha_release(&t);

    /* a dim longer than 2^63-1 (a Lua integer, a stride) is refused even when the tensor holds nothing */
    size_t too_long[2] = {(size_t)1 << 63, 0};
    st = mha_zeros(&t, MHA_FLOAT32, 2, too_long);
    CHECK("zeros (2^63,0) refused", st == MHA_E_ARG && t.storage == NULL && strcmp(mha_errmsg(),
          "zeros: shape (9223372036854775808,0): size 9223372036854775808 is more than 2^63-1, the largest size a "
          "dim may have") == 0, "status %d: %s", st, mha_errmsg());
    size_t longest[2] = {MHA_MAX_SIZE, 0};
    st = mha_zeros(&t, MHA_FLOAT32, 2, longest);
    CHECK("zeros (2^63-1,0) made", st == MHA_OK && t.shape[0] == (size_t)PTRDIFF_MAX, "status %d: %s", st, mha_errmsg());
    size_t expanded[3] = {SIZE_MAX, (size_t)PTRDIFF_MAX, 0};
    st = mha_expand(&v, &t, 3, expanded);
    CHECK("expand to a size past 2^63-1 refused", st == MHA_E_ARG && v.storage == NULL && strstr(mha_errmsg(),
          "expand: cannot expand (9223372036854775807,0) to (18446744073709551615,9223372036854775807,0): size "
          "18446744073709551615 is more than 2^63-1"), "status %d: %s", st, mha_errmsg());
    mha_release(&t);
}

int main(void) {
    test_stride_overflow();
    test_views_against_torch();
    test_sharing();
    test_narrow_select_expand();
    test_copy_into_and_dtype();
    test_limits();
    CHECK("no bytes leaked by the whole test", mha_live_bytes() == 0, "%zu bytes live", mha_live_bytes());
    CHECK_DONE();
}
