/* tests/core/test_alloc.c - the caching allocator (core/base/alloc.c): a freed block is handed out again at
 * once, classes round up by at most 25%, blocks are aligned, threads share it safely, nothing leaks,
 * and the plain malloc path does the same jobs. */

#include "base/alloc_testing.h"
#include "check.h"
#include "tensor/tensor.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static bool aligned(const void *p, size_t to) { return ((uintptr_t)p & (to - 1)) == 0; }

/* The class of every size from 64 KiB to 1 GiB (a sweep of odd sizes) is at least the size, at most
 * 25% over, and a multiple of 4 KiB; below 64 KiB the class is the first one. */
static void check_classes(void) {
    bool ok = true;
    char why[160] = "";
    for (size_t n = MHA_ALLOC_MIN_CACHED; ok && n <= ((size_t)1 << 30); n = n + n / 7 + 4093) {
        size_t c = mha_alloc_class_size(n);
        ok = c >= n && (double)c <= 1.25 * (double)n && c % 4096 == 0;
        if (!ok) snprintf(why, sizeof why, "%zu bytes -> class %zu", n, c);
    }
    CHECK("class_size: within 25% above the request, whole pages (64 KiB .. 1 GiB)", ok, "%s", why);
    CHECK("class_size: 1 MiB is its own class, 1 MiB + 1 the next (1.25 MiB)",
          mha_alloc_class_size((size_t)1 << 20) == (size_t)1 << 20 &&
              mha_alloc_class_size(((size_t)1 << 20) + 1) == ((size_t)5 << 18),
          "%zu, %zu", mha_alloc_class_size((size_t)1 << 20), mha_alloc_class_size(((size_t)1 << 20) + 1));
}

/* Freed and asked for again (same class, even a different size in it): the same block, no new map. */
static void check_reuse(void) {
    mha_alloc_use("cache");
    mha_alloc_trim();
    mha_alloc_stats before = mha_alloc_get_stats();
    float *a = mha_alloc((size_t)1 << 20);
    bool wrote = a != NULL;
    for (size_t i = 0; wrote && i < ((size_t)1 << 18); i++) a[i] = (float)i; /* every page touched */
    mha_free(a, (size_t)1 << 20);
    mha_alloc_stats freed = mha_alloc_get_stats();
    float *b = mha_alloc(((size_t)1 << 20) - 1000); /* the same class */
    mha_alloc_stats after = mha_alloc_get_stats();
    CHECK("cache: a freed 1 MiB block is the next one handed out in its class", wrote && b == a,
          "first %p, second %p", (void *)a, (void *)b);
    CHECK("cache: the free kept the block cached; the second request was a hit, not a new map",
          freed.cached_blocks == before.cached_blocks + 1 && after.hits == before.hits + 1 &&
              after.misses == before.misses + 1 && after.cached_blocks == before.cached_blocks,
          "cached %zu -> %zu -> %zu, hits %zu -> %zu, misses %zu -> %zu", before.cached_blocks, freed.cached_blocks,
          after.cached_blocks, before.hits, after.hits, before.misses, after.misses);
    float *c = mha_alloc((size_t)3 << 20); /* another class: not b's block */
    CHECK("cache: another class gets another block", c != NULL && c != b, "%p", (void *)c);
    mha_free(c, (size_t)3 << 20);
    mha_free(b, ((size_t)1 << 20) - 1000);
    /* most recently freed first: of two freed blocks of a class, the later one comes back first */
    float *x = mha_alloc((size_t)200 << 10), *y = mha_alloc((size_t)200 << 10);
    mha_free(x, (size_t)200 << 10);
    mha_free(y, (size_t)200 << 10);
    float *z = mha_alloc((size_t)200 << 10);
    CHECK("cache: the most recently freed block of a class is reused first (its pages are warm)", z == y && x != y,
          "x %p, y %p, got %p", (void *)x, (void *)y, (void *)z);
    mha_free(z, (size_t)200 << 10);
}

