/* tests/core/test_npz.c - .npz archives: np.savez, np.savez_compressed and streamed (data descriptor) archives
 * load to NumPy's values (tests/fixtures/npz/manifest.txt), our archives round-trip exactly and byte for byte,
 * saves are atomic, every bad archive is refused naming the file and the member, and thousands of mutated
 * and truncated archives never crash the reader (run it under ASan: `make asan`). */

#include "check.h"
#include "manifest.h"
#include "io/npz.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURES "tests/fixtures/npz/"

static char tmpdir[64];

/* The whole file in a malloc'd buffer of exactly its size (so ASan sees any over-read); NULL if absent. */
static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    *n = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    return buf;
}

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* ---- the manifest: what NumPy says each array holds ---- */

static entry entries[32];
static size_t n_entries;

static int read_manifest(void) {
    n_entries = read_manifest_file(FIXTURES "manifest.txt", entries, sizeof entries / sizeof entries[0]);
    return n_entries > 0;
}

/* Whether t has e's dtype, shape and exact values (bit for bit); why says what differs. */
static int matches(const mha_tensor *t, const entry *e, char *why, size_t n) {
    char got[160];
    if ((t->dtype == MHA_BOOL) != e->is_bool) { snprintf(why, n, "dtype %d, want %s", t->dtype, e->is_bool ? "bool" : "f32"); return 0; }
    bool shape_ok = t->ndim == e->ndim;
    for (size_t d = 0; shape_ok && d < e->ndim; d++) shape_ok = t->shape[d] == e->shape[d];
    if (!shape_ok) { snprintf(why, n, "shape %s, want ndim %zu", mha_shape_str(got, sizeof got, t), e->ndim); return 0; }
    for (size_t i = 0; i < e->n; i++) {
        double v = e->is_bool ? mha_bool(t)[i] : mha_f32(t)[i];
        if (v != e->values[i]) {
            snprintf(why, n, "element %zu: got %.9g, want %.9g", i, v, e->values[i]);
            return 0;
        }
    }
    return 1;
}

static const mha_tensor *find(const mha_npz *a, const char *name) {
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->entries[i].name, name) == 0) return &a->entries[i].tensor;
    return NULL;
}

/* ---- 1. NumPy's archives load to NumPy's values, members in the archive's order ---- */

static void test_numpy_archives(void) {
    static const char *const archives[] = {"savez", "savez_compressed", "streamed"};
    for (size_t k = 0; k < 3; k++) {
        char path[128], name[128], why[256] = "";
        snprintf(path, sizeof path, FIXTURES "%s.npz", archives[k]);
        mha_npz a = {0};
        snprintf(name, sizeof name, "load_%s", archives[k]);
        if (mha_npz_load(&a, path) != MHA_OK) { CHECK(name, 0, "%s", mha_errmsg()); continue; }
        int ok = a.count == n_entries;
        if (!ok) snprintf(why, sizeof why, "%zu members, want %zu", a.count, n_entries);
        for (size_t i = 0; ok && i < n_entries; i++) {
            ok = strcmp(a.entries[i].name, entries[i].name) == 0;
            if (!ok) snprintf(why, sizeof why, "member %zu is %.60s, want %.60s", i, a.entries[i].name, entries[i].name);
            else ok = matches(&a.entries[i].tensor, &entries[i], why, sizeof why);
        }
        CHECK(name, ok, "%s", why);
        mha_npz_release(&a);
        CHECK(name, a.count == 0 && a.entries == NULL, "release left %zu entries", a.count);
    }
}

/* ---- 2. bad archives: refused, naming the file, the member and the fault ---- */

