/* tests/core/test_pool.c - the thread pool (core/kernels/pool.c) through mha_run_parts: each part runs once on
 * a thread of its own or the caller's, a failing part's status comes back, workers are kept and block signals. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernels/kernels.h"
#include "kernels/kernels_testing.h"

/* ---- mha_run_parts ---- */

enum { NPARTS = 3 };

typedef struct parts_seen {
    pthread_t thread[NPARTS], inner_thread[NPARTS][2];
    int calls[NPARTS], inner_calls[NPARTS][2];
    size_t threads_inside[NPARTS], nparts_seen[NPARTS];
    int finished; /* parts that returned, counted under the lock */
    pthread_mutex_t lock;
    bool fail;    /* parts 1 and 2 fail, with different statuses */
} parts_seen;

static mha_status inner_part(void *ctx, size_t part, size_t nparts) {
    parts_seen *seen = ((parts_seen **)ctx)[0];
    size_t outer = (size_t)((parts_seen **)ctx)[1];
    seen->inner_thread[outer][part] = pthread_self();
    seen->inner_calls[outer][part]++;
    return MHA_OK;
}

static mha_status outer_part(void *ctx, size_t part, size_t nparts) {
    parts_seen *seen = ctx;
    seen->thread[part] = pthread_self();
    seen->calls[part]++;
    seen->nparts_seen[part] = nparts;
    seen->threads_inside[part] = mha_kernels_threads();
    void *inner_ctx[2] = {seen, (void *)part};
    mha_status st = mha_run_parts(inner_part, inner_ctx, 2); /* inside a part: runs here, in order */
    if (seen->fail && part == 2) {
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL); /* finishes last: the caller must wait */
        st = mha_fail(MHA_E_NOMEM, "part 2 out of memory");
    }
    if (seen->fail && part == 1) st = mha_fail(MHA_E_ARG, "part 1: bad argument");
    pthread_mutex_lock(&seen->lock);
    seen->finished++;
    pthread_mutex_unlock(&seen->lock);
    return st;
}

static void check_run_parts(void) {
    parts_seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    mha_kernels_set_threads(NPARTS);
    mha_status st = mha_run_parts(outer_part, &seen, NPARTS);
    int once = 1, distinct = 1, nested_here = 1, told = 1;
    for (int p = 0; p < NPARTS; p++) {
        once = once && seen.calls[p] == 1 && seen.inner_calls[p][0] == 1 && seen.inner_calls[p][1] == 1;
        told = told && seen.nparts_seen[p] == NPARTS && seen.threads_inside[p] == 1;
        for (int q = 0; q < p; q++) distinct = distinct && !pthread_equal(seen.thread[p], seen.thread[q]);
        for (int i = 0; i < 2; i++) nested_here = nested_here && pthread_equal(seen.inner_thread[p][i], seen.thread[p]);
    }
    CHECK("run_parts: each of 3 parts runs once, told (part, 3), and finishes", st == MHA_OK && once && told &&
          seen.finished == NPARTS, "status %d, finished %d", (int)st, seen.finished);
    CHECK("run_parts: part 0 on the caller's thread, the others each on a thread of its own",
          pthread_equal(seen.thread[0], pthread_self()) && distinct, "%s", "threads shared");
    CHECK("run_parts: inside a part mha_kernels_threads() is 1 and a nested split runs on the part's thread",
          told && nested_here, "%s", "a nested split left its thread");
    CHECK("run_parts: mha_kernels_threads() is the setting outside parts", mha_kernels_threads() == NPARTS,
          "%zu", mha_kernels_threads());

    parts_seen failing = {.lock = PTHREAD_MUTEX_INITIALIZER, .fail = true};
    st = mha_run_parts(outer_part, &failing, NPARTS);
    CHECK("run_parts: two parts fail: after every part ended, the lowest one's status and message",
          st == MHA_E_ARG && strcmp(mha_errmsg(), "part 1: bad argument") == 0 && failing.finished == NPARTS,
          "status %d, message \"%s\", finished %d", (int)st, mha_errmsg(), failing.finished);

    mha_kernels_set_threads(0);
    size_t low = mha_kernels_threads();
    mha_kernels_set_threads(1000);
    size_t high = mha_kernels_threads();
    mha_kernels_set_threads(1);
    CHECK("mha_kernels_set_threads: clamped to 1..64", low == 1 && high == 64, "0 -> %zu, 1000 -> %zu", low, high);
}

