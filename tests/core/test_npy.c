/* tests/core/test_npy.c - .npy files: numpy-made files of every dtype, byte order, version and order load
 * to the values numpy gives (tests/fixtures/npy/manifest.txt), saves are byte-identical to np.save, round
 * trips are exact, every malformed input is refused with a message saying what is wrong, and thousands
 * of mutated files never crash the parser (run it under ASan: `make asan`). */

#include "check.h"
#include "manifest.h"
#include "tensor/tensor.h"
#include "io/npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define FIXTURES "tests/fixtures/npy/"

static char tmpdir[64];

/* ---- small helpers ---- */

/* The whole file in a malloc'd buffer of exactly its size (so ASan sees any over-read); NULL if absent. */
static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return NULL;
    unsigned char *exact = malloc(len ? len : 1);
    if (exact) memcpy(exact, buf, len);
    free(buf);
    *n = len;
    return exact;
}

/* Bit-exact equality of floats (NaN equals NaN, -0 differs from +0), which a file round trip must keep. */
static int same_float(float got, double want) {
    float w = (float)want;
    if (isnan(w)) return isnan(got);
    return got == w && signbit(got) == signbit(w);
}

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* ---- the manifest: what numpy says each load_/save_ file holds ---- */

static entry entries[128];
static size_t n_entries;

static int read_manifest(void) {
    n_entries = read_manifest_file(FIXTURES "manifest.txt", entries, sizeof entries / sizeof entries[0]);
    return n_entries > 0;
}

/* A tensor holding an entry's values, built without the loader. */
static mha_status entry_tensor(mha_tensor *out, const entry *e) {
    mha_status st = mha_empty(out, e->is_bool ? MHA_BOOL : MHA_FLOAT32, e->ndim, e->shape);
    if (st != MHA_OK) return st;
    for (size_t i = 0; i < e->n; i++) {
        if (e->is_bool) mha_bool(out)[i] = e->values[i] != 0;
        else mha_f32(out)[i] = (float)e->values[i];
    }
    return MHA_OK;
}

/* Whether t has e's dtype, shape and exact values; why says what differs. */
static int matches(const mha_tensor *t, const entry *e, char *why, size_t n) {
    char got[160];
    if ((t->dtype == MHA_BOOL) != e->is_bool) { snprintf(why, n, "dtype %d, want %s", t->dtype, e->is_bool ? "bool" : "f32"); return 0; }
    bool shape_ok = t->ndim == e->ndim;
    for (size_t d = 0; shape_ok && d < e->ndim; d++) shape_ok = t->shape[d] == e->shape[d];
    if (!shape_ok) { snprintf(why, n, "shape %s, want ndim %zu", mha_shape_str(got, sizeof got, t), e->ndim); return 0; }
    if (e->n > 0 && !mha_is_contiguous(t)) { snprintf(why, n, "not contiguous"); return 0; }
    for (size_t i = 0; i < e->n; i++) {
        double v = e->is_bool ? mha_bool(t)[i] : mha_f32(t)[i];
        if (e->is_bool ? v != e->values[i] : !same_float((float)v, e->values[i])) {
            snprintf(why, n, "element %zu: got %.9g, want %.9g", i, v, e->values[i]);
            return 0;
        }
    }
    return 1;
}

/* Whether two files have the same bytes; why tells the first difference. */
static int same_file(const char *a, const char *b, char *why, size_t n) {
    size_t na = 0, nb = 0;
    unsigned char *x = read_file(a, &na), *y = read_file(b, &nb);
    int ok = x && y;
    if (!ok) snprintf(why, n, "cannot read %s", x ? b : a);
    for (size_t i = 0; ok && i < na && i < nb; i++)
        if (x[i] != y[i]) { snprintf(why, n, "byte %zu: 0x%02x, numpy 0x%02x", i, x[i], y[i]); ok = 0; }
    if (ok && na != nb) { snprintf(why, n, "%zu bytes, numpy %zu", na, nb); ok = 0; }
    free(x);
    free(y);
    return ok;
}

