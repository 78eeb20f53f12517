/* core/nn/sample.h - drawing the next token from a language model's logits: temperature, top-k and
 * top-p (nucleus) sampling over the last dim, from the process's seeded generator
 * (core/tensor/rng.c). */
#ifndef MHA_SAMPLE_H
#define MHA_SAMPLE_H

#include "tensor/tensor.h"

typedef struct mha_sample_options {
    double temperature;   /* >= 0; 0 takes the argmax (the first largest logit), drawing nothing */
    size_t top_k;         /* 0: every token; else the k most probable (ties: lower index first) */
    double top_p;         /* in (0, 1]; 1: every token */
    bool has_seed;        /* true: mha_seed(seed) once the arguments are checked */
    uint64_t seed;
} mha_sample_options;

/* out (...) = 0-based indices drawn from each row of logits (..., V) float, as float (exact below
 * 2^24). Per row, in double:
 *   pass 1: p_j = exp((x_j - max x) / T)                  (-inf logits get 0)
 *   pass 2: top_k: keep the k largest p_j
 *   pass 3: top_p: keep the fewest largest kept p_j whose share of the kept mass reaches top_p
 *   pass 4: draw u in [0, 1) (mha_rand's 24-bit uniform, one per row in row order); return the
 *           first kept j, in vocabulary order, whose running sum of kept p exceeds u·(kept mass).
 * T = 0 or top_k = 1 is the argmax (the first largest) and draws no number. A row holding NaN, or
 * whose logits are all -inf, is an error naming the row. */
mha_status mha_sample(mha_tensor *out, const mha_tensor *logits, const mha_sample_options *opt);

#endif
