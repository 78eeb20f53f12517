/* core/nn/positional.c - the sinusoidal positional encoding of "Attention Is All You Need", one
 * (L,E) table that a model adds to its token embeddings. */
#include "nn/nn.h"

#include <math.h>

mha_status mha_positional_encoding(mha_tensor *out, size_t L, size_t E) {
    size_t shape[2] = {L, E};
    mha_status st = mha_empty_named(out, MHA_FLOAT32, 2, shape, "positional_encoding");
    if (st != MHA_OK || L == 0 || E == 0) return st;   /* no element: no row to walk */
    float *pe = mha_f32(out);
    for (size_t p = 0; p < L; p++) {
        for (size_t j = 0; j < E; j++) {
            size_t two_i = j - j % 2;   /* columns 2i and 2i+1 share one frequency */
            double angle = (double)p / pow(10000.0, (double)two_i / (double)E);
            pe[p * E + j] = (float)(j % 2 == 0 ? sin(angle) : cos(angle));
        }
    }
    return MHA_OK;
}
