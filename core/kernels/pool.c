/* core/kernels/pool.c - the threads a kernel call splits its work over (kernels.h, "Threads"):
 * workers started once, parked between calls, woken to run one part each of a split call. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "kernels/kernels_testing.h"

enum { MAX_THREADS = 64 };

static size_t threads_setting = 1;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static _Thread_local bool in_part; /* this thread runs a part: calls it makes are not split again */

static size_t threads_clamp(size_t n) { return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n; }

/* MHA_THREADS: a whole positive number; without it (or with anything else) every online core */
static void threads_read_env(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    threads_setting = threads_clamp(cores > 0 ? (size_t)cores : 1);
    const char *env = getenv("MHA_THREADS");
    char *end = NULL;
    unsigned long n = env ? strtoul(env, &end, 10) : 0;
    if (env && *env >= '0' && *env <= '9' && *end == '\0' && n > 0)
        threads_setting = threads_clamp(n);
}

size_t mha_kernels_threads(void) {
    pthread_once(&threads_once, threads_read_env);
    return in_part ? 1 : threads_setting;
}

void mha_kernels_set_threads(size_t n) {
    pthread_once(&threads_once, threads_read_env);
    threads_setting = threads_clamp(n);
}

/* Below this many FLOPs a call stays on one thread. Handing a part to a worker costs 1-4 us when
 * it still polls and 10-13 us when it sleeps (starting a thread per call costs 13-16 us, 37-43 us
 * from idle).
 * Measured on the 2-core Xeon, x·Wᵀ with K = 512 split in two against one thread (medians): 8.4
 * MFLOP 1.03-1.10x the time, 12.6 MFLOP 0.56-0.97x; so calls from 8 MFLOP (about 0.1 ms on one
 * core) are split. */
static double split_min_flops = 8e6;

size_t mha_kernels_parts(size_t units, double flops) {
    size_t threads = mha_kernels_threads();
    if (flops < split_min_flops || units < 1) return 1;
    return threads < units ? threads : units;
}

void mha_kernels_set_split_min(double flops) { split_min_flops = flops > 0 ? flops : 0; }

/* ---------------------------------------------------------------------------------------------
 * The pool: workers 1..MAX_THREADS-1 are offered a call. The caller writes the job into each
 * worker's slot and marks it OFFERED; a worker takes it (OFFERED -> RUNNING), runs parts and marks
 * the slot IDLE. The parts are claimed one at a time from the call's counter by whichever thread
 * is free, the caller too, so a worker the scheduler wakes late (2 cores shared by more threads)
 * still takes what is left, and a call split into more parts than threads shares them out by
 * speed; when the counter runs out, the caller takes back every offer no worker has taken yet
 * (OFFERED -> IDLE) and waits for the workers that run. Which thread runs a part changes nothing
 * in its bits: parts own disjoint outputs. Without take-back (a test's setting) worker w runs part
 * w alone and the caller part 0. A worker polls its slot for SPIN_NS after its last part (the calls
 * of one layer follow each other within microseconds), yielding the core now and then, then sleeps
 * on its condition variable. One call at a time uses the pool; a second thread calling meanwhile
 * runs its parts itself, one after another.
 * ------------------------------------------------------------------------------------------- */

enum { SPIN_NS = 50 * 1000, SPINS_PER_YIELD = 64 };
enum { IDLE, OFFERED, RUNNING };

static bool take_back = true; /* the caller runs the parts no worker has taken yet */

void mha_kernels_set_take_back(bool on) { take_back = on; }

typedef struct worker {
    pthread_t thread;
    pthread_cond_t wake;
    atomic_int state;     /* IDLE, OFFERED (the job is written), RUNNING (the worker runs it) */
    bool sleeping;        /* under pool.lock: waiting on wake */
    mha_part_fn fn;       /* the job: part `part` of nparts, or parts from the counter */
    void *ctx;
    size_t part, nparts;
    size_t failed;        /* the lowest part this worker ran that failed; nparts when none */
    mha_status status;    /* that part's status */
    char message[512];    /* its mha_errmsg(), which lives in the thread that ran it */
} worker;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t done;  /* the caller sleeps here until every worker it offered a part is IDLE */
    bool caller_sleeping; /* under lock */
    bool stop;            /* under lock: workers exit (at the program's exit) */
    atomic_flag busy;     /* a call is using the pool */
    size_t started;       /* workers 1..started are running */
    bool shared;          /* this call's parts come from `next` (take-back), else one a worker */
    atomic_size_t next;   /* the next part of this call not claimed yet */
    bool registered;      /* pool_stop runs at exit, pool_forget in a forked child */
    worker workers[MAX_THREADS];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER,
          .busy = ATOMIC_FLAG_INIT};

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One turn of a polling loop: a pause, and every SPINS_PER_YIELD turns the core handed to another
 * thread; false once SPIN_NS have passed since `start`. */
