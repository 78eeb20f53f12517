/* core/base/alloc.h - where tensor storage and kernel scratch come from: a caching allocator that
 * keeps freed blocks of 64 KiB and more in size classes and hands them out again at once, beside
 * plain malloc. */
#ifndef MHA_ALLOC_H
#define MHA_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* mha_alloc(nbytes) / mha_free(p, nbytes) take every core allocation.
 *
 * Why a cache: a freed block of a megabyte goes back to the kernel
 * (glibc munmaps it or trims the heap), so the next one lands on fresh pages and each first touch
 * of a 4 KiB page is a fault (~17 us on this VM). In a Lua loop `for i = 1, 200 do local c =
 * mha.matmul(a, b) end` the garbage waits for the collector, is freed in a batch, and every new
 * result faulted in anew: 170 faults a call.
 *
 * How (the idea of PyTorch's caching allocators): a request of MHA_ALLOC_MIN_CACHED bytes or more
 * is rounded up to its size class - four classes per power of two, so at most 25% over - and served
 * from that class's free list when it holds a block, else by a fresh mmap
 * (64-byte aligned at least; blocks of 4 MiB and more 2 MiB aligned and advised to transparent huge
 * pages). A freed block goes on its class's list (most recently freed first: its pages are the
 * warmest) unless the cache would then hold more than its limit, when it is unmapped. A failed mmap
 * empties the cache and tries once more. Smaller requests (graph nodes, small tensors) are rounded
 * up to a power of two from 64 bytes and kept on free lists of their own, up to 4 MiB in all, fresh
 * ones from posix_memalign: a graph's dozens of small blocks per call cost glibc's aligned
 * allocation and bin consolidation otherwise.
 *
 * Modes: MHA_ALLOC=malloc in the environment (read at the first allocation) selects the plain path,
 * malloc and free for everything (64-byte aligned); MHA_ALLOC=cache the caching one. The default is
 * the cache, except in an AddressSanitizer build, where it is malloc so that ASan sees every block;
 * when the cache is forced there, cached blocks and the rounding slack are poisoned, so a use after
 * free or a write past the end is still reported. Thread-safe (one mutex); the cache is unmapped at
 * exit. */

/* Every core allocation (storages and kernel scratch) goes through these, so the REPL's :time can
 * show what tensors hold and the benchmark can show peak extra memory. */
void *mha_alloc(size_t nbytes);          /* NULL on failure (the caller reports MHA_E_NOMEM) */
void mha_free(void *p, size_t nbytes);   /* nbytes as allocated; NULL-safe */
size_t mha_live_bytes(void);             /* bytes allocated and not yet freed */
size_t mha_peak_bytes(void);             /* highest mha_live_bytes() since the last reset */
void mha_reset_peak(void);               /* peak := live */

#define MHA_ALLOC_MIN_CACHED ((size_t)64 << 10)

/* The cap on live bytes, for a machine shared by a class: MHA_MAX_MEMORY=N in the environment
 * (megabytes, read at the first allocation) makes mha_alloc refuse a request that would take
 * mha_live_bytes() past N MB. 0 (the default) is no cap. mha_alloc_capped() says whether this
 * thread's last mha_alloc was refused by the cap; mha_errmsg() then reads "tensor memory limit of
 * N MB reached (MHA_MAX_MEMORY): ...", which the Lua binding adds to its out-of-memory error. */
size_t mha_alloc_max_bytes(void);
bool mha_alloc_capped(void);

/* Which path serves allocations now: "cache" or "malloc". */
const char *mha_alloc_mode(void);
/* Switching paths, trimming the cache and its statistics are for the tests:
 * base/alloc_testing.h. */

#endif
