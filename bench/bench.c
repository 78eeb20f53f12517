/* bench/bench.c - times the matmul, the attention and the MultiheadAttention forward of mha-repl,
 * single-threaded fp32, and prints one table beside NumPy's timings of the same cases (bench_numpy.py).
 *
 * usage: bench                   time every case, print the table
 *        bench --numpy COMMAND   also time each case in NumPy, right after ours, through COMMAND (run by
 *                                /bin/sh: bench_numpy.py, which reads case lines and answers timings)
 *        bench --fair COMMAND    then through COMMAND, the same peers told the kernel OpenBLAS
 *                                should have chosen on this CPU (the Makefile passes it when
 *                                OpenBLAS fell back to its generic one; "" for none): the
 *                                columns "fair ms" and "ours/fair"
 *        bench --only SUBSTRING  time only the cases whose id contains SUBSTRING; --only =ID: the case
 *                                ID alone (bench.lua times each of its cases in turn with C's this way)
 *        bench --threads N       then time both sides again on N threads (default: every core; 1: skip)
 *        bench --save FILE       also write the main table: "meta KEY VALUE" lines (date, CPU,
 *                                peak...) and "row ID key=value..." lines (bench/bench.lua and
 *                                bench/table.lua read them)
 *        bench --cpu             time by CPU time (user + sys of the process) and report the fastest run,
 *                                on both sides: for comparing builds one thread against one on a loaded,
 *                                shared machine, where wall time measures the neighbours
 *        bench --list            print the case lines bench_numpy.py reads
 *        bench --probe           print one peak probe (GFLOP/s by CPU time, bench_fma_probe) and
 *                                exit: bench.lua's probe beside each of its runs
 * Each timed run follows a short FMA probe of the peak (bench/peak.c); a row's %peak is the
 * median over its runs of flops / (run's CPU time x the peak probed just before it, by CPU time
 * too): a change in the VM's speed slows the probe and the run alike and cancels in the row, and
 * CPU time leaves out the time other programs hold the core (which wall time, the ms column, counts).
 * The main table is single-threaded on both sides whatever MHA_THREADS says, with torch 1.13 (one
 * thread) beside NumPy where it is installed; a second table times our kernels split over N threads
 * (kernels.h) against NumPy on N threads, each case back to back.
 * In the main table each case is timed by us and then by NumPy before the next one starts, so a change in
 * the load of a shared machine falls on both sides of a ratio alike; the threads table times all of ours
 * first, as OpenBLAS's threads, once started, slow our second thread (run_threads_table).
 *
 * FLOP counts (a multiply-add is 2 FLOPs; softmax, bias and reshapes are not counted, so GFLOP/s is
 * the rate of the useful matrix work, the same formula for us and for NumPy):
 *   matmul (M,K)·(K,N)                                  2·M·N·K
 *   attention, H heads, L queries, S keys, head dims D, Dv   2·H·L·S·(D + Dv)     (q·kᵀ and weights·v)
 *   MultiheadAttention forward, self-attention, E, H, L:
 *       in-projection 2·L·E·3E + attention 2·H·L·L·(2E/H) + out-projection 2·L·E·E = 8·L·E² + 4·L²·E
 * Peak extra memory is the highest mha_peak_bytes() during one call minus what was live before it:
 * scratch plus the outputs the call returns.
 *
 * No malloc settings: tensor storage and scratch come from the caching allocator (core/base/alloc.h), which
 * reuses freed blocks at once, so a call does not fault its memory in anew, here as in the REPL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "peak.h"

#include "attention/attention.h"
#include "kernels/kernels.h"
#include "tensor/tensor.h"

typedef enum { MATMUL, ATTENTION, MHA } case_kind;

typedef struct bench_case {
    const char *id;   /* the key both programs use */
    const char *what; /* the row label */
    case_kind kind;
    size_t M, K, N;   /* MATMUL: (M,K)·(K,N); transposed_b: B stored (N,K), i.e. x·Wᵀ */
    bool transposed_b;
    size_t H, L, D;   /* ATTENTION: (1,H,L,D) self-attention; MHA: E = H·D */
    bool weights;     /* MHA: need_weights (averaged over heads, torch's default) */
    double target;    /* issue 15's bound on ours/NumPy, one thread against one */
    size_t kv_heads;  /* ATTENTION: 0, or K/V heads shared by groups of the H query heads (enable_gqa) */
} bench_case;

/* The long attention cases last: after them a small case ran 15% slower for the rest of the
 * process, ours and the peers' alike (MHA L=64: 1.80 ms against 1.56 before them). */
