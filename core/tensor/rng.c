/* core/tensor/rng.c - the one seeded random generator of mha-repl, so every lesson run draws the
 * same numbers, and the fills built on it: rand, randn, uniform_, normal_ and PyTorch's Xavier
 * initialisations.
 *
 * The algorithm, exactly (tests/gen_npy_fixtures.py reproduces it in Python):
 *
 *   generator   xoshiro256** (Blackman and Vigna, 2018): a state of four uint64 s[0..3]; one step
 *                   result = rotl(s[1] * 5, 7) * 9
 *                   t = s[1] << 17
 *                   s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]
 *                   s[2] ^= t;    s[3] = rotl(s[3], 45)
 *               returns result (all arithmetic mod 2^64; rotl(x, k) = (x << k) | (x >> (64 - k))).
 *   seeding     mha_seed(seed): x = seed, then s[i] = splitmix64(x) for i = 0, 1, 2, 3 in that
 *               order, where
 *                   x += 0x9E3779B97F4A7C15; z = x
 *                   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *                   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *                   return z ^ (z >> 31)
 *               The process starts as if mha_seed(42) had been called; mha_get_seed() gives the
 *               last seed.
 *   uniform     u = (next() >> 40) * 2^-24: the top 24 bits, so u is a float in [0, 1) with no
 *               rounding. rand gives u. uniform_(lo, hi) gives float(lo + (hi - lo) * u), computed
 *               in double and rounded once; should that rounding reach hi, the float just below hi
 *               is used instead.
 *   normal      Box-Muller on 53-bit uniforms: for each PAIR of elements (element 2k, element
 *               2k+1), draw
 *                   u1 = (next() >> 11) * 2^-53,  then  u2 = (next() >> 11) * 2^-53
 *                   r = sqrt(-2 ln(1 - u1))                     (1 - u1 is in (0, 1]: no log of 0)
 *                   element 2k = r cos(2 pi u2),  element 2k+1 = r sin(2 pi u2)
 *               An odd count ends with one more pair whose sine half is thrown away; nothing is
 *               kept between calls, so every fill starts on a fresh pair. randn gives float(z),
 *               normal_(mean, std) gives float(mean + std * z), both computed in double and
 *               rounded once.
 *   xavier      fan_in = shape[1] * rf, fan_out = shape[0] * rf, rf = product of shape[2:]
 *               (PyTorch's rule).
 *               xavier_uniform_: a = float(gain * sqrt(6 / (fan_in + fan_out))) in double, then
 *                   uniform_(-a, a).
 *               xavier_normal_: normal_ with mean 0 and
 *                   std = gain * sqrt(2 / (fan_in + fan_out)) kept in double.
 *   order       a tensor is filled in C order (the last index fastest), whatever its shape.
 *
 * The generator is process-wide and not thread-safe: the REPL and the lessons run on one thread. */

#include "tensor/tensor.h"
#include "tensor/tensor_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

static struct {
    bool seeded;     /* false until the first use or mha_seed: the process starts with seed 42 */
    uint64_t seed;
    uint64_t s[4];
} rng;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

void mha_seed(uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng.s[i] = splitmix64(&x);
    rng.seed = seed;
    rng.seeded = true;
}

uint64_t mha_get_seed(void) {
    if (!rng.seeded) mha_seed(42);
    return rng.seed;
}

