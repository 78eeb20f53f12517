/* tests/core/splitmix.h - a small deterministic generator (splitmix64) for the tests of the rooms below
 * tensor (kernels), which must need no other part of the core. Define SPLITMIX_SEED before including. */
#ifndef MHA_TESTS_SPLITMIX_H
#define MHA_TESTS_SPLITMIX_H

#include <stdint.h>

static uint64_t rng_state = SPLITMIX_SEED;

/* A float uniform in [lo, hi) from the next 24 bits of the stream. */
static float uniform(float lo, float hi) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((double)(z >> 40) / (double)(1ULL << 24));
}

#endif