static const bench_case CASES[] = {
    {"matmul_512", "matmul (512,512)@(512,512)", MATMUL, 512, 512, 512, false, 0, 0, 0, false, 1.0, 0},
    {"matmul_in_64", "x@W.T in-proj (64,512)->1536", MATMUL, 64, 512, 1536, true, 0, 0, 0, false, 1.0, 0},
    {"matmul_in_512", "x@W.T in-proj (512,512)->1536", MATMUL, 512, 512, 1536, true, 0, 0, 0, false, 1.0, 0},
    {"matmul_in_2048", "x@W.T in-proj (2048,512)->1536", MATMUL, 2048, 512, 1536, true, 0, 0, 0, false, 1.0, 0},
    {"matmul_out_2048", "x@W.T out-proj (2048,512)->512", MATMUL, 2048, 512, 512, true, 0, 0, 0, false, 1.0, 0},
    {"attn_512", "attention H=8 L=512 D=64", ATTENTION, 0, 0, 0, false, 8, 512, 64, false, 0, 0},
    /* issue 21: GQA costs no more than MHA over the same H (K/V never copied per query head) */
    {"attn_512_gqa", "attention GQA H=8/2 L=512 D=64", ATTENTION, 0, 0, 0, false, 8, 512, 64, false, 0, 2},
    {"attn_2048", "attention H=8 L=2048 D=64", ATTENTION, 0, 0, 0, false, 8, 2048, 64, false, 0, 0},
    {"mha_64", "MHA E=512 H=8 L=64", MHA, 0, 0, 0, false, 8, 64, 64, false, 1.0, 0},
    {"mha_64_w", "MHA E=512 H=8 L=64 +weights", MHA, 0, 0, 0, false, 8, 64, 64, true, 1.0, 0},
    {"mha_512", "MHA E=512 H=8 L=512", MHA, 0, 0, 0, false, 8, 512, 64, false, 0.75, 0},
    {"mha_512_w", "MHA E=512 H=8 L=512 +weights", MHA, 0, 0, 0, false, 8, 512, 64, true, 0.8, 0},
    {"mha_2048", "MHA E=512 H=8 L=2048", MHA, 0, 0, 0, false, 8, 2048, 64, false, 0.5, 0},
    {"mha_2048_w", "MHA E=512 H=8 L=2048 +weights", MHA, 0, 0, 0, false, 8, 2048, 64, true, 0.8, 0},
    {"attn_4096", "attention H=8 L=4096 D=64", ATTENTION, 0, 0, 0, false, 8, 4096, 64, false, 0, 0},
    {"attn_16384", "attention H=8 L=16384 D=64", ATTENTION, 0, 0, 0, false, 8, 16384, 64, false, 0.4, 0},
};
enum { NCASES = sizeof CASES / sizeof CASES[0] };

static double flops(const bench_case *c) {
    double L = (double)c->L, E = (double)(c->H * c->D);
    switch (c->kind) {
    case MATMUL: return 2.0 * (double)c->M * (double)c->N * (double)c->K;
    case ATTENTION: return 2.0 * (double)c->H * L * L * (2.0 * (double)c->D);
    case MHA: return 8.0 * L * E * E + 4.0 * L * L * E;
    }
    return 0;
}