/* ---- 1. numpy's files load to numpy's values ---- */

static void test_loads(void) {
    for (size_t k = 0; k < n_entries; k++) {
        const entry *e = &entries[k];
        char path[160], name[160], why[256] = "";
        snprintf(path, sizeof path, FIXTURES "%.95s", e->name);
        snprintf(name, sizeof name, "load %.95s", e->name);
        mha_tensor t = MHA_TENSOR_EMPTY;
        mha_status st = mha_npy_load(&t, path);
        if (st != MHA_OK) CHECK(name, 0, "%s", mha_errmsg());
        else CHECK(name, matches(&t, e, why, sizeof why), "%s", why);
        mha_release(&t);
    }
    /* the in-memory parser gives the same as the file loader */
    size_t n;
    unsigned char *bytes = read_file(FIXTURES "load_f4_fortran_3d.npy", &n);
    mha_tensor t = MHA_TENSOR_EMPTY;
    char why[256] = "";
    const entry *e = NULL;
    for (size_t k = 0; k < n_entries; k++) if (strcmp(entries[k].name, "load_f4_fortran_3d.npy") == 0) e = &entries[k];
    int ok = bytes && e && mha_npy_parse(&t, bytes, n) == MHA_OK && matches(&t, e, why, sizeof why);
    CHECK("npy_parse of a file's bytes gives what load gives", ok, "%s %s", why, mha_errmsg());
    mha_release(&t);
    free(bytes);
}

/* ---- 2. saves are byte-identical to np.save ---- */

static void test_saves(void) {
    char out[160], path[160], name[200], why[256];
    snprintf(out, sizeof out, "%s/out.npy", tmpdir);
    const entry *a34 = NULL;
    for (size_t k = 0; k < n_entries; k++) {
        const entry *e = &entries[k];
        if (strncmp(e->name, "save_", 5) != 0) continue;
        if (strcmp(e->name, "save_3x4_f4.npy") == 0) a34 = e;
        snprintf(path, sizeof path, FIXTURES "%.95s", e->name);
        /* from values (no loader involved) */
        mha_tensor t = MHA_TENSOR_EMPTY;
        snprintf(name, sizeof name, "save %s is byte-identical to np.save", e->name);
        strcpy(why, "");
        if (entry_tensor(&t, e) != MHA_OK || mha_npy_save(out, &t) != MHA_OK) CHECK(name, 0, "%s", mha_errmsg());
        else CHECK(name, same_file(out, path, why, sizeof why), "%s", why);
        mha_release(&t);
        /* load then save gives the file back */
        snprintf(name, sizeof name, "load+save %s gives the same bytes", e->name);
        strcpy(why, "");
        if (mha_npy_load(&t, path) != MHA_OK || mha_npy_save(out, &t) != MHA_OK) CHECK(name, 0, "%s", mha_errmsg());
        else CHECK(name, same_file(out, path, why, sizeof why), "%s", why);
        mha_release(&t);
    }
    /* a transposed (non-contiguous) view is saved in C order, as np.save(np.ascontiguousarray(a.T)) */
    mha_tensor a = MHA_TENSOR_EMPTY, at = MHA_TENSOR_EMPTY;
    strcpy(why, "");
    int ok = a34 && entry_tensor(&a, a34) == MHA_OK && mha_transpose(&at, &a, 0, 1) == MHA_OK &&
             !mha_is_contiguous(&at) && mha_npy_save(out, &at) == MHA_OK &&
             same_file(out, FIXTURES "save_4x3_transposed_f4.npy", why, sizeof why);
    CHECK("save of a transposed view equals np.save(ascontiguousarray(a.T))", ok, "%s %s", why, mha_errmsg());
    mha_release(&a);
    mha_release(&at);
    unlink(out);
}

