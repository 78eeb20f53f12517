/* core/nn/rope.h - rotary position embedding (RoPE): q and k rotated pair by pair by an angle that
 * grows with the position, in the two layouts language models use, with its backward and its graph
 * node. */
#ifndef MHA_ROPE_H
#define MHA_ROPE_H

#include "tensor/tensor.h"

/* Which features form a rotated pair, for i in [0, D/2):
 *   MHA_ROPE_HALF         (i, i + D/2): GPT-NeoX, Hugging Face LLaMA (rotate_half)
 *   MHA_ROPE_INTERLEAVED  (2i, 2i + 1): RoFormer, GPT-J, Meta's LLaMA reference (complex pairs) */
typedef enum { MHA_ROPE_HALF = 0, MHA_ROPE_INTERLEAVED = 1 } mha_rope_layout;

typedef struct mha_rope_options {
    double base;             /* 10000 in the RoFormer paper and LLaMA 1/2; > 0 */
    mha_rope_layout layout;
    size_t offset;           /* the 0-based position of row 0 of the L rows (a KV cache's length) */
} mha_rope_options;

/* out = rope(x): x (..., L, D) float, D even -> out (..., L, D). Row l is at position p = offset +
 * l; the pair (a, b) of frequency i turns by the angle p·θ_i with θ_i = base^(-2i/D):
 *   out_a = x_a·cos(p·θ_i) - x_b·sin(p·θ_i),   out_b = x_b·cos(p·θ_i) + x_a·sin(p·θ_i).
 * θ_i, the angle, cos, sin and both products are computed in double and rounded once to float. */
mha_status mha_rope(mha_tensor *out, const mha_tensor *x, const mha_rope_options *opt);

/* The backward of rope: a rotation is orthogonal, so dx = rope of dy by the opposite angle:
 *   dx_a = dy_a·cos + dy_b·sin,   dx_b = dy_b·cos - dy_a·sin.      dy, dx (..., L, D) */
mha_status mha_rope_backward(mha_tensor *dx, const mha_tensor *dy, const mha_rope_options *opt);

/* rope recording a graph node when x requires grad (its backward is mha_rope_backward). */
mha_status mha_ag_rope(mha_tensor *out, const mha_tensor *x, const mha_rope_options *opt);

#endif