/* The softmax's elements, each an exponential the attention cannot skip: H·L·L for both kinds. */
static double softmax_elements(const bench_case *c) {
    return c->kind == MATMUL ? 0.0 : (double)c->H * (double)c->L * (double)c->L;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --cpu: runs are timed by the process's CPU time and a case reports its fastest run, not the median */
static bool cpu_clock = false;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double run_clock(void) { return cpu_clock ? cpu_now() : now(); }

/* ---- one case: inputs made once, then run(), timed ---- */

typedef struct bench_state {
    const bench_case *c;
    float *a, *b, *cmat;              /* MATMUL */
    mha_tensor q, k, v, x;            /* ATTENTION: q (1,H,L,D), k, v (1,H or kv_heads,L,D); MHA: x (1,L,E) */
    mha_multihead m;
} bench_state;

static mha_status fill(mha_tensor *t, size_t ndim, const size_t *shape) {
    mha_status st = mha_empty(t, MHA_FLOAT32, ndim, shape);
    return st == MHA_OK ? mha_uniform_(t, -1.0f, 1.0f) : st;
}

static mha_status setup(bench_state *s) {
    const bench_case *c = s->c;
    mha_status st = MHA_OK;
    if (c->kind == MATMUL) {
        s->a = malloc(c->M * c->K * sizeof(float));
        s->b = malloc(c->K * c->N * sizeof(float));
        s->cmat = malloc(c->M * c->N * sizeof(float));
        if (!s->a || !s->b || !s->cmat) return mha_fail(MHA_E_NOMEM, "bench: %s: out of memory", c->id);
        for (size_t i = 0; i < c->M * c->K; i++) s->a[i] = (float)rand() / RAND_MAX * 2 - 1;
        for (size_t i = 0; i < c->K * c->N; i++) s->b[i] = (float)rand() / RAND_MAX * 2 - 1;
    } else if (c->kind == ATTENTION) {
        size_t shape[4] = {1, c->H, c->L, c->D}, kv_shape[4] = {1, c->kv_heads ? c->kv_heads : c->H, c->L, c->D};
        if ((st = fill(&s->q, 4, shape)) != MHA_OK || (st = fill(&s->k, 4, kv_shape)) != MHA_OK ||
            (st = fill(&s->v, 4, kv_shape)) != MHA_OK)
            return st;
    } else {
        mha_multihead_options opt = {.embed_dim = c->H * c->D, .num_heads = c->H, .bias = true};
        size_t shape[3] = {1, c->L, c->H * c->D};
        if ((st = mha_multihead_init(&s->m, &opt)) != MHA_OK || (st = fill(&s->x, 3, shape)) != MHA_OK) return st;
    }
    return st;
}

static void teardown(bench_state *s) {
    free(s->a); free(s->b); free(s->cmat);
    mha_release(&s->q); mha_release(&s->k); mha_release(&s->v); mha_release(&s->x);
    mha_multihead_release(&s->m);
}

static mha_status run(bench_state *s) {
    const bench_case *c = s->c;
    mha_status st;
    if (c->kind == MATMUL) {
        /* B stored (N,K) read as (K,N) through its strides, as linear reads W */
        ptrdiff_t b_rs = c->transposed_b ? 1 : (ptrdiff_t)c->N, b_cs = c->transposed_b ? (ptrdiff_t)c->K : 1;
        return mha_sgemm(s->cmat, c->N, s->a, (ptrdiff_t)c->K, 1, s->b, b_rs, b_cs, c->M, c->N, c->K, false);
    }
    mha_tensor out = MHA_TENSOR_EMPTY, weights = MHA_TENSOR_EMPTY;
    if (c->kind == ATTENTION) {
        mha_sdpa_options opt = {.enable_gqa = c->kv_heads != 0};
        st = mha_sdpa(&out, NULL, &s->q, &s->k, &s->v, &opt);
    } else {
        mha_forward_options opt = {.need_weights = c->weights, .average_attn_weights = true};
        st = mha_multihead_forward(&out, c->weights ? &weights : NULL, &s->m, &s->x, &s->x, &s->x, &opt, NULL);
    }
    mha_release(&out);
    mha_release(&weights);
    return st;
}

typedef struct timing {
    double median_ms; /* the fastest run's with --cpu */
    size_t runs;
    size_t peak_extra; /* bytes */
    double peak;      /* GFLOP/s: the median of the probes beside the runs (0 when none) */
    double of_peak;   /* median over runs of flops/(run CPU time x its probe); --cpu: the highest */
} timing;

/* Every probe of the peak taken beside a run, for the spread the table prints at its end. */
static double probes[4096];
static size_t nprobes = 0;

/* One probe by CPU time, kept for the spread. */
static double probe(void) {
    double p = bench_fma_probe(mha_kernels_isa(), cpu_now);
    if (p > 0 && nprobes < sizeof probes / sizeof probes[0]) probes[nprobes++] = p;
    return p;
}

static double median_of(double *xs, size_t n);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of xs[0..n) (sorted in place); NAN when n is 0. */
static double median_of(double *xs, size_t n) {
    if (n == 0) return NAN;
    qsort(xs, n, sizeof *xs, cmp_double);
    return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

/* ns per element of mha_softmax_rows on 16 rows of 2048 floats (128 KiB, in L2), by CPU time: the
 * median of 9 probes, each the fastest of 20 calls on a fresh copy. The attention's online softmax
 * does this work and more (the running maxima's rescaling), so a row's softmax elements at this rate
 * add to its time at the FMA peak in the bound ("at peak"). */
static double softmax_probe(void) {
    enum { ROWS = 16, N = 2048, CALLS = 20, PROBES = 9 };
    float *x = malloc(sizeof(float) * ROWS * N), *y = malloc(sizeof(float) * ROWS * N);
    double per[PROBES];
    if (!x || !y) {
        free(x), free(y);
        return 0;
    }
    for (size_t i = 0; i < (size_t)ROWS * N; i++) x[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
    mha_kernels_set_threads(1);
    for (int p = 0; p < PROBES; p++) {
        per[p] = INFINITY;
        for (int c = 0; c < CALLS; c++) {
            memcpy(y, x, sizeof(float) * ROWS * N);
            double t0 = cpu_now();
            mha_softmax_rows(y, N, ROWS, N);
            per[p] = fmin(per[p], (cpu_now() - t0) * 1e9 / (ROWS * N));
        }
    }
    free(x), free(y);
    return median_of(per, PROBES);
}

/* ns per softmax element (softmax_probe), taken once at the start. */
static double softmax_ns = 0;

/* The least time in ms `c` can take on this CPU: its FLOPs at the peak `peak` (GFLOP/s) and its
 * softmax at the probed rate. */
static double least_ms(const bench_case *c, double peak) {
    return flops(c) / (peak * 1e6) + softmax_elements(c) * softmax_ns * 1e-6;
}

/* A warm-up run (which also measures memory), then enough runs for about a second, at least 3, at
 * most MAX_RUNS; a case slower than a second is timed by its warm-up run alone. The median of the
 * runs (a second's worth: at 25 runs a small case's median drifted 10% from run to run), or
 * with --cpu the fastest (other work on the machine only ever makes a run slower). A peak probe
 * (about 2 ms) precedes every run, the warm-up's too; the fraction of the peak is per run. */
enum { MAX_RUNS = 400 };

static mha_status time_case(timing *t, bench_state *s) {
    size_t live = mha_live_bytes();
    mha_reset_peak();
    double first_peak = probe(), c0 = cpu_now();
    double t0 = run_clock();
    mha_status st = run(s);
    double first = run_clock() - t0, first_cpu = cpu_now() - c0;
    t->peak_extra = mha_peak_bytes() - live;
    if (st != MHA_OK) return st;
    double samples[MAX_RUNS], cpu[MAX_RUNS], peaks[MAX_RUNS], fractions[MAX_RUNS];
    size_t n = first > 1.0 ? 0 : (size_t)fmin((double)MAX_RUNS, fmax(3.0, 1.0 / first));
    for (size_t i = 0; i < n; i++) {
        peaks[i] = probe();
        c0 = cpu_now();
        t0 = run_clock();
        if ((st = run(s)) != MHA_OK) return st;
        samples[i] = run_clock() - t0;
        cpu[i] = cpu_now() - c0;
    }
    if (n == 0) {
        samples[0] = first;
        cpu[0] = first_cpu;
        peaks[0] = first_peak;
        n = 1;
    }
    for (size_t i = 0; i < n; i++) fractions[i] = peaks[i] > 0 ? flops(s->c) / (cpu[i] * 1e9) / peaks[i] : 0;
    t->peak = median_of(peaks, n);
    qsort(fractions, n, sizeof *fractions, cmp_double);
    t->of_peak = cpu_clock ? fractions[n - 1] : median_of(fractions, n);
    qsort(samples, n, sizeof *samples, cmp_double);
    t->median_ms = 1e3 * (cpu_clock ? samples[0] : median_of(samples, n));
    t->runs = n;
    return MHA_OK;
}

/* ---- NumPy's side: bench_numpy.py as a coprocess. We write a case line ("id kind sizes..."), it
 * answers "id median_ms runs peak_bytes". ---- */

/* id kind sizes...: matmul M K N transposed_b | attention H L D | attention_gqa H H_kv L D | mha H L D weights */
static void print_case_line(FILE *f, const bench_case *c) {
    if (c->kind == MATMUL) fprintf(f, "%s matmul %zu %zu %zu %d\n", c->id, c->M, c->K, c->N, c->transposed_b);
    else if (c->kind == ATTENTION && c->kv_heads)
        fprintf(f, "%s attention_gqa %zu %zu %zu %zu\n", c->id, c->H, c->kv_heads, c->L, c->D);
    else if (c->kind == ATTENTION) fprintf(f, "%s attention %zu %zu %zu\n", c->id, c->H, c->L, c->D);
    else fprintf(f, "%s mha %zu %zu %zu %d\n", c->id, c->H, c->L, c->D, c->weights);
}

typedef struct numpy_proc {
    pid_t pid;
    FILE *to, *from; /* its stdin, its stdout */
} numpy_proc;

static bool numpy_start(numpy_proc *p, const char *command) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0) return false;
    if (pipe(from_child) != 0) {
        close(to_child[0]); close(to_child[1]);
        return false;
    }
    fflush(stdout);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]); close(to_child[1]); close(from_child[0]); close(from_child[1]);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    if (p->pid < 0) {
        close(to_child[1]); close(from_child[0]);
        return false;
    }
    p->to = fdopen(to_child[1], "w");
    p->from = fdopen(from_child[0], "r");
    return p->to && p->from;
}

