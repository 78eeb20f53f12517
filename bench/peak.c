/* bench/peak.c - the fp32 peak of one core from independent FMAs held in registers, and the clock
 * from a chain of dependent integer adds (peak.h): what bench and bench_grad set each run beside. */
#include "peak.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Cycles per second from a chain of dependent register-to-register adds (one cycle each). Not adds of
 * a constant: Golden Cove and later fold those at rename, several a cycle (the Xeon of family 6
 * model 207 read "10.6 GHz" that way). */
static double clock_once(bench_clock_fn clock) {
    const long n = 80000000;
    unsigned long x = 1;
    double t0 = clock();
    for (long i = 0; i < n; i += 8)
        __asm__ volatile("add %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\t"
                         "add %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\tadd %0,%0" : "+r"(x));
    return (double)n / (clock() - t0) / 1e9;
}

/* 12 independent chains of 16-lane FMAs: enough to fill both pipes whatever the latency. */
__attribute__((target("avx512f,fma"))) static double fma_avx512(bench_clock_fn clock, long n) {
    __m512 acc[12];
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
    for (int i = 0; i < 12; i++) acc[i] = _mm512_set1_ps((float)i);
    double t0 = clock();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    }
    double t = clock() - t0;
    float sink = 0;
    for (int i = 0; i < 12; i++) sink += _mm512_reduce_add_ps(acc[i]);
    return sink == 12345.0f ? 0 : (double)n * 12 * 16 * 2 / t / 1e9;
}

/* The same with 8-lane FMAs. */
__attribute__((target("avx2,fma"))) static double fma_avx2(bench_clock_fn clock, long n) {
    __m256 acc[12];
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-6f);
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)i);
    double t0 = clock();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    }
    double t = clock() - t0;
    float lanes[8], sink = 0;
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(lanes, acc[i]);
        for (int j = 0; j < 8; j++) sink += lanes[j];
    }
    return sink == 12345.0f ? 0 : (double)n * 12 * 8 * 2 / t / 1e9;
}

/* The best of `tries` runs of n steps of 12 FMAs each: short runs, since on a shared VM a run of
 * 50 ms is rarely left alone (one read 82 GFLOP/s under load where 1 ms probes beside it read 158). */
static double fma_best(const char *isa, bench_clock_fn clock, int tries, long n) {
    double best = 0;
    for (int i = 0; i < tries; i++) {
        if (strcmp(isa, "avx512") == 0) best = fmax(best, fma_avx512(clock, n));
        else if (strcmp(isa, "avx2") == 0) best = fmax(best, fma_avx2(clock, n));
    }
    return best;
}

/* 300k steps: about 0.8 ms a run on AVX-512 at 150 GFLOP/s, 1.5 ms on AVX2 at 75; the best of two,
 * since an interrupt inside one short run only slows it */
double bench_fma_probe(const char *isa, bench_clock_fn clock) { return fma_best(isa, clock, 2, 300000); }

double bench_clock_ghz(bench_clock_fn clock, int tries) {
    double best = 0;
    for (int i = 0; i < tries; i++) best = fmax(best, clock_once(clock));
    return best;
}
#else
double bench_fma_probe(const char *isa, bench_clock_fn clock) { return 0; }
double bench_clock_ghz(bench_clock_fn clock, int tries) { return 0; }
#endif