static bool spin_on(unsigned *spins, long long start) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (++*spins % SPINS_PER_YIELD != 0) return true;
    sched_yield();
    return now_ns() - start < SPIN_NS;
}

/* Runs one part with in_part set; a failure's message goes to message (size bytes), when given. */
static mha_status part_do(mha_part_fn fn, void *ctx, size_t part, size_t nparts, char *message,
                          size_t size) {
    bool outer = in_part;
    in_part = true;
    mha_status status = fn(ctx, part, nparts);
    in_part = outer;
    if (status != MHA_OK && message) snprintf(message, size, "%s", mha_errmsg());
    return status;
}

/* Runs part `part` for w (a worker, or the caller's record), keeping the lowest failure. */
static void part_record(worker *w, size_t part) {
    char message[512];
    mha_status status = part_do(w->fn, w->ctx, part, w->nparts, message, sizeof message);
    if (status != MHA_OK && part < w->failed) {
        w->failed = part, w->status = status;
        snprintf(w->message, sizeof w->message, "%s", message);
    }
}

/* Runs parts claimed from the call's counter until none is left. */
static void parts_claim(worker *w) {
    for (;;) {
        size_t part = atomic_fetch_add(&pool.next, 1);
        if (part >= w->nparts) return;
        part_record(w, part);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    for (;;) {
        /* pass 1: poll the slot a while, then sleep until a part is offered or the pool stops */
        long long start = now_ns();
        unsigned spins = 0;
        while (atomic_load(&w->state) != OFFERED && spin_on(&spins, start)) {}
        if (atomic_load(&w->state) != OFFERED) {
            pthread_mutex_lock(&pool.lock);
            while (atomic_load(&w->state) != OFFERED && !pool.stop) {
                w->sleeping = true;
                pthread_cond_wait(&w->wake, &pool.lock);
                w->sleeping = false;
            }
            bool stop = pool.stop;
            pthread_mutex_unlock(&pool.lock);
            if (stop) return NULL;
        }
        /* pass 2: take the part unless the caller took it back, run it, tell a sleeping caller */
        int offered = OFFERED;
        if (!atomic_compare_exchange_strong(&w->state, &offered, RUNNING)) continue;
        if (pool.shared) parts_claim(w);
        else part_record(w, w->part);
        atomic_store(&w->state, IDLE);
        pthread_mutex_lock(&pool.lock);
        if (pool.caller_sleeping) pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
}

/* At the program's exit: the workers leave their loop and are joined, so nothing outlives main. */
static void pool_stop(void) {
    pthread_mutex_lock(&pool.lock);
    pool.stop = true;
    for (size_t w = 1; w <= pool.started; w++) pthread_cond_signal(&pool.workers[w].wake);
    pthread_mutex_unlock(&pool.lock);
    for (size_t w = 1; w <= pool.started; w++) {
        pthread_join(pool.workers[w].thread, NULL);
        pthread_cond_destroy(&pool.workers[w].wake);
    }
    pool.started = 0;
}

/* In the child of a fork: the workers stayed in the parent, so the child starts its own if it
 * splits a call. */
static void pool_forget(void) {
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.done, NULL);
    for (size_t w = 1; w <= pool.started; w++) pthread_cond_init(&pool.workers[w].wake, NULL);
    atomic_flag_clear(&pool.busy);
    pool.started = 0;
}

/* Starts workers up to `want` (the caller holds pool.busy); returns how many run (more than
 * `want` when an earlier call started more). The workers start with every signal blocked (they
 * inherit the mask), so a Ctrl-C is taken by the caller's thread, as if there were no threads. */
static size_t pool_grow(size_t want) {
    if (pool.started >= want || pool.stop) return pool.started;
    if (!pool.registered) {
        if (atexit(pool_stop) != 0 || pthread_atfork(NULL, NULL, pool_forget) != 0) return 0;
        pool.registered = true;
    }
    sigset_t all, caller;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &caller);
    while (pool.started < want) {
        worker *w = &pool.workers[pool.started + 1];
        if (pthread_cond_init(&w->wake, NULL) != 0) break;
        atomic_init(&w->state, IDLE);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pthread_cond_destroy(&w->wake);
            break;
        }
        pool.started++;
    }
    pthread_sigmask(SIG_SETMASK, &caller, NULL);
    return pool.started;
}