typedef struct numpy_timing {
    double ms;
    size_t runs, peak;
    double torch_ms; /* NAN without torch */
} numpy_timing;

/* false when NumPy did not answer (not installed, or the script failed: it says why on stderr) */
static bool numpy_time(numpy_proc *p, const bench_case *c, numpy_timing *t) {
    char line[256], id[64];
    print_case_line(p->to, c);
    if (fflush(p->to) != 0 || !fgets(line, sizeof line, p->from)) return false;
    t->torch_ms = NAN;
    return sscanf(line, "%63s %lf %zu %zu %lf", id, &t->ms, &t->runs, &t->peak, &t->torch_ms) >= 4 &&
           strcmp(id, c->id) == 0;
}

/* One request line that is not a case ("info", "threads N"): the answer after its first word, or NULL. */
static char *numpy_ask(numpy_proc *p, const char *request, char *answer, size_t n) {
    fprintf(p->to, "%s\n", request);
    if (fflush(p->to) != 0 || !fgets(answer, (int)n, p->from)) return NULL;
    answer[strcspn(answer, "\n")] = '\0';
    char *rest = strchr(answer, ' ');
    return rest ? rest + 1 : answer + strlen(answer);
}

static void numpy_stop(numpy_proc *p) {
    if (p->to) fclose(p->to);
    if (p->from) fclose(p->from);
    if (p->pid > 0) waitpid(p->pid, NULL, 0);
}