/* ---- 3. round trips ---- */

static void test_round_trips(void) {
    char out[160];
    snprintf(out, sizeof out, "%s/trip.npy", tmpdir);
    const size_t shapes[][4] = {{1, 1, 1, 1}, {7, 1, 1, 1}, {3, 5, 1, 1}, {2, 3, 4, 5}};
    const size_t ndims[] = {0, 1, 2, 4};
    for (size_t s = 0; s < 4; s++) {
        mha_tensor t = MHA_TENSOR_EMPTY, back = MHA_TENSOR_EMPTY, mask = MHA_TENSOR_EMPTY, mback = MHA_TENSOR_EMPTY;
        mha_seed(100 + s);
        int ok = mha_randn(&t, ndims[s], shapes[s]) == MHA_OK;
        /* odd bit patterns too: a NaN with a payload, -0, the smallest subnormal */
        const uint32_t odd[3] = {0x7fc01234u, 0x80000000u, 0x00000001u};
        for (size_t i = 0; ok && i < 3 && i < mha_numel(&t); i++) memcpy(&mha_f32(&t)[i], &odd[i], 4);
        ok = ok && mha_npy_save(out, &t) == MHA_OK && mha_npy_load(&back, out) == MHA_OK && mha_same_shape(&t, &back) &&
             back.dtype == MHA_FLOAT32 && memcmp(mha_f32(&t), mha_f32(&back), mha_numel(&t) * 4) == 0;
        char name[80];
        snprintf(name, sizeof name, "round trip float32 rank %zu keeps every bit", ndims[s]);
        CHECK(name, ok, "%s", mha_errmsg());
        ok = mha_empty(&mask, MHA_BOOL, ndims[s], shapes[s]) == MHA_OK;
        for (size_t i = 0; ok && i < mha_numel(&mask); i++) mha_bool(&mask)[i] = (i * 7 + s) % 3 == 0;
        ok = ok && mha_npy_save(out, &mask) == MHA_OK && mha_npy_load(&mback, out) == MHA_OK &&
             mback.dtype == MHA_BOOL && mha_same_shape(&mask, &mback) &&
             memcmp(mha_bool(&mask), mha_bool(&mback), mha_numel(&mask)) == 0;
        snprintf(name, sizeof name, "round trip bool rank %zu", ndims[s]);
        CHECK(name, ok, "%s", mha_errmsg());
        mha_release(&t); mha_release(&back); mha_release(&mask); mha_release(&mback);
    }
    unlink(out);
}

/* ---- 4. malformed input, each refused with a message that says what is wrong ---- */

/* A file in memory: magic, version, header length (2 or 4 bytes), header text, data. */
static size_t make_npy(unsigned char *buf, size_t cap, int major, const char *header, const void *data, size_t ndata) {
    size_t hl = strlen(header), lenb = major == 1 ? 2 : 4, n = 8 + lenb + hl + ndata;
    if (n > cap) return 0;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < lenb; i++) buf[8 + i] = (unsigned char)(hl >> (8 * i));
    memcpy(buf + 8 + lenb, header, hl);
    if (ndata) memcpy(buf + 8 + lenb + hl, data, ndata);
    return n;
}

/* Parse bytes (copied into an exact-size buffer); check it fails with status and a message holding want. */
static void expect_refused(const char *name, const void *bytes, size_t n, mha_status status, const char *want) {
    unsigned char *exact = malloc(n ? n : 1);
    if (n) memcpy(exact, bytes, n);
    mha_tensor t = MHA_TENSOR_EMPTY;
    mha_status st = mha_npy_parse(&t, exact, n);
    CHECK(name, st == status && t.storage == NULL && contains(mha_errmsg(), want) && contains(mha_errmsg(), "npy_parse: <memory>"),
          "status %d (want %d), message \"%s\", want it to contain \"%s\"", st, status, mha_errmsg(), want);
    mha_release(&t);
    free(exact);
}