static void test_bad_archives(void) {
    FILE *f = fopen(FIXTURES "bad.txt", "r");
    CHECK("bad_list_present", f != NULL, "cannot open " FIXTURES "bad.txt");
    if (!f) return;
    char line[256];
    size_t count = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = '\0';
        char *words = strchr(line, ' ');
        if (!words) continue;
        *words++ = '\0';
        char path[300], name[300];
        snprintf(path, sizeof path, FIXTURES "bad_%s.npz", line);
        snprintf(name, sizeof name, "refuse_%s", line);
        mha_npz a = {0};
        mha_status st = mha_npz_load(&a, path);
        CHECK(name, st == MHA_E_FORMAT && contains(mha_errmsg(), words) && contains(mha_errmsg(), path) && a.count == 0,
              "status %s, message: %s (want '%s')", mha_status_name(st), mha_errmsg(), words);
        count++;
    }
    fclose(f);
    CHECK("bad_list_length", count >= 9, "%zu bad archives", count);
    mha_npz a = {0};
    mha_status st = mha_npz_load(&a, FIXTURES "no_such.npz");
    CHECK("refuse_missing_file", st == MHA_E_IO && contains(mha_errmsg(), "load: cannot open 'tests/fixtures/npz/no_such.npz'"),
          "%s", mha_errmsg());
    st = mha_npz_parse(&a, "PK\x03\x04 not really an archive at all", 36, NULL);
    CHECK("refuse_zip_without_end", st == MHA_E_FORMAT && contains(mha_errmsg(), "npz_parse: <memory>: truncated or corrupt"),
          "%s", mha_errmsg());
    st = mha_npz_parse(&a, "\x93NUMPY", 6, NULL);
    CHECK("refuse_npy_as_npz", st == MHA_E_FORMAT && contains(mha_errmsg(), "not a .npz archive"), "%s", mha_errmsg());
}

/* ---- 3. our archives: exact round trips, the same bytes each time, np.savez's member layout ---- */

static mha_status make_tensors(mha_tensor *ts) {
    size_t s34[] = {3, 4}, s2[] = {2}, s0[] = {0, 5};
    mha_seed(5);
    mha_status st = mha_randn(&ts[0], 2, s34);
    if (st == MHA_OK) st = mha_zeros(&ts[1], MHA_BOOL, 1, s2);
    if (st == MHA_OK) { mha_bool(&ts[1])[1] = true; st = mha_full(&ts[2], 0, NULL, -0.0f); }
    if (st == MHA_OK) st = mha_empty(&ts[3], MHA_FLOAT32, 2, s0);
    if (st == MHA_OK) st = mha_transpose(&ts[4], &ts[0], 0, 1); /* not contiguous: saved in C order */
    return st;
}

/* Same dtype, shape and bytes (-0 differs from +0, as a file round trip must keep it). */
static int same_tensor(const mha_tensor *a, const mha_tensor *b) {
    if (!a || !b || a->dtype != b->dtype || !mha_same_shape(a, b)) return 0;
    mha_tensor ca = MHA_TENSOR_EMPTY, cb = MHA_TENSOR_EMPTY;
    int same = mha_contiguous(&ca, a) == MHA_OK && mha_contiguous(&cb, b) == MHA_OK;
    size_t n = mha_numel(a);
    if (same && n > 0)
        same = a->dtype == MHA_BOOL ? memcmp(mha_bool(&ca), mha_bool(&cb), n * sizeof(bool)) == 0
                                    : memcmp(mha_f32(&ca), mha_f32(&cb), n * sizeof(float)) == 0;
    mha_release(&ca);
    mha_release(&cb);
    return same;
}