/* One case's results in the main table (single thread), kept for the threads table and --save. */
typedef struct case_result {
    bool done;
    double ours_ms, numpy_ms, torch_ms; /* NAN when not timed */
    double fair_numpy_ms, fair_torch_ms; /* the peers told their kernel (--fair); NAN without */
    double peak, of_peak;                /* timing's */
} case_result;

/* The faster of two peer timings, either NAN when not timed. */
static double best_of(double a, double b) { return isnan(a) ? b : isnan(b) ? a : fmin(a, b); }

/* Times one case of ours on `threads` threads; false (the row printed as failed) when it cannot run. */
static bool time_ours(timing *t, const bench_case *c, size_t threads) {
    bench_state s = {.c = c};
    mha_kernels_set_threads(threads);
    mha_status st = setup(&s);
    if (st == MHA_OK) st = time_case(t, &s);
    mha_kernels_set_threads(1);
    teardown(&s);
    if (st != MHA_OK) printf("%-32s failed: %s\n", c->what, mha_errmsg());
    return st == MHA_OK;
}

static void print_ours(const bench_case *c, const timing *t) {
    printf("%-32s %4zu %10.3f %8.1f %8.1f |", c->what, t->runs, t->median_ms, flops(c) / (t->median_ms * 1e6),
           (double)t->peak_extra / 1048576.0);
}

/* Whether --only selects the case: its id contains `only`, or is `only` past a leading '='. */
static bool selected(const char *id, const char *only) {
    if (!only) return true;
    return only[0] == '=' ? strcmp(id, only + 1) == 0 : strstr(id, only) != NULL;
}

/* The main table: every selected case on one thread, ours and then the peers' back to back (the
 * rule's, then the fair ones when `fair` runs); fills results[]. */
