/* core/base/alloc.c - the caching allocator under every tensor storage and kernel scratch buffer
 * (alloc.h), beside the plain malloc path, and the live/peak byte accounting the REPL and the
 * benchmark read. */
#include "base/alloc.h"
#include "base/alloc_testing.h"
#include "base/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define MHA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MHA_ASAN 1
#endif
#endif

#ifdef MHA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- accounting: the bytes callers asked for, not the rounded classes ---- */

static atomic_size_t live_bytes = 0;
static atomic_size_t peak_bytes = 0;

/* The cap on live bytes (MHA_MAX_MEMORY, in MB; 0: none), and whether this thread's last
 * allocation was refused by it. */
static atomic_size_t max_bytes = 0;
static _Thread_local bool capped = false;

size_t mha_live_bytes(void) { return atomic_load(&live_bytes); }
size_t mha_peak_bytes(void) { return atomic_load(&peak_bytes); }
void mha_reset_peak(void) { atomic_store(&peak_bytes, atomic_load(&live_bytes)); }

static void account_alloc(size_t nbytes) {
    size_t now = atomic_fetch_add(&live_bytes, nbytes) + nbytes;
    size_t peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {}
}

/* ---- size classes: 4 per power of two from 64 KiB, so a class is at most 25% over its request
 * ---- */

enum { MIN_SHIFT = 16, STEPS = 4, NCLASSES = (64 - MIN_SHIFT) * STEPS };
_Static_assert(MHA_ALLOC_MIN_CACHED == (size_t)1 << MIN_SHIFT, "the first class is MHA_ALLOC_MIN_CACHED");

#define HUGE_ALIGN ((size_t)2 << 20)      /* a transparent huge page */
#define HUGE_MIN ((size_t)4 << 20)       /* blocks from here on are huge-page aligned and advised */

static unsigned floor_log2(size_t n) { return (unsigned)(63 - __builtin_clzll((unsigned long long)n)); }

/* The class of n >= MHA_ALLOC_MIN_CACHED: n rounded up to a quarter of its power of two. 0 on
 * overflow. */
size_t mha_alloc_class_size(size_t nbytes) {
    if (nbytes < MHA_ALLOC_MIN_CACHED) nbytes = MHA_ALLOC_MIN_CACHED;
    size_t step = ((size_t)1 << floor_log2(nbytes)) / STEPS;
    if (nbytes > SIZE_MAX - step) return 0;
    return (nbytes + step - 1) / step * step;
}

/* Index of a class size (a power of two plus k quarters of it, k = 0..3). */
static size_t class_index(size_t class_size) {
    unsigned e = floor_log2(class_size);
    size_t quarter = ((size_t)1 << e) / STEPS;
    return (size_t)(e - MIN_SHIFT) * STEPS + (class_size - ((size_t)1 << e)) / quarter;
}

/* The size of class c: 2^e plus (c % STEPS) quarters of it. */
static size_t class_size_of(size_t c) {
    size_t base = (size_t)1 << (MIN_SHIFT + c / STEPS);
    return base + c % STEPS * (base / STEPS);
}

/* ---- the cache ---- */

typedef enum { MODE_CACHE, MODE_MALLOC } alloc_mode;

/* Small blocks (under MHA_ALLOC_MIN_CACHED): a graph node, its input list, an autograd record, a
 * small tensor. A forward recording its graph makes dozens of them per call; glibc's
 * posix_memalign (64-byte alignment) serves each by splitting a larger chunk, and the frees that
 * follow make it consolidate its bins. So they are kept too: one class per power of two from 64
 * bytes to 64 KiB, each a free list, up to SMALL_LIMIT bytes in all; a fresh one comes from
 * posix_memalign at its class size, and one freed past the limit goes back to free(). A
 * recording MultiheadAttention forward at E=8 (the collector run every 16 calls) takes 17 us so,
 * 31 without. */
enum { SMALL_MIN_SHIFT = 6, SMALL_CLASSES = MIN_SHIFT - SMALL_MIN_SHIFT + 1 };
#define SMALL_LIMIT ((size_t)4 << 20)