static void refuse_header(const char *name, const char *header, const char *want) {
    unsigned char buf[512];
    float data[12] = {0};
    size_t n = make_npy(buf, sizeof buf, 1, header, data, sizeof data);
    expect_refused(name, buf, n, MHA_E_FORMAT, want);
}

static void test_malformed(void) {
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
    unsigned char buf[512];
    float data[13] = {0};

    /* the preamble */
    expect_refused("refuse an empty buffer", "", 0, MHA_E_FORMAT, "not a .npy file");
    expect_refused("refuse a zip file (bad magic)", "PK\x03\x04 this is a zip", 18, MHA_E_FORMAT, "does not start with \\x93NUMPY");
    expect_refused("refuse magic alone", "\x93NUMPY", 6, MHA_E_FORMAT, "truncated after the magic string (6 bytes)");
    size_t n = make_npy(buf, sizeof buf, 1, good, data, 48);
    buf[6] = 4;
    expect_refused("refuse version 4.0", buf, n, MHA_E_FORMAT, "unknown .npy format version 4.0");
    buf[6] = 1; buf[7] = 1;
    expect_refused("refuse version 1.1", buf, n, MHA_E_FORMAT, "unknown .npy format version 1.1");
    buf[7] = 0;
    expect_refused("refuse a preamble cut in the header length", buf, 9, MHA_E_FORMAT, "truncated: 9 bytes, the header length needs 10");
    n = make_npy(buf, sizeof buf, 2, good, data, 48);
    expect_refused("refuse a v2 preamble cut in the header length", buf, 11, MHA_E_FORMAT, "truncated: 11 bytes, the header length needs 12");
    expect_refused("refuse a truncated header", buf, 40, MHA_E_FORMAT, "truncated header: header length 59 runs past the end of the file (28 bytes");
    n = make_npy(buf, sizeof buf, 1, good, data, 48);
    buf[8] = 0xff; buf[9] = 0xff;
    expect_refused("refuse a header length beyond the file", buf, n, MHA_E_FORMAT, "header length 65535 runs past the end");

    /* the header dict */
    refuse_header("refuse a header that is not a dict", "hello, numpy", "header is not the dict numpy writes: expected '{'");
    refuse_header("refuse a header missing 'shape'", "{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'");
    refuse_header("refuse a header missing 'descr'", "{'fortran_order': False, 'shape': (3, 4)}", "missing key 'descr'");
    refuse_header("refuse an unknown key", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1}", "unknown key 'extra'");
    refuse_header("refuse a repeated key", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}", "key 'descr' appears twice");
    refuse_header("refuse a descr that is not a string", "{'descr': 5, 'fortran_order': False, 'shape': (3, 4)}", "expected a quoted string at header byte 10");
    refuse_header("refuse fortran_order 'yes'", "{'descr': '<f4', 'fortran_order': yes, 'shape': (3, 4)}", "'fortran_order' must be True or False");
    refuse_header("refuse fortran_order Truest", "{'descr': '<f4', 'fortran_order': Truest, 'shape': (3, 4)}", "'fortran_order' must be True or False");
    refuse_header("refuse shape (12) that is not a tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': (12)}", "'shape' (n) is not a tuple");
    refuse_header("refuse shape [3, 4]", "{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4]}", "'shape' must be a tuple");
    refuse_header("refuse a negative dimension", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4)}", "negative dimension in 'shape'");
    refuse_header("refuse a dimension beyond size_t", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", "does not fit size_t");
    refuse_header("refuse (0, 2^62, 2^62): its strides would overflow", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4611686018427387904)}",
                  "shape (0,4611686018427387904,4611686018427387904): its strides overflow (sizes multiply past 2^63)");
    expect_refused("refuse (12345678902345678901, 0): a size past 2^63-1, though it has no element", buf,
                   make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (12345678902345678901, 0)}",
                            data, 0),
                   MHA_E_FORMAT, "shape (12345678902345678901,0): size 12345678902345678901 is more than 2^63-1");
    refuse_header("refuse (0, 2^62, 4) likewise", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4)}",
                  "its strides overflow");
    refuse_header("refuse 9 dimensions", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", "the array has 9 dimensions; mha tensors have at most 8");
    refuse_header("refuse 65 dimensions", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}", "'shape' has more than 64 dimensions");
    refuse_header("refuse text after the dict", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)} x", "text after the closing '}'");
    refuse_header("refuse a string quoted wrongly", "{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4)}", "expected ',' or '}' after a value at header byte 17");
    refuse_header("refuse a header cut inside a string", "{'descr': '<f4", "unterminated string");
    refuse_header("refuse a header cut inside the shape", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, ", "expected a dimension");
    refuse_header("refuse an escape in a string", "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (3, 4)}", "escape sequences");
    {   /* a NUL inside the dtype: '<f4' followed by junk must not read as '<f4' */
        static const char header[] = "{'descr': '<f4\0junk', 'fortran_order': False, 'shape': (3, 4), }";
        unsigned char nul_file[512];
        size_t hl = sizeof header - 1;
        memcpy(nul_file, "\x93NUMPY\x01\x00", 8);
        nul_file[8] = (unsigned char)hl;
        nul_file[9] = 0;
        memcpy(nul_file + 10, header, hl);
        memset(nul_file + 10 + hl, 0, 48);
        expect_refused("refuse a NUL inside the dtype", nul_file, 10 + hl + 48, MHA_E_FORMAT,
                       "a NUL byte inside a string at header byte 14");
    }
    refuse_header("refuse a missing comma between items", "{'descr': '<f4' 'fortran_order': False, 'shape': (3, 4)}", "expected ',' or '}' after a value");

    /* dtypes */
    refuse_header("refuse dtype <c8", "{'descr': '<c8', 'fortran_order': False, 'shape': (3, 4)}", "unsupported dtype '<c8' (complex)");
    refuse_header("refuse dtype |O", "{'descr': '|O', 'fortran_order': False, 'shape': (3, 4)}", "unsupported dtype '|O' (Python objects)");
    refuse_header("refuse dtype <U3", "{'descr': '<U3', 'fortran_order': False, 'shape': (3, 4)}", "unsupported dtype '<U3' (strings)");
    refuse_header("refuse dtype <f3", "{'descr': '<f3', 'fortran_order': False, 'shape': (3, 4)}", "unsupported dtype '<f3'");
    refuse_header("refuse dtype <f16", "{'descr': '<f16', 'fortran_order': False, 'shape': (3, 4)}", "unsupported dtype '<f16'");
    refuse_header("refuse dtype float32 by name", "{'descr': 'float32', 'fortran_order': False, 'shape': (3, 4)}", "unsupported dtype 'float32'");
    refuse_header("refuse a structured dtype", "{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (3,)}", "'descr' is a list (a structured dtype)");

    /* sizes */
    refuse_header("refuse a shape whose element count overflows size_t",
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}",
                  "shape (4294967296,4294967296,4294967296) has more elements than size_t can count");
    refuse_header("refuse a shape whose byte count overflows size_t",
                  "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}",
                  "more elements than size_t can count");
    refuse_header("refuse data shorter than the shape needs", "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4)}",
                  "truncated data: 48 bytes, shape (4,4) of '<f4' needs 64");
    refuse_header("refuse a huge shape without the data (no huge allocation)",
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,)}", "needs 4000000000000");
    n = make_npy(buf, sizeof buf, 1, good, data, 52);
    expect_refused("refuse data longer than the shape needs", buf, n, MHA_E_FORMAT, "4 bytes after the data of shape (3,4) of '<f4'");

    /* numpy-made files of dtypes mha does not read */
    static const struct { const char *file, *want; } bad[] = {
        {"bad_c8.npy", "unsupported dtype '<c8' (complex)"},
        {"bad_object.npy", "unsupported dtype '|O' (Python objects)"},
        {"bad_unicode.npy", "unsupported dtype '<U3' (strings)"},
        {"bad_record.npy", "'descr' is a list (a structured dtype)"},
        {"bad_datetime.npy", "unsupported dtype '<M8[D]' (dates or time spans)"},
        {"bad_9d.npy", "the array has 9 dimensions; mha tensors have at most 8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[160], name[160];
        snprintf(path, sizeof path, FIXTURES "%s", bad[i].file);
        snprintf(name, sizeof name, "refuse numpy's %s", bad[i].file);
        mha_tensor t = MHA_TENSOR_EMPTY;
        mha_status st = mha_npy_load(&t, path);
        char quoted[200];
        snprintf(quoted, sizeof quoted, "load: '%s': ", path);
        CHECK(name, st == MHA_E_FORMAT && t.storage == NULL && contains(mha_errmsg(), bad[i].want) && contains(mha_errmsg(), quoted),
              "status %d, message \"%s\"", st, mha_errmsg());
        mha_release(&t);
    }

    /* numpy-made files whose values float32 cannot stand for: the first such value (C order), its dtype,
     * and how to convert in NumPy when rounding is what the user wants */
    static const struct { const char *file, *want; } lossy[] = {
        {"lossy_f8_inf.npy", "a.flat[2] of dtype '<f8' is 1e+300, beyond float32's range (it would become inf)"},
        {"lossy_f8_zero.npy", "a.flat[3] of dtype '>f8' is 1e-320, too small for float32 (it would become 0)"},
        {"lossy_i8.npy", "a.flat[2] of dtype '<i8' is 16777217, which float32 cannot hold exactly"},
        {"lossy_u8.npy", "a.flat[0] of dtype '<u8' is 18446744073709551615, which float32 cannot hold exactly"},
        {"lossy_i4_fortran.npy", "a.flat[2] of dtype '<i4' is 2147483647, which float32 cannot hold exactly"},
    };
    for (size_t i = 0; i < sizeof lossy / sizeof lossy[0]; i++) {
        char path[160], name[160], quoted[200];
        snprintf(path, sizeof path, FIXTURES "%s", lossy[i].file);
        snprintf(name, sizeof name, "refuse numpy's %s, naming the value", lossy[i].file);
        snprintf(quoted, sizeof quoted, "load: '%s': ", path);
        size_t live = mha_live_bytes();
        mha_tensor t = MHA_TENSOR_EMPTY;
        mha_status st = mha_npy_load(&t, path);
        CHECK(name, st == MHA_E_FORMAT && t.storage == NULL && contains(mha_errmsg(), lossy[i].want) &&
              contains(mha_errmsg(), quoted) && contains(mha_errmsg(), "a.astype(np.float32)") && mha_live_bytes() == live,
              "status %d, message \"%s\"", st, mha_errmsg());
        mha_release(&t);
    }
}