static void test_round_trip(void) {
    static const char *const names[] = {"weight", "mask", "scalar", "empty", "layers.0.weight_T"};
    mha_tensor ts[5] = {MHA_TENSOR_EMPTY};
    if (make_tensors(ts) != MHA_OK) { CHECK("round_trip_setup", 0, "%s", mha_errmsg()); return; }
    const mha_tensor *ptrs[5] = {&ts[0], &ts[1], &ts[2], &ts[3], &ts[4]};
    for (int compress = 0; compress <= 1; compress++) {
        char path[128], again[128], name[64];
        snprintf(path, sizeof path, "%s/rt%d.npz", tmpdir, compress);
        snprintf(again, sizeof again, "%s/rt%d_again.npz", tmpdir, compress);
        snprintf(name, sizeof name, "round_trip_%s", compress ? "compressed" : "stored");
        mha_status st = mha_npz_save(path, names, ptrs, 5, compress);
        if (st == MHA_OK) st = mha_npz_save(again, names, ptrs, 5, compress);
        mha_npz a = {0};
        if (st == MHA_OK) st = mha_npz_load(&a, path);
        if (st != MHA_OK) { CHECK(name, 0, "%s", mha_errmsg()); continue; }
        int ok = a.count == 5;
        for (size_t i = 0; ok && i < 5; i++) ok = strcmp(a.entries[i].name, names[i]) == 0 && same_tensor(find(&a, names[i]), &ts[i]);
        CHECK(name, ok, "%zu members; a member differs", a.count);
        mha_npz_release(&a);
        size_t n1 = 0, n2 = 0;
        unsigned char *b1 = read_file(path, &n1), *b2 = read_file(again, &n2);
        snprintf(name, sizeof name, "deterministic_bytes_%s", compress ? "compressed" : "stored");
        CHECK(name, b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0, "two saves differ (%zu and %zu bytes)", n1, n2);
        /* np.savez's layout: the first member's local header, then "weight.npy", then its .npy bytes */
        snprintf(name, sizeof name, "member_layout_%s", compress ? "compressed" : "stored");
        CHECK(name, b1 && n1 > 40 && memcmp(b1, "PK\x03\x04", 4) == 0 && b1[8] == (compress ? 8 : 0) &&
                    memcmp(b1 + 30, "weight.npy", 10) == 0 && (compress || memcmp(b1 + 40, "\x93NUMPY\x01\x00", 8) == 0),
              "%s", "first member's header");
        free(b1);
        free(b2);
        struct stat sb;
        mode_t mask = umask(0);
        umask(mask);
        snprintf(name, sizeof name, "file_mode_%s", compress ? "compressed" : "stored");
        CHECK(name, stat(path, &sb) == 0 && (sb.st_mode & 0777) == (0666 & ~mask), "mode %o, umask %o",
              (unsigned)(sb.st_mode & 0777), (unsigned)mask);
    }
    /* an empty archive: just the end record, as np.savez("e.npz") writes */
    char path[128];
    snprintf(path, sizeof path, "%s/empty.npz", tmpdir);
    mha_npz a = {0};
    mha_status st = mha_npz_save(path, NULL, NULL, 0, false);
    if (st == MHA_OK) st = mha_npz_load(&a, path);
    size_t n = 0;
    unsigned char *b = read_file(path, &n);
    CHECK("empty_archive", st == MHA_OK && a.count == 0 && n == 22 && b && memcmp(b, "PK\x05\x06", 4) == 0, "%s, %zu bytes",
          st == MHA_OK ? "ok" : mha_errmsg(), n);
    free(b);
    CHECK("sniff", mha_npz_sniff(path) && !mha_npz_sniff(FIXTURES "manifest.txt") && !mha_npz_sniff("/no/such"), "%s", "");
    for (size_t i = 0; i < 5; i++) mha_release(&ts[i]);
}

/* ---- 4. saves are atomic: a failing save leaves the old archive and no temporary file ---- */

static size_t files_in(const char *dir) {
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void test_atomic(void) {
    char dir[128], path[160];
    snprintf(dir, sizeof dir, "%s/atomic", tmpdir);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/m.npz", dir);
    size_t s2[] = {2};
    mha_tensor good = MHA_TENSOR_EMPTY, closed = MHA_TENSOR_EMPTY;
    mha_full(&good, 1, s2, 7.0f);
    const char *one[] = {"w"};
    const mha_tensor *t1[] = {&good};
    mha_status st = mha_npz_save(path, one, t1, 1, false);
    size_t before = 0;
    unsigned char *old = read_file(path, &before);
    const char *two[] = {"a", "b"};
    const mha_tensor *t2[] = {&good, &closed}; /* the second member fails after the first is written */
    mha_status failed = mha_npz_save(path, two, t2, 2, false);
    size_t after = 0;
    unsigned char *now = read_file(path, &after);
    CHECK("atomic_failed_save_keeps_old", st == MHA_OK && failed == MHA_E_ARG && contains(mha_errmsg(), "member 'b.npy'") &&
          old && now && before == after && memcmp(old, now, before) == 0 && files_in(dir) == 1,
          "status %s, %s, %zu files in the directory", mha_status_name(failed), mha_errmsg(), files_in(dir));
    free(old);
    free(now);
    const char *dup[] = {"w", "w"};
    const mha_tensor *td[] = {&good, &good};
    st = mha_npz_save(path, dup, td, 2, false);
    CHECK("refuse_duplicate_names", st == MHA_E_ARG && contains(mha_errmsg(), "two tensors are named 'w'"), "%s", mha_errmsg());
    const char *empty[] = {""};
    st = mha_npz_save(path, empty, t1, 1, false);
    CHECK("refuse_empty_name", st == MHA_E_ARG && contains(mha_errmsg(), "tensor 1 has an empty name"), "%s", mha_errmsg());
    st = mha_npz_save("/no/such/dir/m.npz", one, t1, 1, false);
    CHECK("refuse_missing_directory", st == MHA_E_IO && contains(mha_errmsg(), "save: cannot open "
          "'/no/such/dir/m.npz'"), "%s", mha_errmsg());
    CHECK("atomic_no_leftovers", files_in(dir) == 1, "%zu files", files_in(dir));
    mha_release(&good);
}

/* ---- 5. mutated and truncated archives: an error or a clean load, never a crash or a leak ---- */

static uint64_t lcg = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void) {
    lcg = lcg * 6364136223846793005u + 1442695040888963407u;
    return lcg >> 33;
}