/* Every block is 64-byte aligned on both paths; cached blocks of 4 MiB and more are 2 MiB aligned. */
static void check_alignment(const char *mode) {
    static const size_t sizes[] = {1, 3, 100, 4096, 65535, 65536, 100000, (size_t)1 << 20, ((size_t)4 << 20) + 12,
                                   (size_t)9 << 20};
    bool ok = true;
    char why[160] = "";
    mha_alloc_use(mode);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = mha_alloc(sizes[i]);
        size_t want = strcmp(mode, "cache") == 0 && sizes[i] >= ((size_t)4 << 20) ? (size_t)2 << 20 : 64;
        if (p == NULL || !aligned(p, want)) {
            ok = false;
            snprintf(why, sizeof why, "%zu bytes at %p, want %zu-byte alignment", sizes[i], (void *)p, want);
        } else {
            p[0] = 1;
            p[sizes[i] - 1] = 2; /* both ends writable */
        }
        mha_free(p, sizes[i]);
    }
    char name[120];
    snprintf(name, sizeof name, "%s: blocks are 64-byte aligned (2 MiB from 4 MiB on, cached), both ends writable", mode);
    CHECK(name, ok, "%s", why);
    mha_alloc_use("cache");
}

/* The accounting counts requested bytes on both paths; trim gives every cached byte back. */
static void check_no_leak(void) {
    for (int m = 0; m < 2; m++) {
        const char *mode = m ? "malloc" : "cache";
        mha_alloc_use(mode);
        size_t live = mha_live_bytes();
        void *p = mha_alloc(300000), *q = mha_alloc(10);
        size_t during = mha_live_bytes();
        mha_free(p, 300000);
        mha_free(q, 10);
        char name[120];
        snprintf(name, sizeof name, "%s: live bytes count requests (300010) and go back to where they were", mode);
        CHECK(name, during == live + 300010 && mha_live_bytes() == live, "%zu -> %zu -> %zu", live, during,
              mha_live_bytes());
    }
    mha_alloc_use("cache");
    size_t trimmed = mha_alloc_trim();
    mha_alloc_stats s = mha_alloc_get_stats();
    CHECK("trim: unmaps every cached block; with nothing live the cache maps nothing", trimmed > 0 &&
          s.cached_bytes == 0 && s.cached_blocks == 0 && s.mapped_bytes == 0 && mha_live_bytes() == 0,
          "trimmed %zu, cached %zu in %zu blocks, mapped %zu, live %zu", trimmed, s.cached_bytes, s.cached_blocks,
          s.mapped_bytes, mha_live_bytes());
}

/* Freeing more than the limit holds: the cache stays within its limit (the rest is unmapped). */
static void check_limit(void) {
    mha_alloc_use("cache");
    mha_alloc_trim();
    mha_alloc_stats s = mha_alloc_get_stats();
    size_t block = s.limit / 3 + 4096, n = 5;
    void *p[5];
    for (size_t i = 0; i < n; i++) p[i] = mha_alloc(block);
    for (size_t i = 0; i < n; i++) mha_free(p[i], block);
    mha_alloc_stats after = mha_alloc_get_stats();
    CHECK("cache: never holds more than its limit (5 blocks of a third of it freed)",
          after.cached_bytes <= after.limit && after.cached_blocks >= 1 && after.cached_blocks <= 3,
          "cached %zu in %zu blocks, limit %zu", after.cached_bytes, after.cached_blocks, after.limit);
    mha_alloc_trim();
}

/* Two threads allocating, filling, checking and freeing blocks of shared classes: no block is handed
 * to both at once (each finds its own fill intact). */
typedef struct worker {
    float seed;
    bool ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    w->ok = true;
    for (int round = 0; round < 300; round++) {
        size_t n = ((size_t)16 << 10) + (size_t)(round % 5) * 9000; /* floats: 64 KiB .. 208 KiB */
        float *p = mha_alloc(n * sizeof(float));
        if (!p) { w->ok = false; break; }
        for (size_t i = 0; i < n; i += 97) p[i] = w->seed + (float)round;
        for (size_t i = 0; i < n; i += 97) w->ok = w->ok && p[i] == w->seed + (float)round;
        mha_free(p, n * sizeof(float));
    }
    return NULL;
}

static void check_threads(void) {
    mha_alloc_use("cache");
    worker w[2] = {{1000.0f, false}, {-1000.0f, false}};
    pthread_t t;
    bool started = pthread_create(&t, NULL, work, &w[1]) == 0;
    work(&w[0]);
    if (started) pthread_join(t, NULL);
    CHECK("cache: two threads share the classes, no block given to both at once", started && w[0].ok && w[1].ok,
          "started %d, ok %d %d", started, w[0].ok, w[1].ok);
}

