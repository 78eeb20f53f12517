/* bench/bench_grad.c - times MultiheadAttention forward + backward (E=512, H=8) single-threaded beside torch 1.13's
 * autograd on the same shapes (bench_grad_torch.py), and measures the fused attention backward's memory at L=16384.
 *
 * usage: bench_grad [--torch COMMAND] [--quick]
 *   --torch COMMAND   run "COMMAND L" (bench_grad_torch.py, by /bin/sh) for torch's time at L; it prints "L ms"
 *   --quick           skip the L=16384 memory row (about a minute on one core)
 * Case: self-attention, x (1,L,512) requiring grad, need_weights=false, loss = mean(out²), then backward; the
 * median of 5 runs after one warm-up. Ours records the graph (core/attention/multihead_grad.c) and backpropagates through
 * the attention backward from the kept weights (both L here keep them: under 256 MiB, mha_ag_sdpa); torch
 * runs nn.MultiheadAttention in training mode (its autograd graph), which keeps them too. Beside each row, the
 * ratio our FLOPs would give at this core's FMA peak (bench/peak.c): the floor of ours/torch on this machine.
 * Memory row: scaled dot-product attention backward on (1,8,16384,64) q, k, v without weights (the fused path):
 * the highest mha_peak_bytes() during the backward minus what was live before it, gradients included. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autograd/autograd_ops.h"
#include "nn/nn.h"
#include "attention/attention.h"
#include "kernels/kernels.h"
#include "attention/multihead_grad.h"
#include "peak.h"
#include "attention/sdpa.h"

/* CPU time of the process: the runs are single-threaded, and on a shared machine the wall clock counts the
 * other programs' time too (bench_grad_torch.py measures torch by time.process_time() alike). */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_s(void) { return now_ms() / 1e3; }

/* FLOPs of one step as this layer runs it (2 per multiply-add; softmax and elementwise work not counted):
 * forward 8·L·E² + 4·L²·E (bench.c's formula); backward: the in-projection's dX and dW 2·(2·L·E·3E), the
 * out-projection's 2·(2·L·E·E), and attention's four products with the weights kept (dV, dP, dQ, dK)
 * 4·(2·L²·E): in all 24·L·E² + 12·L²·E. */