static void test_mutations(void) {
    static const char *const archives[] = {FIXTURES "savez.npz", FIXTURES "savez_compressed.npz", FIXTURES "streamed.npz"};
    size_t live = mha_live_bytes(), runs = 0, refused = 0;
    int sane = 1;
    for (size_t k = 0; k < 3; k++) {
        size_t n = 0;
        unsigned char *orig = read_file(archives[k], &n);
        if (!orig) { CHECK("mutations_setup", 0, "cannot read %s", archives[k]); return; }
        for (size_t len = 0; len <= n; len += 1 + len / 64) { /* truncations, densest near the start */
            unsigned char *cut = malloc(len ? len : 1);
            memcpy(cut, orig, len);
            mha_npz a = {0};
            mha_status st = mha_npz_parse(&a, cut, len, NULL);
            sane &= st == MHA_OK || st == MHA_E_FORMAT;
            refused += st != MHA_OK;
            mha_npz_release(&a);
            free(cut);
            runs++;
        }
        for (size_t trial = 0; trial < 1500; trial++) {
            unsigned char *m = malloc(n);
            memcpy(m, orig, n);
            size_t flips = 1 + next_random() % 4;
            for (size_t f = 0; f < flips; f++) {
                size_t at = next_random() % n;
                /* half the flips land in the headers at the end, where the offsets and sizes live */
                if (next_random() % 2) at = n - 1 - next_random() % (n < 400 ? n : 400);
                m[at] = (unsigned char)(next_random() % 3 == 0 ? 0xff : m[at] ^ (1u << (next_random() % 8)));
            }
            mha_npz a = {0};
            mha_status st = mha_npz_parse(&a, m, n, NULL);
            sane &= st == MHA_OK || st == MHA_E_FORMAT || st == MHA_E_NOMEM;
            refused += st != MHA_OK;
            mha_npz_release(&a);
            free(m);
            runs++;
        }
        free(orig);
    }
    CHECK("mutations_never_crash", sane && refused > runs / 2, "%zu runs, %zu refused", runs, refused);
    CHECK("mutations_free_everything", mha_live_bytes() == live, "%zu bytes live after, %zu before", mha_live_bytes(), live);
}

/* Removes dir and the files and directories in it (the test's own temporary directory). */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[512];
        snprintf(path, sizeof path, "%.200s/%.255s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(path);
        else unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mha_test_npz_XXXXXX");
    if (!mkdtemp(tmpdir)) { CHECK("tmpdir", 0, "mkdtemp failed"); CHECK_DONE(); }
    if (!read_manifest()) CHECK("manifest", 0, "cannot read " FIXTURES "manifest.txt");
    test_numpy_archives();
    test_bad_archives();
    test_round_trip();
    test_atomic();
    test_mutations();
    remove_tree(tmpdir);
    for (size_t i = 0; i < n_entries; i++) free(entries[i].values);
    CHECK_DONE();
}