/* One xoshiro256** step. */
static uint64_t next(void) {
    if (!rng.seeded) mha_seed(42);
    uint64_t *s = rng.s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static float uniform24(void) { return (float)(next() >> 40) * 0x1p-24f; }
static double uniform53(void) { return (double)(next() >> 11) * 0x1p-53; }

/* A float tensor that may be filled in place (the write rule, tensor.h) as one flat C-order array,
 * or an error naming fname. */
static mha_status check_fillable(const mha_tensor *t, const char *fname) {
    char shape[160];
    if (t == NULL || t->storage == NULL) return mha_fail(MHA_E_ARG, "%s: the tensor is empty (released)", fname);
    mha_status st = tensor_begin_write(t, fname);
    if (st != MHA_OK) return st;
    mha_shape_str(shape, sizeof shape, t);
    if (t->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "%s: tensor %s is bool; random fills need a float32 tensor", fname, shape);
    if (mha_numel(t) != 0 && !mha_is_contiguous(t))
        return mha_fail(MHA_E_ARG, "%s: tensor %s is not contiguous (a transposed, narrowed or expanded view); "
                        "fill a contiguous() copy instead", fname, shape);
    return MHA_OK;
}

/* x[i] = float(lo + (hi - lo) * u_i), kept below hi. */
static void fill_uniform(float *x, size_t n, float lo, float hi) {
    float below_hi = nextafterf(hi, -INFINITY);
    for (size_t i = 0; i < n; i++) {
        float v = (float)((double)lo + ((double)hi - (double)lo) * (double)uniform24());
        x[i] = (v >= hi && hi > lo) ? below_hi : v;
    }
}

/* x[i] = float(mean + std * z_i), z by Box-Muller in pairs (see the top of the file). */
static void fill_normal(float *x, size_t n, double mean, double std) {
    for (size_t i = 0; i < n; i += 2) {
        double u1 = uniform53(), u2 = uniform53();
        double r = sqrt(-2.0 * log(1.0 - u1));
        x[i] = (float)(mean + std * (r * cos(2.0 * PI * u2)));
        if (i + 1 < n) x[i + 1] = (float)(mean + std * (r * sin(2.0 * PI * u2)));
    }
}

/* fill_uniform or fill_normal over a run of a tensor's elements (tensor_fill_runs) */
typedef struct random_fill {
    float *x;
    bool normal;
    double a, b;   /* lo and hi, or mean and std */
} random_fill;

static void fill_random_run(void *ctx, size_t first, size_t count) {
    const random_fill *f = ctx;
    if (f->normal) fill_normal(f->x + first, count, f->a, f->b);
    else fill_uniform(f->x + first, count, (float)f->a, (float)f->b);
}

/* t (float32, contiguous) filled with uniform numbers in [a, b) or normal ones of mean a and std b,
 * Ctrl-C polled between runs. */
static mha_status fill_random(mha_tensor *t, bool normal, double a, double b, const char *fname) {
    random_fill f = {mha_f32(t), normal, a, b};
    return tensor_fill_runs(fill_random_run, &f, mha_numel(t), fname);
}

/* A new tensor of shape filled as fill_random says; out untouched on failure. */
static mha_status new_random(mha_tensor *out, size_t ndim, const size_t *shape, bool normal, const char *fname) {
    mha_tensor t = MHA_TENSOR_EMPTY;
    mha_status st = mha_empty_named(&t, MHA_FLOAT32, ndim, shape, fname);
    if (st == MHA_OK && (st = fill_random(&t, normal, 0.0, 1.0, fname)) != MHA_OK) mha_release(&t);
    if (st == MHA_OK) *out = t;
    return st;
}

mha_status mha_rand(mha_tensor *out, size_t ndim, const size_t *shape) { return new_random(out, ndim, shape, false, "rand"); }

mha_status mha_randn(mha_tensor *out, size_t ndim, const size_t *shape) {
    return new_random(out, ndim, shape, true, "randn");
}

mha_status mha_uniform_(mha_tensor *t, float lo, float hi) {
    mha_status st = check_fillable(t, "uniform_");
    if (st != MHA_OK) return st;
    if (!isfinite(lo) || !isfinite(hi) || lo > hi)
        return mha_fail(MHA_E_ARG, "uniform_: the range [%g, %g) is not a finite range with lo <= hi",
                        (double)lo, (double)hi);
    return fill_random(t, false, lo, hi, "uniform_");
}

mha_status mha_normal_(mha_tensor *t, float mean, float std) {
    mha_status st = check_fillable(t, "normal_");
    if (st != MHA_OK) return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0)
        return mha_fail(MHA_E_ARG, "normal_: mean %g and std %g must be finite, with std >= 0",
                        (double)mean, (double)std);
    return fill_random(t, true, mean, std, "normal_");
}

/* PyTorch's _calculate_fan_in_and_fan_out: rf = product of shape[2:], fan_in = shape[1]*rf,
 * fan_out = shape[0]*rf; defined for 2 dimensions or more. Returns fan_in + fan_out. */
static mha_status xavier_fans(double *fan_sum, const mha_tensor *t, float gain, const char *fname) {
    mha_status st = check_fillable(t, fname);
    if (st != MHA_OK) return st;
    char shape[160];
    mha_shape_str(shape, sizeof shape, t);
    if (t->ndim < 2)
        return mha_fail(MHA_E_SHAPE, "%s: tensor %s has %zu dimension%s; fan_in and fan_out need at least 2 "
                        "(a weight (out, in, ...))", fname, shape, t->ndim, t->ndim == 1 ? "" : "s");
    if (!isfinite(gain) || gain < 0)
        return mha_fail(MHA_E_ARG, "%s: gain %g must be finite and >= 0", fname, (double)gain);
    double receptive = 1.0;
    for (size_t d = 2; d < t->ndim; d++) receptive *= (double)t->shape[d];
    *fan_sum = (double)t->shape[1] * receptive + (double)t->shape[0] * receptive;
    return MHA_OK;
}

mha_status mha_xavier_uniform_(mha_tensor *t, float gain) {
    double fan_sum;
    mha_status st = xavier_fans(&fan_sum, t, gain, "xavier_uniform_");
    if (st != MHA_OK) return st;
    if (mha_numel(t) == 0) return MHA_OK;  /* fan_sum may be 0: nothing to fill, no bound to
                                              compute */
    float a = (float)(gain * sqrt(6.0 / fan_sum));
    fill_uniform(mha_f32(t), mha_numel(t), -a, a);
    return MHA_OK;
}

mha_status mha_xavier_normal_(mha_tensor *t, float gain) {
    double fan_sum;
    mha_status st = xavier_fans(&fan_sum, t, gain, "xavier_normal_");
    if (st != MHA_OK) return st;
    if (mha_numel(t) == 0) return MHA_OK;
    fill_normal(mha_f32(t), mha_numel(t), 0.0, (double)gain * sqrt(2.0 / fan_sum));
    return MHA_OK;
}