/* Parts one after another on this thread: the lowest failing part's status, its message kept. */
static mha_status run_here(mha_part_fn fn, void *ctx, size_t nparts) {
    for (size_t part = 0; part < nparts; part++) {
        mha_status status = part_do(fn, ctx, part, nparts, NULL, 0);
        if (status != MHA_OK) return status;
    }
    return MHA_OK;
}

/* A part offered to workers 1..workers is still to run or running. */
static bool any_running(size_t workers) {
    for (size_t p = 1; p <= workers; p++)
        if (atomic_load(&pool.workers[p].state) != IDLE) return true;
    return false;
}

mha_status mha_run_parts(mha_part_fn fn, void *ctx, size_t nparts) {
    if (nparts <= 1) return fn(ctx, 0, 1);
    if (nparts > MAX_THREADS * 64 || in_part || atomic_flag_test_and_set(&pool.busy))
        return run_here(fn, ctx, nparts); /* inside a part, or the pool is another call's */
    size_t threads = mha_kernels_threads(), want = (nparts < threads ? nparts : threads) - 1;
    size_t started = want ? pool_grow(want) : 0, workers = started < want ? started : want;
    /* pass 1: offer the call to workers 1..workers, waking the workers that sleep; parts from 1
     * (shared) or part w to worker w */
    pool.shared = take_back;
    atomic_store(&pool.next, 1);
    for (size_t p = 1; p <= workers; p++) {
        worker *w = &pool.workers[p];
        w->fn = fn, w->ctx = ctx, w->part = p, w->nparts = nparts, w->failed = nparts, w->status = MHA_OK;
        atomic_store(&w->state, OFFERED);
    }
    pthread_mutex_lock(&pool.lock);
    for (size_t p = 1; p <= workers; p++)
        if (pool.workers[p].sleeping) pthread_cond_signal(&pool.workers[p].wake);
    pthread_mutex_unlock(&pool.lock);
    /* pass 2: part 0 here, then parts from the counter (or every part no worker was offered), then
     * every offer not taken yet withdrawn */
    worker here = {.fn = fn, .ctx = ctx, .nparts = nparts, .failed = nparts};
    part_record(&here, 0);
    if (take_back) {
        parts_claim(&here);
        for (size_t p = 1; p <= workers; p++) {
            int offered = OFFERED;
            atomic_compare_exchange_strong(&pool.workers[p].state, &offered, IDLE);
        }
    } else {
        for (size_t p = workers + 1; p < nparts; p++) part_record(&here, p);
    }
    /* pass 3: wait for the workers that run (poll, then sleep) */
    long long start = now_ns();
    unsigned spins = 0;
    while (any_running(workers) && spin_on(&spins, start)) {}
    if (any_running(workers)) {
        pthread_mutex_lock(&pool.lock);
        pool.caller_sleeping = true;
        while (any_running(workers)) pthread_cond_wait(&pool.done, &pool.lock);
        pool.caller_sleeping = false;
        pthread_mutex_unlock(&pool.lock);
    }
    /* pass 4: the lowest-numbered failure, after every part ended */
    const worker *lowest = &here;
    for (size_t p = 1; p <= workers; p++)
        if (pool.workers[p].failed < lowest->failed) lowest = &pool.workers[p];
    mha_status status = lowest->failed < nparts ? mha_fail(lowest->status, "%s", lowest->message) : MHA_OK;
    atomic_flag_clear(&pool.busy);
    return status;
}