static int run_table(const char *only, numpy_proc *numpy, bool have_numpy, numpy_proc *fair, bool have_fair,
                     case_result *results) {
    int failures = 0;
    for (size_t i = 0; i < NCASES; i++) {
        const bench_case *c = &CASES[i];
        timing t = {0};
        if (!selected(c->id, only)) continue;
        if (!time_ours(&t, c, 1)) {
            failures++;
            continue;
        }
        print_ours(c, &t);
        numpy_timing np = {.ms = NAN, .torch_ms = NAN}, fp = {.ms = NAN, .torch_ms = NAN};
        bool np_ok = have_numpy && numpy_time(numpy, c, &np);
        bool fp_ok = have_fair && numpy_time(fair, c, &fp);
        results[i] = (case_result){true, t.median_ms, np_ok ? np.ms : NAN, np_ok ? np.torch_ms : NAN,
                                   fp_ok ? fp.ms : NAN, fp_ok ? fp.torch_ms : NAN, t.peak, t.of_peak};
        if (np_ok)
            printf(" %10.3f %8.1f %8.1f | %10.3f | %7.2f", np.ms, flops(c) / (np.ms * 1e6),
                   (double)np.peak / 1048576.0, np.torch_ms, t.median_ms / np.ms);
        else
            printf(" %10s %8s %8s | %10s | %7s", "-", "-", "-", "-", "-");
        /* the target, and the ratio our time would give if every FLOP ran at the peak and the softmax
         * at the probed rate: no code of ours reaches a target below it on this machine */
        const double fair_ms = best_of(results[i].fair_numpy_ms, results[i].fair_torch_ms);
        if (have_fair) printf(" | %9.3f %9.2f", fair_ms, t.median_ms / fair_ms);
        char target[16] = "-", bound[16] = "-";
        if (c->target > 0) snprintf(target, sizeof target, "%.2f", c->target);
        if (np_ok && t.peak > 0) snprintf(bound, sizeof bound, "%.2f", least_ms(c, t.peak) / np.ms);
        printf(" %6s %7s", target, bound);
        /* the peak probed beside the runs, ours' fraction of it run by run, the kernel variant */
        if (t.peak > 0) printf(" %7.1f %6.0f%%", t.peak, 100.0 * t.of_peak);
        else printf(" %7s %7s", "-", "-");
        printf(" %-8s\n", mha_kernels_isa());
        fflush(stdout);
    }
    return failures;
}

/* The threads table: every selected case of ours on `threads` threads first, and only then NumPy's on as many.
 * Once OpenBLAS has started its threads they take the core our second thread needs even between NumPy's
 * calls: timed case by case behind them, the (64,512)->1536 in-projection on 2 threads read 1.01x its
 * 1-thread time; with NumPy still on one thread, 1.61x; alone, 1.93x. */
static int run_threads_table(const char *only, numpy_proc *numpy, bool have_numpy, size_t threads,
                             const case_result *results) {
    int failures = 0;
    timing ours[NCASES] = {{0}};
    bool done[NCASES] = {false};
    for (size_t i = 0; i < NCASES; i++) {
        if (!selected(CASES[i].id, only)) continue;
        done[i] = time_ours(&ours[i], &CASES[i], threads);
        failures += !done[i];
    }
    char request[32], answer[64];
    snprintf(request, sizeof request, "threads %zu", threads);
    have_numpy = have_numpy && numpy_ask(numpy, request, answer, sizeof answer);
    for (size_t i = 0; i < NCASES; i++) {
        if (!done[i]) continue;
        const bench_case *c = &CASES[i];
        numpy_timing np = {.ms = NAN, .torch_ms = NAN};
        bool np_ok = have_numpy && numpy_time(numpy, c, &np);
        double one = results[i].done ? results[i].ours_ms : NAN;
        print_ours(c, &ours[i]);
        printf(" %10.3f %7.2f | %10.3f | %7.2f\n", one, one / ours[i].median_ms, np_ok ? np.ms : NAN,
               np_ok ? ours[i].median_ms / np.ms : NAN);
        fflush(stdout);
    }
    return failures;
}