/* ---- the pool (core/kernels/pool.c) ---- */

enum { POOL_MAX_PARTS = 4, POOL_CALLS = 3000 };

typedef struct pool_seen {
    atomic_int calls[POOL_MAX_PARTS];  /* how often each part ran */
    pthread_t thread[POOL_MAX_PARTS];
    atomic_int out_of_range, sigint_open, told_wrong;
    size_t nparts;
} pool_seen;

static mha_status pool_part(void *ctx, size_t part, size_t nparts) {
    pool_seen *seen = ctx;
    if (part >= seen->nparts || part >= POOL_MAX_PARTS) {
        atomic_fetch_add(&seen->out_of_range, 1);
        return MHA_OK;
    }
    if (nparts != seen->nparts) atomic_fetch_add(&seen->told_wrong, 1);
    atomic_fetch_add(&seen->calls[part], 1);
    seen->thread[part] = pthread_self();
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    if (part > 0 && !sigismember(&mask, SIGINT)) atomic_fetch_add(&seen->sigint_open, 1);
    return MHA_OK;
}

/* Calls of 2, 3 and 4 parts, one after another and from two threads at once. */
static void *pool_caller(void *arg) {
    int *bad = arg;
    for (int call = 0; call < POOL_CALLS; call++) {
        pool_seen seen = {.nparts = 2 + (size_t)call % 3};
        if (call % 500 == 0) nanosleep(&(struct timespec){0, 400 * 1000}, NULL); /* the workers sleep */
        mha_status st = mha_run_parts(pool_part, &seen, seen.nparts);
        for (size_t p = 0; p < seen.nparts; p++) *bad += seen.calls[p] != 1;
        *bad += st != MHA_OK || seen.out_of_range || seen.told_wrong;
    }
    return NULL;
}

static void check_pool(void) {
    mha_kernels_set_threads(POOL_MAX_PARTS);
    pool_seen first = {.nparts = 3}, again = {.nparts = 3};
    mha_run_parts(pool_part, &first, 3);
    nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL); /* long enough for the workers to sleep */
    mha_run_parts(pool_part, &again, 3);
    CHECK("pool: a later call runs its parts on the same workers, each part once",
          pthread_equal(first.thread[1], again.thread[1]) && pthread_equal(first.thread[2], again.thread[2]) &&
          again.calls[0] == 1 && again.calls[1] == 1 && again.calls[2] == 1, "%s", "other threads");
    pool_seen two = {.nparts = 2};
    mha_run_parts(pool_part, &two, 2); /* fewer parts than workers: worker 2 stays idle */
    CHECK("pool: a call of 2 parts after one of 3 runs parts 0 and 1 once, nothing beyond",
          two.calls[0] == 1 && two.calls[1] == 1 && two.out_of_range == 0, "calls %d %d, beyond %d",
          two.calls[0], two.calls[1], two.out_of_range);
    CHECK("pool: every signal is blocked on the workers (Ctrl-C reaches the caller)",
          first.sigint_open == 0 && again.sigint_open == 0, "%d parts saw SIGINT open",
          first.sigint_open + again.sigint_open);
    mha_kernels_set_threads(1);
}

/* The caller runs the parts no worker has taken yet: however the parts are shared out, each runs
 * once, also with a second thread calling at the same time (which then runs its parts itself). */
static void check_pool_take_back(void) {
    mha_kernels_set_threads(POOL_MAX_PARTS);
    int bad[2] = {0, 0};
    pthread_t other;
    bool started = pthread_create(&other, NULL, pool_caller, &bad[1]) == 0;
    pool_caller(&bad[0]);
    if (started) pthread_join(other, NULL);
    CHECK("pool: 2 threads x 3000 calls of 2, 3 and 4 parts: each part once, none beyond",
          started && bad[0] == 0 && bad[1] == 0, "bad calls %d and %d", bad[0], bad[1]);
    mha_kernels_set_threads(1);
}

int main(void) {
    mha_kernels_set_threads(1);
    mha_kernels_set_take_back(false); /* each part on a thread of its own, whatever the load */
    check_run_parts();
    check_pool();
    mha_kernels_set_take_back(true);
    check_pool_take_back();
    CHECK_DONE();
}
