/* core/attention/sdpa_testing.h - the switches of sdpa.c only tests use: the plain reference in the
 * fused backward's sums, and the budget of weights the graph node keeps. */
#ifndef MHA_SDPA_TESTING_H
#define MHA_SDPA_TESTING_H

#include <stdbool.h>
#include <stddef.h>

/* Tests: true makes the fused backward's sweep 1 (rows over 4096 keys) sum its exps by the plain
 * reference loop instead of the vectorised softmax kernel; the gradients must agree to float
 * rounding. */
void mha_sdpa_backward_plain_lse(bool on);
/* Sets the budget in bytes of the weights mha_ag_sdpa keeps (0: always fused) and returns the one
 * before. */
size_t mha_ag_sdpa_keep_budget(size_t bytes);

#endif