/* The value of the first line of /proc/cpuinfo whose key is `key` ("model name"), or `fallback`. */
static const char *cpu_field(char *buf, size_t n, const char *key, const char *fallback) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, n, "%s", fallback);
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, key, strlen(key)) == 0 && colon && (line[strlen(key)] == '\t' || line[strlen(key)] == ' ')) {
            snprintf(buf, n, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
    return buf;
}

/* What the header says about the run, written to --save's file too. */
typedef struct run_info {
    char date[64], cpu[160], family[16], model[16], load[64];
    const char *isa;
    double ghz;                           /* the best of 5 runs at the start */
    double probe_lo, probe_mid, probe_hi; /* GFLOP/s: the spread of 9 peak probes at the start */
    const char *blas, *fair_blas; /* the peers' "info" answers, or NULL */
} run_info;

static void print_header(const run_info *r, long cores, bool avx512) {
    printf("mha-repl benchmark, %s: %s (family %s model %s), %ld core(s), load average %s\n", r->date, r->cpu,
           r->family, r->model, cores, r->load);
    printf("main table: single thread, fp32, kernels \"%s\"; memory: %s allocator\n", r->isa, mha_alloc_mode());
    if (r->probe_mid > 0)
        printf("fp32 peak of one core (independent FMAs in registers, 9 probes of 2 ms CPU time): %.1f GFLOP/s median, "
               "%.1f-%.1f\n  = clock %.2f GHz x %.1f FLOP/cycle; a probe precedes every run of the main table\n",
               r->probe_mid, r->probe_lo, r->probe_hi, r->ghz, r->probe_mid / r->ghz);
    if (r->blas) printf("NumPy: %s (OpenBLAS on one thread here; torch too)\n", r->blas);
    /* OpenBLAS 0.3.21 does not know every CPU it runs on (a 2023 AVX-512 Xeon is "Prescott" to it) */
    if (r->blas && strstr(r->blas, "Prescott"))
        printf("  (OpenBLAS did not recognise this CPU and runs its generic Prescott kernel; the fair peer is "
               "OPENBLAS_CORETYPE=%s, see docs/performance.md)\n", avx512 ? "SkylakeX" : "Haswell");
    if (r->fair_blas) printf("fair peers: %s (the same OpenBLAS told its kernel: columns fair ms, ours/fair)\n", r->fair_blas);
    printf("ms: %s; GFLOP/s: formulas at the top of bench/bench.c; MiB: peak extra memory\n",
           cpu_clock ? "CPU time (user+sys) of the fastest run" : "median of the runs");
    if (r->blas && r->probe_mid > 0)
        printf("target: issue 15's bound on ours/np; at peak: ours/np if every FLOP of ours ran at the peak probed "
               "beside the row\n  and each softmax element at the softmax probe's %.3f ns (copies free), the least "
               "our code can reach here\n", softmax_ns);
    if (r->fair_blas) printf("fair ms: the faster of the fair NumPy and torch; ours/fair: ours ms / fair ms\n");
    size_t mc, kc, nc, caches[3];
    mha_kernels_blocking(&mc, &kc, &nc, caches);
    printf("caches: L1d %zu KiB, L2 %zu KiB, L3 %zu KiB (0: unknown); matmul blocking MC %zu, KC %zu (fixed: it sets "
           "the order of each sum), NC %zu\n", caches[0] / 1024, caches[1] / 1024, caches[2] / 1024, mc, kc, nc);
    printf("peak: median GFLOP/s of the probes taken just before each run of the row; %%peak: the median over the\n"
           "row's runs of its GFLOP/s over its probe, both by CPU time (other programs' turns on the core left out);\n"
           "kernels: the variant that ran the row (make bench ISA=avx2 times another)\n");
    printf("\n%-32s %4s %10s %8s %8s | %10s %8s %8s | %10s | %7s", "case", "runs", "ours ms", "GFLOP/s", "MiB",
           "numpy ms", "GFLOP/s", "MiB", "torch ms", "ours/np");
    if (r->fair_blas) printf(" | %9s %9s", "fair ms", "ours/fair");
    printf(" %6s %7s %7s %7s %-8s\n", "target", "at peak", "peak", "%peak", "kernels");
}

/* --save: the header as "meta KEY VALUE" lines, then a "row ID key=value..." line a case (nan: not
 * timed). */
static bool save_results(const char *path, const run_info *r, const case_result *results) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "meta date %s\nmeta cpu %s\nmeta family %s\nmeta model %s\nmeta isa %s\nmeta load %s\n", r->date,
            r->cpu, r->family, r->model, r->isa, r->load);
    fprintf(f, "meta peak %.1f\nmeta probes %.1f %.1f %.1f\n", r->probe_mid, r->probe_lo, r->probe_mid, r->probe_hi);
    fprintf(f, "meta softmax_ns %.4f\n", softmax_ns);
    if (r->blas) fprintf(f, "meta peer %s\n", r->blas);
    if (r->fair_blas) fprintf(f, "meta fair %s\n", r->fair_blas);
    for (size_t i = 0; i < NCASES; i++) {
        const case_result *x = &results[i];
        if (!x->done) continue;
        fprintf(f, "row %s ours=%.4f numpy=%.4f torch=%.4f fair_numpy=%.4f fair_torch=%.4f gflop=%.6f peak=%.2f "
                "of_peak=%.4f target=%.2f softmax_ms=%.4f\n", CASES[i].id, x->ours_ms, x->numpy_ms, x->torch_ms,
                x->fair_numpy_ms, x->fair_torch_ms, flops(&CASES[i]) / 1e9, x->peak, x->of_peak, CASES[i].target,
                softmax_elements(&CASES[i]) * softmax_ns * 1e-6);
    }
    return fclose(f) == 0;
}

/* The min, median and max of xs[0..n) (sorted in place). */
static void spread(double out[3], double *xs, size_t n) {
    out[1] = median_of(xs, n);
    out[0] = n ? xs[0] : NAN;
    out[2] = n ? xs[n - 1] : NAN;
}