static struct {
    pthread_mutex_t lock;
    alloc_mode mode;
    void *free_list[NCLASSES]; /* each cached block's first word points to the next one of its
                                  class */
    void *small_list[SMALL_CLASSES]; /* the same, for small blocks of 64 << c bytes */
    size_t small_bytes;              /* held in small_list */
    mha_alloc_stats stats;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The class of a small request: its size rounded up to a power of two, from 64 bytes. */
static size_t small_class(size_t nbytes) {
    return nbytes <= ((size_t)1 << SMALL_MIN_SHIFT) ? 0 : floor_log2(nbytes - 1) + 1 - SMALL_MIN_SHIFT;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void trim_at_exit(void) { mha_alloc_trim(); }

/* The mode from MHA_ALLOC, and the limit: a quarter of the memory, between 64 MiB and 1 GiB. */
static void init(void) {
#ifdef MHA_ASAN
    cache.mode = MODE_MALLOC;
#else
    cache.mode = MODE_CACHE;
#endif
    const char *env = getenv("MHA_ALLOC");
    if (env && strcmp(env, "malloc") == 0) cache.mode = MODE_MALLOC;
    if (env && strcmp(env, "cache") == 0) cache.mode = MODE_CACHE;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t quarter = pages > 0 && page > 0 ? (size_t)pages / 4 * (size_t)page : 0;
    size_t lo = (size_t)64 << 20, hi = (size_t)1 << 30;
    cache.stats.limit = quarter < lo ? lo : quarter > hi ? hi : quarter;
    const char *cap = getenv("MHA_MAX_MEMORY");
    if (cap && *cap) {
        char *end;
        unsigned long long mb = strtoull(cap, &end, 10);
        if (*end == '\0' && mb > 0 && mb <= SIZE_MAX >> 20) atomic_store(&max_bytes, (size_t)mb << 20);
    }
    atexit(trim_at_exit);
}

const char *mha_alloc_mode(void) {
    pthread_once(&init_once, init);
    return cache.mode == MODE_CACHE ? "cache" : "malloc";
}

bool mha_alloc_use(const char *mode) {
    pthread_once(&init_once, init);
    if (strcmp(mode, "cache") != 0 && strcmp(mode, "malloc") != 0) return false;
    pthread_mutex_lock(&cache.lock);
    cache.mode = strcmp(mode, "cache") == 0 ? MODE_CACHE : MODE_MALLOC;
    pthread_mutex_unlock(&cache.lock);
    return true;
}

/* A fresh block of class_size bytes, page aligned (2 MiB aligned from HUGE_MIN on), or NULL. A
 * block under HUGE_MIN has its pages populated at once (MADV_POPULATE_WRITE, Linux 5.14+; advice
 * only): one call that fills them costs less than a fault per 4 KiB page at first touch
 * (a 1 MiB block: 343 us instead of 435 us here). Larger blocks fault a 2 MiB huge page at a time
 * as the kernel writes them: populating hundreds of MiB in one uninterruptible call would hold off
 * Ctrl-C for a second. */
static void *map_block(size_t class_size) {
    char *p;
    if (class_size < HUGE_MIN) {
        p = mmap(NULL, class_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
    } else { /* map a huge page more, then unmap the unaligned head and the tail */
        size_t over = class_size + HUGE_ALIGN;
        char *raw = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return NULL;
        p = (char *)(((uintptr_t)raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
        if (p > raw) munmap(raw, (size_t)(p - raw));
        if (p + class_size < raw + over) munmap(p + class_size, (size_t)(raw + over - (p + class_size)));
#ifdef MADV_HUGEPAGE
        madvise(p, class_size, MADV_HUGEPAGE);
#endif
    }
#ifdef MADV_POPULATE_WRITE
    if (class_size < HUGE_MIN) madvise(p, class_size, MADV_POPULATE_WRITE);
#endif
    return p;
}

/* Unmaps every cached block and frees every small one; the lock is held. */
static size_t trim_locked(void) {
    size_t freed = cache.small_bytes;
    for (size_t c = 0; c < SMALL_CLASSES; c++) {
        while (cache.small_list[c]) {
            void *p = cache.small_list[c];
            UNPOISON(p, (size_t)1 << (SMALL_MIN_SHIFT + c));
            cache.small_list[c] = *(void **)p;
            free(p);
        }
    }
    cache.small_bytes = 0;
    for (size_t c = 0; c < NCLASSES; c++) {
        while (cache.free_list[c]) {
            void *p = cache.free_list[c];
            size_t size = class_size_of(c);
            UNPOISON(p, size);
            cache.free_list[c] = *(void **)p;
            munmap(p, size);
            freed += size;
            cache.stats.cached_bytes -= size;
            cache.stats.cached_blocks--;
            cache.stats.mapped_bytes -= size;
        }
    }
    return freed;
}

size_t mha_alloc_trim(void) {
    pthread_mutex_lock(&cache.lock);
    size_t freed = trim_locked();
    pthread_mutex_unlock(&cache.lock);
    return freed;
}

mha_alloc_stats mha_alloc_get_stats(void) {
    pthread_once(&init_once, init);
    pthread_mutex_lock(&cache.lock);
    mha_alloc_stats s = cache.stats;
    pthread_mutex_unlock(&cache.lock);
    return s;
}

/* A block of class_size from its list, else freshly mapped (after emptying the cache if need
 * be). */
static void *cache_take(size_t class_size) {
    size_t c = class_index(class_size);
    pthread_mutex_lock(&cache.lock);
    void *p = cache.free_list[c];
    if (p) {
        UNPOISON(p, class_size);
        cache.free_list[c] = *(void **)p;
        cache.stats.cached_bytes -= class_size;
        cache.stats.cached_blocks--;
        cache.stats.hits++;
    } else {
        p = map_block(class_size);
        if (p == NULL && trim_locked() > 0) p = map_block(class_size);
        if (p) {
            cache.stats.mapped_bytes += class_size;
            cache.stats.misses++;
        }
    }
    pthread_mutex_unlock(&cache.lock);
    return p;
}

/* Back on its list, or unmapped when the cache would grow past its limit. */
static void cache_give(void *p, size_t class_size) {
    size_t c = class_index(class_size);
    pthread_mutex_lock(&cache.lock);
    if (cache.stats.cached_bytes + class_size <= cache.stats.limit) {
        *(void **)p = cache.free_list[c];
        cache.free_list[c] = p;
        cache.stats.cached_bytes += class_size;
        cache.stats.cached_blocks++;
        POISON(p, class_size);
        p = NULL;
    } else {
        cache.stats.mapped_bytes -= class_size;
    }
    pthread_mutex_unlock(&cache.lock);
    if (p) munmap(p, class_size);
}

/* A small block of class c from its list, else from posix_memalign; NULL when out of memory. */
static void *small_take(size_t c) {
    const size_t size = (size_t)1 << (SMALL_MIN_SHIFT + c);
    pthread_mutex_lock(&cache.lock);
    void *p = cache.small_list[c];
    if (p) {
        UNPOISON(p, size);
        cache.small_list[c] = *(void **)p;
        cache.small_bytes -= size;
    }
    pthread_mutex_unlock(&cache.lock);
    if (!p && posix_memalign(&p, 64, size) != 0) p = NULL;
    return p;
}

/* Back on its list, or to free() when the small lists hold SMALL_LIMIT already. */
static void small_give(void *p, size_t c) {
    const size_t size = (size_t)1 << (SMALL_MIN_SHIFT + c);
    UNPOISON(p, size);   /* mha_alloc poisoned the slack, which may hold the link */
    pthread_mutex_lock(&cache.lock);
    if (cache.small_bytes + size <= SMALL_LIMIT) {
        *(void **)p = cache.small_list[c];
        cache.small_list[c] = p;
        cache.small_bytes += size;
        POISON(p, size);
        p = NULL;
    }
    pthread_mutex_unlock(&cache.lock);
    if (p) free(p);
}

/* ---- the cap on live bytes: one student's tensors cannot take a shared machine's memory ---- */

size_t mha_alloc_max_bytes(void) {
    pthread_once(&init_once, init);
    return atomic_load(&max_bytes);
}

void mha_alloc_set_max_bytes(size_t nbytes) {
    pthread_once(&init_once, init);
    atomic_store(&max_bytes, nbytes);
}

bool mha_alloc_capped(void) { return capped; }

/* Whether nbytes more would pass the cap; if so the failure's message says which cap. The sum is
 * read, not reserved: two threads allocating at once may pass it by one block, which a cap for a
 * classroom tolerates. */
static bool over_cap(size_t nbytes) {
    size_t max = atomic_load(&max_bytes);
    if (max == 0) return false;
    size_t live = atomic_load(&live_bytes);
    if (nbytes <= max && live <= max - nbytes) return false;
    capped = true;
    mha_fail(MHA_E_NOMEM, "tensor memory limit of %zu MB reached (MHA_MAX_MEMORY): %zu MB in use, %zu MB more asked",
             max >> 20, live >> 20, (nbytes + ((size_t)1 << 20) - 1) >> 20);
    return true;
}

/* ---- the entry points (tensor.h) ---- */

void *mha_alloc(size_t nbytes) {
    pthread_once(&init_once, init);
    capped = false;
    if (over_cap(nbytes)) return NULL;
    void *p = NULL;
    size_t class_size = 0;
    if (cache.mode == MODE_CACHE && nbytes >= MHA_ALLOC_MIN_CACHED && (class_size = mha_alloc_class_size(nbytes))) {
        p = cache_take(class_size);
        if (p) POISON((char *)p + nbytes, class_size - nbytes); /* the slack: a write past the end
                                                                   is caught */
    } else if (cache.mode == MODE_CACHE && nbytes < MHA_ALLOC_MIN_CACHED) {
        size_t c = small_class(nbytes);
        p = small_take(c);
        if (p) POISON((char *)p + nbytes, ((size_t)1 << (SMALL_MIN_SHIFT + c)) - nbytes);
    } else if (posix_memalign(&p, 64, nbytes ? nbytes : 1) != 0) {
        p = NULL;
    }
    if (p) account_alloc(nbytes);
    return p;
}

void mha_free(void *p, size_t nbytes) {
    if (!p) return;
    atomic_fetch_sub(&live_bytes, nbytes);
    if (cache.mode == MODE_CACHE && nbytes >= MHA_ALLOC_MIN_CACHED) cache_give(p, mha_alloc_class_size(nbytes));
    else if (cache.mode == MODE_CACHE) small_give(p, small_class(nbytes));
    else free(p);
}
