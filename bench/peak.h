/* bench/peak.h - the machine's fp32 peak of one core (independent FMAs in registers) and its clock, which both
 * benchmarks print, so that each ratio can be set beside the best any code could do on this CPU. */
#ifndef MHA_BENCH_PEAK_H
#define MHA_BENCH_PEAK_H

/* A clock in seconds: wall time, or the process's CPU time on a shared machine. */
typedef double (*bench_clock_fn)(void);

/* The clock in GHz (0 off x86-64): the best of `tries` short runs timed by `clock`, since other
 * work only slows a run. */
double bench_clock_ghz(bench_clock_fn clock, int tries);

/* GFLOP/s of one core on the kernels' ISA ("avx512", "avx2"; 0 for another) in about 2 ms, the
 * best of two probes: taken beside each timed run, so that a run's fraction of the peak is its own
 * FLOP rate over the peak of that moment, and the VM's swings in speed cancel. */
double bench_fma_probe(const char *isa, bench_clock_fn clock);

#endif