int main(int argc, char **argv) {
    const char *numpy_command = NULL, *fair_command = NULL, *only = NULL, *save = NULL;
    bool probe_only = false;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cores > 1 ? (size_t)cores : 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0) {
            for (size_t c = 0; c < NCASES; c++) print_case_line(stdout, &CASES[c]);
            return 0;
        } else if (strcmp(argv[i], "--numpy") == 0 && i + 1 < argc) {
            numpy_command = argv[++i];
        } else if (strcmp(argv[i], "--fair") == 0 && i + 1 < argc) {
            fair_command = argv[++i];
        } else if (strcmp(argv[i], "--cpu") == 0) {
            cpu_clock = true;
        } else if (strcmp(argv[i], "--probe") == 0) {
            probe_only = true;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--save") == 0 && i + 1 < argc) {
            save = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 1) {
            threads = (size_t)atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench [--numpy COMMAND] [--fair COMMAND] [--only SUBSTRING] [--threads N] [--cpu] "
                            "[--save FILE] [--list] [--probe]\n");
            return 2;
        }
    }
    if (probe_only) {
        printf("%.2f\n", bench_fma_probe(mha_kernels_isa(), cpu_now));
        return 0;
    }
    numpy_proc numpy = {0}, fair = {0};
    bool have_numpy = numpy_command && numpy_start(&numpy, numpy_command);
    bool have_fair = fair_command && *fair_command && numpy_start(&fair, fair_command);
    char info[512], fair_info[512], clock_answer[64];
    run_info r = {.isa = mha_kernels_isa()};
    r.blas = have_numpy ? numpy_ask(&numpy, "info", info, sizeof info) : NULL;
    r.fair_blas = have_fair ? numpy_ask(&fair, "info", fair_info, sizeof fair_info) : NULL;
    have_numpy = r.blas != NULL;
    have_fair = r.fair_blas != NULL;
    if (have_numpy && cpu_clock) have_numpy = numpy_ask(&numpy, "clock cpu", clock_answer, sizeof clock_answer) != NULL;
    if (have_fair && cpu_clock) have_fair = numpy_ask(&fair, "clock cpu", clock_answer, sizeof clock_answer) != NULL;

    /* the clock, the best of 5 runs (other work on a shared machine only ever makes them slower),
     * and the spread of the probes the rows use */
    r.ghz = bench_clock_ghz(run_clock, 5);
    double start[9], s3[3];
    for (int i = 0; i < 9; i++) start[i] = bench_fma_probe(r.isa, cpu_now);
    spread(s3, start, 9);
    r.probe_lo = s3[0], r.probe_mid = s3[1], r.probe_hi = s3[2];
    softmax_ns = softmax_probe();
    time_t now_t = time(NULL);
    strftime(r.date, sizeof r.date, "%Y-%m-%d %H:%M UTC", gmtime(&now_t));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 0) load[0] = load[1] = load[2] = NAN;
    snprintf(r.load, sizeof r.load, "%.2f %.2f %.2f", load[0], load[1], load[2]);
    cpu_field(r.cpu, sizeof r.cpu, "model name", "unknown CPU");
    cpu_field(r.family, sizeof r.family, "cpu family", "?");
    cpu_field(r.model, sizeof r.model, "model", "?");
    const char *names[4];
    mha_kernels_isa_list(names, 4); /* what this CPU runs, fastest first */
    print_header(&r, cores, strcmp(names[0], "avx512") == 0);

    case_result results[NCASES] = {{0}};
    int failures = run_table(only, &numpy, have_numpy, &fair, have_fair, results);
    double all[3];
    spread(all, probes, nprobes);
    if (nprobes)
        printf("peak probes beside the runs: %.1f / %.1f / %.1f GFLOP/s (min / median / max of %zu)\n", all[0], all[1],
               all[2], nprobes);
    if (save && !save_results(save, &r, results)) {
        fprintf(stderr, "bench: cannot write %s\n", save);
        failures++;
    }
    numpy_stop(&fair);
    if (threads > 1) {
        printf("\nAll cores: our kernels on %zu threads against NumPy (OpenBLAS) on %zu threads (all of ours timed\n"
               "first; x1 = our 1-thread ms from the table above / our %zu-thread ms)\n", threads, threads, threads);
        printf("%-32s %4s %10s %8s %8s | %10s %7s | %10s | %7s\n", "case", "runs", "ours ms", "GFLOP/s", "MiB",
               "1-thr ms", "x1", "numpy ms", "ours/np");
        failures += run_threads_table(only, &numpy, have_numpy, threads, results);
    }
    numpy_stop(&numpy);
    return failures ? 1 : 0;
}