/* Tensor storage comes from it: a released (512,512) tensor's storage is the next one's. */
static void check_tensors(void) {
    mha_alloc_use("cache");
    size_t shape[2] = {512, 512};
    mha_tensor a = MHA_TENSOR_EMPTY, b = MHA_TENSOR_EMPTY;
    mha_status s1 = mha_zeros(&a, MHA_FLOAT32, 2, shape);
    void *first = s1 == MHA_OK ? mha_f32(&a) : NULL;
    mha_release(&a);
    mha_status s2 = mha_full(&b, 2, shape, 2.5f);
    bool filled = s2 == MHA_OK && mha_f32(&b)[0] == 2.5f && mha_f32(&b)[512 * 512 - 1] == 2.5f;
    CHECK("tensors: a released (512,512) storage is reused by the next, and filled anew", s1 == MHA_OK &&
          filled && mha_f32(&b) == first, "%p then %p", first, s2 == MHA_OK ? (void *)mha_f32(&b) : NULL);
    mha_release(&b);
}

/* A request no machine can map fails cleanly (NULL), on both paths. */
static void check_too_big(void) {
    for (int m = 0; m < 2; m++) {
        const char *mode = m ? "malloc" : "cache";
        mha_alloc_use(mode);
        size_t live = mha_live_bytes();
        void *p = mha_alloc((size_t)1 << 60);
        char name[120];
        snprintf(name, sizeof name, "%s: 2^60 bytes is NULL, nothing counted", mode);
        CHECK(name, p == NULL && mha_live_bytes() == live, "%p, live %zu -> %zu", p, live, mha_live_bytes());
    }
    mha_alloc_use("cache");
}

/* The cap (MHA_MAX_MEMORY): a request that would pass it is refused with the cap's message, nothing
 * counted; a tensor under it is made, and freeing makes room again. */
static void check_cap(void) {
    mha_alloc_set_max_bytes((size_t)1 << 20);
    size_t live = mha_live_bytes();
    void *small = mha_alloc((size_t)512 << 10);
    CHECK("cap 1 MB: 512 KiB is given", small != NULL && !mha_alloc_capped(), "%p", small);
    void *big = mha_alloc((size_t)1 << 20);
    CHECK("cap 1 MB: 1 MiB more is refused, nothing counted", big == NULL && mha_alloc_capped() &&
              mha_live_bytes() == live + ((size_t)512 << 10), "%p, live %zu", big, mha_live_bytes());
    CHECK("cap 1 MB: the message names the cap and MHA_MAX_MEMORY",
          strcmp(mha_errmsg(), "tensor memory limit of 1 MB reached (MHA_MAX_MEMORY): 0 MB in use, 1 MB more asked") == 0,
          "%s", mha_errmsg());
    mha_tensor t;
    mha_status st = mha_empty(&t, MHA_FLOAT32, 2, (size_t[]){1024, 1024});
    CHECK("cap 1 MB: a (1024,1024) tensor (4 MiB) is out of memory, capped", st == MHA_E_NOMEM && mha_alloc_capped(),
          "%s: %s", mha_status_name(st), mha_errmsg());
    mha_free(small, (size_t)512 << 10);
    st = mha_empty(&t, MHA_FLOAT32, 2, (size_t[]){512, 256});
    CHECK("cap 1 MB: freed, a (512,256) tensor (512 KiB) fits", st == MHA_OK && !mha_alloc_capped(), "%s",
          mha_errmsg());
    if (st == MHA_OK) mha_release(&t);
    mha_alloc_set_max_bytes(0);
    big = mha_alloc((size_t)4 << 20);
    CHECK("cap 0: no cap, 4 MiB is given", big != NULL, "%p", big);
    mha_free(big, (size_t)4 << 20);
}

int main(void) {
    setenv("MHA_MAX_MEMORY", "3", 1); /* read at the first allocation, the next call */
    CHECK("cap: MHA_MAX_MEMORY=3 is 3 MB", mha_alloc_max_bytes() == (size_t)3 << 20, "%zu", mha_alloc_max_bytes());
    mha_alloc_set_max_bytes(0);
    CHECK("mode: MHA_ALLOC picks the path; use() switches, an unknown name is refused",
          mha_alloc_use("malloc") && strcmp(mha_alloc_mode(), "malloc") == 0 && mha_alloc_use("cache") &&
              strcmp(mha_alloc_mode(), "cache") == 0 && !mha_alloc_use("jemalloc"),
          "%s", mha_alloc_mode());
    check_classes();
    check_reuse();
    check_alignment("cache");
    check_alignment("malloc");
    check_tensors();
    check_threads();
    check_limit();
    check_too_big();
    check_cap();
    check_no_leak();
    CHECK_DONE();
}