static double step_flops(size_t L, size_t E) {
    const double l = (double)L, e = (double)E;
    return 24.0 * l * e * e + 12.0 * l * l * e;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One forward + backward of the layer on x; false (message printed) on failure. */
static bool step(mha_multihead *m, mha_tensor *x) {
    mha_tensor out = MHA_TENSOR_EMPTY, sq = MHA_TENSOR_EMPTY, loss = MHA_TENSOR_EMPTY;
    mha_forward_options fo = {.need_weights = false};
    mha_status st = mha_ag_multihead_forward(&out, NULL, m, x, x, x, &fo);
    if (st == MHA_OK) st = mha_ag_binary(&sq, MHA_MUL, &out, &out);
    if (st == MHA_OK) st = mha_ag_reduce(&loss, MHA_MEAN, &sq, MHA_ALL_DIMS, false);
    if (st == MHA_OK) st = mha_backward(&loss, NULL);
    if (st != MHA_OK) fprintf(stderr, "bench_grad: %s\n", mha_errmsg());
    mha_release(&out), mha_release(&sq), mha_release(&loss);
    mha_zero_grad(x);
    mha_multihead_zero_grad(m);
    return st == MHA_OK;
}

static double time_layer(size_t L) {
    mha_multihead m;
    memset(&m, 0, sizeof m);
    mha_multihead_options o = {.embed_dim = 512, .num_heads = 8, .bias = true};
    size_t shape[3] = {1, L, 512};
    mha_tensor x = MHA_TENSOR_EMPTY;
    mha_seed(0);
    if (mha_multihead_init(&m, &o) != MHA_OK || mha_multihead_requires_grad(&m, true) != MHA_OK ||
        mha_randn(&x, 3, shape) != MHA_OK || mha_requires_grad(&x, true) != MHA_OK)
        return -1.0;
    double runs[5], result = -1.0;
    if (step(&m, &x)) { /* warm-up */
        int i = 0;
        for (; i < 5; i++) {
            double t0 = now_ms();
            if (!step(&m, &x)) break;
            runs[i] = now_ms() - t0;
        }
        if (i == 5) {
            qsort(runs, 5, sizeof *runs, cmp_double);
            result = runs[2];
        }
    }
    mha_release(&x);
    mha_multihead_release(&m);
    return result;
}

/* torch's median time for L, from COMMAND L's "L ms" line; 0 when it gave none. Run right after ours for the same L,
 * so a change in the load of a shared machine falls on both sides of the ratio alike. */
static double torch_time(const char *command, size_t L) {
    if (!command) return 0.0;
    char line[1024];
    snprintf(line, sizeof line, "%s %zu", command, L);
    FILE *p = popen(line, "r");
    if (!p) return 0.0;
    unsigned long len;
    double t, ms = 0.0;
    while (fscanf(p, "%lu %lf", &len, &t) == 2)
        if (len == L) ms = t;
    pclose(p);
    return ms;
}

static void memory_row(void) {
    const size_t L = 16384, H = 8, D = 64;
    size_t shape[4] = {1, H, L, D};
    mha_tensor q = MHA_TENSOR_EMPTY, k = MHA_TENSOR_EMPTY, v = MHA_TENSOR_EMPTY, out = MHA_TENSOR_EMPTY,
               dout = MHA_TENSOR_EMPTY, dq = MHA_TENSOR_EMPTY, dk = MHA_TENSOR_EMPTY, dv = MHA_TENSOR_EMPTY;
    mha_seed(1);
    mha_randn(&q, 4, shape), mha_randn(&k, 4, shape), mha_randn(&v, 4, shape), mha_randn(&dout, 4, shape);
    mha_status st = mha_sdpa(&out, NULL, &q, &k, &v, NULL);
    size_t live = mha_live_bytes();
    mha_reset_peak();
    double t0 = now_ms();
    if (st == MHA_OK) st = mha_sdpa_backward(&dq, &dk, &dv, NULL, &dout, NULL, &q, &k, &v, NULL, &out, NULL);
    double ms = now_ms() - t0;
    size_t extra = mha_peak_bytes() - live;
    if (st != MHA_OK) printf("attention backward L=16384 E=512 H=8 (fused): %s\n", mha_errmsg());
    else
        printf("attention backward L=16384 E=512 H=8 (fused, no weights): %.0f ms, extra memory %.1f MiB "
               "(of which the gradients dq, dk, dv: %.1f MiB; one head's (L,S) weights alone would be %.0f MiB)\n",
               ms, (double)extra / 1048576.0, 3.0 * (double)(L * H * D * sizeof(float)) / 1048576.0,
               (double)(L * L * sizeof(float)) / 1048576.0);
    mha_release(&q), mha_release(&k), mha_release(&v), mha_release(&out), mha_release(&dout);
    mha_release(&dq), mha_release(&dk), mha_release(&dv);
}

int main(int argc, char **argv) {
    const char *torch = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--torch") == 0 && i + 1 < argc) torch = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0) quick = true;
        else {
            fprintf(stderr, "usage: bench_grad [--torch COMMAND] [--quick]\n");
            return 2;
        }
    }
    mha_kernels_set_threads(1);
    const size_t lengths[2] = {512, 2048};
    double ours[2], theirs[2], peaks[2];
    for (int i = 0; i < 2; i++) { /* the peak beside each row: a shared VM's clock drifts over a run */
        peaks[i] = bench_fma_peak(mha_kernels_isa(), now_s, 5);
        ours[i] = time_layer(lengths[i]);
        theirs[i] = torch_time(torch, lengths[i]);
    }
    const double peak = fmax(peaks[0], peaks[1]);
    printf("MultiheadAttention forward + backward, E=512 H=8, 1 thread, kernels \"%s\" (median of 5, CPU time)\n",
           mha_kernels_isa());
    if (peak > 0)
        printf("at peak: ours/torch if every FLOP of ours ran at this core's peak, measured beside the row (%.1f\n"
               "GFLOP/s at best; softmax and copies free): the least any code can reach here\n", peak);
    printf("%-8s %12s %8s %12s %10s %8s %8s\n", "L", "ours ms", "GFLOP/s", "torch ms", "ours/torch", "target",
           "at peak");
    const double targets[2] = {0.7, 0.5};
    for (int i = 0; i < 2; i++) {
        char ratio[16] = "-", torch_ms[16] = "-", bound[16] = "-";
        const double gflop = step_flops(lengths[i], 512) / 1e9;
        if (theirs[i] > 0) {
            snprintf(torch_ms, sizeof torch_ms, "%.1f", theirs[i]);
            snprintf(ratio, sizeof ratio, "%.2f", ours[i] / theirs[i]);
            if (peaks[i] > 0) snprintf(bound, sizeof bound, "%.2f", gflop / peaks[i] * 1e3 / theirs[i]);
        }
        printf("%-8zu %12.1f %8.1f %12s %10s %8.1f %8s\n", lengths[i], ours[i], gflop / ours[i] * 1e3, torch_ms,
               ratio, targets[i], bound);
    }
    if (!quick) memory_row();
    return 0;
}
