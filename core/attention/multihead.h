/* core/attention/multihead.h - nn.MultiheadAttention (batch_first=True) faithful to PyTorch 1.13:
 * parameters, initialisation, state_dict names, the forward pass and the trace of its
 * intermediates. */
#ifndef MHA_MULTIHEAD_H
#define MHA_MULTIHEAD_H

#include "tensor/tensor.h"

/* Letters used in every shape comment: N batch, L target (query) length, S source (key) length,
 * E embed dim, H heads, D head dim (E/H), Dv value head dim. */

typedef struct mha_multihead_options {
    size_t embed_dim, num_heads;
    size_t kdim, vdim;      /* 0 means embed_dim */
    bool bias;              /* in_proj_bias and out_proj_bias */
    bool add_bias_kv;       /* learned bias_k, bias_v appended to the keys and values */
    bool add_zero_attn;     /* a zero key and value appended after the head split */
} mha_multihead_options;

typedef struct mha_multihead {
    size_t embed_dim, num_heads, head_dim, kdim, vdim;
    bool bias, add_bias_kv, add_zero_attn;
    bool same_embed_dim;          /* kdim == vdim == embed_dim: one packed in_proj_weight */
    mha_tensor in_proj_weight;    /* (3E,E) when same_embed_dim, else empty */
    mha_tensor q_proj_weight;     /* (E,E)    when !same_embed_dim, else empty */
    mha_tensor k_proj_weight;     /* (E,kdim) when !same_embed_dim, else empty */
    mha_tensor v_proj_weight;     /* (E,vdim) when !same_embed_dim, else empty */
    mha_tensor in_proj_bias;      /* (3E) when bias, else empty */
    mha_tensor out_proj_weight;   /* (E,E) */
    mha_tensor out_proj_bias;     /* (E) when bias, else empty */
    mha_tensor bias_k, bias_v;    /* (1,1,E) when add_bias_kv, else empty */
} mha_multihead;

/* Initialises m (which must be zeroed) as PyTorch does, from the global generator: xavier_uniform_
 * on in_proj_weight (or q/k/v_proj_weight), out_proj_weight from Linear's kaiming_uniform(a=√5),
 * i.e. U(-1/√E, 1/√E), both biases zero, xavier_normal_ on bias_k and bias_v. */
mha_status mha_multihead_init(mha_multihead *m, const mha_multihead_options *opt);
void mha_multihead_release(mha_multihead *m);

/* Parameter names, PyTorch's state_dict names with '.' written '_': "in_proj_weight", ...
 * mha_multihead_param finds a present parameter: *slot points at it, shape/ndim give its shape.
 * MHA_E_ARG naming the parameters that exist when name is not one of them. */
extern const char *const mha_multihead_param_names[]; /* NULL-terminated, all nine names */
mha_status mha_multihead_param(mha_tensor **slot, const mha_multihead *m, const char *name);
/* Replaces a parameter by a copy of value, after checking its shape and dtype. */
mha_status mha_multihead_set_param(mha_multihead *m, const char *name, const mha_tensor *value);

typedef struct mha_forward_options {
    const mha_tensor *key_padding_mask; /* (N,S) or (S) unbatched; bool (true = padding) or float */
    const mha_tensor *attn_mask;        /* (L,S) or (N·H,L,S); bool (true = not allowed) or float */
    bool need_weights;
    bool average_attn_weights;          /* weights averaged over heads: (N,L,S), else (N,H,L,S) */
    bool is_causal;                     /* mask j > i (on top of attn_mask, if any) */
} mha_forward_options;

/* Every intermediate of one forward pass, by name, in order. */
#define MHA_TRACE_MAX 24
typedef struct mha_trace {
    size_t count;
    const char *names[MHA_TRACE_MAX];  /* static strings */
    mha_tensor tensors[MHA_TRACE_MAX];
} mha_trace;
void mha_trace_release(mha_trace *trace);
/* NULL if name is not in the trace. */
const mha_tensor *mha_trace_get(const mha_trace *trace, const char *name);

/* query (N,L,E) or (L,E); key (N,S,kdim) or (S,kdim); value (N,S,vdim) or (S,vdim).
 * out (N,L,E) or (L,E); weights (see average_attn_weights; unbatched drops N), filled only when
 * opt->need_weights and weights != NULL. trace, when not NULL (and zeroed), receives:
 *   query key value  Q K V  (after in-projection, biases added)
 *   Q_heads K_heads V_heads (N,H,L|S,D)  (K/V after bias_kv and zero_attn: S may grow)
 *   scores (raw Q·Kᵀ)  scaled_scores  masked_scores  weights (N,H,L,S)
 *   head_outputs (N,H,L,D)  concat (N,L,E)  output (N,L,E)   (unbatched: no N) */
mha_status mha_multihead_forward(mha_tensor *out, mha_tensor *weights, const mha_multihead *m,
                                 const mha_tensor *query, const mha_tensor *key, const mha_tensor *value,
                                 const mha_forward_options *opt, mha_trace *trace);

/* The memory one forward allocates, in bytes, known before it runs from the plan the forward
 * follows (double: any shape's count is representable). weights: the per-head attention weights
 * (N,H,L,S') it keeps when weights are returned (weights_out) or traced, 0 when no one looks at
 * them (the fused kernel, or one (L,S) scratch slice per thread). total: every tensor and buffer
 * the forward makes, all held until it returns, so its peak - aside from the kernels' packing
 * buffers (at most a few MB) and the copy linear makes of a non-contiguous input. A forward that
 * runs out of memory for the weights says how much they need. Bad arguments fail as in
 * mha_multihead_forward. */
typedef struct mha_forward_bytes {
    double weights, total;
} mha_forward_bytes;
mha_status mha_multihead_forward_bytes(mha_forward_bytes *need, const mha_multihead *m, const mha_tensor *query,
                                       const mha_tensor *key, const mha_tensor *value,
                                       const mha_forward_options *opt, bool weights_out, bool traced);
#endif
