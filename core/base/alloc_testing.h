/* core/base/alloc_testing.h - what only the tests use of the caching allocator (core/base/alloc.h):
 * switching between the cache and malloc, giving the cache back, its statistics and its size
 * classes. */
#ifndef MHA_ALLOC_TESTING_H
#define MHA_ALLOC_TESTING_H

#include <stdbool.h>
#include <stddef.h>

#include "base/alloc.h"

/* Switch paths; false for an unknown name. Blocks keep the path that allocated them: only
 * switch when nothing allocated since the last switch is live. */
bool mha_alloc_use(const char *mode);

/* Sets the cap on live bytes (alloc.h, MHA_MAX_MEMORY) to nbytes; 0: no cap. */
void mha_alloc_set_max_bytes(size_t nbytes);

/* Unmaps every cached block (not the ones in use); returns the bytes given back. */
size_t mha_alloc_trim(void);

typedef struct mha_alloc_stats {
    size_t cached_bytes;   /* held in free lists, ready for reuse */
    size_t cached_blocks;
    size_t mapped_bytes;   /* mapped by the cache in all: blocks in use plus cached ones */
    size_t hits, misses;   /* cached-size requests served from a list / by a fresh mmap */
    size_t limit;          /* the most the free lists may hold */
} mha_alloc_stats;
mha_alloc_stats mha_alloc_get_stats(void);

/* The size class (bytes actually mapped) for a request of nbytes on the caching path. */
size_t mha_alloc_class_size(size_t nbytes);

#endif