/* ---- 5. what is accepted that numpy writes in less common ways ---- */

static void test_accepted_variants(void) {
    unsigned char buf[512];
    const float data[6] = {1, 2, 3, 4, 5, 6};
    struct { const char *name, *header; size_t ndim, d0, d1; } cases[] = {
        {"accept a Python 2 header with 2L", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 2, 2, 3},
        {"accept double quotes and no spaces", "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(6,)}\n", 1, 6, 0},
        {"accept keys in any order and a trailing comma in shape", "{'shape': (3, 2,), 'fortran_order': False, 'descr': '<f4'}", 2, 3, 2},
    };
    for (size_t i = 0; i < 3; i++) {
        size_t n = make_npy(buf, sizeof buf, 1, cases[i].header, data, sizeof data);
        mha_tensor t = MHA_TENSOR_EMPTY;
        int ok = mha_npy_parse(&t, buf, n) == MHA_OK && t.ndim == cases[i].ndim && t.shape[0] == cases[i].d0 &&
                 (t.ndim < 2 || t.shape[1] == cases[i].d1) && memcmp(mha_f32(&t), data, sizeof data) == 0;
        CHECK(cases[i].name, ok, "%s", mha_errmsg());
        mha_release(&t);
    }
    /* the 'L' suffix is Python 2's, which only wrote versions 1.0 and 2.0 */
    size_t n = make_npy(buf, sizeof buf, 3, cases[0].header, data, sizeof data);
    expect_refused("refuse 2L in a version 3.0 header", buf, n, MHA_E_FORMAT, "expected ',' or ')' in 'shape'");
    /* a bool byte other than 0/1 reads as true */
    const unsigned char flags[3] = {0, 2, 255};
    n = make_npy(buf, sizeof buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", flags, 3);
    mha_tensor t = MHA_TENSOR_EMPTY;
    int ok = mha_npy_parse(&t, buf, n) == MHA_OK && t.dtype == MHA_BOOL && !mha_bool(&t)[0] && mha_bool(&t)[1] && mha_bool(&t)[2];
    CHECK("bool bytes 2 and 255 read as true", ok, "%s", mha_errmsg());
    mha_release(&t);
}

/* ---- 6. files that cannot be opened or written ---- */

static void test_io_errors(void) {
    mha_tensor t = MHA_TENSOR_EMPTY;
    mha_status st = mha_npy_load(&t, "tests/fixtures/npy/no_such_file.npy");
    CHECK("load of a missing file names it", st == MHA_E_IO && t.storage == NULL &&
          contains(mha_errmsg(), "load: cannot open 'tests/fixtures/npy/no_such_file.npy': No such file or directory"),
          "status %d, \"%s\"", st, mha_errmsg());
    st = mha_npy_load(&t, "tests/fixtures");
    CHECK("load of a directory says so", st == MHA_E_IO && contains(mha_errmsg(), "load: cannot read 'tests/fixtures': it is a directory"),
          "status %d, \"%s\"", st, mha_errmsg());
    char empty_file[160];
    snprintf(empty_file, sizeof empty_file, "%s/empty.npy", tmpdir);
    FILE *f = fopen(empty_file, "wb");
    if (f) fclose(f);
    st = mha_npy_load(&t, empty_file);
    CHECK("load of an empty file says it is not a .npy file", st == MHA_E_FORMAT && contains(mha_errmsg(), "not a .npy file"),
          "status %d, \"%s\"", st, mha_errmsg());
    unlink(empty_file);

    size_t shape[2] = {2, 2};
    mha_zeros(&t, MHA_FLOAT32, 2, shape);
    st = mha_npy_save("/nonexistent-dir/x.npy", &t);
    CHECK("save into a missing directory names the path", st == MHA_E_IO &&
          contains(mha_errmsg(), "save: cannot open '/nonexistent-dir/x.npy' for writing: No such file or directory"),
          "status %d, \"%s\"", st, mha_errmsg());
    if (access("/dev/full", W_OK) == 0) {
        size_t big[1] = {100000};
        mha_tensor b = MHA_TENSOR_EMPTY;
        mha_zeros(&b, MHA_FLOAT32, 1, big);
        st = mha_npy_save("/dev/full", &b);
        CHECK("save onto a full disk (/dev/full) fails", st == MHA_E_IO && contains(mha_errmsg(), "save: cannot write '/dev/full': No space left"),
              "status %d, \"%s\"", st, mha_errmsg());
        mha_release(&b);
    }
    mha_release(&t);
    st = mha_npy_save("x.npy", &t);
    CHECK("save of a released tensor", st == MHA_E_ARG && contains(mha_errmsg(), "save: 'x.npy': the tensor is empty"),
          "status %d, \"%s\"", st, mha_errmsg());
    st = mha_npy_parse(&t, NULL, 5);
    CHECK("npy_parse of NULL bytes", st == MHA_E_ARG && contains(mha_errmsg(), "npy_parse: bytes is NULL"), "\"%s\"", mha_errmsg());
}

/* ---- 7. mutation: flipped and truncated copies of every valid file never crash or over-read ---- */

static uint64_t lcg = 0x2545F4914F6CDD1Du;
static size_t pick(size_t n) {  /* a uniform-enough index in [0, n), from a private generator */
    lcg = lcg * 6364136223846793005u + 1442695040888963407u;
    return n ? (size_t)((lcg >> 33) % n) : 0;
}

static void test_mutations(void) {
    size_t parsed = 0, accepted = 0, refused = 0, bad_status = 0;
    for (size_t k = 0; k < n_entries; k++) {
        char path[160];
        snprintf(path, sizeof path, FIXTURES "%.95s", entries[k].name);
        size_t n;
        unsigned char *orig = read_file(path, &n);
        if (!orig) continue;
        for (int round = 0; round < 1000; round++) {
            size_t len = n;
            unsigned char *m = malloc(n);
            memcpy(m, orig, n);
            int how = round % 4;
            if (how == 0 || how == 2) {           /* flip 1-4 bytes, mostly in the preamble and header */
                for (size_t f = 1 + pick(4); f-- > 0;) {
                    size_t at = pick(4) ? pick(n < 128 ? n : 128) : pick(n);
                    m[at] ^= (unsigned char)(1u << pick(8));
                    if (how == 2) m[at] = (unsigned char)" (),:'0123456789{}LTF<>|fiub\n"[pick(29)];
                }
            }
            if (how == 1 || how == 2) len = pick(n + 1);  /* truncate anywhere, even to nothing */
            if (how == 3) {                        /* overwrite a header byte with a digit: shapes grow */
                size_t at = 10 + pick(n > 10 && n < 128 ? n - 10 : 118);
                if (at < n) m[at] = (unsigned char)('0' + pick(10));
            }
            unsigned char *exact = malloc(len ? len : 1);
            if (len) memcpy(exact, m, len);
            mha_tensor t = MHA_TENSOR_EMPTY;
            mha_status st = mha_npy_parse(&t, exact, len);
            parsed++;
            if (st == MHA_OK) {
                accepted++;
                if (t.storage == NULL || t.storage->nbytes < mha_numel(&t)) bad_status++;
            } else {
                refused++;
                if ((st != MHA_E_FORMAT && st != MHA_E_NOMEM) || t.storage != NULL || strlen(mha_errmsg()) == 0) bad_status++;
            }
            mha_release(&t);
            free(exact);
            free(m);
        }
        free(orig);
    }
    CHECK("mutated files: every parse returns OK with a tensor or FORMAT with a message", parsed > 40000 && bad_status == 0,
          "%zu parses, %zu accepted, %zu refused, %zu inconsistent", parsed, accepted, refused, bad_status);
    printf("# mutation test: %zu parses, %zu accepted, %zu refused\n", parsed, accepted, refused);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mha-test-npy-XXXXXX");
    if (!mkdtemp(tmpdir)) { printf("FAIL setup: mkdtemp: %s\n", strerror(errno)); return 1; }
    CHECK("read tests/fixtures/npy/manifest.txt", read_manifest(), "run from the repository root (tests/run.sh does)");
    size_t live = mha_live_bytes();
    test_loads();
    test_saves();
    test_round_trips();
    test_malformed();
    test_accepted_variants();
    test_io_errors();
    test_mutations();
    CHECK("no core memory left allocated", mha_live_bytes() == live, "%zu bytes still live (was %zu)", mha_live_bytes(), live);
    for (size_t k = 0; k < n_entries; k++) free(entries[k].values);
    rmdir(tmpdir);
    CHECK_DONE();
}
